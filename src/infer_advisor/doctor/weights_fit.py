"""Weights alone larger than one GPU: the tensor-parallel edit goes first (docfix14, retrospective: batch 11's sf225,
Llama-2-70B in fp16 on one 80 GB card; sf224, Llama-2-70B in bitsandbytes FP4 on one of eight A10G).

For the doctor's diagnosis ``diag`` of a start-up log ``text`` (tests/doctor/test_doctor_docfix14.py runs sf224's)::

    tp_first_when_weights_exceed(diag, text)   # diag.edits reordered, a note added; None when the weights fit

Where the model resolves in the catalog and the GPU's total memory is known (the torch message's "total capacity", the
log's or the catalog's), the checkpoint's weights per GPU at the run's tensor-parallel size are compared with that total
times vLLM's default budget share (0.90): when they are over it no setting of memory fraction, context, KV type or eager
mode frees them, so the engine's tensor-parallel flag at the smallest power of two that brings them under it is ranked
first. The edit stays **not decided** (``starts`` None, confidence ``first_try``): whether KV and activations then fit is
not printed, and our memory model's estimate is never counted as a start. Bytes per parameter: 2 (16-bit) unless the
text or the model name states a 4-bit (0.5) or 8-bit (1.0) format: the lower bound the stated format allows.
"""

from __future__ import annotations

import re

from .edits import undecided_edit
from ..units import GIB

BUDGET_SHARE = 0.90  # vLLM's default gpu_memory_utilization; the weights must leave room for more than themselves
_FOUR_BIT = re.compile(r"(?i)bitsandbytes[-_ ]?(?:fp4|nf4)|\b(?:awq|gptq|int4|nf4|fp4|w4a16|q4_\w+|4bit|4-bit)\b")
_EIGHT_BIT = re.compile(r"(?i)\bbitsandbytes\b|\b(?:fp8|int8|w8a8|w8a16|eetq|q8_0|8bit|8-bit)\b")
_TOTAL = re.compile(r"([\d.]+) GiB total capacity|total capac(?:i)?ty of ([\d.]+) GiB")


# docfix16 (sf264): the KV cache's dtype ("--kv-cache-dtype=fp8") and a commented-out flag say nothing of the weights' format
_NOT_WEIGHTS = re.compile(r"(?:--kv-cache-dtype|kv_cache_dtype|--cache-type-[kv]|OLLAMA_KV_CACHE_TYPE)[=\s:'\"]{1,4}\w+")


def _bytes_per_param(text: str, model: str) -> tuple[float, str]:
    from ..engines.startup_log import COMMENTED_FLAG

    for source in (_NOT_WEIGHTS.sub("", COMMENTED_FLAG.sub("", text[:200_000])), model):
        if _FOUR_BIT.search(source):
            return 0.5, "4-bit (stated)"
        if _EIGHT_BIT.search(source):
            return 1.0, "8-bit (stated)"
    return 2.0, "16-bit"


def total_bytes(diag, text: str) -> float | None:
    m = _TOTAL.search(text[:2_000_000])
    if m:
        return float(m.group(1) or m.group(2)) * GIB
    if diag.gpu_memory_bytes:
        return float(diag.gpu_memory_bytes)
    if diag.gpu:
        from ..errors import InferAdvisorError
        from ..hardware import resolve_hardware

        try:
            return float(resolve_hardware(diag.gpu).gpu.memory_bytes)
        except (InferAdvisorError, AttributeError):
            return None
    return None


def _weights(model: str) -> float | None:
    from ..errors import InferAdvisorError
    from ..estimate.weights import weights_bytes
    from ..model_facts import resolve_model

    try:
        return float(weights_bytes(resolve_model(model, source="catalog"), "none", "bfloat16"))
    except (InferAdvisorError, ValueError):
        return None


def tp_first_when_weights_exceed(diag, text: str, any_error: bool = False) -> None:
    """Rank the tensor-parallel edit first (replacing the one offered) where the weights per GPU exceed the card's budget;
    ``any_error`` (docfix22, budget_floor: weights over the whole GPU) for any start-up error, not only an out of memory."""
    from .engine_flags import engine_flags

    kind = diag.error.kind if diag.error is not None else ""
    if not (diag.model and (kind.startswith("cuda_oom") or any_error)) or diag.engine not in ("vllm", "sglang", "tgi"):
        return
    if any(e.starts for e in diag.edits):  # an edit the figures decide stays first
        return
    flag, total, weights16 = engine_flags(diag.engine).tp, total_bytes(diag, text), _weights(diag.model)
    if not (flag and total and weights16):
        return
    per_param, fmt = _bytes_per_param(text, diag.model)
    weights, tp = weights16 * per_param / 2, max(diag.tp or 1, 1)
    if weights / tp <= BUDGET_SHARE * total:
        return
    n = tp * 2
    while weights / n > BUDGET_SHARE * total and n < 64:
        n *= 2
    if diag.gpu_count is not None and n > diag.gpu_count:  # more GPUs than the machine has
        _checkpoint_first(diag, text, weights, fmt, total)
        return
    if diag.gpu_count:  # docfix16 (sf265): the GPUs present, never fewer (hardware_rank.shards_to_gpus_present)
        from .hardware_rank import present_tp

        n = max(n, present_tp(diag.engine, diag.gpu_count))
    edit = undecided_edit(f"{flag} {n}", [flag, str(n)], f"{n} GPUs instead of {tp}", 0.1, gpus_needed=n,
                          why=(f"the weights ({weights / GIB:,.1f} GiB, {fmt}, from the catalog's shapes) are over "
                       f"{BUDGET_SHARE:.2f} x the GPU's {total / GIB:,.2f} GiB at {tp} GPU(s); {n} bring them to {weights / n / GIB:,.1f} GiB "
                       "each; whether the KV cache and activations then fit is not printed"))
    rest = [e for e in diag.edits if not (e.argv and e.argv[0] == flag)]
    if diag.gpu_count is None and weights / tp <= total and not diag.engine_source.startswith("not named"):
        # docfix17 (sf271): no GPU count stated or logged, and the weights within the card's whole memory: one-GPU edits first
        from .single_gpu_weights import single_gpu_first

        diag.edits = single_gpu_first(diag, edit, rest, weights, fmt, total, BUDGET_SHARE)
        return
    diag.edits = [edit] + rest
    diag.notes.append(f"The weights alone ({weights / GIB:,.1f} GiB in {fmt}) are over one GPU's {total / GIB:,.2f} GiB at the run's "
                      f"{tp} GPU(s): no memory fraction, context, KV type or eager mode frees them, so {flag} {n} is ranked first.")


def _checkpoint_first(diag, text: str, weights: float, fmt: str, total: float) -> None:
    """docfix16 (retrospective, batch 13's sf244 on SGLang, sf264 on vLLM: Llama-4-Scout in bf16, 100 GiB per GPU at TP 2 on
    two 93 GiB H100 NVL): no TP on the GPUs present holds the weights, so a smaller (pre-quantized) checkpoint goes first.
    Online ``--quantization fp8`` is not it: vLLM's Fp8LinearMethod creates the weights in the model's dtype and quantizes
    them in ``process_weights_after_loading`` (model_executor/layers/quantization/fp8.py), so the load still holds 16-bit
    weights (sf264's reporter tried it: the same error)."""
    from .sglang_load import checkpoint_edit, sglang_weights_first

    if diag.engine == "sglang":
        sglang_weights_first(diag, text, over_gpu=True)
        return
    per_gpu = weights / max(diag.gpu_count or 1, 1)
    why = (f"the weights ({weights / GIB:,.1f} GiB, {fmt}) are {per_gpu / GIB:,.1f} GiB per GPU even over all {diag.gpu_count} GPUs "
           f"present, over {BUDGET_SHARE:.2f} x {total / GIB:,.2f} GiB; a pre-quantized checkpoint (FP8, 4-bit) has fewer bytes per "
           "GPU (online --quantization fp8 loads the 16-bit weights first)")
    diag.edits = [checkpoint_edit(why)] + [e for e in diag.edits if e.argv or "checkpoint" not in e.change]
    diag.notes.append(f"The weights alone ({weights / GIB:,.1f} GiB in {fmt}) are over the {diag.gpu_count} GPUs present "
                      f"({total / GIB:,.2f} GiB each): no setting of this checkpoint starts here, so a smaller checkpoint is ranked first.")
