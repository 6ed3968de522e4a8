"""The AMD seam, beside NVML's (:mod:`.probe`): AMD GPUs as reported by ``amd-smi`` (ROCm 6+) or ``rocm-smi``.

Both tools print JSON; :func:`parse_amd_smi` and :func:`parse_rocm_smi` turn their output into the same raw
:class:`~.probe.ProbeResult` NVML gives, so :func:`~.resolve.facts_from_probe` treats an MI300X host like an H100 one.
:func:`probe_amd` runs the tools (bounded: a timeout and a size cap) and never raises; tests feed recorded output.

    >>> recorded_json = ('{"card0": {"Card Series": "AMD Instinct MI300X OAM", "VRAM Total Memory (B)": "205822885888",'
    ...                  ' "VRAM Total Used Memory (B)": "294912"}}')
    >>> parse_rocm_smi(recorded_json).devices[0].name
    'AMD Instinct MI300X OAM'
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

from .probe import DeviceRecord, ProbeResult

# amd-smi static: the ASIC (market name, gfx target) and the VRAM size (amd-smi docs, `amd-smi static --json`).
AMD_SMI = ["amd-smi", "static", "--asic", "--vram", "--json"]
# rocm-smi: product name (and GFX version) plus VRAM totals in bytes (rocm-smi docs, --showproductname --showmeminfo).
ROCM_SMI = ["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"]
_TIMEOUT_S = 20
_MAX_OUTPUT = 4 * 2**20  # bytes of tool output read at most
_UNITS = {"b": 1, "kb": 2**10, "mb": 2**20, "gb": 2**30, "kib": 2**10, "mib": 2**20, "gib": 2**30}

Runner = Callable[[list[str]], str | None]


def _run(argv: list[str]) -> str | None:
    """The tool's stdout, or None when it is missing, fails, hangs or prints too much."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        out = subprocess.run(argv, capture_output=True, timeout=_TIMEOUT_S, check=False)  # noqa: S603 - fixed argv
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0 or len(out.stdout) > _MAX_OUTPUT:
        return None
    return out.stdout.decode("utf-8", "replace")


def _size_bytes(value: Any) -> int | None:
    """amd-smi VRAM sizes: {"value": 196592, "unit": "MB"} (ROCm 6.1+) or "196592 MB" (6.0); amd-smi's MB are MiB."""
    if isinstance(value, dict):
        number, unit = value.get("value"), str(value.get("unit", "MB"))
    else:
        m = re.fullmatch(r"\s*([\d.]+)\s*([A-Za-z]*)\s*", str(value))
        if not m:
            return None
        number, unit = m.group(1), m.group(2) or "MB"
    try:
        return int(float(number) * _UNITS[unit.lower()])
    except (KeyError, TypeError, ValueError):
        return None


def parse_amd_smi(text: str) -> ProbeResult:
    """Devices from ``amd-smi static --asic --vram --json`` (a list of GPUs, or {"gpu_data": [...]} in newer builds)."""
    data = json.loads(text)
    gpus = data.get("gpu_data", []) if isinstance(data, dict) else data
    devices = []
    for i, gpu in enumerate(gpus):
        asic, vram = gpu.get("asic", {}), gpu.get("vram", {})
        size = _size_bytes(vram.get("size"))
        if size is None:
            continue
        devices.append(DeviceRecord(
            index=int(gpu.get("gpu", i)), name=str(asic.get("market_name", "AMD GPU")), memory_total_bytes=size,
            vendor="amd", gfx_arch=asic.get("target_graphics_version") or None,
        ))
    return ProbeResult(ok=bool(devices), devices=devices, error=None if devices else "amd-smi listed no GPU with a VRAM size")


def parse_rocm_smi(text: str) -> ProbeResult:
    """Devices from ``rocm-smi --showproductname --showmeminfo vram --json`` ({"card0": {...}, ...})."""
    data = json.loads(text)
    devices = []
    for key in sorted((k for k in data if re.fullmatch(r"card\d+", k)), key=lambda k: int(k[4:])):
        card = data[key]
        total = card.get("VRAM Total Memory (B)")
        if total is None:
            continue
        used = card.get("VRAM Total Used Memory (B)")
        devices.append(DeviceRecord(
            index=int(key[4:]), name=str(card.get("Card Series") or card.get("Card series") or "AMD GPU"),
            memory_total_bytes=int(total), memory_free_bytes=int(total) - int(used) if used is not None else None,
            vendor="amd", gfx_arch=card.get("GFX Version") or None,
        ))
    return ProbeResult(ok=bool(devices), devices=devices, error=None if devices else "rocm-smi listed no GPU with VRAM totals")


def probe_amd(run: Runner = _run) -> ProbeResult:
    """Ask amd-smi, then rocm-smi, about this machine's AMD GPUs. Never raises; INFER_ADVISOR_NO_NVML=1 (the switch
    that turns the GPU probe off for tests) skips it too."""
    from ..constants import nvml_disabled

    if nvml_disabled() and run is _run:
        return ProbeResult(ok=False, error="INFER_ADVISOR_NO_NVML=1 is set, so the AMD probe was skipped")
    for argv, parse in ((AMD_SMI, parse_amd_smi), (ROCM_SMI, parse_rocm_smi)):
        text = run(argv)
        if not text:
            continue
        try:
            result = parse(text)
        except (ValueError, TypeError, AttributeError) as err:
            return ProbeResult(ok=False, error=f"{argv[0]} printed output that is not its JSON: {type(err).__name__}")
        if result.ok:
            return result
    return ProbeResult(ok=False, error="no amd-smi or rocm-smi answered: no AMD GPU driver (ROCm) on this machine")
