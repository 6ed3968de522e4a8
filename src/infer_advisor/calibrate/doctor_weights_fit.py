"""Weights alone larger than one GPU: the tensor-parallel edit goes first (docfix14, retrospective: batch 11's sf225,
Llama-2-70B in fp16 on one 80 GB card; sf224, Llama-2-70B in bitsandbytes FP4 on one of eight A10G).

    >>> tp_first_when_weights_exceed(diag, text)   # diag.edits reordered, a note added; None when the weights fit

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

from .doctor_edits import Edit

GIB = 2**30
BUDGET_SHARE = 0.90  # vLLM's default gpu_memory_utilization; the weights must leave room for more than themselves
_FOUR_BIT = re.compile(r"(?i)bitsandbytes[-_ ]?(?:fp4|nf4)|\b(?:awq|gptq|int4|nf4|fp4|w4a16|q4_\w+|4bit|4-bit)\b")
_EIGHT_BIT = re.compile(r"(?i)\bbitsandbytes\b|\b(?:fp8|int8|w8a8|w8a16|eetq|q8_0|8bit|8-bit)\b")
_TOTAL = re.compile(r"([\d.]+) GiB total capacity|total capac(?:i)?ty of ([\d.]+) GiB")


def _bytes_per_param(text: str, model: str) -> tuple[float, str]:
    for source in (text[:200_000], model):
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


def tp_first_when_weights_exceed(diag, text: str) -> None:
    """Rank the tensor-parallel edit first (replacing the one offered) where the weights per GPU exceed the card's budget."""
    from .doctor_engine_flags import engine_flags

    kind = diag.error.kind if diag.error is not None else ""
    if not (diag.model and kind.startswith("cuda_oom")) or diag.engine not in ("vllm", "sglang", "tgi"):
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
    if diag.gpu_count is not None and n > diag.gpu_count:
        if diag.engine == "sglang":  # docfix16 (sf244): no TP on the GPUs present holds them: a smaller checkpoint first
            from .doctor_sglang_load import sglang_weights_first

            sglang_weights_first(diag, text, over_gpu=True)
        return  # more GPUs than the machine has: the hardware ranking (nothing runs on these GPUs) stands
    if diag.gpu_count:  # docfix16 (sf265): the GPUs present, never fewer (doctor_hardware.shards_to_gpus_present)
        from .doctor_hardware import present_tp

        n = max(n, present_tp(diag.engine, diag.gpu_count))
    edit = Edit(change=f"{flag} {n}", argv=[flag, str(n)], starts=None, kv_cache_tokens=None, max_concurrency=None, max_model_len=0,
                cost=f"{n} GPUs instead of {tp}", cost_rank=0.1, confidence="first_try", gpus_needed=n,
                basis=(f"not decided by the log's figures: the weights ({weights / GIB:,.1f} GiB, {fmt}, from the catalog's shapes) are over "
                       f"{BUDGET_SHARE:.2f} x the GPU's {total / GIB:,.2f} GiB at {tp} GPU(s); {n} bring them to {weights / n / GIB:,.1f} GiB "
                       "each; whether the KV cache and activations then fit is not printed"))
    diag.edits = [edit] + [e for e in diag.edits if not (e.argv and e.argv[0] == flag)]
    diag.notes.append(f"The weights alone ({weights / GIB:,.1f} GiB in {fmt}) are over one GPU's {total / GIB:,.2f} GiB at the run's "
                      f"{tp} GPU(s): no memory fraction, context, KV type or eager mode frees them, so {flag} {n} is ranked first.")
