"""One candidate (a replica: engine, weights, layout on one GPU type): the highest request rate it sustains within
the latency targets, found by simulating Poisson arrivals at trial rates.

The rate search brackets the answer with an analytic estimate (every GPU second spent on either full prefill
chunks or full decode batches), then bisects on the log of the rate. Every trial uses the same random seed, so
the arrival pattern only stretches between trials (common random numbers): the verdict moves with the rate, not
with the dice. Every trial is kept: they are the candidate's points on the latency/throughput curve.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

from ..estimate.step_time import StepModel
from ..simulate import SchedulerConfig, SimulationResult, Workload, simulate
from .targets import LatencyTargets, TargetCheck, check, meets

TRIAL_REQUESTS = 240  # requests simulated per trial rate while searching
FINAL_REQUESTS = 400  # at the operating point reported to the user (trials use 240), at first
# ... then 4x as many, up to FINAL_MAX_REQUESTS, while the window's TTFT p50 or p90 has a relative standard error
# (batch means, SimulationResult.ttft_spread) over FINAL_SPREAD: near the knee of a slot-bound replica a 400-request
# window's TTFT p50 spans 75-720 ms between seeds (Llama-3.1-8B, llama.cpp, H200 at 1.5 req/s; docs/capacity.md)
FINAL_SPREAD = 0.10
FINAL_MAX_REQUESTS = 25_600
BISECTIONS = 8  # at most; the search stops once the bracket is within PRECISION
PRECISION = math.log(1.04)  # the sustainable rate is found to 4%
OVERLOADED = 0.9  # a trial that serves less than this share of its offered load (SimulationResult.served_ratio) is past capacity
IN_FLIGHT_MULTIPLE = 3  # trial requests >= this x rate x a request's end-to-end time through full decode batches
MAX_TRIAL_REQUESTS = 2000
UTILISATION = 0.95  # the highest share of a replica's capacity (overloaded throughput, or the physical ceiling) a rate may be


@dataclass
class Trial:
    rate: float
    result: SimulationResult
    ok: bool


@dataclass
class RateSearch:
    """The outcome of the search for one replica."""

    max_rate: float  # requests/s one replica sustains within every target (0: none at any rate)
    estimate: float  # the analytic estimate the search started from
    trials: list[Trial] = field(default_factory=list)
    floor_checks: list[TargetCheck] = field(default_factory=list)  # targets at a near-idle load
    capacity: float | None = None  # requests/s an overloaded trial completed (the replica's throughput ceiling)
    ceiling: float | None = None  # the physical ceiling on requests/s (physics.throughput_ceiling)
    # the bisection put off by ``settled`` (see find_max_rate): (its bracket as rates, a call that finishes it), else None
    paused: tuple[float, float] | None = None
    resume: Callable[..., None] | None = field(default=None, repr=False)


def analytic_rate(step: StepModel, cfg: SchedulerConfig, mean_in: float, mean_out: float) -> float:
    """Requests/s if every step were a full decode batch or a full prefill chunk (a bracket, not an answer).

    A pipeline-parallel step model is timed as the simulator times it (``simulate.pipeline``): one cycle moves the
    whole batch one token through every stage, with ``pp`` micro-batches of the budget each."""
    from ..estimate.step_time import prefill_shape
    from ..simulate.pipeline import PipelineStep

    timed = PipelineStep(step) if step.pp > 1 else step
    ctx = mean_in + mean_out / 2
    batch = max(1, min(cfg.max_num_seqs, int(cfg.kv_capacity_tokens / max(mean_in + mean_out, 1))))
    decode_per_token = timed.decode_seconds(batch, batch * ctx) / batch
    chunk = max(1, min(cfg.max_num_batched_tokens, int(mean_in)))
    chunks = max(1, min(step.pp * cfg.max_num_batched_tokens // chunk, batch))  # prompt chunks one cycle carries
    s = prefill_shape(chunks, chunk)
    pre = timed.step_seconds(0, 0.0, s.prefill_tokens, s.prefill_pairs, s.prefill_chunks, s.completes)
    prefill_per_request = pre / chunks * max(mean_in, 1) / chunk
    per_request = prefill_per_request + max(mean_out - 1, 0) * decode_per_token
    return 1.0 / per_request if per_request > 0 else 0.0


def full_batch_e2e(step: StepModel, cfg: SchedulerConfig, mean_in: float, mean_out: float) -> float:
    """Seconds a request spends decoding when every step is a full batch (the longest a loaded replica keeps it)."""
    from ..simulate.pipeline import PipelineStep

    timed = PipelineStep(step) if step.pp > 1 else step
    ctx = mean_in + mean_out / 2
    batch = max(1, min(cfg.max_num_seqs, int(cfg.kv_capacity_tokens / max(ctx, 1.0))))
    return max(mean_out - 1, 1) * timed.decode_seconds(batch, batch * ctx)


def _at(step: StepModel, workload: Workload, cfg: SchedulerConfig, rate: float, requests: int, seed: int) -> SimulationResult:
    return simulate(step, workload.model_copy(update={"rate": rate, "arrival": "poisson"}), cfg, requests=requests, seed=seed)


def find_max_rate(step: StepModel, workload: Workload, cfg: SchedulerConfig, targets: LatencyTargets, *,
                  seed: int = 0, requests: int = TRIAL_REQUESTS, deadline: float | None = None,
                  settled: Callable[[float, float], bool] | None = None) -> RateSearch:
    """Highest Poisson rate one replica sustains with every target met and its queue not growing, never above its
    physical throughput ceiling (``physics.throughput_ceiling``) nor above UTILISATION x what an overloaded trial
    completed. A trial of a few hundred requests on a replica that holds hundreds at once can look fine at any rate
    (they all fit in one batch); the ceiling, not the trial, says where throughput ends. Past ``deadline``
    (time.monotonic()) the bisection stops at the highest rate shown to hold so far (a lower bound).

    ``settled(low, high)``: asked before each bisection step with the bracket's rates; when it says the answer no
    longer matters (the option cannot win whatever the rate in the bracket), the bisection is put off: ``max_rate``
    is the bracket's low end (a lower bound), ``paused`` the bracket, and ``resume()`` finishes it exactly as an
    uninterrupted search would have (the same trials in the same order: bisection is deterministic)."""
    from .physics import throughput_ceiling

    est = analytic_rate(step, cfg, workload.mean_input, workload.mean_output)
    out = RateSearch(max_rate=0.0, estimate=est, ceiling=throughput_ceiling(step, cfg, workload.mean_input, workload.mean_output))
    # perfect batching is not a load to run at: the search stays under UTILISATION x the ceiling, as under a measured capacity
    ceiling = UTILISATION * out.ceiling
    if est <= 0 or ceiling <= 0:
        return out

    full_e2e = full_batch_e2e(step, cfg, workload.mean_input, workload.mean_output)

    def trial(rate: float, n: int = requests) -> Trial:
        # long enough for the batch to fill in the first half (served_ratio reads the second): the batch fills within
        # one end-to-end time, at most a request's time through full batches
        n = max(n, min(MAX_TRIAL_REQUESTS, math.ceil(IN_FLIGHT_MULTIPLE * rate * full_e2e)))
        res = _at(step, workload, cfg, rate, n, seed)
        t = Trial(rate, res, meets(res, targets) and res.served_ratio >= OVERLOADED)
        out.trials.append(t)
        if res.served_ratio < OVERLOADED:  # made under 90% of the tokens asked for while requests arrived: past capacity
            served = rate * res.served_ratio
            out.capacity = served if out.capacity is None else min(out.capacity, served)
        return t

    lo = trial(min(est, ceiling) * 0.02, max(60, requests // 3))
    out.floor_checks = check(lo.result, targets)
    if not lo.ok:
        return out  # even a near-idle replica misses a target: more replicas cannot help
    hi = trial(min(est * 1.6, ceiling))
    if hi.ok and out.capacity is None and hi.rate < ceiling:  # the estimate was pessimistic: widen once, to the ceiling
        hi = trial(min(hi.rate * 2.5, ceiling))
    if hi.ok and out.capacity is None:
        out.max_rate = hi.rate
        return out
    top = hi.rate
    if out.capacity is not None and out.capacity > lo.rate / UTILISATION:
        # An overloaded replica completes requests at its capacity. A trial of a few hundred requests just below
        # capacity ends before its queue has grown enough to break a target, so the rate is capped below it.
        top = min(top, out.capacity * UTILISATION)
    a, b = math.log(lo.rate), math.log(top)
    # most answers lie within 2x of the top: look there first (a bisection step saved)
    _bisect(out, trial, a, b, BISECTIONS, deadline, settled, top / 2 if b - a > math.log(4) else None)
    return out


def _bisect(out: RateSearch, trial: Callable[[float], Trial], a: float, b: float, steps: int, deadline: float | None,
            settled: Callable[[float, float], bool] | None, half: float | None = None) -> None:
    """Bisect the log-rate bracket [a, b] (first at ``half`` if given, then at most ``steps`` trials) to PRECISION;
    ``out.max_rate`` its low end. It is put off only once a trial above the near-idle one held (``a`` above its
    start), so a put-off search's rate is at worst one bracket below the answer, never the near-idle rate."""
    out.paused = out.resume = None
    idle = a
    while half is not None or (steps > 0 and b - a > PRECISION and not (deadline is not None and time.monotonic() > deadline)):
        if settled is not None and a > idle and settled(math.exp(a), math.exp(b)):
            out.paused = (math.exp(a), math.exp(b))
            out.resume = lambda settled=None, a=a, b=b, steps=steps, half=half: _bisect(out, trial, a, b, steps, None,
                                                                                        settled, half)
            break
        mid = trial(half if half is not None else math.exp((a + b) / 2))
        a, b = (math.log(mid.rate), b) if mid.ok else (a, math.log(mid.rate))
        steps -= 1 if half is None else 0
        half = None
    out.max_rate = math.exp(a)
    if out.capacity is not None:
        out.max_rate = min(out.max_rate, out.capacity * UTILISATION)


def operating_point(step: StepModel, workload: Workload, cfg: SchedulerConfig, rate: float, *, seed: int = 0,
                    requests: int = FINAL_REQUESTS, max_requests: int = FINAL_MAX_REQUESTS) -> SimulationResult:
    """The replica at the rate it will really see (the fleet's rate / replicas): ``requests`` simulated (the first 10%
    left out as warm-up), then 4x as many while TTFT p50 or p90 is not settled to FINAL_SPREAD (relative standard
    error by batch means), up to ``max_requests``. One long run of one seed rather than several short ones: each
    run's warm-up would be paid again, and a long window averages over the queue's slow swings as seeds do."""
    res = _at(step, workload, cfg, rate, requests, seed)
    while res.ttft_spread > FINAL_SPREAD and requests < max_requests:
        requests = min(requests * 4, max_requests)
        res = _at(step, workload, cfg, rate, requests, seed)
    return res
