"""The hardware-facts stage: a spec (``auto``, ``cpu``, ``NAME[:COUNT][xNODES]``) -> :class:`HardwareFacts`.

    >>> from infer_advisor.hardware import resolve_hardware
    >>> hw = resolve_hardware("H100-80GB:8x2")
    >>> hw.total_gpus, hw.gpu.tflops["bf16"]
    (16, 989.4)

``auto`` probes this machine through NVML; without a driver it says so in one note and describes
the CPU instead (``kind='cpu'``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import UnknownGPUError
from .catalog import GB, GPUEntry, catalog, match_probed_name, suggest_names
from .facts import CPUInfo, FigureSource, GPUInfo, HardwareFacts
from .spec import parse_spec

if TYPE_CHECKING:  # the probe is imported when this machine is probed (`--gpu auto`), not for a named GPU
    from .probe import DeviceRecord, ProbeResult

# Data moved per memory clock per pin: 2. DRAM transfers on both clock edges (DDR); NVML's
# "max memory clock" for HBM2/HBM3 and for GDDR6/6X/7 is the clock that yields the datasheet
# figure with this factor (A100-80GB: 5120 bit x 1593 MHz x 2 / 8 = 2039 GB/s, the datasheet's;
# RTX 4090: 384 bit x 10501 MHz x 2 / 8 = 1008 GB/s).
DDR_FACTOR = 2
BITS_PER_BYTE = 8
MB = 10**6  # NVML's "MBps" link speeds are decimal megabytes per second


def resolve_hardware(spec: str = "auto", *, probe: Callable[[], ProbeResult] | None = None) -> HardwareFacts:
    """What the plan runs on.

        >>> resolve_hardware("a100:4").gpu.name
        'A100-80GB'
        >>> resolve_hardware("cpu").kind
        'cpu'

    Args:
        spec: ``auto`` (probe this machine), ``cpu``, or ``NAME[:COUNT][xNODES]`` with a catalog name
            or alias (case-insensitive), e.g. ``H100-80GB:8x2``, ``rtx-4090``, ``T4``.
        probe: the NVML probe to use for ``auto`` (tests pass recorded results); default
            :func:`probe_gpus` (NVML, then amd-smi / rocm-smi).

    Raises:
        HardwareSpecError: bad syntax or impossible counts. UnknownGPUError: name not in the catalog.
    """
    parsed = parse_spec(spec)
    if parsed.kind == "auto":
        return facts_from_probe((probe or probe_gpus)())
    if parsed.kind == "cpu":
        return HardwareFacts(kind="cpu", cpu=probe_cpu(), source="probe", spec="cpu")
    notes: list[str] = []
    if parsed.entry is not None:  # a GPU the user described: every figure is theirs
        entry = parsed.entry
        info = entry.to_info().model_copy(
            update={"source": "spec", "figure_sources": dict.fromkeys(entry.to_info().figure_sources, "spec")}
        )
        source = "spec"
        notes.append(f"{entry.name} is described by the --gpu spec ({entry.source}), not the catalog.")
    else:
        entry = next(e for e in catalog().gpus if e.name == parsed.name)
        info = entry.to_info()
        source = "catalog"
    if entry.unified_memory:
        notes.append(
            f"{entry.name} shares its {entry.memory_gib:g} GiB with the CPU and the OS: leave headroom "
            "(lower --gpu-memory-utilization) for what else runs on the machine."
        )
    canonical = entry.name + (f":{parsed.count}" if parsed.count != 1 or parsed.nodes != 1 else "")
    canonical += f"x{parsed.nodes}" if parsed.nodes != 1 else ""
    # From the validated catalog (or the user's validated spec) and the parsed counts: nothing left to validate.
    return HardwareFacts.model_construct(
        kind="gpu",
        gpus=[info.model_copy(deep=True) for _ in range(parsed.count)],
        nodes=parsed.nodes,
        source=source,
        spec=canonical,
        notes=notes,
    )


def probe_gpus() -> ProbeResult:
    """This machine's GPUs: NVML first, then (no NVIDIA GPU) the AMD seam, amd-smi / rocm-smi. Never raises."""
    from .probe import probe_nvml

    found = probe_nvml()
    if found.ok and found.devices:
        return found
    from .probe_amd import probe_amd

    amd = probe_amd()
    return amd if amd.ok else found.model_copy(update={"error": f"{found.error}; {amd.error}"})


def probe_cpu() -> CPUInfo:
    """Cores and RAM of this machine (psutil)."""
    import os

    import psutil

    vm = psutil.virtual_memory()
    name, simd = _cpuinfo()
    return CPUInfo(
        cores=psutil.cpu_count(logical=True) or os.cpu_count() or 1,
        physical_cores=psutil.cpu_count(logical=False),
        memory_bytes=int(vm.total),
        available_memory_bytes=int(vm.available),
        name=name,
        simd=simd,
    )


def _cpuinfo() -> tuple[str | None, str | None]:
    """(model name, widest vector extension: 'avx512', 'avx2' or None) from the first processor of /proc/cpuinfo,
    read once and only that far (the file repeats itself for every logical CPU)."""
    import platform

    name = flags = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for _, line in zip(range(4096), fh):
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key == "model name" and name is None:
                    name = value.strip() or None
                elif key == "flags" and flags is None:
                    flags = set(value.split())
                if name is not None and flags is not None:
                    break
    except OSError:
        pass
    simd = None if flags is None else ("avx512" if "avx512f" in flags else ("avx2" if "avx2" in flags else None))
    return name or platform.processor() or None, simd


def probed_bandwidth(record: DeviceRecord) -> float | None:
    """Peak DRAM bandwidth in bytes/s from bus width x max memory clock x DDR_FACTOR, or None."""
    if not record.memory_bus_width_bits or not record.max_memory_clock_mhz:
        return None
    return record.memory_bus_width_bits * record.max_memory_clock_mhz * 1e6 * DDR_FACTOR / BITS_PER_BYTE


def facts_from_probe(result: ProbeResult) -> HardwareFacts:
    """Turn a probe's raw records into facts; no GPU -> CPU facts with one note saying why."""
    if not result.ok or not result.devices:
        reason = result.error or "NVML found no GPU on this machine"
        return HardwareFacts(
            kind="cpu",
            cpu=probe_cpu(),
            source="probe",
            spec="auto",
            notes=[f"No GPU found ({reason}); describing this machine's CPU instead."],
            driver_version=result.driver_version,
        )
    first = result.devices[0].name
    same = [d for d in result.devices if d.name == first]
    notes: list[str] = []
    others = sorted({d.name for d in result.devices if d.name != first})
    if others:
        notes.append(
            f"Mixed GPU models on this host: using the {len(same)}x {first}; "
            f"ignoring {len(result.devices) - len(same)} other GPU(s) ({', '.join(others)})."
        )
    entry, how = match_probed_name(first)
    if entry is None:
        notes.append(
            f"No catalog entry matches '{first}': TFLOPS are unknown, memory and bandwidth are probed. "
            "Pass --gpu NAME (see `infer-advisor gpus`) if it is a catalog GPU under another name."
        )
    elif how == "prefix":
        notes.append(f"'{first}' is not in the catalog by that name; using the figures of '{entry.name}'.")
    gpus = [_gpu_from_record(r, entry, notes) for r in same]
    mig = [str(r.index) for r in same if r.mig_mode]
    if mig:
        notes.append(
            f"MIG is enabled on GPU {', '.join(mig)}: figures are whole-GPU; a MIG instance gets a slice "
            "of its memory and compute."
        )
    return HardwareFacts(
        kind="gpu", gpus=gpus, source="probe", spec="auto", notes=notes, driver_version=result.driver_version
    )


def _gpu_from_record(record: DeviceRecord, entry: GPUEntry | None, notes: list[str]) -> GPUInfo:
    base = entry.to_info() if entry is not None else None
    sources: dict[str, FigureSource] = {}

    def pick(field: str, probed, fallback):  # noqa: ANN001, ANN202
        if probed is not None:
            sources[field] = "probe"
            return probed
        if fallback is not None:
            sources[field] = "catalog"
        return fallback

    cc = record.cuda_compute_capability
    bandwidth = pick(
        "memory_bandwidth_bytes_per_s", probed_bandwidth(record), base and base.memory_bandwidth_bytes_per_s
    )
    if bandwidth is None:
        raise UnknownGPUError(record.name, suggest_names(record.name))
    link_kind, link_bw = _probed_link(record)
    if link_kind is not None:
        sources["interconnect"] = "probe"
    interconnect = link_kind or (base.interconnect if base else "pcie")
    link_bw = pick("interconnect_bandwidth_bytes_per_s", link_bw, base and base.interconnect_bandwidth_bytes_per_s)
    if link_bw is None:
        gen3_x16 = catalog().pcie_gb_s(3, 16)
        notes.append(f"GPU {record.index}: link speed unknown; assuming PCIe 3.0 x16.")
        link_bw = gen3_x16 * GB
    if base is not None:
        sources["tflops"] = "catalog"
    usable, usable_source = probed_usable_memory(record, entry)
    sources["usable_memory_bytes"] = "probe"
    return GPUInfo(
        name=entry.name if entry is not None else record.name,
        vendor=entry.vendor if entry is not None else record.vendor,
        gfx_arch=record.gfx_arch or (base.gfx_arch if base else None),
        memory_bytes=pick("memory_bytes", record.memory_total_bytes, None),
        free_memory_bytes=record.memory_free_bytes,
        driver_memory_bytes=record.memory_total_bytes,
        usable_memory_bytes=usable,
        usable_memory_source=usable_source,
        compute_capability=pick(
            "compute_capability", float(f"{cc[0]}.{cc[1]}") if cc else None, base and base.compute_capability
        )
        or 0.0,
        memory_bandwidth_bytes_per_s=bandwidth,
        tflops=dict(base.tflops) if base else {},
        sm_clock_mhz=pick("sm_clock_mhz", record.max_sm_clock_mhz, None),
        interconnect=interconnect,
        interconnect_bandwidth_bytes_per_s=link_bw,
        mig_enabled=record.mig_mode,
        source="probe",
        figure_sources=sources,
        probed_name=record.name,
        aliases=list(base.aliases) if base else [],
        memory_type=base.memory_type if base else None,
        nvlink_active_links=record.nvlink_active_links,
        catalog_source=base.catalog_source if base else None,
        catalog_notes=base.catalog_notes if base else None,
    )


def probed_usable_memory(record: DeviceRecord, entry: GPUEntry | None) -> tuple[int, str]:
    """What CUDA will give a process on this device: the NVML total minus the driver's reserve.

    The reserve is the catalog entry's own (its NVML and CUDA totals), else the catalog default, so a
    probed GPU and the same GPU named with --gpu budget the same bytes.
    """
    from .catalog import MIB

    if record.vendor == "amd":  # HIP keeps no driver reserve out of the total (gpus.yaml MI300X cuda_memory_source)
        return record.memory_total_bytes, "probe: amd-smi/rocm-smi VRAM total (HIP keeps no reserve out of it)"
    reserve = entry.cuda_reserve_bytes() if entry is not None else catalog().cuda_reserve_mib * MIB
    whose = f"{entry.name}'s" if entry is not None and entry.driver_memory_mib and entry.cuda_memory_gib else "the catalog's default"
    return max(record.memory_total_bytes - reserve, 0), (
        f"probe: NVML total {record.memory_total_bytes / MIB:.0f} MiB minus {whose} CUDA reserve of {reserve / MIB:.0f} MiB"
    )


def _probed_link(record: DeviceRecord) -> tuple[str | None, float | None]:
    """('nvlink', bytes/s) from active links x per-link speed, ('pcie', bytes/s) from the PCIe link, or Nones."""
    cat = catalog()
    if record.nvlink_active_links:
        if record.nvlink_speed_mbps:  # the driver's own per-link rate (what `nvidia-smi nvlink -s` prints)
            return "nvlink", record.nvlink_active_links * record.nvlink_speed_mbps * MB
        per_link = cat.nvlink_gb_s(record.nvlink_version)
        return "nvlink", (record.nvlink_active_links * per_link * GB if per_link else None)
    pcie = cat.pcie_gb_s(record.pcie_max_generation, record.pcie_max_width)
    if pcie is not None:
        return "pcie", pcie * GB
    if record.nvlink_active_links == 0:
        return "pcie", None
    return None, None
