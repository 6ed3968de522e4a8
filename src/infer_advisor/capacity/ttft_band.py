"""How sure the chosen option's TTFT is: its operating point re-simulated with the replica as much slower and as much
faster than modelled as the error band of ``max_rate_per_replica`` allows (``policy.speed_error_band``, the band
``--confidence`` sizes with).

Why a band and not a better number: near a replica's knee TTFT is a steep function of the rate over the capacity.
On the H200 llama.cpp server (calls F and G, docs/capacity.md) the plan's TTFT p50 was within 12-17% below about 0.8
of the predicted max rate M and 3-5x off at 0.88-0.95 of M, where a capacity error of 6-7% (F's came out ~6% above
M, G's ~7% below) moves TTFT p50 5-10x. No step model is right to 2%, so the figure is given with its band.

A replica whose every step takes 1/k of the modelled time, fed Poisson arrivals at rate r, is the modelled replica at
rate r/k with every time divided by k (the same events on a stretched clock; the simulator draws its arrivals from one
seed, so the pattern only stretches). Each edge is therefore one ``operating_point`` run at r/k: two runs in all,
none where r/k is past the replica's modelled capacity (the queue grows; no stationary TTFT exists).
"""

from __future__ import annotations

from ..estimate.step_time import StepModel
from ..simulate import SchedulerConfig, Workload
from .evaluate import OVERLOADED, RateSearch, operating_point
from .policy import speed_error_band
from .result import TtftBand, TtftEdge

# Above this share of max_rate_per_replica the figure is said to be sensitive (calls F and G on the H200 llama.cpp
# server: the plan's TTFT p50 was within 12-17% at 0.5-0.8 of M and 3-5x off at 0.88 and 0.95; docs/capacity.md).
KNEE_UTILISATION = 0.8
BAND_SOURCE = ("the engine's 90% band of measured / predicted speed on data it was not fitted to (data/speed/fitted.yaml "
               "band_90, as --confidence uses it), applied to the replica's step time")


def band_edges(engine: str, gpu: str) -> tuple[float, float, str, str]:
    """(slower, faster, source, in a few words): the engine's band from the GPU validation runs on ``gpu`` where it has one
    (``validation_band.py``), else the all-engines published band ``--confidence`` sizes with."""
    from .validation_band import validation_band

    own = validation_band(engine, gpu)
    if own is not None:
        return own
    low, high = speed_error_band(engine)
    return low, high, BAND_SOURCE, "published, all engines"


def ttft_band(step: StepModel, workload: Workload, cfg: SchedulerConfig, rate: float, search: RateSearch,
              engine: str, gpu: str) -> TtftBand:
    """TTFT p50/p90 at ``rate`` per replica if the replica runs at each edge of the engine's speed band on ``gpu``.

    >>> band = ttft_band(option.step, workload, option.cfg, 1.2, rate_search, "vllm", "A100-80GB")  # doctest: +SKIP
    >>> band.slower.queue_grows, band.faster.ttft_p50_s  # doctest: +SKIP
    """
    low, high, source, band_from = band_edges(engine, gpu)
    capacity = search.capacity if search.capacity is not None else search.ceiling
    utilisation = rate / search.max_rate if search.max_rate > 0 else float("inf")
    return TtftBand(utilisation=utilisation, slower=_edge(step, workload, cfg, rate, low, capacity),
                    faster=_edge(step, workload, cfg, rate, high, capacity),
                    near_knee=utilisation > KNEE_UTILISATION, source=source, band_from=band_from)


def _edge(step: StepModel, workload: Workload, cfg: SchedulerConfig, rate: float, speed: float,
          capacity: float | None) -> TtftEdge:
    """The replica at ``speed`` x its modelled speed: the modelled replica at ``rate / speed``, times / ``speed``."""
    stretched = rate / speed
    if capacity is not None and stretched >= capacity:
        return TtftEdge(speed=speed, queue_grows=True)
    res = operating_point(step, workload, cfg, stretched)
    if res.saturated or res.served_ratio < OVERLOADED:
        return TtftEdge(speed=speed, queue_grows=True)
    return TtftEdge(speed=speed, queue_grows=False, ttft_p50_s=res.ttft_s.p50 / speed, ttft_p90_s=res.ttft_s.p90 / speed)
