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
from dataclasses import dataclass
from typing import Any, Callable

from ..estimate.step_time import StepModel, build_step_model
from ..hardware.facts import GPUInfo, HardwareFacts
from ..hardware.spec import searches_gpu_types
from ..model_facts.facts import ModelFacts
from ..simulate import LengthSpec, SchedulerConfig, SimulationResult, Workload
from .evaluate import RateSearch, analytic_rate, find_max_rate, operating_point
from .prices import parse_overrides, price_for
from .front import binding_target, pareto_front
from .physics import check_claim, within_physics
from ..rules.sizing import applies, by_kind
from .policy import EXCLUDE_PP, decisions, fold, rank_key, replicas_for, said, without_needless_pipelines
from .result import Candidate, CapacityResult, PhysicsShare
from .targets import TARGET_METRICS, LatencyTargets, TargetCheck, binding, check

BUDGETS = (128, 256, 512, 1024, 2048, 4096, 8192)  # max_num_batched_tokens tried when the user pinned none
NODE_GPUS = 8  # GPUs of one node the search lays a replica over (HGX/DGX-class nodes)
MIN_PER_GPU = 3  # simulated per GPU type at least (when it has that many), so its best row is a searched one
FAR = 2.0  # a GPU type whose cheapest cost bound is this far above the best found gets one simulated row
MAX_PER_GPU = 6  # simulated per GPU type at most (the cost bound usually stops earlier)
ITL_LIMITED = 0.05  # ranking only: an option whose smallest prompt chunk already breaks the ITL target sustains little
SAFETY = 1.2  # the analytic rate assumes perfect batching (optimistic); the bound allows it to be pessimistic by this much


@dataclass
class Option:
    """One planned replica layout, before simulation."""

    gpu: GPUInfo
    plan: Any  # DeploymentPlan
    step: StepModel
    cfg: SchedulerConfig
    estimate: float  # analytic requests/s of one replica
    gpus: int
    price: float | None
    price_source: str | None

    def cost_bound(self, rate: float) -> float:
        """Lowest cost per hour this option could reach (infinite without a price)."""
        if self.price is None:
            return math.inf
        replicas = max(1, math.ceil(rate / max(self.estimate * SAFETY, 1e-9)))
        return replicas * self.gpus * self.price


def workload_from(request, model: ModelFacts) -> Workload:
    inp = request.input_tokens or 512
    out = request.output_tokens or 200
    cached = request.shared_prefix_tokens or 0  # prefilled once, then served from the prefix cache (sizing.prefix-cache-cuts-prefill)
    if request.lengths_file is not None:  # its lines' cached_tokens too
        return Workload(trace=request.lengths_file, arrival="poisson", rate=request.rate,
                        max_tokens=model.max_position_embeddings, cached_prefix_tokens=cached)
    return Workload(input_tokens=LengthSpec(mean=inp, distribution=request.input_distribution),
                    output_tokens=LengthSpec(mean=out, distribution=request.output_distribution),
                    arrival="poisson", rate=request.rate, max_tokens=model.max_position_embeddings,
                    cached_prefix_tokens=cached)


def targets_from(request) -> LatencyTargets:
    return LatencyTargets(ttft_p90=request.ttft_p90, ttft_p99=request.ttft_p99, itl_p99=request.itl_p99, e2e_p90=request.e2e_p90)


def _layouts(gpus_per_node: int, nodes: int, request, moe: bool) -> list[tuple[int, int, bool]]:
    """(tp, pp, expert_parallel) over one node (and pipeline stages across nodes when more than one is given)."""
    tps = [t for t in (1, 2, 4, 8) if t <= gpus_per_node]
    out = []
    for tp in tps:
        for pp in (1, 2, 4, 8):
            if tp * pp > gpus_per_node * max(nodes, 1):
                continue
            for ep in ((False, True) if moe and tp > 1 else (False,)):
                out.append((tp, pp, ep))
    if request.tensor_parallel_size:
        out = [o for o in out if o[0] == request.tensor_parallel_size] or [(request.tensor_parallel_size, 1, False)]
    if request.pipeline_parallel_size:
        out = [o for o in out if o[1] == request.pipeline_parallel_size] or [
            (o[0], request.pipeline_parallel_size, o[2]) for o in out[:1]]
    if request.enable_expert_parallel is not None:
        out = [o for o in out if o[2] == request.enable_expert_parallel] or [(o[0], o[1], request.enable_expert_parallel) for o in out[:1]]
    return out


def _gpu_types(request) -> list[tuple[GPUInfo, int, int]]:
    """(GPU, GPUs per node, nodes) for each GPU type searched: 'any', a comma list, or one spec."""
    from ..hardware import gpu_catalog, lookup_gpu, resolve_hardware
    from .prices import prices

    spec = request.gpu.strip()
    if spec.lower() == "any":
        priced = {p.gpu for p in prices().prices}
        return [(g, NODE_GPUS, 1) for g in gpu_catalog() if g.name in priced]
    if searches_gpu_types(spec):
        return [(lookup_gpu(part.strip().split(":")[0]), NODE_GPUS, 1) for part in spec.split(",") if part.strip()]
    hw = resolve_hardware(spec)
    if hw.kind != "gpu":
        return []
    per_node = hw.gpus_per_node if ":" in spec or request.gpu == "auto" else NODE_GPUS
    return [(hw.gpu, per_node, hw.nodes)]


def _latency_floor(step: StepModel, w: Workload, targets: LatencyTargets) -> TargetCheck | None:
    """A target this replica misses even alone (no queue, no other request), from two step times: no simulation needed."""
    prompt = max(1, int(w.mean_input))
    ttft = step.step_seconds(0, 0.0, prompt, prompt * (prompt + 1) / 2, 1, 1) + step.request_overhead_s
    itl = step.decode_seconds(1, prompt + w.mean_output / 2)
    for name, value in (("ttft_p90", ttft), ("ttft_p99", ttft), ("itl_p99", itl),
                        ("e2e_p90", ttft + max(w.mean_output - 1, 0) * itl)):
        limit = getattr(targets, name)
        if limit is not None and value > limit:
            return TargetCheck(target=name, words=TARGET_METRICS[name][2], limit_s=limit, value_s=value, met=False,
                               ratio=value / limit)
    return None


def _budget(step: StepModel, plan, w: Workload, targets: LatencyTargets, top: int) -> tuple[int, bool]:
    """Token budget per step: the largest whose mixed step (a prompt chunk with a decode batch) stays within the
    inter-token target (and whether any does); without a target, ``top`` (the engine's own)."""
    if targets.itl_p99 is None:
        return top, True
    batch = max(1, min(plan.engine.max_num_seqs, 64))
    ctx = w.mean_input + w.mean_output / 2
    best, ok = BUDGETS[0], False
    for b in BUDGETS:
        if b > top:
            break
        t = step.step_seconds(batch, batch * ctx, b, b * (b + 1) / 2, 1, 0)
        if t <= 0.9 * targets.itl_p99:
            best, ok = b, True
    return best, ok


# Wall time a sizing search may take (planning and simulating) before it answers with the best found so far and
# names what it did not search: the issue-18 bound of 30 s for any request, with room for start-up and output.
SEARCH_BUDGET_S = 25.0


def plan_options(request, model: ModelFacts, plan_fn: Callable, on_note: Callable[[str], None],
                 deadline: float = math.inf) -> tuple[list[Option], list[Candidate]]:
    """Plan every candidate replica (each layout, with the rules' weights and, where the GPU and engine run it, FP8);
    the infeasible ones come back as Candidates that say why not. Past ``deadline`` the GPU types and layouts not
    planned yet are named in a note and left out."""
    overrides = parse_overrides(request.price_per_gpu_hour)
    w = workload_from(request, model)
    targets = targets_from(request)
    options: list[Option] = []
    refused: list[Candidate] = []
    moe = model.family == "moe"
    types = _gpu_types(request)
    if isinstance(overrides, dict):  # a price for a GPU type not searched would be silently unused
        unused = sorted(set(overrides) - {g.name for g, _, _ in types})
        if unused:
            from ..errors import RequestError

            raise RequestError(f"--price-per-gpu-hour names {', '.join(unused)}, which --gpu {request.gpu} does not "
                               "search; price only the GPU types asked for (or use --gpu any).")
    skipped: list[str] = []
    for gpu, per_node, nodes in types:
        if time.monotonic() > deadline:
            skipped.append(gpu.name)
            continue
        price = price_for(gpu.name, overrides)
        for tp, pp, ep in _layouts(per_node, nodes, request, moe):
            if time.monotonic() > deadline:
                skipped.append(f"{gpu.name} TP{tp}xPP{pp} and later layouts")
                break
            hw = HardwareFacts(kind="gpu", gpus=[gpu] * min(per_node, tp * pp), nodes=max(1, math.ceil(tp * pp / per_node)),
                               source=gpu.source)
            plan, why = _plan_one(plan_fn, hw, tp, pp, ep, {})
            if plan is None:
                refused.append(_refused(gpu, tp, pp, ep, why))
                continue
            for plan in [plan, *_fp8_variants(plan_fn, hw, tp, pp, ep, plan, request, model)]:
                made, miss = _options_for(plan, gpu, model, w, targets, request, price)
                options += made
                if miss is not None:
                    refused.append(miss)
        if price is None:
            on_note(f"no price for {gpu.name}: give --price-per-gpu-hour {gpu.name}=PRICE to rank it (left out of the cost ranking)")
    if skipped:
        on_note(f"time budget ({SEARCH_BUDGET_S:g} s) reached while planning: not planned: {', '.join(skipped)}; the answer "
                "is the best among what was planned (pin --gpu or --tensor-parallel-size to search the rest)")
    options, dropped = without_needless_pipelines(options, request)
    seen = set()
    for o in dropped:
        key = (o.gpu.name, o.step.tp, o.step.pp)
        if key not in seen:
            seen.add(key)
            refused.append(_refused(o.gpu, o.step.tp, o.step.pp, o.step.expert_parallel,
                                    f"not searched: a single-stage layout holds the model (rule {EXCLUDE_PP})", o.plan))
    if dropped:
        on_note(said(EXCLUDE_PP, f"{len(dropped)} pipeline-parallel options left out where tensor parallelism within a node holds the model"))
    return options, refused


def _plan_one(plan_fn: Callable, hw, tp: int, pp: int, ep: bool, pins: dict):
    """(plan, None) or (None, why not) for one pinned replica."""
    from ..errors import InferAdvisorError

    try:
        plan = plan_fn(hw, tp, pp, ep, **pins)
    except InferAdvisorError as err:  # a candidate the planner refuses is reported, not fatal
        return None, str(err)
    if not plan.feasible:
        return None, plan.infeasible_reason or "does not fit"
    return plan, None


def _fp8_variants(plan_fn: Callable, hw, tp: int, pp: int, ep: bool, plan, request, model: ModelFacts) -> list:
    """FP8 weights, and FP8 weights with an FP8 KV cache, where the rules let this GPU and engine run them and the user
    pinned neither (rule sizing.fp8-where-supported); a variant the planner turns into something else is dropped."""
    rule = by_kind("search_dimension")
    situation = {"quantization": request.quantization, "kv_cache_dtype": request.kv_cache_dtype,
                 "pre_quantized": bool(model.pre_quantized), "chosen": plan.quantization.method}
    # planning a variant the GPU cannot run costs a failed plan (and its hardware suggestions): ask only FP8 hardware
    if not applies(rule, situation) or not hw.gpu.tflops.get("fp8") or plan.quantization.method != "none":
        return []
    out = []
    for pins in ({"quantization": "fp8"}, {"quantization": "fp8", "kv_cache_dtype": "fp8"}):
        variant, _ = _plan_one(plan_fn, hw, tp, pp, ep, pins)
        if variant is None or variant.quantization.method != "fp8":
            break
        if variant.engine.kv_cache_dtype == pins.get("kv_cache_dtype", variant.engine.kv_cache_dtype):
            out.append(variant)
    return out


def _options_for(plan, gpu: GPUInfo, model: ModelFacts, w: Workload, targets: LatencyTargets, request, price):
    """The simulated options of one planned replica (one per token budget tried), or the Candidate that says it misses
    a target even alone."""
    p = plan.parallelism
    tp, pp, ep = p.tensor_parallel_size, p.pipeline_parallel_size, bool(p.expert_parallel)
    step = build_step_model(
        model, gpu=gpu, engine=plan.engine.name, quantization=plan.quantization.method, dtype=plan.dtype,
        kv_cache_dtype=plan.engine.kv_cache_dtype, tp=tp, pp=pp, nodes=p.nodes, expert_parallel=ep,
        cpu_cores=plan.hardware.cpu_cores, cpu_simd=plan.hardware.cpu_simd,
    )
    floor = _latency_floor(step, w, targets)
    if floor:
        why = f"misses the {floor.words} target even alone ({floor.value_s:.3g} s against {floor.limit_s:.3g} s)"
        return [], _refused(gpu, tp, pp, ep, why, plan).model_copy(update={"checks": [floor]})
    top = max(plan.engine.max_num_batched_tokens or 8192, BUDGETS[0])
    budget, itl_ok = _budget(step, plan, w, targets, top)
    budgets = [(budget, itl_ok)]
    if itl_ok and targets.itl_p99 is not None and budget * 2 <= top:
        budgets.append((budget * 2, False))  # one step past the ITL margin: p99 may still hold at a moderate load
    if request.max_num_batched_tokens:
        budgets = [(request.max_num_batched_tokens, True)]
    out = []
    for b, b_ok in budgets:
        seqs = request.max_num_seqs or plan.engine.max_num_seqs
        if not request.max_num_seqs:
            seqs = min(seqs, b)  # vLLM refuses a token budget below max_num_seqs; every engine is simulated (and pinned) so
        cfg = SchedulerConfig(max_num_seqs=seqs, max_num_batched_tokens=b, kv_capacity_tokens=max(plan.memory.kv_cache_tokens, 1),
                              kv_admission=step.profile.kv_admission, lanes=pp)
        est = analytic_rate(step, cfg, w.mean_input, w.mean_output)
        if not b_ok:  # a prompt chunk makes a step longer than the ITL margin: only part of the load keeps p99 under it
            est *= ITL_LIMITED if b == budget else 0.5
        out.append(Option(gpu=gpu, plan=plan, step=step, cfg=cfg, estimate=est, gpus=tp * pp,
                          price=price.usd_per_gpu_hour if price else None, price_source=price.source if price else None))
    return out, None


def _refused(gpu: GPUInfo, tp: int, pp: int, ep: bool, why: str, plan=None) -> Candidate:
    return Candidate(gpu=gpu.name, engine=plan.engine.name if plan else "-", quantization=plan.quantization.method if plan else "-",
                     kv_cache_dtype=plan.engine.kv_cache_dtype if plan else "-", tensor_parallel_size=tp, pipeline_parallel_size=pp,
                     expert_parallel=ep, gpus_per_replica=tp * pp, max_num_seqs=0, max_num_batched_tokens=0, kv_cache_tokens=0,
                     max_rate_per_replica=0.0, replicas=0, total_gpus=0, meets_targets=False, why_not=why)


def _candidate(o: Option, rs: RateSearch, rate: float, targets: LatencyTargets, w: Workload, request) -> Candidate:
    p = o.plan
    replicas, needed, applied = replicas_for(rate, rs.max_rate, request, p.engine.name)
    replicas = request.replicas or replicas
    res: SimulationResult | None = None
    checks = list(rs.floor_checks)
    if replicas:
        res = operating_point(o.step, w, o.cfg, rate / replicas)
        checks = check(res, targets)
    meets = bool(replicas) and all(c.met for c in checks) and not (res is not None and res.saturated)
    cost = replicas * o.gpus * o.price if (o.price is not None and replicas) else None
    tokens_per_s = rate * w.mean_output if replicas else None
    best_tps = rs.max_rate * w.mean_output
    per_user = (1.0 / res.tpot_s.mean) if (res is not None and res.tpot_s.mean and math.isfinite(res.tpot_s.mean)) else None
    return Candidate(
        gpu=o.gpu.name, engine=p.engine.name, quantization=p.quantization.method, kv_cache_dtype=p.engine.kv_cache_dtype,
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
    options, refused = plan_options(request, model, plan_fn, notes.append, deadline)
    unsimulated: dict[str, int] = {}
    by_gpu: dict[str, list[Option]] = {}
    for o in options:
        by_gpu.setdefault(o.gpu.name, []).append(o)
    evaluated: list[tuple[Option, Candidate, RateSearch]] = []
    coverage: dict[str, tuple[int, int]] = {}
    capped: list[str] = []
    best_cost = math.inf
    last_report = t0
    for opts in by_gpu.values():
        opts.sort(key=lambda o: (o.cost_bound(rate), -o.estimate))
    # the most promising GPU types first, so the best found early prunes the rest
    for name, opts in sorted(by_gpu.items(), key=lambda kv: (kv[1][0].cost_bound(rate), -kv[1][0].estimate)):
        best_here = math.inf
        simulated = 0
        # a GPU type whose cheapest bound is far above the best found gets its first row only
        least = MIN_PER_GPU if opts[0].cost_bound(rate) < FAR * best_cost else 1
        for k, o in enumerate(opts):
            if time.monotonic() > deadline:
                unsimulated[name] = len(opts) - k
                break
            bound = o.cost_bound(rate)
            if k >= MAX_PER_GPU or (k >= least and (bound >= best_here or bound >= best_cost)):
                if k >= MAX_PER_GPU:
                    capped.append(name)
                break
            rs = find_max_rate(o.step, w, o.cfg, targets, deadline=deadline)
            phys = _physics(o, model, w, rs)
            cand = _candidate(o, rs, rate, targets, w, request).model_copy(update=phys)
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
    return _result(request, targets, w, rate, evaluated, refused, options, notes, time.monotonic() - t0)


_rank_key = rank_key  # meets, cost (1% ties), fewer stages, less TP, rate: rule sizing.tie-prefers-replicas-then-tensor-parallel


def _result(request, targets, w, rate, evaluated, refused, options, notes, seconds) -> CapacityResult:
    cands = sorted(fold([c for _, c, _ in evaluated]), key=_rank_key)
    first = next((c for c in cands if c.meets_targets), None)
    if first is not None:  # then anything far larger than the best fleet
        cands = sorted(fold(cands, first.total_gpus), key=_rank_key)
    meeting = [c for c in cands if c.meets_targets and c.cost_per_hour is not None]
    priced = bool(meeting)
    if not meeting:  # nothing priced meets the targets: rank what does by GPUs (a price makes it a cost ranking)
        meeting = sorted((c for c in cands if c.meets_targets), key=lambda c: (c.total_gpus, -c.max_rate_per_replica))
        if meeting:
            notes = [*notes, "no option that meets the targets has a price: ranked by GPU count instead of cost (give "
                             "--price-per-gpu-hour GPU=USD to rank by cost)"]
    chosen = meeting[0] if meeting else None
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
    for c in cands:
        per_gpu.setdefault(c.gpu, c)
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
