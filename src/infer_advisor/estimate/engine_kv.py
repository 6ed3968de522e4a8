"""The KV figures an engine prints at start-up, from the same bytes the memory model adds up.

For a model's KV bytes per token and the memory left (tests/estimate/test_engine_kv.py checks printed figures of
recorded logs)::

    figs = engine_kv_figures(model, kv_report("vllm", "0.19.0"), free_bytes=19.53 * 2**30, **terms)
    figs.tokens, figs.max_concurrency, figs.starts

vLLM's 'GPU KV cache size: N tokens' is not the plan's effective capacity on hybrid and sliding-window models: from
0.9 to 0.20 it counts every layer slot of the hybrid KV manager as if it kept every token, from 0.21 it is
max_concurrency x max_model_len (``data/engine_kv_report.yaml`` gives the rule per version, with the source lines).
The grouping follows vLLM's ``_get_kv_cache_groups_uniform_page_size``: layers of one attention type form groups of the
smallest type's size (the largest type's when it is under 1.5x the smallest), the last group of a type is padded, every
group draws the same page size, and Mamba / gated-DeltaNet layers hold one state page per request (their attention
layers' block size is raised until an attention page holds a state page, as vLLM does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..engines.kv_report import KVReport
from .engine_kv_deepseek_v4 import deepseek_v4_printed
from ..model_facts.facts import ModelFacts


@dataclass(frozen=True)
class EngineKV:
    """What the engine will print and do: its token figure, its concurrency figure, and whether it starts."""

    tokens: int
    max_concurrency: float
    starts: bool
    refusal: str | None
    request_bytes: float  # KV bytes one max_model_len request needs on one GPU (vLLM's check)


@dataclass(frozen=True)
class DraftLayers:
    """A speculative decoder's attention layers in the KV pool (vLLM's get_kv_cache_spec collects them with the
    target's): MTP layers share the target's full-attention spec and join its group; a separate draft's layers with
    another head size are a spec, and a group type, of their own."""

    layers: int
    bytes_per_token: float  # per layer on one GPU
    same_spec: bool


@dataclass(frozen=True)
class _Layout:
    counts: dict[str, int]  # layers per KV spec on one GPU: full, local (sliding/chunked), state (Mamba/DeltaNet)
    bytes_per_token: dict[str, float]  # per layer on one GPU
    state_bytes: float  # per layer per sequence on one GPU


def _layout(model: ModelFacts, full_tok: float, slide_tok: float, state: float, pp: int, draft: DraftLayers | None) -> _Layout:
    lc = model.layer_counts or {"full": model.num_layers}
    full = lc.get("full", 0)
    local = lc.get("sliding", 0) + lc.get("chunked", 0)
    stateful = lc.get("linear", 0) + lc.get("mamba", 0)
    if model.uniform_sliding_window and not local:  # every layer windowed (Mistral-7B-v0.1): one local spec
        full, local = 0, lc.get("sliding", model.num_layers) or model.num_layers
    counts = {k: math.ceil(n / pp) for k, n in (("full", full), ("local", local), ("state", stateful)) if n}
    per_token = {}
    if full:
        per_token["full"] = (full_tok + (slide_tok if not local else 0.0)) * pp / full
    if local:
        per_token["local"] = (slide_tok or full_tok) * pp / local
    state_layer = state * pp / stateful if stateful else 0.0
    if draft is not None and draft.layers:
        kind = "full" if draft.same_spec and full else "draft"
        counts[kind] = counts.get(kind, 0) + draft.layers
        per_token.setdefault(kind, draft.bytes_per_token)
    return _Layout(counts=counts, bytes_per_token=per_token, state_bytes=state_layer)


def _groups(counts: dict[str, int]) -> tuple[int, dict[str, int]]:
    """(group size, groups per spec) as vLLM's hybrid KV manager forms them."""
    smallest, largest = min(counts.values()), max(counts.values())
    size = largest if largest < 1.5 * smallest else smallest
    return size, {k: math.ceil(n / size) for k, n in counts.items()}


def _usage_tokens(kind: str, context: int, window: int | None, mnbt: int, block: int) -> int:
    """Blocks' worth of tokens one max_model_len request holds in one layer of ``kind`` (vLLM's max_memory_usage_bytes)."""
    if kind == "local" and window:
        held = min(window - 1 + mnbt, context)
        return (math.ceil(held / block) + 1) * block
    return math.ceil(context / block) * block


def engine_kv_figures(
    model: ModelFacts, report: KVReport, *, free_bytes: float, full_tok: float, slide_tok: float, state: float, pp: int,
    context: int, mnbt: int, block: int, capacity_tokens: int, draft: DraftLayers | None = None, state_pages: int = 1,
    version: str | None = None,
) -> EngineKV:
    """The engine's printed KV tokens and concurrency, and whether it starts, for ``free_bytes`` of KV memory per GPU
    (``draft``: a speculative decoder's layers in the pool; ``state_pages``: state pages per Mamba layer per request)."""
    lay = _layout(model, full_tok, slide_tok, state, pp, draft)
    per_layer = max(lay.bytes_per_token.values(), default=0.0)
    if report.printed_tokens == "pool_tokens" or per_layer <= 0:
        starts = capacity_tokens >= context if report.printed_tokens != "pool_tokens" else capacity_tokens > 0
        return EngineKV(capacity_tokens, capacity_tokens / context if context else 0.0, starts, None, context * (full_tok + slide_tok))
    if "state" in lay.counts and per_layer * block < lay.state_bytes:  # attention pages grow to hold a state page
        block = math.ceil(lay.state_bytes / (per_layer * 16)) * 16
    page = block * per_layer
    window = model.sliding_window
    request = sum(
        n * (page * state_pages if kind == "state" else _usage_tokens(kind, context, window, mnbt, block) * lay.bytes_per_token[kind])
        for kind, n in lay.counts.items()
    )
    if report.printed_tokens == "all_layers":
        slots = sum(lay.counts.values())
        blocks = int(max(free_bytes, 0) // (page * slots))
        tokens = blocks * block
        return _with_outcome(report, tokens, tokens / context if context else 0.0, free_bytes, request, context, tokens)
    size, groups = _groups(lay.counts)
    blocks = int(max(free_bytes, 0) // (page * size))
    per_group = {k: (page * state_pages if k == "state" else _usage_tokens(k, context, window, mnbt, block) * lay.bytes_per_token[k]) for k in groups}
    request_blocks = math.ceil(size * sum(per_group[k] * g for k, g in groups.items()) / (page * size))
    concurrency = blocks / request_blocks if request_blocks else 0.0
    if report.printed_tokens == "layer_slots":
        tokens = blocks // sum(groups.values()) * block
    else:  # concurrency; DeepSeek-V4's compressed caches have their own page groups (estimate/engine_kv_deepseek_v4.py)
        v4 = deepseek_v4_printed(model, version=version, free_bytes=free_bytes, context=context, mnbt=mnbt,
                                 mtp_layers=draft.layers if draft is not None else 0)
        tokens, concurrency = v4 if v4 is not None else (int(concurrency * context), concurrency)
    return _with_outcome(report, tokens, concurrency, free_bytes, request, context, None)


def _with_outcome(report: KVReport, tokens: int, concurrency: float, free: float, request: float, context: int, v0_tokens) -> EngineKV:
    if free <= 0 or tokens <= 0:
        return EngineKV(max(tokens, 0), max(concurrency, 0.0), False, report.no_memory, request)
    if v0_tokens is not None and report.context_too_long and "{kv_tokens}" in report.context_too_long:
        ok = context <= v0_tokens  # V0: the longest sequence the blocks hold
    else:
        ok = request <= free
    if ok:
        return EngineKV(tokens, concurrency, True, None, request)
    return EngineKV(tokens, concurrency, False, refusal_text(report, context, tokens, request, free), request)


def refusal_text(report: KVReport, context: int, tokens: int, request: float, free: float) -> str | None:
    """The engine's own error for a max_model_len that does not fit (its source text, its number formats)."""
    if not report.context_too_long:
        return None
    longest = int(context * free / request) if request > 0 else 0  # vLLM binary-searches the length that fits
    msg = f"Based on the available memory, the estimated maximum model length is {longest}." if longest > 0 else ""
    return report.context_too_long.format(
        max_model_len=context, kv_tokens=tokens, needed_gib=report.gib(request), available_gib=report.gib(free),
        estimated_msg=msg, estimated_msg_sp=msg + " " if msg else "", estimated_msg_08=" Based on the available memory," if msg else "",
    )
