"""The NVML seam: every call into the NVIDIA driver lives in :func:`probe_nvml`.

It returns raw per-device records (a :class:`ProbeResult`); turning them into figures is done
elsewhere (:mod:`infer_advisor.hardware.resolve`), so tests inject recorded device lists instead of
a driver. ``probe_nvml`` never raises: no driver, no device or ``INFER_ADVISOR_NO_NVML=1`` come back
as ``ok=False`` with the reason in ``error``.
"""


from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")


class DeviceRecord(BaseModel):
    """What NVML said about one device; ``None`` where the call is not supported there."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    index: int
    name: str = Field(description="nvmlDeviceGetName, e.g. 'NVIDIA H100 80GB HBM3'.")
    uuid: str | None = None
    memory_total_bytes: int = Field(description="nvmlDeviceGetMemoryInfo().total")
    memory_free_bytes: int | None = Field(default=None, description="nvmlDeviceGetMemoryInfo().free")
    cuda_compute_capability: tuple[int, int] | None = Field(
        default=None, description="nvmlDeviceGetCudaComputeCapability (major, minor)."
    )
    memory_bus_width_bits: int | None = Field(default=None, description="nvmlDeviceGetMemoryBusWidth")
    max_memory_clock_mhz: int | None = Field(default=None, description="nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM)")
    max_sm_clock_mhz: int | None = Field(default=None, description="nvmlDeviceGetMaxClockInfo(NVML_CLOCK_SM)")
    nvlink_active_links: int | None = Field(
        default=None, description="Links whose nvmlDeviceGetNvLinkState is active; None: NVLink not supported."
    )
    nvlink_version: int | None = Field(
        default=None, description="nvmlDeviceGetNvLinkVersion of an active link: an nvmlNvlinkVersion_t code (5 = 3.1)."
    )
    nvlink_speed_mbps: int | None = Field(
        default=None, description="Per-link speed, one direction, MB/s (field NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON)."
    )
    pcie_max_generation: int | None = Field(default=None, description="nvmlDeviceGetMaxPcieLinkGeneration")
    pcie_max_width: int | None = Field(default=None, description="nvmlDeviceGetMaxPcieLinkWidth (lanes)")
    mig_mode: bool | None = Field(default=None, description="Current MIG mode; None: MIG not supported.")
    errors: dict[str, str] = Field(
        default_factory=dict, description="Calls that failed with something other than 'not supported'."
    )
    vendor: Literal["nvidia", "amd"] = Field(default="nvidia", description="Which seam reported it: NVML, or amd-smi/rocm-smi.")
    gfx_arch: str | None = Field(default=None, description="AMD: the GFX target the tool reports, e.g. gfx942.")


class ProbeResult(BaseModel):
    """The outcome of one NVML probe: the devices, or why there are none."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    ok: bool = Field(description="NVML initialised and the device count was read.")
    driver_version: str | None = None
    cuda_driver_version: int | None = Field(default=None, description="nvmlSystemGetCudaDriverVersion, e.g. 12040.")
    devices: list[DeviceRecord] = Field(default_factory=list)
    error: str | None = Field(default=None, description="Why the probe found no GPU, in words.")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def probe_nvml() -> ProbeResult:
    """Ask NVML (package nvidia-ml-py) about every device on this machine. Never raises."""
    from ..constants import nvml_disabled

    if nvml_disabled():
        return ProbeResult(ok=False, error="INFER_ADVISOR_NO_NVML=1 is set, so the NVML probe was skipped")
    try:
        import pynvml
    except ImportError:  # pragma: no cover - nvidia-ml-py is a dependency
        return ProbeResult(ok=False, error="nvidia-ml-py is not installed (pip install nvidia-ml-py)")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound:
        return ProbeResult(ok=False, error="NVML library not found: no NVIDIA driver on this machine")
    except pynvml.NVMLError as err:
        return ProbeResult(ok=False, error=f"NVML could not start: {err}")
    except OSError as err:  # a broken libnvidia-ml.so
        return ProbeResult(ok=False, error=f"NVML could not be loaded: {err}")
    try:
        return _probe_devices(pynvml)
    except pynvml.NVMLError as err:
        return ProbeResult(ok=False, error=f"NVML failed while reading devices: {err}")
    except Exception as err:  # noqa: BLE001 - the contract is "never raises"; say what broke instead
        return ProbeResult(ok=False, error=f"NVML probe failed: {type(err).__name__}: {err}")
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _probe_devices(nv: Any) -> ProbeResult:
    def opt(call: Callable[[], T], errors: dict[str, str], what: str) -> T | None:
        try:
            return call()
        except nv.NVMLError_NotSupported:
            return None
        except nv.NVMLError as err:
            errors[what] = str(err)
            return None

    sys_errors: dict[str, str] = {}
    driver = opt(lambda: _text(nv.nvmlSystemGetDriverVersion()), sys_errors, "driver_version")
    cuda = opt(nv.nvmlSystemGetCudaDriverVersion, sys_errors, "cuda_driver_version")
    count = nv.nvmlDeviceGetCount()
    devices = []
    for i in range(count):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        errs: dict[str, str] = {}
        mem = nv.nvmlDeviceGetMemoryInfo(h)
        cc = opt(lambda: tuple(nv.nvmlDeviceGetCudaComputeCapability(h)), errs, "compute_capability")
        links, version = _nvlink(nv, h, errs)
        speed = None
        if links:
            speed = opt(lambda: _field_uint(nv, h, nv.NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON), errs, "nvlink_speed")
        mig = opt(lambda: nv.nvmlDeviceGetMigMode(h), errs, "mig_mode")
        devices.append(
            DeviceRecord(
                index=i,
                name=_text(nv.nvmlDeviceGetName(h)),
                uuid=opt(lambda: _text(nv.nvmlDeviceGetUUID(h)), errs, "uuid"),
                memory_total_bytes=int(mem.total),
                memory_free_bytes=int(mem.free),
                cuda_compute_capability=cc,
                memory_bus_width_bits=opt(lambda: nv.nvmlDeviceGetMemoryBusWidth(h), errs, "memory_bus_width"),
                max_memory_clock_mhz=opt(lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM), errs, "mem_clock"),
                max_sm_clock_mhz=opt(lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM), errs, "sm_clock"),
                nvlink_active_links=links,
                nvlink_version=version,
                nvlink_speed_mbps=speed,
                pcie_max_generation=opt(lambda: nv.nvmlDeviceGetMaxPcieLinkGeneration(h), errs, "pcie_generation"),
                pcie_max_width=opt(lambda: nv.nvmlDeviceGetMaxPcieLinkWidth(h), errs, "pcie_width"),
                mig_mode=None if mig is None else bool(mig[0] == nv.NVML_DEVICE_MIG_ENABLE),
                errors=errs,
            )
        )
    return ProbeResult(ok=True, driver_version=driver, cuda_driver_version=cuda, devices=devices)


def _nvlink(nv: Any, handle: Any, errors: dict[str, str]) -> tuple[int | None, int | None]:
    """Active NVLink links and the version code of the first active one; (None, None) without NVLink."""
    active, version, supported = 0, None, False
    for link in range(nv.NVML_NVLINK_MAX_LINKS):
        try:
            state = nv.nvmlDeviceGetNvLinkState(handle, link)
        except (nv.NVMLError_NotSupported, nv.NVMLError_InvalidArgument):
            continue  # no such link on this device
        except nv.NVMLError as err:
            errors.setdefault("nvlink", str(err))
            continue
        supported = True
        if state == nv.NVML_FEATURE_ENABLED:
            active += 1
            if version is None:
                try:
                    version = int(nv.nvmlDeviceGetNvLinkVersion(handle, link))
                except nv.NVMLError as err:
                    errors.setdefault("nvlink_version", str(err))
    return (active if supported else None), version


# nvmlValueType_t -> the member of nvmlValue_t that holds the value (nvml.h).
_VALUE_MEMBER = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


def _field_uint(nv: Any, handle: Any, field_id: int) -> int | None:
    """One NVML field value as an int; None when the driver does not report it."""
    value = nv.nvmlDeviceGetFieldValues(handle, [field_id])[0]
    if value.nvmlReturn != nv.NVML_SUCCESS:
        return None
    member = _VALUE_MEMBER.get(int(value.valueType))
    return int(getattr(value.value, member)) if member else None
