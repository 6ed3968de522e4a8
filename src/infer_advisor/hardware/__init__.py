"""Hardware facts: what the plan runs on, probed (NVML, psutil) or named from the GPU catalog.

    >>> from infer_advisor.hardware import resolve_hardware
    >>> resolve_hardware("T4:2").gpu.memory_bytes
    17179869184

One entry point, :func:`resolve_hardware`; :func:`gpu_catalog` and :func:`lookup_gpu` read the
catalog (``data/gpus.yaml``); :func:`~infer_advisor.hardware.probe.probe_nvml` is the only code that
talks to the NVIDIA driver.
"""

from __future__ import annotations

from .catalog import gpu_catalog, lookup_gpu
from .facts import CPUInfo, GPUInfo, HardwareFacts
from .resolve import resolve_hardware
from .spec import HardwareSpec, parse_spec

__all__ = [
    "resolve_hardware",
    "HardwareFacts",
    "GPUInfo",
    "CPUInfo",
    "gpu_catalog",
    "lookup_gpu",
    "probe_nvml",
    "ProbeResult",
    "DeviceRecord",
    "parse_spec",
    "HardwareSpec",
]


def __getattr__(name: str):
    if name in ("DeviceRecord", "ProbeResult", "probe_nvml"):  # the NVML probe, imported when asked for
        from . import probe

        return getattr(probe, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
