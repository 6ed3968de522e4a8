"""Weights over one GPU where no GPU count is stated or logged (docfix17, retrospective: batch 14's sf271, Llama-3.1-8B in
bf16 on one 16 GB card, was offered --tensor-parallel-size 2 first though the thread names one GPU and no second).

For the doctor's diagnosis ``diag`` of a start-up log ``text`` and the edits it ranks
(tests/doctor/test_doctor_docfix17.py runs sf271's)::

    single_gpu_first(diag, tp_edit, rest, weights, fmt, total)   # [single-GPU weights edit, rest..., tp_edit]

Only where the weights are over vLLM's default budget but within the card's whole memory (just over: a part of them
off the GPU is a workable first try; weights several times a GPU, sf225's and sf242's, keep tensor parallelism first,
since such a run is not a one-GPU job), and the engine is named. A tensor-parallel edit needs GPUs nobody said are there, so it is marked "needs N GPUs" and ranked after the edits that
run on the one GPU: first the one that moves weights off it, vLLM's ``--cpu-offload-gb`` (vllm/config.py
``CacheConfig.cpu_offload_gb``, "the space in GiB to offload to CPU, per GPU"; the offloaded weights are streamed each
forward, vLLM's docs: "a virtual way to increase GPU memory size"), sized so the weights left on the GPU are at most half of
vLLM's default budget (the other half for activations, CUDA graphs and the KV cache: not decided, a first try; the half is
data/doctor_flags.yaml ``rules_of_thumb.on_gpu_share``, a rule of thumb, not the engine's; the edit is load_oom's one
``offload_edit``), or a
smaller (pre-quantized) checkpoint where the engine has no offload flag. Passing ``--gpus N`` ranks the TP edit by it.
"""

from __future__ import annotations

from .edits import Edit
from .engine_flags import rule_of_thumb
from .load_oom import offload_edit, offload_gib
from ..units import GIB

OFFLOAD_FIRST = (0, 5, 3)  # vLLM's first release with --cpu-offload-gb (PR #6496, merged 2024-07; the release is inferred)


def single_gpu_first(diag, tp_edit: Edit, rest: list[Edit], weights: float, fmt: str, total: float, budget_share: float) -> list[Edit]:
    """``budget_share``: vLLM's default utilization (weights_fit.BUDGET_SHARE), which the weights are over."""
    from .sglang_load import checkpoint_edit

    n = tp_edit.gpus_needed or 2
    tp_edit = tp_edit.model_copy(update={"cost": f"{tp_edit.cost}; needs {n} GPUs: the text states no GPU count (pass --gpus N)"})
    per_gpu = weights / max(diag.tp or 1, 1)
    if diag.engine == "vllm" and _has_offload(diag.engine_version):
        gib = offload_gib(per_gpu - rule_of_thumb("on_gpu_share") * budget_share * total)
        first = offload_edit(gib, 0.1, f"the weights ({weights / GIB:,.1f} GiB, {fmt}) are over {budget_share:.2f} x {total / GIB:,.2f} "
                             f"GiB; {gib} GiB off the GPU leaves {(per_gpu - gib * GIB) / GIB:,.1f} GiB of them on it")
    else:
        first = checkpoint_edit(f"the weights ({weights / GIB:,.1f} GiB, {fmt}) are over one GPU's {total / GIB:,.2f} GiB and no second "
                                "GPU is stated")
    diag.notes.append(f"The weights alone ({weights / GIB:,.1f} GiB in {fmt}) are over one GPU's {total / GIB:,.2f} GiB; no GPU count "
                      f"is stated, so the edits on one GPU go first and {tp_edit.change} (needs {n} GPUs) after them.")
    return [first] + [e for e in rest if e.change != first.change] + [tp_edit]


def _has_offload(version: str | None) -> bool:
    from ..engines.versions import version_key
    from .version import is_release

    return not is_release(version) or version_key(version) >= OFFLOAD_FIRST
