"""The simulator's typed result: latency percentiles, throughput and what the scheduler had to do."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from .scheduler import RunLog


class Percentiles(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    mean: float
    p50: float
    p90: float
    p99: float

    def get(self, stat: str) -> float:
        return float(getattr(self, stat))


class SimulationResult(BaseModel):
    """One replica (one scheduler) serving a workload, as the discrete-event simulation saw it. Times in seconds."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    requests: int = Field(description="Requests simulated (the first `warmup_requests` are left out of the statistics).")
    warmup_requests: int
    completed: int
    ttft_s: Percentiles = Field(description="Time to first token: arrival to the end of the step that samples it.")
    itl_s: Percentiles = Field(description="Inter-token latency: gap between consecutive tokens of a request (every token weighs once).")
    tpot_s: Percentiles = Field(description="Per request: (end-to-end - TTFT) / (output tokens - 1).")
    e2e_s: Percentiles = Field(description="Arrival to last token.")
    queue_s: Percentiles = Field(description="Arrival to admission (waiting for a slot, the KV cache or the token budget).")
    output_tokens_per_s: float = Field(description="Output tokens per second over the measured window.")
    requests_per_s: float
    offered_rate: float | None = Field(default=None, description="Arrival rate asked for (open loop).")
    mean_batch: float = Field(description="Mean sequences decoding per step.")
    mean_step_s: float
    steps: int
    preemptions: int
    peak_kv_tokens: int
    saturated: bool = Field(description="The queue kept growing: more arrive than the replica completes.")
    notes: list[str] = Field(default_factory=list)
    served_ratio: float = Field(
        default=1.0, description="Decode tokens/s made in the second half of the measured arrivals over the decode tokens/s "
        "they ask for: about 1 while the replica keeps up, its capacity / the offered load once it falls behind (no drain "
        "time counted, unlike requests_per_s; the first half lets the batch fill).")


def _pct(values: list[float], weights: list[float] | None = None) -> Percentiles:
    if not values:
        return Percentiles(mean=math.nan, p50=math.nan, p90=math.nan, p99=math.nan)
    if weights is None:
        s = sorted(values)
        n = len(s)

        def q(p: float) -> float:
            k = (n - 1) * p
            lo, hi = int(math.floor(k)), int(math.ceil(k))
            return s[lo] + (s[hi] - s[lo]) * (k - lo)

        return Percentiles(mean=sum(s) / n, p50=q(0.5), p90=q(0.9), p99=q(0.99))
    pairs = sorted((v, w) for v, w in zip(values, weights) if w > 0)
    total = sum(w for _, w in pairs)
    if total <= 0:
        return Percentiles(mean=math.nan, p50=math.nan, p90=math.nan, p99=math.nan)

    def wq(p: float) -> float:
        acc, target = 0.0, p * total
        for v, w in pairs:
            acc += w
            if acc >= target:
                return v
        return pairs[-1][0]

    return Percentiles(mean=sum(v * w for v, w in pairs) / total, p50=wq(0.5), p90=wq(0.9), p99=wq(0.99))


# The queue-growth test, shared with `bench --request-rate` so that measured and simulated saturation mean the same:
# the median TTFT of the last quarter of requests (in arrival order) against the first quarter's. infer_advisor's
# choice: a stable queue keeps the two within noise; 3x and a second apart is a queue that grows without bound.
SATURATION_RATIO = 3.0
SATURATION_MIN_TTFT_S = 1.0
SATURATION_MIN_REQUESTS = 20


def queue_growing(ttfts: Sequence[float]) -> bool | None:
    """Did the queue keep growing? ``ttfts`` in arrival order; None with too few requests to tell."""
    if len(ttfts) < SATURATION_MIN_REQUESTS:
        return None
    q = len(ttfts) // 4
    first, last = sorted(ttfts[:q])[q // 2], sorted(ttfts[-q:])[q // 2]
    return last > SATURATION_RATIO * max(first, 1e-9) and last > SATURATION_MIN_TTFT_S


def summarise(log: RunLog, *, warmup: int, offered_rate: float | None) -> SimulationResult:
    reqs = log.requests
    measured = [r for r in reqs[warmup:] if r.finish is not None]
    notes = [log.aborted] if log.aborted else []
    host = log.request_overhead  # before the request was queued (HTTP, tokenisation): the client waits for it too
    ttft = [r.first_token - r.arrival + host for r in measured if r.first_token is not None]
    e2e = [r.finish - r.arrival + host for r in measured]
    tpot = [(r.finish - r.first_token) / (r.output - 1) for r in measured if r.first_token is not None and r.output > 1]
    queue = [r.admitted - r.arrival for r in measured if r.admitted is not None]
    if measured:
        t0 = min(r.arrival for r in measured)
        t1 = max(r.finish for r in measured)
        span = max(t1 - t0, 1e-9)
        out_tokens = sum(r.output for r in measured)
    else:
        t0 = t1 = span = 0.0
        out_tokens = 0
    # ITL: every decode token of the window weighs once; its gap is the step that produced it.
    durs, weights = [], []
    for start, dt, n in zip(log.step_starts, log.step_durations, log.step_decodes):
        if n and t0 <= start <= t1:
            durs.append(dt)
            weights.append(n)
    saturated = bool(queue_growing(ttft))
    served = _served_ratio(log, measured)
    steps = sum(log.step_counts) if log.step_counts else len(log.step_durations)
    return SimulationResult(
        requests=len(reqs), warmup_requests=warmup, completed=len(measured),
        ttft_s=_pct(ttft), itl_s=_pct(durs, weights), tpot_s=_pct(tpot), e2e_s=_pct(e2e), queue_s=_pct(queue),
        output_tokens_per_s=out_tokens / span if span else 0.0, requests_per_s=len(measured) / span if span else 0.0,
        offered_rate=offered_rate,
        mean_batch=(sum(log.step_decodes) / steps) if steps else 0.0,
        mean_step_s=(sum(d * c for d, c in zip(log.step_durations, log.step_counts)) / steps) if steps else 0.0,
        steps=steps, preemptions=log.preemptions, peak_kv_tokens=log.max_kv_tokens, saturated=saturated, notes=notes, served_ratio=served,
    )


def _served_ratio(log: RunLog, measured: list) -> float:
    """Decode tokens made in the second half of the measured arrivals' span, over the decode tokens asked for by the
    requests that arrived one median end-to-end time earlier (the ones a replica that keeps up is serving then): the
    first half lets the batch fill, since a replica that holds hundreds ramps up before it runs full."""
    if len(measured) < 8:
        return 1.0
    t0, t1 = measured[0].arrival, max(r.arrival for r in measured)
    if t1 <= t0:
        return 1.0
    ta = (t0 + t1) / 2
    lag = min(sorted(r.finish - r.arrival for r in measured)[len(measured) // 2], ta - t0)
    asked = sum(max(r.output - 1, 0) for r in measured if ta - lag <= r.arrival < t1 - lag)
    if asked <= 0:
        return 1.0
    made = 0.0
    for start, dt, n, k in zip(log.step_starts, log.step_durations, log.step_decodes, log.step_counts):
        end = start + dt * k
        if end <= ta or start >= t1 or not n:
            continue
        made += n * (min(end, t1) - max(start, ta)) / (end - start) if end > start else n
    return made / asked
