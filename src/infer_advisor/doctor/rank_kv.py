"""vLLM V1 ranks of one engine that print different KV-cache sizes (docfix18, retrospective: batch 15's sf288, "Available
KV cache memory: -3.86 GiB" on Worker_TP1 and 9.90 GiB on Worker_TP0 of one TP-2 engine, answered with a utilization step).

For the doctor's diagnosis ``diag`` of a start-up log ``text`` (tests/doctor/test_doctor_docfix18.py runs sf288's)::

    rank_gap_first(diag, text)   # diag.edits: the rank's own memory first, where the ranks' figures differ

Read at vLLM (v1/worker/gpu_worker.py ``Worker.determine_available_memory``): every rank logs ``"Available KV cache
memory: %.2f GiB"`` = ``requested_memory - profile_result.non_kv_cache_memory``, where ``requested_memory`` is the GPU's
total x ``gpu_memory_utilization`` (``init_device``), the same on every rank of one engine on one GPU type, and the
non-KV memory is the weights (split evenly under tensor parallelism), the profile run's torch peak and the memory
allocated outside torch during it (``memory_profiling``). Two ranks that differ by D GiB therefore hold D GiB more
non-KV memory on one of them: another process allocating on that GPU during the profile, or a kernel library's
allocation on that rank; a utilization step adds the same to every rank and leaves the gap. So where the figures of
the ranks differ by more than the lowest one is below zero, the first edit names that rank's memory (not decided), and
the utilization step, which covers the deficit only on a card whose 0.05 is larger than it, follows.
"""

from __future__ import annotations

import re

from .edits import undecided_edit

_RANK_KV = re.compile(r"\((?:Worker_(?:[DP]P\d+_)*TP(\d{1,3})|VllmWorker rank=(\d{1,3}))\b[^)\n]{0,40}\)[^\n]{0,120}?"
                      r"Available KV cache memory: (-?\d+(?:\.\d+)?) GiB")


def rank_figures(text: str) -> dict[int, float]:
    """Each rank's printed KV memory (GiB), by its worker name (empty: fewer than two ranks printed one)."""
    out = {}
    for m in _RANK_KV.finditer(text[:2_000_000]):
        out.setdefault(int(m.group(1) or m.group(2)), float(m.group(3)))
    return out if len(out) >= 2 else {}


def rank_gap_first(diag, text: str) -> None:
    """vLLM only: where one rank prints a negative KV size and the gap to another exceeds the deficit, that rank first."""
    if any(e.starts for e in diag.edits):  # vLLM only (its passes, engine_passes)
        return
    figs = rank_figures(text)
    if not figs:
        return
    low, high = min(figs, key=figs.get), max(figs, key=figs.get)
    gap = figs[high] - figs[low]
    if not (figs[low] < 0 < figs[high] and gap > -figs[low]):
        return
    edit = undecided_edit(
        f"find what rank {low}'s GPU holds beyond rank {high}'s ({gap:.2f} GiB more outside the KV cache): another process on it "
        "(nvidia-smi), or a library allocating on that rank in the profile run (an attention backend's or communication "
        "library's workspace: its version against the one the vLLM release pins)", [], "none until found; a utilization step would raise every rank's budget",
        0.02, basis=f"the ranks print {figs[low]:.2f} and {figs[high]:.2f} GiB of KV memory: one engine's budget is the same on every "
        "rank (total x gpu_memory_utilization, v1/worker/gpu_worker.py), so the gap is non-KV memory on one rank; not decided",
        confidence="engine_advice")
    diag.edits = [edit] + diag.edits
    diag.notes.append(f"Ranks of one engine print different KV sizes ({', '.join(f'TP{r} {v:.2f}' for r, v in sorted(figs.items()))} "
                      "GiB): the budget is the same on each, so what differs is one rank's non-KV memory.")
