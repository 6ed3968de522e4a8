"""The arithmetic of a benchmark, in one place: per-request timings -> samples -> level statistics."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

from .report import LevelResult, RequestSample, Stats, TokenCountSource


def sample(
    *,
    concurrency: int,
    index: int,
    sent_at: float,
    token_times: Sequence[float],
    input_tokens: int | None,
    output_tokens: int | None = None,
    source: TokenCountSource = "tokenizer",
    streamed_chunks: int | None = None,
    chunk_tokens: Sequence[int] | None = None,
    **open_loop,
) -> RequestSample:
    """A request's sample from the time it was sent and the arrival time of each token (or streamed chunk).

    ``output_tokens`` defaults to ``len(token_times)``; a server's own count (usage) may differ from its chunks.
    TPOT = (e2e - TTFT) / (tokens - 1). Inter-token latencies are per token: the gap before each arrival, and a chunk
    that carried k tokens (``chunk_tokens``, see :func:`chunk_tokens`) gives k gaps of 1/k of its wait each, so the
    gaps of a request add up to e2e - TTFT and number tokens - 1 whatever the server merged.
    ``open_loop``: request_rate, sent_offset_s, scheduled_offset_s (fields of :class:`RequestSample`).
    """
    if not token_times:
        raise ValueError("a request produced no tokens")
    count = len(token_times) if output_tokens is None else output_tokens
    ttft = token_times[0] - sent_at
    e2e = token_times[-1] - sent_at
    tpot = (e2e - ttft) / (count - 1) if count > 1 else None
    per_chunk = list(chunk_tokens) if chunk_tokens is not None else [1] * len(token_times)
    itl: list[float] = []
    carried = 0.0  # the wait of a chunk that carried no token joins the next token's gap
    for (a, b), k in zip(pairwise(token_times), per_chunk[1:]):
        wait = b - a + carried
        carried = wait if k == 0 else 0.0
        itl += [wait / k] * k if k else []
    if carried and itl:
        itl[-1] += carried
    return RequestSample(
        concurrency=concurrency,
        index=index,
        input_tokens=input_tokens,
        output_tokens=count,
        token_count_source=source,
        streamed_chunks=streamed_chunks,
        ttft_s=ttft,
        e2e_s=e2e,
        tpot_s=tpot,
        itl_s=itl,
        **open_loop,
    )


def chunk_tokens(texts: Sequence[str], times: Sequence[float], tokens: int) -> list[int]:
    """Tokens each streamed chunk carried, when a server counted ``tokens`` but streamed fewer chunks.

    A server may hold a token back and stream it merged with the next (llama-cpp-python does for a token that ends
    in an incomplete UTF-8 character, so the chunk that completes it carries two or more tokens and a multi-byte
    character). Each chunk carries one; each extra token goes to a chunk after the first, those with a multi-byte
    character first, longest wait first (a merged chunk waited for every token it carries), one per chunk per round.
    Fewer tokens than chunks: the last chunks carried none (held-back text released when the answer ended).

        >>> chunk_tokens(["a", "b", "\u00e9", "c"], [0.0, 0.01, 0.03, 0.04], 5)
        [1, 1, 2, 1]
    """
    if tokens < len(texts):
        return [1] * tokens + [0] * (len(texts) - tokens)
    out = [1] * len(texts)
    extra = tokens - len(texts)
    if extra <= 0 or len(texts) < 2:
        if len(texts) == 1 and extra > 0:
            out[0] += extra
        return out
    gaps = [(i, times[i] - times[i - 1]) for i in range(1, len(texts))]
    order = sorted(gaps, key=lambda g: (not any(ord(ch) > 127 for ch in texts[g[0]]), -g[1], g[0]))
    while extra > 0:
        for i, _ in order:
            if extra == 0:
                break
            out[i] += 1
            extra -= 1
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default method), q in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def stats(values: Sequence[float]) -> Stats:
    return Stats(
        mean=sum(values) / len(values),
        p50=percentile(values, 50),
        p90=percentile(values, 90),
        p99=percentile(values, 99),
        n=len(values),
    )


def level_result(
    concurrency: int, samples: Sequence[RequestSample], duration_s: float, peak_memory_bytes: int | None
) -> LevelResult:
    """Statistics of one level from its samples and its wall time."""
    if not samples:
        raise ValueError("a level with no requests")
    tpots = [s.tpot_s for s in samples if s.tpot_s is not None]
    gaps = [g for s in samples for g in s.itl_s]
    inputs = [s.input_tokens for s in samples if s.input_tokens is not None]
    total = sum(s.output_tokens for s in samples)
    return LevelResult(
        concurrency=concurrency,
        num_requests=len(samples),
        duration_s=duration_s,
        ttft_s=stats([s.ttft_s for s in samples]),
        tpot_s=stats(tpots) if tpots else None,
        itl_s=stats(gaps) if gaps else None,
        e2e_s=stats([s.e2e_s for s in samples]),
        output_tokens_total=total,
        input_tokens_mean=sum(inputs) / len(inputs) if inputs else None,
        output_tokens_per_s_per_request=sum(s.output_tokens / s.e2e_s for s in samples) / len(samples),
        output_tokens_per_s_aggregate=total / duration_s,
        requests_per_s=len(samples) / duration_s,
        peak_memory_bytes=peak_memory_bytes,
    )


def open_level_result(rate: float, samples: Sequence[RequestSample], duration_s: float) -> LevelResult:
    """An open-loop level: the closed-loop statistics plus the offered and achieved rate, the client's lateness,
    the most requests in flight at once and whether the queue kept growing (the simulator's test)."""
    from ..simulate import queue_growing

    level = level_result(max(s.concurrency for s in samples), samples, duration_s, None)
    order = sorted(samples, key=lambda s: (s.sent_offset_s or 0.0, s.index))
    sent = [s.sent_offset_s or 0.0 for s in order]
    late = [s.sent_offset_s - s.scheduled_offset_s for s in order
            if s.sent_offset_s is not None and s.scheduled_offset_s is not None]
    span = sent[-1] - sent[0]
    level.request_rate = rate
    level.achieved_rate_per_s = (len(sent) - 1) / span if len(sent) > 1 and span > 0 else None
    level.send_lateness_s = stats(late) if late else None
    level.saturated = queue_growing([s.ttft_s for s in order])
    return level
