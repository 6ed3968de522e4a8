"""The simulator's typed result: latency percentiles, throughput and what the scheduler had to do."""


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
    ttft_spread: float = Field(
        default=0.0, description="Relative standard error of the window's TTFT p50 and p90 (the larger), by batch means: "
        "the measured requests cut into SPREAD_BATCHES consecutive batches in arrival order; 0 with too few to tell.")


def _percentiles(mean: float, p50: float, p90: float, p99: float) -> Percentiles:
    # The simulator's own figures, typed as validation would (floats): no schema to build on the plan path.
    return Percentiles.model_construct(mean=float(mean), p50=float(p50), p90=float(p90), p99=float(p99))


def _q(s: Sequence[float], p: float) -> float:
    """The ``p`` quantile of the sorted ``s``, linear between ranks."""
    k = (len(s) - 1) * p
    lo, hi = int(math.floor(k)), int(math.ceil(k))
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def _pct(values: list[float], weights: list[float] | None = None) -> Percentiles:
    if not values:
        return _percentiles(math.nan, math.nan, math.nan, math.nan)
    if weights is None:
        s = sorted(values)
        return _percentiles(sum(s) / len(s), _q(s, 0.5), _q(s, 0.9), _q(s, 0.99))
    pairs = sorted((v, w) for v, w in zip(values, weights) if w > 0)
    total = sum(w for _, w in pairs)
    if total <= 0:
        return _percentiles(math.nan, math.nan, math.nan, math.nan)

    def wq(p: float) -> float:
        acc, target = 0.0, p * total
        for v, w in pairs:
            acc += w
            if acc >= target:
                return v
        return pairs[-1][0]

    return _percentiles(sum(v * w for v, w in pairs) / total, wq(0.5), wq(0.9), wq(0.99))


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


SPREAD_BATCHES = 8  # batches for the batch-means standard error of TTFT percentiles (a standard choice: 8-30)
SPREAD_MIN_BATCH = 10  # requests per batch at least, else no spread is reported


def ttft_spread(ttfts: Sequence[float]) -> float:
    """Relative standard error of the p50 and of the p90 of ``ttfts`` (in arrival order), the larger of the two, by the
    method of batch means: consecutive requests are correlated (one queue serves them), so the spread of the quantile
    over SPREAD_BATCHES consecutive batches, / sqrt(batches), stands for the sampling error of the whole window's."""
    n = len(ttfts) // SPREAD_BATCHES
    if n < SPREAD_MIN_BATCH:
        return 0.0
    worst, everything, batches = 0.0, sorted(ttfts), [sorted(ttfts[i * n:(i + 1) * n]) for i in range(SPREAD_BATCHES)]
    for p in (0.5, 0.9):
        per_batch = [_q(b, p) for b in batches]
        whole = _q(everything, p)
        mean = sum(per_batch) / SPREAD_BATCHES
        sd = math.sqrt(sum((v - mean) ** 2 for v in per_batch) / (SPREAD_BATCHES - 1))
        if whole > 0:
            worst = max(worst, sd / math.sqrt(SPREAD_BATCHES) / whole)
    return worst


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
    # Counted and computed here, typed as validation would coerce them: no schema to build on the plan path.
    return SimulationResult.model_construct(
        requests=len(reqs), warmup_requests=int(warmup), completed=len(measured),
        ttft_s=_pct(ttft), itl_s=_pct(durs, weights), tpot_s=_pct(tpot), e2e_s=_pct(e2e), queue_s=_pct(queue),
        output_tokens_per_s=float(out_tokens / span if span else 0.0), requests_per_s=float(len(measured) / span if span else 0.0),
        offered_rate=None if offered_rate is None else float(offered_rate),
        mean_batch=float((sum(log.step_decodes) / steps) if steps else 0.0),
        mean_step_s=float((sum(d * c for d, c in zip(log.step_durations, log.step_counts)) / steps) if steps else 0.0),
        steps=int(steps), preemptions=int(log.preemptions), peak_kv_tokens=int(log.max_kv_tokens), saturated=bool(saturated),
        notes=[str(n) for n in notes], served_ratio=float(served), ttft_spread=float(ttft_spread(ttft)),
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
