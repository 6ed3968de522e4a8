"""Which GPU a start-up log ran on, when the user does not say: the log's own lines, marked inferred.

    >>> infer_gpu("... total_gpu_memory=23.58GiB ...", None)
    ('RTX-3090', "inferred from the log's total only: 'total_gpu_memory=23.58GiB' matches RTX-3090's total (23.58 GiB); also ...")

In order: a device name the engine or the user's paste prints (llama.cpp "Device 0: NVIDIA GeForce RTX 4090, compute
capability 8.9" / "using device CUDA0 (NVIDIA ...)", vLLM's "GPU 0: ...", torch's device name, an ``nvidia-smi`` table
row), matched to the catalog as a probed NVML name; else a total the engine printed (vLLM "total_gpu_memory=X GiB",
"Free memory on device (F/X GiB)", "total_memory=X GiB", torch's "total capacity of X GiB") matched to the catalog GPU
whose CUDA-visible total is within 1% (several GPUs share a total: the memory model needs only the total, the note
lists them, and says the name is a guess: docfix21). Every pattern is one ``re.search`` on bounded text without nested repetition.
"""

from __future__ import annotations

import re

from ..engines.startup_log import FREE_ON_DEVICE
from ..units import GIB

TOTAL_MATCH = 0.01  # a printed total within 1% of the catalog's CUDA-visible total names that GPU's memory
_NAMES = (
    re.compile(r"Device \d+: ([^,()\n|]{3,60}), compute capability"),
    re.compile(r"using device CUDA0 \(([^()\n|]{3,60})\)"),
    re.compile(r"GPU 0: ([^,()\n|]{3,60}?)(?: \(UUID|\n|$)", re.M),
    re.compile(r"\|\s+0\s+((?:NVIDIA|Tesla|Quadro) [^|\n]{3,40}?)\s{2,}"),
    re.compile(r"torch\.cuda\.get_device_name\(\)[^\n]{0,20}?((?:NVIDIA|Tesla) [^'\n]{3,40})"),
)
_TOTALS = (
    re.compile(r"total_gpu_memory[\s=(]+([\d.]+)\s*GiB"),
    re.compile(FREE_ON_DEVICE + r"[\d.]+/([\d.]+) GiB\)"),
    re.compile(r"total_memory=([\d.]+)GiB"),
    re.compile(r"total capac(?:i)?ty of ([\d.]+) GiB"),
)


# docfix21 (batch 18's sf334: "total capacity of 139.72 GiB" read as an H200 on a 141 GB H20, a card not in the catalog):
# a total names the memory, never the card; the memory model uses only the total, so it is used, and said to be a guess
_TOTAL_ONLY = ("; the total alone does not name the card (a GPU outside the catalog with this memory reads the same): "
               "the memory is used, the card's name is a guess")


def infer_gpu(text: str, name_in_log: str | None) -> tuple[str | None, str | None]:
    """(catalog GPU name, how it was inferred) from the log, or (None, None)."""
    from ..hardware.catalog import gpu_catalog, match_probed_name

    text = text[:2_000_000]
    found = (m.group(1).strip() for pattern in _NAMES for m in [pattern.search(text)] if m)
    for candidate in filter(None, [name_in_log, *found]):
        entry, how = match_probed_name(candidate)
        if entry is not None:
            return entry.name, f"inferred from the log's device name '{candidate[:60]}' ({how} catalog match)"
    for pattern in _TOTALS:
        m = pattern.search(text)
        if not m:
            continue
        total = float(m.group(1)) * GIB
        near = [g for g in gpu_catalog() if abs(g.budget_memory_bytes - total) <= TOTAL_MATCH * total]
        if near:
            best = min(near, key=lambda g: abs(g.budget_memory_bytes - total))
            others = ", ".join(g.name for g in near if g is not best)
            return best.name, (f"inferred from the log's total only: '{m.group(0)[:60]}' matches {best.name}'s total "
                               f"({best.budget_memory_bytes / GIB:.2f} GiB)" + (f"; also {others} (same memory)" if others else "")
                               + _TOTAL_ONLY)
    return None, None
