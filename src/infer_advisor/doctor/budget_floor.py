"""Edits an engine itself would refuse or could not start with (docfix19, retrospective: batch 16's sf305 and sf316).

    >>> after_hardware(diag, text)   # diag.edits rewritten in place; a note where the run's budget is below its weights

- **vLLM's budget below the weights** (sf305: an AWQ 7B at ``gpu_memory_utilization=0.1`` of a T4). vLLM loads the
  weights inside the budget ``gpu_memory_utilization x total`` and sizes the KV cache from what the budget leaves after
  the weights and the profile run's activations (V0 worker.determine_num_available_blocks, V1
  gpu_worker.determine_available_memory): a budget under the weights per GPU leaves no KV block whatever the KV dtype,
  context or eager mode. So an undecided edit that leaves the budget under the weights (a utilization at that value, or
  any other knob at the run's own utilization) is never proposed; where the run's own budget is under them, vLLM's
  default utilization (0.90, EngineArgs) is proposed first when it holds them. The weights are the catalog's shapes at
  the stated format (:mod:`.weights_fit`), plus the memory model's activation-peak and non-torch terms where it
  ran: a lower bound (one KV block comes on top; a TP edit is held to its weights alone).
- **TGI's prefill batch and input length** (sf316: ``--max-batch-prefill-tokens 2048`` offered with
  ``max_input_length: 16000`` left). TGI's launcher refuses ``max_input_length > max_batch_prefill_tokens`` and
  ``max_input_length >= max_total_tokens`` (launcher/src/main.rs ``main``, "Validate args": "`max_batch_prefill_tokens`
  must be >= `max_input_length`"; the router's main.rs repeats both checks), so a smaller prefill batch goes with an input
  length at or under it, in the spelling the log uses (``--max-input-length`` before 2.0, ``--max-input-tokens`` after).

Read with them (in doctor/startup_errors.py): a vision encoder's forward on pixel values at start-up (sf306,
``vision_model(pixel_values``) is vLLM's profile run: V0 worker/model_runner.py (and enc_dec_model_runner.py)
``profile_run`` feeds max_num_seqs dummy sequences with dummy images (``dummy_data_for_profiling``) while the CUDA-graph
capture is decode only, with no images; so the budget does not bound it and fewer sequences come first. V1's
free-memory message (v1/worker/utils.py ``request_memory``) is read with its spaces dropped, as a paste inside other
text leaves it (sf313: "(0.75/14.57GiB) ... utilization(0.4,5.83GiB)").
"""

from __future__ import annotations

import re

from .edits import undecided_edit
from ..units import GIB

DEFAULT_UTILIZATION = 0.90  # vLLM's --gpu-memory-utilization default (EngineArgs, every release 0.2-0.33)
_UTIL = "--gpu-memory-utilization"
_TGI_INPUT = re.compile(r"\bmax_input_(length|tokens)\b[:=]\s*(?:Some\()?(\d+)|--max-input-(length|tokens)[= ](\d+)")
_TGI_TOTAL = re.compile(r"\bmax_total_tokens\b[:=]\s*(?:Some\()?(\d+)|--max-total-tokens[= ](\d+)")
_PREFILL = "--max-batch-prefill-tokens"
_SGLANG_FRACTION = "--mem-fraction-static"  # an unnamed engine's SGLang edit (sglang_floor.py: rest = total x fraction - weights ...)


def _weights_per_gpu(diag, text: str) -> tuple[float | None, float | None, str]:
    from .weights_fit import _bytes_per_param, _weights, total_bytes

    if not diag.model:
        return None, None, ""
    weights16, total = _weights(diag.model), total_bytes(diag, text)
    if not (weights16 and total):
        return None, None, ""
    per_param, fmt = _bytes_per_param(text, diag.model)
    return weights16 * per_param / 2 / max(diag.tp or 1, 1), total, fmt


# knobs that change neither the budget nor the weights per GPU (the KV cache's size, the context, the batch, CUDA graphs)
_NEITHER = ("--kv-cache-dtype", "--max-model-len", "--enforce-eager", "--max-num-seqs", "--max-num-batched-tokens")


def _budget_after(edit, u: float, tp: int, weights: float) -> tuple[float, float]:
    """(the budget share, the weights per GPU) with ``edit`` applied; weights 0 for a knob not known here (kept)."""
    argv = edit.argv
    if argv[:1] in ([_UTIL], [_SGLANG_FRACTION]) and len(argv) > 1:  # SGLang's static pool holds the weights too (docfix21)
        return float(argv[1]), weights
    if argv[:1] == ["--tensor-parallel-size"] and len(argv) > 1:
        return u, weights * tp / max(int(argv[1]), 1)
    return (u, weights) if argv and set(argv[::2]) <= set(_NEITHER) else (u, 0.0)


def _in_budget_extra(diag) -> float:
    """The memory model's in-budget terms besides the weights and the KV cache (activation peak, non-torch), 0 without it."""
    return sum(line.bytes_per_gpu for line in diag.ledger if line.in_budget and line.term != "weights"
               and not line.term.startswith("KV"))


def utilization_floor(diag, text: str) -> None:
    weights, total, fmt = _weights_per_gpu(diag, text)
    if weights is None:
        return
    u, tp, extra = diag.gpu_memory_utilization or DEFAULT_UTILIZATION, max(diag.tp or 1, 1), _in_budget_extra(diag)
    need = weights + extra  # at the run's TP; a TP edit is held to its weights alone (activations per GPU change with it)
    kept, sure = [], _start_check_only(diag) and _shipped_16bit(diag.model)
    for e in diag.edits:
        share, w = _budget_after(e, u, tp, weights) if e.argv else (u, _kept_budget(e, weights) if sure else 0.0)
        # docfix22 (sf286): a start decided by V1's free-memory check alone says nothing of the weights: the floor holds it too
        if (e.starts is True and (not sure or share * total >= w)) or share * total >= (w + extra if w == weights else w):
            kept.append(e)
    what = f"the weights ({weights / GIB:,.1f} GiB per GPU in {fmt}, from the catalog's shapes)" + (
        f" with the memory model's activation and non-torch terms ({extra / GIB:,.2f} GiB)" if extra else "")
    if u * total < need and DEFAULT_UTILIZATION * total >= need and not any(
            e.argv[:1] == [_UTIL] and float(e.argv[1]) * total >= need for e in kept[:1] if len(e.argv) > 1):
        value = f"{DEFAULT_UTILIZATION:.2f}"
        kept.insert(0, undecided_edit(f"{_UTIL} {value}", [_UTIL, value], f"{u:.2f} -> {value} (vLLM's default): the budget "
                                      "holds the weights again", 0.05, f"the budget {u:.2f} x {total / GIB:,.2f} GiB = "
                                      f"{u * total / GIB:,.2f} GiB is under {what}, which vLLM holds inside it; whether the KV "
                                      "cache then fits is not printed"))
    if len(kept) != len(diag.edits) or u * total < need:
        diag.notes.append((f"The budget {u:.2f} x {total / GIB:,.2f} GiB = {u * total / GIB:,.2f} GiB is under {what}"
                           if u * total < need else f"Edits whose budget is under {what} are left out")
                          + ": no KV dtype, context or eager mode starts there (vLLM loads the weights inside the budget).")
    diag.edits = kept
    if sure and weights > total:  # docfix22 (sf286): no utilization holds them (vLLM's budget is at most the whole GPU)
        from .weights_fit import tp_first_when_weights_exceed

        from .sglang_load import checkpoint_edit

        tp_first_when_weights_exceed(diag, text, any_error=True)
        if not any("checkpoint" in e.change for e in diag.edits):  # the one-GPU remedy beside more GPUs
            diag.edits.append(checkpoint_edit(f"the weights ({weights / GIB:,.1f} GiB per GPU in {fmt}) are over the whole GPU's "
                                              f"{total / GIB:,.2f} GiB; a pre-quantized checkpoint (4-bit, FP8) has fewer bytes per GPU"))


def _start_check_only(diag) -> bool:
    """V1's free-memory start check failed (free_memory.py): an edit it decides passes that check only, before any load."""
    return diag.error is not None and diag.error.kind == "free_memory_below_utilization"


def _shipped_16bit(model: str) -> bool:
    """The catalog checkpoint is itself 16-bit (not shipped in FP8, MXFP4, NVFP4, ...), so its shapes give its bytes."""
    from ..errors import InferAdvisorError
    from ..model_facts import resolve_model

    try:
        facts = resolve_model(model, source="catalog")
    except (InferAdvisorError, ValueError):
        return False
    return not facts.pre_quantized and facts.torch_dtype in ("bfloat16", "float16")


def _kept_budget(e, weights: float) -> float:
    """An action's weights against the run's budget: freeing the memory others hold keeps the asked budget (free_memory.py),
    so it holds the same weights; any other action is not known here (0: kept)."""
    return weights if e.keeps_asked_budget else 0.0


def tgi_input_within_prefill(diag, text: str) -> None:
    m = _TGI_INPUT.search(text[:2_000_000])
    if m is None:
        return
    spelling, given = (m.group(1), int(m.group(2))) if m.group(2) else (m.group(3), int(m.group(4)))
    t = _TGI_TOTAL.search(text[:2_000_000])
    total = int(t.group(1) or t.group(2)) if t else None
    flag = f"--max-input-{spelling}"
    out = []
    for e in diag.edits:
        if e.argv[:1] == [_PREFILL] and len(e.argv) > 1 and not {"--max-input-length", "--max-input-tokens"} & set(e.argv) \
                and given > int(e.argv[1]):
            length = min(int(e.argv[1]), total - 1) if total else int(e.argv[1])
            argv = [*e.argv, flag, str(length)]
            e = e.model_copy(update={"argv": argv, "change": " ".join(argv), "cost": f"{e.cost}; prompts over {length:,} tokens are "
                                     f"refused (input length {given:,} -> {length:,}: TGI's launcher refuses an input length over "
                                     "the prefill batch)"})
        out.append(e)
    diag.edits = out
