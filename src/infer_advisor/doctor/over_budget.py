"""A vLLM out of memory whose phase is not shown, with PyTorch holding more than the budget and the CUDA graphs could
(docfix21, retrospective: batch 18's sf334, "139.21 GiB is allocated by PyTorch" of 139.72 GiB, where the first edit was
``--enforce-eager``).

vLLM loads the weights and runs the profile before it sizes the KV cache inside the budget ``utilization x total``
(V1 gpu_worker.determine_available_memory: ``requested_memory - non_kv_cache_memory``; V0
worker.determine_num_available_blocks), and captures CUDA graphs only after the KV cache is allocated (0.8-0.19:
gpu_worker.compile_or_warm_up_model after initialize_from_config; the engine profile's ``cuda_graphs_in_budget``). So
after the KV cache exists, what PyTorch holds is at most the budget plus the graph pool (the engine profile's
``cuda_graph_bytes``, outside the budget where graphs come after it). Torch's message prints "Of the allocated memory X
GiB is allocated by PyTorch": X over that ceiling (at the stated utilization, else vLLM's default 0.90) was allocated
before the KV cache was sized, by the weights' load (or its post-load processing) or the profile run; CUDA graphs come
after it (so ``--enforce-eager`` frees nothing there) and the utilization bounds neither (only the KV cache is sized
from it), so those edits are left out, and fewer weights per GPU go first (more GPUs, a smaller checkpoint), the other
edits after them. None is decided.
"""

from __future__ import annotations

import re

from ..units import GIB, MIB

_TORCH_ALLOCATED = re.compile(r"Of the allocated memory (\d+(?:\.\d+)?) (GiB|MiB) is allocated by PyTorch")


def over_budget(diag, text: str) -> bool:
    """True (with a note) where a phase-less vLLM OOM shows PyTorch holding more than the budget plus the graph pool."""
    from ..engines.memory import memory_profile
    from .budget_floor import DEFAULT_UTILIZATION

    error = diag.error
    m = _TORCH_ALLOCATED.search(text[:2_000_000])
    total = error.figures.get("total_bytes") if error is not None else None
    if error is None or error.kind != "cuda_oom" or not (m and total):
        return False
    held = float(m.group(1)) * (GIB if m.group(2) == "GiB" else MIB)
    u = diag.gpu_memory_utilization or DEFAULT_UTILIZATION
    profile = memory_profile("vllm", diag.engine_version)
    graphs = 0.0 if profile.cuda_graphs_in_budget else float(profile.cuda_graph_bytes)
    ceiling = u * total + graphs
    if held <= ceiling:
        return False
    diag.notes.append(f"PyTorch holds {held / GIB:,.2f} GiB, over the budget {u:.2f} x {total / GIB:,.2f} GiB plus the CUDA-graph pool "
                      f"({graphs / GIB:,.2f} GiB, engine profile) that is all vLLM holds once the KV cache is sized: this ran out before "
                      "the KV cache was sized (the weights' load or the profile run), where eager mode and the utilization free nothing.")
    return True


def _eager_or_lower(edit, u: float) -> bool:
    argv = edit.argv
    return argv[:1] == ["--enforce-eager"] or (argv[:1] == ["--gpu-memory-utilization"] and len(argv) > 1 and float(argv[1]) < u)


def over_budget_first(diag, text: str) -> None:
    """vLLM: where :func:`over_budget`, leave out eager mode and a lower utilization; fewer weights per GPU first."""
    from .budget_floor import DEFAULT_UTILIZATION
    from .hardware_rank import present_tp
    from .load_oom import _tp_edit
    from .sglang_load import checkpoint_edit

    if any(e.starts for e in diag.edits) or diag.engine_source.startswith("not named") or not over_budget(diag, text):
        return
    u = diag.gpu_memory_utilization or DEFAULT_UTILIZATION
    pp = max(diag.pp or 1, 1)
    tp = max((diag.tp or 1) // pp, 1)
    kept = [e for e in diag.edits if not _eager_or_lower(e, u)]
    more = [] if any(e.argv[:1] == ["--tensor-parallel-size"] for e in kept) else [
        _tp_edit(present_tp("vllm", diag.gpu_count // pp), tp, pp, diag.gpu_count, "PyTorch held more than the budget before the "
                 f"KV cache; the machine has {diag.gpu_count} GPUs") if diag.gpu_count and present_tp("vllm", diag.gpu_count // pp) > tp
        else _tp_edit(2 * tp, tp, pp, 2 * tp * pp, "PyTorch held more than the budget before the KV cache; whether the machine has "
                      "the GPUs is not known (pass --gpus)")]
    diag.edits = more + kept + [checkpoint_edit("PyTorch held more than the budget before the KV cache was sized: the weights (or "
                                                "the profile run beside them) are what ran out", decided="not decided")]
