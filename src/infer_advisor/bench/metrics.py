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
) -> RequestSample:
    """A request's sample from the time it was sent and the arrival time of each token (or streamed chunk).

    ``output_tokens`` defaults to ``len(token_times)``; a server's own count (usage) may differ from its chunks.
    TPOT = (e2e - TTFT) / (tokens - 1); inter-token latencies are the gaps between consecutive arrivals.
    """
    if not token_times:
        raise ValueError("a request produced no tokens")
    count = len(token_times) if output_tokens is None else output_tokens
    ttft = token_times[0] - sent_at
    e2e = token_times[-1] - sent_at
    tpot = (e2e - ttft) / (count - 1) if count > 1 else None
    itl = [b - a for a, b in pairwise(token_times)]
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
    )


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
