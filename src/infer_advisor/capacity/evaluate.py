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

from ..estimate.step_time import StepModel
from ..simulate import SchedulerConfig, SimulationResult, Workload, simulate
from .targets import LatencyTargets, TargetCheck, check, meets

TRIAL_REQUESTS = 240  # requests simulated per trial rate while searching
FINAL_REQUESTS = 400  # at the operating point reported to the user (trials use 240)
BISECTIONS = 8  # at most; the search stops once the bracket is within PRECISION
PRECISION = math.log(1.04)  # the sustainable rate is found to 4%
OVERLOADED = 0.9  # a trial that completes less than this share of its offered rate is past capacity
UTILISATION = 0.95  # the highest share of a replica's capacity (overloaded throughput) a sustainable rate may be


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


def analytic_rate(step: StepModel, cfg: SchedulerConfig, mean_in: float, mean_out: float) -> float:
    """Requests/s if every step were a full decode batch or a full prefill chunk (a bracket, not an answer)."""
    ctx = mean_in + mean_out / 2
    batch = max(1, min(cfg.max_num_seqs, int(cfg.kv_capacity_tokens / max(mean_in + mean_out, 1))))
    decode_per_token = step.decode_seconds(batch, batch * ctx) / batch
    chunk = max(1, min(cfg.max_num_batched_tokens, int(mean_in)))
    pre = step.step_seconds(0, 0.0, chunk, chunk * (chunk + 1) / 2, 1, 1)
    prefill_per_request = pre * max(mean_in, 1) / chunk
    per_request = prefill_per_request + max(mean_out - 1, 0) * decode_per_token
    return cfg.lanes / per_request if per_request > 0 else 0.0


def _at(step: StepModel, workload: Workload, cfg: SchedulerConfig, rate: float, requests: int, seed: int) -> SimulationResult:
    return simulate(step, workload.model_copy(update={"rate": rate, "arrival": "poisson"}), cfg, requests=requests, seed=seed)


def find_max_rate(step: StepModel, workload: Workload, cfg: SchedulerConfig, targets: LatencyTargets, *,
                  seed: int = 0, requests: int = TRIAL_REQUESTS, deadline: float | None = None) -> RateSearch:
    """Highest Poisson rate one replica sustains with every target met (and its queue not growing). Past
    ``deadline`` (time.monotonic()) the bisection stops at the highest rate shown to hold so far (a lower bound)."""
    est = analytic_rate(step, cfg, workload.mean_input, workload.mean_output)
    out = RateSearch(max_rate=0.0, estimate=est)
    if est <= 0:
        return out
    lo_rate = est * 0.02
    lo = _at(step, workload, cfg, lo_rate, max(60, requests // 3), seed)
    out.floor_checks = check(lo, targets)
    lo_ok = meets(lo, targets)
    out.trials.append(Trial(lo_rate, lo, lo_ok))
    if not lo_ok:
        return out  # even a near-idle replica misses a target: more replicas cannot help
    hi_rate = est * 1.6
    hi = _at(step, workload, cfg, hi_rate, requests, seed)
    out.trials.append(Trial(hi_rate, hi, meets(hi, targets)))
    if out.trials[-1].ok:  # the estimate was pessimistic: widen once
        hi_rate *= 2.5
        hi = _at(step, workload, cfg, hi_rate, requests, seed)
        out.trials.append(Trial(hi_rate, hi, meets(hi, targets)))
        if out.trials[-1].ok:
            # A short trial far past capacity can finish before its queue breaks a target: never claim more than the
            # replica completed (the probe: 257.9 req/s claimed where the replica completed ~60).
            out.max_rate = hi_rate
            if hi.requests_per_s < OVERLOADED * hi_rate:
                out.capacity = hi.requests_per_s
                out.max_rate = min(hi_rate, hi.requests_per_s * UTILISATION)
            return out
    top = hi_rate
    if hi.requests_per_s < OVERLOADED * hi_rate and hi.requests_per_s > lo_rate / UTILISATION:
        # An overloaded replica completes requests at its capacity. A trial of a few hundred requests just below
        # capacity ends before its queue has grown enough to break a target, so the rate is capped below it.
        top = min(hi_rate, hi.requests_per_s * UTILISATION)
        out.capacity = hi.requests_per_s
    a, b = math.log(lo_rate), math.log(top)
    for _ in range(BISECTIONS):
        if b - a <= PRECISION or (deadline is not None and time.monotonic() > deadline):
            break
        mid = math.exp((a + b) / 2)
        res = _at(step, workload, cfg, mid, requests, seed)
        ok = meets(res, targets)
        out.trials.append(Trial(mid, res, ok))
        a, b = (math.log(mid), b) if ok else (a, math.log(mid))
    out.max_rate = math.exp(a)
    return out


def operating_point(step: StepModel, workload: Workload, cfg: SchedulerConfig, rate: float, *, seed: int = 0,
                    requests: int = FINAL_REQUESTS) -> SimulationResult:
    """The replica at the rate it will really see (the fleet's rate / replicas), with more requests."""
    return _at(step, workload, cfg, rate, requests, seed)
