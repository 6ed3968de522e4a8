"""vLLM V1's free-memory start check: which edits touch it, and when freeing the memory is the first edit.

docfix16 (retrospective, batch 13's sf260, sf261, sf262). vLLM V1's worker checks, before it loads anything,
``gpu_memory_utilization x total <= free memory at start`` and otherwise raises "Free memory on device ... is less
than desired GPU memory utilization ..." (vllm/v1/worker/gpu_worker.py ``init_device``; vllm/v1/worker/utils.py
``request_memory`` in later releases: ``requested_memory = total * gpu_memory_utilization``, compared with
``init_snapshot.free_memory``). Nothing else enters that comparison: a KV-cache dtype, eager mode, a shorter context,
fewer sequences or more GPUs (each GPU makes the same check) leave it failing. Only a utilization at or below
``free / total``, or memory freed on the device, passes it.

Where other processes hold more than half the GPU (``free < total / 2``: sf260's 1.53 of 22.05 GiB, sf262's 4.51), the
utilization that passes the check leaves a budget a fraction of what was asked (sf260: 0.06, 1.32 GiB, in which no
model with its activation peak and one KV block is known to fit): the first edit is to free the memory a previous
process holds (the thread's own fix in sf262: "flush the previous tests' GPU memory"). Where the model is not known,
the utilization under the free memory passes the start check only: whether its budget holds the model is not decided.
"""

from __future__ import annotations

from .edits import Edit
from ..units import GIB

# "free << total": other processes hold more than half the GPU, so the utilization that passes the check keeps less than
# half of the device for the engine (the rule's reading of "most of the memory is someone else's"; not fitted to a row).
HELD_MAJORITY = 0.5
UTILIZATION_FLAG = "--gpu-memory-utilization"


def free_action(error) -> Edit:
    """The action that keeps the asked budget: free what holds the device (the doctor's one free-the-GPU edit, ranked
    first and said against V1's start check)."""
    from .first_try import free_gpu

    base = free_gpu(error)
    return base.model_copy(update={
        "change": f"{base.change}: free the memory a previous process holds", "cost_rank": 0.0, "keeps_asked_budget": True,
        "cost": "stop what holds it (nvidia-smi lists it: a previous server, test or stage) or start on another GPU; keeps "
                f"the asked budget of {error.figures['gpu_memory_utilization']:.2f} of the GPU",
        "basis": "vLLM V1's start check is utilization x total <= free at start (gpu_worker.init_device): freeing the "
                 "memory other processes hold passes it at the asked utilization"})


def _touches_check(e: Edit, free_share: float) -> bool:
    return (e.argv[:1] == [UTILIZATION_FLAG] and len(e.argv) > 1 and float(e.argv[1]) <= free_share + 1e-9) or not e.argv


def held_memory_first(diag) -> None:
    """For V1's free-memory start check: edits that do not touch the check do not start; a utilization under the free
    memory without the model passes the check only where the budget is most of the GPU; freeing the memory is offered,
    first where other processes hold more than half the GPU."""
    error = diag.error
    if error is None or error.kind != "free_memory_below_utilization":  # vLLM only (its passes, engine_passes)
        return
    free, total = error.figures["free_bytes"], error.figures["total_bytes"]
    free_share, held_most = free / total, free < HELD_MAJORITY * total
    out = []
    for e in diag.edits:
        if not e.argv:  # an earlier "free the GPU" action: replaced by the one below
            continue
        if not _touches_check(e, free_share):
            e = e.model_copy(update={"starts": False, "confidence": "engine_figures", "cost": f"{e.cost}; does not touch vLLM V1's start "
                                     "check (utilization x total <= free at start), which fails as before"})
        elif held_most and not diag.memory_model and e.starts:
            budget = float(e.argv[1]) * total / GIB
            e = e.model_copy(update={"starts": None, "confidence": "engine_advice", "cost": f"{e.cost}; passes the start check only: "
                                     f"whether {budget:.2f} GiB holds the weights, the activation peak and one KV block needs the model"})
        out.append(e)
    action = free_action(error)
    diag.edits = [action] + out if held_most else out + [action]
