"""How much KV the memory left over holds (:func:`estimate_memory`'s last step): the bytes of N sequences, the KV space and
capacity in whole blocks, the full-context requests that fit, and the longest context at a concurrency.

    >>> fit = kv_fit(engine, mp, reserve, kv, base_bytes, fixed, budget, residual, act, context, concurrency, request_tokens,
    ...              prompt, report)
    >>> fit["capacity"], fit["max_concurrency"], fit["fits"]

Reserve engines (vLLM, SGLang, TGI, TensorRT-LLM) give the KV cache what their budget leaves (SGLang's recurrent states
apart, :mod:`.state_pool`); peak engines need the KV of ``concurrency`` requests beside one token's activations per
sequence, and llama.cpp allocates every slot's context at load. ``kv`` is :func:`.memory._kv_shape`'s figures (bytes per
token on one GPU: ``full``, ``slide``; the ``window`` held; the recurrent ``state`` per sequence).
"""

from __future__ import annotations

from .state_pool import apart_from_states


def kv_bytes_for(full: float, sliding: float, window: int | None, context: int, sequences: int, state: float = 0.0) -> float:
    """KV bytes of ``sequences`` of ``context`` tokens: full-attention layers hold every token, windowed ones at most
    ``window``, plus the recurrent state of each."""
    held = min(context, window) if window else context
    return sequences * (context * full + held * sliding + state)


def kv_fit(engine, mp, reserve, kv, base_bytes, fixed, budget, residual, act, context, concurrency, request_tokens, prompt, report) -> dict:
    """KV space, capacity in tokens (whole blocks), full-context requests that fit, and the bytes a fit needs."""
    full_tok, slide_tok, window, state = kv["full"], kv["slide"], kv["window"], kv["state"]
    per_seq_at_context = kv_bytes_for(full_tok, slide_tok, window, context, 1, state=state)
    kv_needed = max(kv_bytes_for(full_tok, slide_tok, window, request_tokens, concurrency, state=state), per_seq_at_context)
    if reserve:
        kv_space, total, need = max(budget - fixed + residual, 0.0), budget, fixed - residual + kv_needed
        kv_space, per_seq_at_context, states = apart_from_states(report, kv_space, state, per_seq_at_context)  # SGLang's own pool
        free_for_kv = kv_space
    else:
        states = None
        # The peak is at the end of prefill (big activations, KV of the prompts only) or at the end of
        # decode (full KV, one token's activations per sequence), whichever is larger.
        kv_prompt = kv_bytes_for(full_tok, slide_tok, window, prompt, concurrency, state=state)
        kv_space = kv_needed
        need = base_bytes + max(act["activation"] + kv_prompt, kv_needed + act["decode"])
        total = need
        # peak engines hold the full KV at the end of decode, next to one token's activations per sequence
        free_for_kv = max(budget - (base_bytes + act["decode"]) + residual, 0.0)
    per_token_at_context = per_seq_at_context / context if context else full_tok
    block = mp.block_size if reserve else 1
    if engine.kv_preallocated:
        # n_ctx cells for `concurrency` slots of `context` tokens are allocated at load: that is the cache,
        # whatever else is free, and it holds exactly those slots.
        slots = concurrency if kv_needed <= free_for_kv else int(free_for_kv // per_seq_at_context) if per_seq_at_context else 0
        capacity, max_concurrency, kv_space = slots * context, slots, slots * per_seq_at_context
    else:
        capacity = int(free_for_kv // per_token_at_context) if per_token_at_context > 0 else 0
        capacity -= capacity % block
        max_concurrency = int(free_for_kv // per_seq_at_context) if per_seq_at_context > 0 else 0
        max_concurrency = max_concurrency if states is None else min(max_concurrency, states)  # one state per request
    return {"kv_space": kv_space, "total": total, "need": need, "free_for_kv": free_for_kv, "capacity": capacity,
            "max_concurrency": max_concurrency, "required": max(concurrency * request_tokens, context), "fits": need <= budget,
            "request_bytes": per_seq_at_context}


def max_context(model, kv, free_for_kv, concurrency, request_tokens, context) -> int:
    """Longest context at the requested concurrency (solves the piecewise-linear KV size)."""
    full_tok, slide_tok, window, state = kv["full"], kv["slide"], kv["window"], kv["state"]
    sharing = concurrency if request_tokens >= context else 1  # typical requests shorter than context leave it to one
    others = 0 if sharing > 1 else kv_bytes_for(full_tok, slide_tok, window, request_tokens, concurrency - 1, state=state)
    per_seq_budget = max(free_for_kv - others, 0.0) / max(sharing, 1)
    per_seq_budget = max(per_seq_budget - state, 0.0)  # the recurrent state comes first, whatever the context
    if window and context > window:
        extra = per_seq_budget - window * slide_tok
        max_ctx = int(extra // full_tok) if full_tok > 0 else model.max_position_embeddings
    else:
        max_ctx = int(per_seq_budget // (full_tok + slide_tok)) if (full_tok + slide_tok) > 0 else model.max_position_embeddings
    return max(0, min(max_ctx, model.max_position_embeddings))
