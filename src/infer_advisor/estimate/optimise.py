"""The loss and the optimiser of the coefficient fits (``estimate/fit.py``): a soft-L1 on log ratios and a bounded
Nelder-Mead. Pure Python (no numpy or scipy on this path); nothing here knows what is fitted.

    >>> round(nelder_mead(lambda x: (x[0] - 0.3) ** 2, [0.9], [0.0], [1.0])[0], 6)
    0.3
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

SOFT_L1_SCALE = 0.2  # log-ratio at which the loss turns from quadratic to linear


def soft_l1(errors: Sequence[float | None]) -> float:
    total = 0.0
    for e in errors:
        if e is None or not math.isfinite(e) or e <= -1:
            total += 10.0
            continue
        r = math.log1p(e) / SOFT_L1_SCALE
        total += math.sqrt(1 + r * r) - 1
    return total


def nelder_mead(f: Callable[[list[float]], float], x0: list[float], lo: list[float], hi: list[float], iters: int = 120) -> list[float]:
    """Minimise ``f`` inside the box [lo, hi] (coordinates scaled to [0, 1] and clipped)."""
    n = len(x0)
    scale = [h - low for low, h in zip(lo, hi)]

    def to_x(u: list[float]) -> list[float]:
        return [low + min(max(ui, 0.0), 1.0) * s for ui, low, s in zip(u, lo, scale)]

    u0 = [(x - low) / s if s else 0.0 for x, low, s in zip(x0, lo, scale)]
    simplex = [u0] + [[u0[j] + (0.15 if j == i else 0.0) for j in range(n)] for i in range(n)]
    vals = [f(to_x(u)) for u in simplex]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: vals[i])
        simplex, vals = [simplex[i] for i in order], [vals[i] for i in order]
        if abs(vals[-1] - vals[0]) < 1e-4 * (abs(vals[0]) + 1e-9):
            break
        centroid = [sum(s[j] for s in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        refl = [c + (c - w) for c, w in zip(centroid, worst)]
        fr = f(to_x(refl))
        if fr < vals[0]:
            exp = [c + 2 * (c - w) for c, w in zip(centroid, worst)]
            fe = f(to_x(exp))
            simplex[-1], vals[-1] = (exp, fe) if fe < fr else (refl, fr)
        elif fr < vals[-2]:
            simplex[-1], vals[-1] = refl, fr
        else:
            contr = [c + 0.5 * (w - c) for c, w in zip(centroid, worst)]
            fc = f(to_x(contr))
            if fc < vals[-1]:
                simplex[-1], vals[-1] = contr, fc
            else:
                best = simplex[0]
                simplex = [best] + [[b + 0.5 * (s[j] - b) for j, b in enumerate(best)] for s in simplex[1:]]
                vals = [vals[0]] + [f(to_x(s)) for s in simplex[1:]]
    best = min(range(n + 1), key=lambda i: vals[i])
    return to_x(simplex[best])
