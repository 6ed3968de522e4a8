"""The KV figures vLLM prints for DeepSeek-V4's compressed attention ('GPU KV cache size', 'Maximum concurrency').

For DeepSeek-V4's facts ``model`` (tests/estimate/test_engine_kv.py checks the figures vLLM printed)::

    deepseek_v4_printed(model, version="0.24.0", free_bytes=191.04 * 2**30, context=4096, mnbt=2048, mtp_layers=0)

vLLM keeps DeepSeek-V4's caches in page-aligned groups (``data/engine_kv_pages_deepseek_v4.yaml`` names the source):
one full group of the compressed layers (ratio-4 attention, ratio-128 attention and the ratio-4 layers' indexer, one
block of 256 tokens each), and sliding-window groups (every layer's 128-token window, the ratio-4 layers' compressor
states, the ratio-128 layers' compressor states), whose pages are padded up to the full group's sizes. One request
needs, per group, the pages of its longest layer: every token for the full group, the window plus one batch of
tokens for the others (``SlidingWindowSpec.max_admission_blocks_per_request``); ``get_max_concurrency_for_kv_cache_config``
divides the blocks by the request's pages over the full group's pages, and the printed tokens are that concurrency x
max_model_len. This is why the printed figure is ~20x below the compressed KV bytes the plan counts per token.
"""

from __future__ import annotations

import math
from collections import Counter

from ..engines.kv_pages_deepseek_v4 import DeepseekV4Pages, deepseek_v4_pages
from ..model_facts.facts import ModelFacts


def _approximate_gcd(values: list[int], lower_bound: int) -> int:
    """vLLM's chunk of layer tuples: the d >= lower_bound with the least upward padding (ties: the larger d)."""
    best = min(range(lower_bound, max(max(values), lower_bound) + 1), key=lambda d: (sum((d - x % d) % d for x in values), -d))
    return best


def _groups(p: DeepseekV4Pages, lc: dict[str, int], layers: int, window: int, mnbt: int, context: int):
    """(full group's pages {page: layers}, sliding groups [(pages {page: layers}, pages one request holds)])."""
    def align(n: int) -> int:
        return math.ceil(n / p.page_alignment) * p.page_alignment

    blk = p.attention_block_tokens
    c4, c128 = lc.get("csa", 0), lc.get("hca", 0)
    full = Counter()
    for page, n in ((align(blk // 4 * p.row_bytes), c4), (align(blk // 128 * p.row_bytes), c128), (align(blk // 4 * p.indexer_row_bytes), c4)):
        full[page] += n
    full = {page: n for page, n in full.items() if n}

    def padded(page: int) -> int:
        return min(x for x in full if x >= page)

    def held(win: int, block: int) -> int:
        return math.ceil(min(win - 1 + mnbt, context) / block) + 1

    def state(ratio: int, head: int) -> int:
        rows = p.state_block_tokens[ratio]
        return padded(align(rows * 2 * p.state_window_factor[ratio] * head * p.state_bytes_per_element))

    sliding = [({padded(align(p.swa_block_tokens * p.row_bytes)): layers}, held(window, p.swa_block_tokens))]
    if c4:
        pages = Counter({state(4, p.head_dim): c4})
        pages[state(4, p.index_head_dim)] += c4
        sliding.append((dict(pages), held(p.state_window_factor[4] * 4, p.state_block_tokens[4])))
    if c128:
        sliding.append(({state(128, p.head_dim): c128}, held(p.state_window_factor[128] * 128, p.state_block_tokens[128])))
    return full, sliding


def deepseek_v4_printed(model: ModelFacts, *, version: str | None, free_bytes: float, context: int, mnbt: int,
                        mtp_layers: int) -> tuple[int, float] | None:
    """(printed tokens, printed concurrency) for a DeepSeek-V4 model on vLLM; None for any other model."""
    from ..engines.versions import version_key

    lc = model.layer_counts or {}
    if not (lc.get("csa") or lc.get("hca")) or context <= 0:
        return None
    p = deepseek_v4_pages()
    full, sliding = _groups(p, lc, model.num_layers + mtp_layers, model.sliding_window or 0, mnbt, context)
    full_bytes = sum(page * n for page, n in full.items())
    request = full_bytes * math.ceil(context / p.attention_block_tokens)
    request += sum(sum(page * n for page, n in pages.items()) * held for pages, held in sliding)
    request_pages = math.ceil(request / full_bytes)
    tuples = _approximate_gcd([max(full.values())] + [max(pages.values()) for pages, _ in sliding], max(full.values()))
    slots: Counter = Counter()
    for pages in [full] + [pages for pages, _ in sliding]:
        for page, n in pages.items():  # a sliding group is split into ceil(n / tuples) groups of at most `tuples` layers
            slots[page] = max(slots[page], n if pages is full else math.ceil(n / math.ceil(n / tuples)))
    if version and version_key(version) >= version_key(p.bucket_allocator_from):
        per_block = sum(page * n for page, n in slots.items())
    else:
        per_block = sum(full) * max(slots.values())
    blocks = int(max(free_bytes, 0) // per_block)
    concurrency = blocks / request_pages if request_pages else 0.0
    return int(concurrency * context), concurrency
