"""What a capacity search shows besides its choice: the throughput/interactivity front over every simulated trial, and
the target that binds when no option meets them all."""

from __future__ import annotations

import math

from .result import Binding, Candidate, FrontPoint
from .targets import TARGET_METRICS, LatencyTargets


def pareto_front(evaluated) -> list[FrontPoint]:
    """Tokens/s per GPU against tokens/s per user over every simulated trial: the points no other beats on both."""
    pts: list[FrontPoint] = []
    for o, c, rs in evaluated:
        for t in rs.trials:
            r = t.result
            if not r.completed or not r.tpot_s.mean or not math.isfinite(r.tpot_s.mean):
                continue
            pts.append(FrontPoint(gpu=c.gpu, layout=c.layout, engine=c.engine, quantization=c.quantization, rate_per_replica=t.rate,
                                  output_tokens_per_s_per_gpu=r.output_tokens_per_s / o.gpus,
                                  output_tokens_per_s_per_user=1.0 / r.tpot_s.mean, meets_targets=t.ok))
    pts.sort(key=lambda p: -p.output_tokens_per_s_per_user)
    front, best = [], -1.0
    for p in pts:  # Pareto: no other point is better on both axes
        if p.output_tokens_per_s_per_gpu > best:
            front.append(p)
            best = p.output_tokens_per_s_per_gpu
    return front


def binding_target(evaluated, targets: LatencyTargets, refused: list[Candidate] = ()) -> Binding | None:
    """No option meets every target: the one that binds (closest to its limit at the best option), and what would meet it."""
    if not targets or not (evaluated or any(c.checks for c in refused)):
        return None
    best_per_target: dict[str, tuple[float, str]] = {}
    near_idle = [(chk, c) for o, c, rs in evaluated for chk in rs.floor_checks]
    near_idle += [(chk, c) for c in refused for chk in c.checks]  # missed even alone (two step times, before simulation)
    for chk, c in near_idle:
        cur = best_per_target.get(chk.target)
        if cur is None or chk.value_s < cur[0]:
            best_per_target[chk.target] = (chk.value_s, f"{c.gpu} {c.layout} {c.engine} {c.quantization}")
    worst = None
    for name, limit in targets.given().items():
        if name not in best_per_target:
            continue
        value, option = best_per_target[name]
        ratio = value / limit
        if worst is None or ratio > worst[2]:
            worst = (name, limit, ratio, value, option)
    if worst is None or worst[2] <= 1.0:
        return None
    name, limit, ratio, value, option = worst
    words = TARGET_METRICS[name][2]
    return Binding(target=name, words=words, limit_s=limit, best_value_s=value, by_factor=ratio, best_option=option,
                   suggestion=f"relax the {words} target to about {value * 1.1:.3g} s, or give GPUs with more bandwidth "
                              f"or compute per replica (a larger --tensor-parallel-size or a faster GPU type)")
