"""vLLM at a utilization that leaves no room for its CUDA graphs: the KV edits that keep the utilization go with eager
mode (docfix15, retrospective: batch 12's sf237, gemma-3-27b AWQ at 0.98 on a 22 GiB card, whose next run at 0.98 and a
128-token context passed the KV check and failed capturing CUDA graphs: "capture_end() ... CUDA error: out of memory").

For the doctor's diagnosis ``diag`` of a start-up log ``text`` (tests/doctor/test_doctor_docfix15.py runs sf237's)::

    graph_room_first(diag, text)   # diag.edits reordered in place; nothing where the room suffices

Read at the logged versions: V0 (worker.py ``determine_num_available_blocks`` sizes the KV cache as total x utilization
less the profiled peak; ``_warm_up_model`` -> ``model_runner.capture_model`` captures the graphs afterwards) and V1
before 0.20 (v1/worker/gpu_worker.py ``determine_available_memory`` likewise, then ``compile_or_warm_up_model`` ->
gpu_model_runner ``capture_model`` after ``initialize_from_config`` allocated the KV cache): the graph pool is not in the
profiled budget, so it must fit in total x (1 - utilization) beside the CUDA context where the profile leaves that
outside too (data/engine_memory.yaml ``cuda_graphs_in_budget``, ``context_in_budget``, and the typical pool
``cuda_graph_bytes``, per version range). From 0.20 the profiler counts the graphs in the budget: nothing is done here.

Where that room is below the version's typical pool and the run captures graphs, an edit that passes the KV check at
the same utilization (a context, a KV type) would fail next at the capture: it is offered with ``--enforce-eager``
added (no capture at all), and a lower utilization that leaves the pool its room is offered after it (not decided: the
KV tokens it leaves are not printed).
"""

from __future__ import annotations

import math

from .edits import Edit, undecided_edit
from ..units import GIB

_KV_KINDS = ("max_len_exceeds_kv", "kv_needed_exceeds_available", "no_cache_blocks", "kv_cache_check")
_KEEPS_GRAPHS = ("--gpu-memory-utilization", "--enforce-eager", "--tensor-parallel-size", "--pipeline-parallel-size")


def _room(diag) -> tuple[float, float, float, str] | None:
    """(room outside the budget, the typical graph pool, the CUDA context outside, the profile's label); None where the
    version counts the graphs in its budget or a figure is missing."""
    from ..errors import InferAdvisorError
    from ..engines.memory import memory_profile

    u, total = diag.gpu_memory_utilization, diag.gpu_memory_bytes
    if not (u and total):
        return None
    try:
        prof = memory_profile("vllm", diag.engine_version)
    except InferAdvisorError:
        return None
    if prof.cuda_graphs_in_budget or not prof.cuda_graph_bytes:
        return None
    context = 0.0 if prof.context_in_budget else float(prof.cuda_context_bytes)
    return total * (1 - u) - context, float(prof.cuda_graph_bytes), context, prof.label


def graph_room_first(diag, text: str) -> None:
    from .refusal_edits import in_effect

    if diag.error is None or diag.error.kind not in _KV_KINDS or not diag.edits:  # vLLM only (its passes, engine_passes)
        return
    if in_effect(text, [_eager_probe()])[1]:  # the run is already eager: it captures nothing
        return
    found = _room(diag)
    if found is None or found[0] >= found[1]:
        return
    room, pool, context, label = found
    u, total = diag.gpu_memory_utilization, diag.gpu_memory_bytes
    why = (f"at utilization {u:.2f} only {max(room, 0) / GIB:.2f} GiB of the GPU's {total / GIB:.2f} GiB is left outside the budget "
           f"(beside {context / GIB:.2f} GiB of CUDA context) for the CUDA-graph pool, which {label} captures after sizing the KV "
           f"cache, outside it (typically {pool / GIB:.2f} GiB)")
    eager = [e.model_copy(update={"change": f"{e.change} --enforce-eager", "argv": [*e.argv, "--enforce-eager"],
                                  "cost": f"{e.cost}; and no CUDA graphs (slower decoding at small batches): {why}",
                                  "basis": f"{e.basis or ''}; with eager mode nothing is captured after the KV check".lstrip("; ")})
             for e in diag.edits if e.starts and e.argv and not any(a in _KEEPS_GRAPHS for a in e.argv)]
    if not eager:
        return
    lower = math.floor((1 - (pool + context) / total) * 100) / 100
    later = [e.model_copy(update={"starts": None, "basis": f"{e.basis or ''}; the KV check passes, but the CUDA-graph capture after it "
                                  f"may not: {why}".lstrip("; ")}) if e.starts and not any(a in _KEEPS_GRAPHS for a in e.argv) else e
             for e in diag.edits]
    util = [undecided_edit(f"--gpu-memory-utilization {lower:.2f} (with a shorter context)", ["--gpu-memory-utilization", f"{lower:.2f}"],
                 f"{u:.2f} -> {lower:.2f}: {(u - lower) * total / GIB:.2f} GiB less for the KV cache, so a context shorter than the "
                 "first edit's (how much shorter is not printed)", 0.2, confidence="engine_advice",
                 basis=f"leaves {pool / GIB:.2f} GiB (the version's typical pool) for the CUDA graphs: {why}")] if 0 < lower < u else []
    diag.edits = eager + util + later
    diag.notes.append(f"CUDA graphs: {why}; an edit that passes the KV check at {u:.2f} would fail next at the capture, so it is "
                      "offered with --enforce-eager first.")


def _eager_probe() -> Edit:
    return undecided_edit("--enforce-eager", ["--enforce-eager"], "", 0, confidence=None)
