"""The capacity search: every GPU type x layout x weight format x token budget the user has not pinned, each planned
by the planner (rules + memory model), sized by simulation, priced; the cheapest that meets every target wins.

It drives the planner and the simulator from the outside (as Vidur-Search drives Vidur): a candidate is a
:class:`DeploymentPlan` for one replica with its layout pinned, its speed the step-time model, its latency and
capacity the simulator's. To stay fast it (1) plans every candidate (a few milliseconds each), (2) ranks them by a
cost bound from the analytic rate estimate, and (3) simulates in that order, per GPU type, until the bound of the
next candidate cannot beat the best already found.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Callable

from ..model_facts.facts import ModelFacts
from ..simulate import SimulationResult, Workload
from .candidates import SAFETY, Option, plan_options, targets_from, workload_from
from .evaluate import RateSearch, find_max_rate, operating_point
from .front import binding_target, pareto_front
from .physics import check_claim, within_physics
from .policy import decisions, fold, rank_key, replicas_for
from .result import Candidate, CapacityResult, PhysicsShare
from .targets import LatencyTargets, binding, check

MIN_PER_GPU = 3  # simulated per GPU type at least (when it has that many), so its best row is a searched one
FAR = 3.0  # a GPU type whose cheapest cost bound is this far above the best found gets one simulated row (the bound
# includes headroom: 3 here is about 2 on a bound without it)
MAX_PER_GPU = 6  # simulated per GPU type at most (the cost bound usually stops earlier)


# Wall time a sizing search may take (planning and simulating) before it answers with the best found so far and
# names what it did not search: the issue-18 bound of 30 s for any request, with room for start-up and output.
SEARCH_BUDGET_S = 25.0


def _candidate(o: Option, rs: RateSearch, rate: float, targets: LatencyTargets, w: Workload, request,
               point: bool = True) -> Candidate:
    """The option's fleet, cost and figures at its operating point; ``point=False``: without simulating the operating
    point (the fleet and cost only, taken to meet the targets as its rate search did; see :func:`_settle`)."""
    p = o.plan
    replicas, needed, applied = replicas_for(rate, rs.max_rate, request, p.engine.name)
    replicas = request.replicas or replicas
    res: SimulationResult | None = None
    checks = list(rs.floor_checks)
    if replicas and point:
        res = operating_point(o.step, w, o.cfg, rate / replicas)
        checks = check(res, targets)
    meets = bool(replicas) and all(c.met for c in checks) and not (res is not None and res.saturated)
    cost = replicas * o.gpus * o.price if (o.price is not None and replicas) else None
    tokens_per_s = rate * w.mean_output if replicas else None
    best_tps = rs.max_rate * w.mean_output
    per_user = (1.0 / res.tpot_s.mean) if (res is not None and res.tpot_s.mean and math.isfinite(res.tpot_s.mean)) else None
    return Candidate(
        gpu=o.gpu.name, engine=p.engine.name, quantization=p.quantization.method, kv_cache_dtype=p.engine.kv_cache_dtype,
        checkpoint=p.quantization.published_checkpoint.repo if p.quantization.published_checkpoint else None,
        tensor_parallel_size=p.parallelism.tensor_parallel_size, pipeline_parallel_size=p.parallelism.pipeline_parallel_size,
        expert_parallel=o.step.expert_parallel, nodes_per_replica=p.parallelism.nodes, gpus_per_replica=o.gpus,
        max_num_seqs=o.cfg.max_num_seqs, max_num_batched_tokens=o.cfg.max_num_batched_tokens, kv_cache_tokens=o.cfg.kv_capacity_tokens,
        max_rate_per_replica=rs.max_rate, replicas=replicas, total_gpus=replicas * o.gpus, meets_targets=meets, checks=checks,
        ttft_p50_s=res.ttft_s.p50 if res else None, ttft_p90_s=res.ttft_s.p90 if res else None,
        itl_p50_s=res.itl_s.p50 if res else None, itl_p99_s=res.itl_s.p99 if res else None, e2e_p90_s=res.e2e_s.p90 if res else None,
        output_tokens_per_s=tokens_per_s, output_tokens_per_s_per_gpu=best_tps / o.gpus if rs.max_rate else None,
        output_tokens_per_s_per_user=per_user,
        price=None if o.price is None else {"usd_per_gpu_hour": o.price, "source": o.price_source},
        cost_per_hour=cost,
        usd_per_million_output_tokens=(cost / (tokens_per_s * 3600) * 1e6) if (cost is not None and tokens_per_s) else None,
        why_not=None if meets else _why_not(rs, checks, replicas),
        replicas_needed=needed, sizing_rules=applied,
    )


def _cannot_lower(o: Option, request, rate: float, best_here: float) -> Callable[[float, float], bool] | None:
    """For the rate search: whether the option, even at the highest rate its bracket could still give, costs no less
    than its GPU type's best found, so the rest of the search goes as it would whatever rate it is found to sustain.
    Such a bisection is put off, and finished if the answer could show the option after all (:func:`_settle`)."""
    if o.price is None or not math.isfinite(best_here):
        return None

    def settled(low: float, high: float) -> bool:
        replicas = request.replicas or replicas_for(rate, high, request, o.plan.engine.name)[0]
        return max(replicas, 1) * o.gpus * o.price >= best_here

    return settled


def _physics(o: Option, model: ModelFacts, w: Workload, rs: RateSearch) -> dict:
    """The invariants at the rate found; a rate past one is lowered to it (in ``rs``) and reported."""
    p = o.plan

    def checks_at(r: float):
        return check_claim(model, o.gpu, o.step, o.cfg, quantization=p.quantization.method, dtype=p.dtype,
                           kv_cache_dtype=p.engine.kv_cache_dtype, rate=r, mean_in=w.mean_input, mean_out=w.mean_output)

    checks = checks_at(rs.max_rate)
    rs.max_rate, broken = within_physics(rs.max_rate, checks)
    if broken:
        checks = checks_at(rs.max_rate)
    shares = [PhysicsShare(name=c.name, share=c.share, words=c.words) for c in checks]
    return {"physics": shares, "physics_capped": broken}


def _why_not(rs: RateSearch, checks, replicas: int) -> str:
    b = binding(checks)
    if not replicas:
        return (f"misses the {b.words} target even at a near-idle load ({b.value_s:.3g} s against {b.limit_s:.3g} s)"
                if b else "no rate it can sustain")
    return f"misses the {b.words} target ({b.value_s:.3g} s against {b.limit_s:.3g} s)" if b else "saturated"


def search(request, model: ModelFacts, plan_fn: Callable, *, progress: Callable[[str], None] | None = None) -> CapacityResult:
    """Size a fleet for ``request.rate`` (see the module docstring). ``plan_fn(hw, tp, pp, ep)`` plans one replica."""
    t0 = time.monotonic()
    notes: list[str] = []
    targets = targets_from(request)
    w = workload_from(request, model)
    rate = request.rate
    if request.lengths_file is not None:
        from ..simulate.workload import read_trace

        if any(r[2] is not None for r in read_trace(request.lengths_file)):  # parsed once, cached
            notes.append(f"{request.lengths_file}: arrival_s times are not used; sizing assumes Poisson arrivals at "
                         f"--rate {rate:g} with the file's lengths")
    deadline = t0 + SEARCH_BUDGET_S
    options, refused = plan_options(request, model, plan_fn, notes.append, deadline, SEARCH_BUDGET_S)
    unsimulated: dict[str, int] = {}
    by_gpu: dict[str, list[Option]] = {}
    for o in options:
        by_gpu.setdefault(o.gpu.name, []).append(o)
    evaluated: list[tuple[Option, Candidate, RateSearch]] = []
    pending: dict[int, dict] = {}  # index in evaluated -> physics fields, of options whose operating point waits
    coverage: dict[str, tuple[int, int]] = {}
    capped: list[str] = []
    best_cost = math.inf
    last_report = t0
    for opts in by_gpu.values():
        opts.sort(key=lambda o: (o.cost_bound(rate, request), -o.estimate))
    # the most promising GPU types first, so the best found early prunes the rest
    for name, opts in sorted(by_gpu.items(), key=lambda kv: (kv[1][0].cost_bound(rate, request), -kv[1][0].estimate)):
        best_here = math.inf
        simulated = 0
        # a GPU type whose cheapest bound is far above the best found gets its first row only
        least = MIN_PER_GPU if opts[0].cost_bound(rate, request) < FAR * best_cost else 1
        for k, o in enumerate(opts):
            if time.monotonic() > deadline:
                unsimulated[name] = len(opts) - k
                break
            bound = o.cost_bound(rate, request)
            if k >= MAX_PER_GPU or (k >= least and (bound >= best_here or bound >= best_cost)):
                if k >= MAX_PER_GPU:
                    capped.append(name)
                break
            rs = find_max_rate(o.step, w, o.cfg, targets, deadline=deadline,
                               settled=_cannot_lower(o, request, rate, best_here))
            phys = _physics(o, model, w, rs)
            cand = _candidate(o, rs, rate, targets, w, request, point=False).model_copy(update=phys)
            if cand.replicas and cand.cost_per_hour is not None and cand.cost_per_hour < best_here:
                cand = _candidate(o, rs, rate, targets, w, request).model_copy(update=phys)  # it may lower the best
            elif cand.replicas:
                pending[len(evaluated)] = phys  # cannot lower a best found: simulated only if the answer shows it
            evaluated.append((o, cand, rs))
            simulated += 1
            coverage[name] = (simulated, len(opts))
            if cand.meets_targets and cand.cost_per_hour is not None:
                best_here = min(best_here, cand.cost_per_hour)
                best_cost = min(best_cost, cand.cost_per_hour)
            if progress and time.monotonic() - last_report > 1.0:
                last_report = time.monotonic()
                progress(f"sizing: {len(evaluated)} candidates simulated, {name} ...")
    if any(n < total for n, total in coverage.values()):
        notes.append("simulated " + ", ".join(f"{g} {n}/{total}" for g, (n, total) in coverage.items()) + " planned options "
                     f"(layout x token budget); the rest were ranked out by their analytic cost bound ({SAFETY:g}x margin), "
                     "which is no lower than the best found")
    if unsimulated:
        notes.append(f"time budget ({SEARCH_BUDGET_S:g} s) reached: the answer is the best found so far; not simulated: "
                     + ", ".join(f"{g} ({n} option{'s' if n > 1 else ''})" for g, n in unsimulated.items()))
    if capped:
        notes.append(f"{', '.join(capped)}: search stopped after the {MAX_PER_GPU} most promising options; a cheaper one may "
                     "exist among the rest (pin --tensor-parallel-size to look at one layout)")
    def resume(i: int, settled: Callable[[float, float], bool]) -> Candidate:
        """Go on with a bisection put off by _cannot_lower, until done or ``settled`` again; its operating point waits."""
        o, _, rs = evaluated[i]
        rs.resume(settled)
        pending[i] = _physics(o, model, w, rs)
        return _candidate(o, rs, rate, targets, w, request, point=False).model_copy(update=pending[i])

    _settle(evaluated, pending, lambda o, rs: _candidate(o, rs, rate, targets, w, request),
            lambda o, rs, top: _candidate(o, replace(rs, max_rate=top), rate, targets, w, request, point=False), resume)
    return _result(request, targets, w, rate, evaluated, refused, options, notes, time.monotonic() - t0)


_rank_key = rank_key  # meets, cost (1% ties), fewer stages, less TP, rate: rule sizing.tie-prefers-replicas-then-tensor-parallel


def _ranked(cands: list[Candidate]) -> tuple[list[Candidate], list[Candidate], bool, Candidate | None]:
    """(every option ranked, those that meet the targets in answer order, whether that order is by cost, the first
    meeting option before the 10x fold)."""
    cands = sorted(fold(cands), key=_rank_key)
    first = next((c for c in cands if c.meets_targets), None)
    if first is not None:  # then anything far larger than the best fleet
        cands = sorted(fold(cands, first.total_gpus), key=_rank_key)
    meeting = [c for c in cands if c.meets_targets and c.cost_per_hour is not None]
    priced = bool(meeting)
    if not meeting:  # nothing priced meets the targets: rank what does by GPUs (a price makes it a cost ranking)
        meeting = sorted((c for c in cands if c.meets_targets), key=lambda c: (c.total_gpus, -c.max_rate_per_replica))
    return cands, meeting, priced, first


def _key(c: Candidate) -> tuple:
    return (c.gpu, c.tensor_parallel_size, c.pipeline_parallel_size, c.expert_parallel, c.quantization, c.kv_cache_dtype,
            c.max_num_batched_tokens, c.checkpoint)


def _settle(evaluated: list, pending: dict[int, dict], finish: Callable, optimistic: Callable, resume: Callable) -> None:
    """Simulate the operating points that were put off (options that could not lower a best cost found) wherever the
    answer shows them: the choice and runners-up, each GPU type's best row, a fleet folded as out of reach. Until
    then they count as meeting the targets, as their rate search found; one that misses moves down and the ranking is
    redone, so what is shown is what simulating every operating point would show.

    A rate search put off (its option could not lower a best cost, :func:`_cannot_lower`) is finished where the
    answer shows the option as it stands, and bisected on wherever it could be shown at the best its bracket allows
    (``optimistic(option, search, top)``: ranked as if it sustained the bracket's top, no worse than the finished
    search's rank) until it could not; then every option shown has its rate found to the full precision, as if no
    search had been put off."""
    while True:
        cands, meeting, priced, first = _ranked([c for _, c, _ in evaluated])
        shown = {_key(c) for c in meeting[:3]} | ({_key(first)} if first is not None else set())
        shown |= {_key(c) for c in cands if "sizing.fold-absurd-fleets" in c.sizing_rules}
        rows: dict[str, Candidate] = {}
        for c in cands:
            rows.setdefault(c.gpu, c)
        shown |= {_key(c) for c in rows.values()}
        paused = [i for i, (_, _, rs) in enumerate(evaluated) if rs.resume is not None]
        finish_now = [i for i in paused if not priced or _key(evaluated[i][1]) in shown]  # shown as it stands
        go_on = [i for i in paused if i not in finish_now and _could_show(optimistic(*evaluated[i][::2], evaluated[i][2].paused[1]),
                                                                        meeting, rows)]
        todo = [i for i in pending if _key(evaluated[i][1]) in shown and i not in paused]
        if not todo and not finish_now and not go_on:
            return
        for i in finish_now:
            evaluated[i] = (evaluated[i][0], resume(i, None), evaluated[i][2])
        for i in go_on:  # bisect on while the bracket's top could still show it (put off again once it cannot)
            o, _, rs = evaluated[i]
            evaluated[i] = (o, resume(i, lambda low, high, o=o, rs=rs: not _could_show(optimistic(o, rs, high), meeting, rows)), rs)
        for i in todo:
            o, _, rs = evaluated[i]
            evaluated[i] = (o, finish(o, rs).model_copy(update=pending.pop(i)), rs)


def _could_show(best: Candidate, meeting: list[Candidate], rows: dict[str, Candidate]) -> bool:
    """Whether an option ranked at ``best`` (its best case) could be a runner-up or its GPU type's best row."""
    if best.meets_targets and (len(meeting) < 3 or _rank_key(best) <= _rank_key(meeting[2])):
        return True
    return best.gpu not in rows or _rank_key(best) <= _rank_key(rows[best.gpu])


def _with_ttft_band(chosen: Candidate, evaluated: list, rate: float, w: Workload) -> Candidate:
    """The chosen option with its TTFT band (capacity/ttft_band.py: two more operating-point runs at most)."""
    from .ttft_band import ttft_band

    if not chosen.replicas or chosen.ttft_p50_s is None:
        return chosen
    o, _, rs = next(e for e in evaluated if _key(e[1]) == _key(chosen))
    return chosen.model_copy(update={"ttft_band": ttft_band(o.step, w, o.cfg, rate / chosen.replicas, rs, chosen.engine, chosen.gpu)})


def _result(request, targets, w, rate, evaluated, refused, options, notes, seconds) -> CapacityResult:
    cands, meeting, priced, _ = _ranked([c for _, c, _ in evaluated])
    if not priced:
        if meeting:
            notes = [*notes, "no option that meets the targets has a price: ranked by GPU count instead of cost (give "
                             "--price-per-gpu-hour GPU=USD to rank by cost)"]
    chosen = _with_ttft_band(meeting[0], evaluated, rate, w) if meeting else None
    runners = meeting[1:3]
    why = []
    for r in runners:
        if priced:
            why.append(f"{r.gpu} {r.layout} {r.engine} {r.quantization} (budget {r.max_num_batched_tokens}): {r.replicas} replicas x "
                       f"{r.gpus_per_replica} GPUs = ${r.cost_per_hour:,.2f}/h against ${chosen.cost_per_hour:,.2f}/h "
                       f"({r.max_rate_per_replica:.2f} vs {chosen.max_rate_per_replica:.2f} req/s per replica within the targets)")
        else:
            why.append(f"{r.gpu} {r.layout} {r.engine} {r.quantization}: {r.total_gpus} GPUs against {chosen.total_gpus}")
    per_gpu: dict[str, Candidate] = {}
    for c in cands:  # the chosen option's row is the chosen option, its TTFT band included
        per_gpu.setdefault(c.gpu, chosen if chosen is not None and _key(c) == _key(chosen) else c)
    for c in refused:
        per_gpu.setdefault(c.gpu, c)
    front = pareto_front(evaluated)
    bind = None if chosen else binding_target(evaluated, targets, refused)
    inp = (f"trace {request.lengths_file}" if request.lengths_file else
           f"{request.input_tokens or 512} ({request.input_distribution})")
    out = (f"trace {request.lengths_file}" if request.lengths_file else
           f"{request.output_tokens or 200} ({request.output_distribution})")
    return CapacityResult(
        rate=rate, input_tokens=inp, output_tokens=out, targets=targets, chosen=chosen, runners_up=runners, why_chosen=why,
        best_per_gpu=sorted(per_gpu.values(), key=_rank_key), front=front, binding=bind,
        candidates_considered=len(options) + len(refused), candidates_simulated=len(evaluated), search_seconds=seconds,
        notes=notes, decisions=decisions(request, chosen, runners, cands, notes),
    )
