"""vLLM out of memory while loading the weights, and an out of memory of unknown phase with GPUs idle: the edits that
reduce the weights per GPU go first (docfix15, retrospective: batch 12's sf229 and sf239).

For the doctor's diagnosis ``diag`` of a start-up log ``text`` (tests/doctor/test_doctor_docfix15.py runs sf229's)::

    weights_first(diag, text)   # diag.edits reordered in place; nothing where it does not apply

Read at vLLM main (vllm/model_executor/model_loader/base_loader.py ``BaseModelLoader.load_model``: the weights are
loaded, then ``process_weights_after_loading`` runs each quantization method's post-processing, e.g.
``marlin_utils_fp4.prepare_moe_mxfp4_layer_for_marlin`` whose ``_repack_marlin_experts`` allocates the repacked copy
with ``torch.empty`` beside the original; v1/worker/gpu_model_runner.py ``load_model`` then logs "Model loading took
X GiB"). Nothing of the KV cache, the profile run or CUDA graphs exists yet at that point, so ``--enforce-eager``,
``--gpu-memory-utilization``, ``--max-model-len`` and ``--kv-cache-dtype`` free nothing there: only fewer bytes of weights
per GPU do: more GPUs (``--tensor-parallel-size`` up to the GPUs present), weights kept in host memory
(``--cpu-offload-gb``, per GPU, vLLM's UVA offloader), or a smaller (quantized) checkpoint.

Where the phase is not shown at all (a bare torch message) and the machine has GPUs the run does not use, the larger TP
on them goes first: every per-GPU term (weights, KV cache, activations, CUDA graphs) shrinks with it, while eager mode,
a utilization or a context each frees one term only. None of these is decided (``starts`` None).
"""

from __future__ import annotations

import math

from .edits import Edit, undecided_edit
from ..units import GIB

_TP = "--tensor-parallel-size"


def _tp_edit(n: int, tp: int, pp: int, count: int, why: str) -> Edit:
    return undecided_edit(f"{_TP} {n}", [_TP, str(n)], f"{n * pp} of the {count} GPUs present instead of {tp * pp}", 0.1,
                          f"{why}; each GPU then holds 1/{n} of the weights instead of 1/{tp}", gpus_needed=n * pp)


def offload_gib(excess_bytes: float) -> int:
    """vLLM's --cpu-offload-gb (whole GiB per GPU, at least 1) that moves ``excess_bytes`` of weights off each GPU."""
    return max(math.ceil(excess_bytes / GIB), 1)


def offload_edit(n: int, rank: float, why: str) -> Edit:
    """The one --cpu-offload-gb edit (vllm/config.py ``CacheConfig.cpu_offload_gb``: "the space in GiB to offload to CPU,
    per GPU"), sized by the caller with :func:`offload_gib`; not decided."""
    return undecided_edit(f"--cpu-offload-gb {n}", ["--cpu-offload-gb", str(n)], f"{n} GiB of weights per GPU read from host memory "
                          "over PCIe at every step (much slower decoding)", rank, why)


def _offload_edit(error) -> Edit:
    asked = error.figures.get("requested_bytes") if error is not None else None
    return offload_edit(offload_gib(asked or 0), 0.3, "vLLM keeps that many GiB of each GPU's weights in pinned host memory (UVA "
                        "offload), so the GPU holds that much less while loading; at least the failed allocation ("
                        f"{(asked or GIB) / GIB:,.2f} GiB); how much more the rest of the load needs is not printed")


def weights_first(diag, text: str, tp_stated: bool = False) -> None:
    """vLLM only (its flags): a load-phase OOM gets the weight edits alone; an unknown-phase OOM with idle GPUs gets the
    larger TP first. ``diag.tp`` is the run's GPUs (TP x PP), ``diag.gpu_count`` the machine's where known; the spare GPUs
    count only where the run's TP is stated (``tp_stated``: the log, --tp or a command) or its worker names show it: an
    unstated one may already be every GPU."""
    from .first_try import after_budget
    from .hardware_rank import present_tp
    from .sglang_load import checkpoint_edit
    from ..engines.startup_log_vllm import worker_ranks

    error, count = diag.error, diag.gpu_count
    if error is None or diag.engine_source.startswith("not named") or any(e.starts for e in diag.edits):
        return
    pp = max(diag.pp or 1, 1)
    tp = max((diag.tp or 1) // pp, 1)
    bigger = present_tp("vllm", max(count // pp, 1)) if count else None  # the largest power-of-two TP whose TP x PP fits
    # sizes read from worker names are lower bounds (a "Worker_PP1_TP2" run may be TP 4): spare GPUs only at twice them
    shown = any(worker_ranks(text))
    spare = bigger is not None and (tp_stated or shown) and (bigger >= 2 * tp if shown else bigger > tp)
    if error.kind == "cuda_oom_load":
        edits = [_tp_edit(bigger, tp, pp, count, f"the weights ran out while loading, before any KV cache, profile run or CUDA "
                          f"graph; the machine has {count} GPUs and the run uses {tp * pp}")] if spare else []
        if count is None or not (tp_stated or shown):  # GPUs present or the run's TP not known: twice the run's, after the rest
            edits.append(_tp_edit(2 * tp, tp, pp, 2 * tp * pp, "the weights ran out while loading; whether the machine has the GPUs "
                                  "is not known (pass --gpus)").model_copy(update={"cost_rank": 0.6}))
        diag.edits = edits + [_offload_edit(error), checkpoint_edit(
            "the weights (and their post-load processing) are what ran out; no memory fraction, context, KV type or eager mode "
            "frees them", decided="not decided")]
        diag.notes.append("The out of memory is in the weights' load (before the KV cache, the profile run and CUDA graphs): eager "
                          "mode, a utilization, a context or a KV type free nothing there; only fewer bytes of weights per GPU do.")
    elif error.kind == "cuda_oom" and spare and not after_budget(error):
        edit = _tp_edit(bigger, tp, pp, count, f"the phase is not shown and the machine has {count} GPUs while the run uses {tp * pp}: "
                        "every per-GPU term (weights, KV cache, activations, CUDA graphs) shrinks with more of them")
        diag.edits = [edit] + [e for e in diag.edits if not (e.argv[:1] == [_TP])]
