"""Fitting engine speed coefficients to measurements: one routine for `calibrate` and benchmarks/speed_fit.py.

This module holds what a coefficient may be (``BOUNDS``, ``START``, the prior penalty) and the fit over them; the
loss and the optimiser, which know nothing of engines, are in :mod:`.optimise`.

For a speed profile and a function of its errors on measured points (tests/estimate/test_speed.py and
tests/estimate/test_calibrate.py run real fits)::

    values = fit_coefficients(base_profile, ["step_overhead_s", "attention_scale"], predict_errors)

``predict_errors(profile)`` returns, for each measured point, ``predicted / measured - 1`` (None when it cannot
predict). The loss is a soft-L1 on the log ratio (one wild point cannot drag the rest) plus a prior penalty that
pulls every coefficient toward its stated (physical) value, and the optimiser a bounded Nelder-Mead on coordinates
scaled to [0, 1] (pure Python: no numpy or scipy on this path). Bounds: the coefficient's own ``bounds`` (from the
engine's code or a measurement, in data/speed/engines.yaml), else ``BOUNDS``; the host terms' lower bounds are
above zero, so a fit can never remove a per-step, per-sequence or per-request cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..engines.speed_terms import Coefficient, EngineSpeed
from .optimise import nelder_mead, soft_l1

BOUNDS: dict[str, tuple[float, float]] = {
    "step_overhead_s": (5e-5, 0.02),
    "per_sequence_s": (1e-6, 2e-4),
    "request_overhead_s": (5e-4, 0.05),
    "attention_scale": (0.3, 1.75),
    "prefill_attention_scale": (0.3, 3.0),
    "gemm_scale": (0.5, 1.1),
    "gddr_scale": (0.5, 1.3),
    "moe_scale": (0.5, 1.5),
    "amd_scale": (0.2, 1.2),
    "host_launch_s": (0.0, 1e-4),
    "cpu_bandwidth_efficiency": (0.05, 1.0),
}
# Where every fit starts (not the shipped values: a fit must not depend on what an earlier fit wrote).
START: dict[str, float] = {
    "step_overhead_s": 1e-3, "per_sequence_s": 1e-5, "request_overhead_s": 3e-3, "attention_scale": 1.0, "prefill_attention_scale": 1.0, "gemm_scale": 1.0,
    "gddr_scale": 1.0, "moe_scale": 1.0, "amd_scale": 1.0, "host_launch_s": 1e-5, "cpu_bandwidth_efficiency": 0.5,
}
# Weight of the prior: one coefficient a quarter of its log-range away from its stated value costs as much as one
# point off by about 20% (soft-L1 ~0.41). Enough to keep terms the points cannot identify at their physical value.
PRIOR_WEIGHT = 0.4


PLAIN_FIELDS = ("host_launch_s",)  # engine figures that are plain numbers, not labelled coefficients


def with_coefficients(profile: EngineSpeed, values: dict[str, float], *, kind: str = "fitted", source: str = "fit") -> EngineSpeed:
    """A copy of ``profile`` with some coefficients replaced (each labelled with ``kind`` and ``source``)."""
    return profile.model_copy(update={
        k: (v if k in PLAIN_FIELDS else Coefficient(value=v, kind=kind, source=source, bounds=getattr(getattr(profile, k, None), "bounds", None)))
        for k, v in values.items()})


def bounds_of(base: EngineSpeed, name: str) -> tuple[float, float]:
    """The coefficient's own bounds (engines.yaml, from the engine's code or a measurement), else ``BOUNDS``."""
    coef = getattr(base, name, None)
    own = getattr(coef, "bounds", None)
    return tuple(own) if own else BOUNDS[name]


def prior_penalty(base: EngineSpeed, values: dict[str, float], weight: float = PRIOR_WEIGHT) -> float:
    """``weight x sum(((log x - log prior) / (log-range / 4))^2)`` over the coefficients (linear where a bound is 0)."""
    total = 0.0
    for name, x in values.items():
        coef = getattr(base, name, None)
        prior = getattr(coef, "value", None)
        lo, hi = bounds_of(base, name)
        if prior is None:
            continue
        prior = min(max(prior, lo), hi)
        if lo > 0 and prior > 0 and x > 0:
            z = (math.log(x) - math.log(prior)) / (math.log(hi / lo) / 4)
        else:
            z = (x - prior) / ((hi - lo) / 4)
        total += z * z
    return weight * total


def fit_coefficients(base: EngineSpeed, names: Sequence[str],
                     predict_errors: Callable[[EngineSpeed], Sequence[float | None]], iters: int = 120,
                     prior_weight: float = PRIOR_WEIGHT, start: dict[str, float] | None = None) -> dict[str, float]:
    """Coefficient values (4 significant digits) minimising soft-L1 of ``predict_errors`` + the prior penalty.

    With a prior (published-data fits) the search starts from the stated values, the priors; without one
    (``prior_weight=0``: a calibration on the user's own measurements) from the fixed ``START``, so that it does not
    depend on what an earlier calibration wrote, inside the generic ``BOUNDS`` (a user's own machine may sit outside
    the range the published engines were seen in). Published-data fits stay inside each coefficient's own bounds.
    ``start`` overrides the starting point only (leave-one-source-out refits start from the full fit; the prior is
    still the stated value).
    """
    names = list(names)
    if not names:
        return {}
    box = [bounds_of(base, n) if prior_weight > 0 else BOUNDS[n] for n in names]  # a calibration: the generic box
    lo = [b[0] for b in box]
    hi = [b[1] for b in box]
    stated = [getattr(getattr(base, n, None), "value", None) for n in names]
    x0 = [min(max(v if (v is not None and prior_weight > 0) else START[n], lo_), hi_) for n, v, lo_, hi_ in zip(names, stated, lo, hi)]
    if start:
        x0 = [min(max(start.get(n, x), lo_), hi_) for n, x, lo_, hi_ in zip(names, x0, lo, hi)]

    def loss(x: list[float]) -> float:
        values = dict(zip(names, x))
        return soft_l1(predict_errors(with_coefficients(base, values))) + prior_penalty(base, values, prior_weight)

    best = nelder_mead(loss, x0, lo, hi, iters=iters)
    return {n: float(f"{v:.4g}") for n, v in zip(names, best)}
