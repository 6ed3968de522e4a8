"""The candidates of a capacity search: every GPU type x layout x weight format x token budget the user has not pinned,
each a replica planned by the planner (rules + memory model) with its layout pinned, its step-time model, its scheduler
configuration and the analytic estimate that ranks it. ``capacity.sizing`` simulates them.
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
from ..estimate.formats import weight_format
from ..plan.advise import lora_step_term
from ..rules.sizing import PUBLISHED_METHODS, applies, by_kind
from ..simulate import LengthSpec, SchedulerConfig, Workload
from .evaluate import UTILISATION, analytic_rate
from .physics import throughput_ceiling
from .policy import EXCLUDE_PP, needless_pipeline, replicas_for, said
from .prices import parse_overrides, price_for
from .result import Candidate
from .targets import TARGET_METRICS, LatencyTargets, TargetCheck

BUDGETS = (128, 256, 512, 1024, 2048, 4096, 8192)  # max_num_batched_tokens tried when the user pinned none
NODE_GPUS = 8  # GPUs of one node the search lays a replica over (HGX/DGX-class nodes)
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
    ceiling: float = math.inf  # the physical throughput ceiling (physics.throughput_ceiling): no search goes past
    # UTILISATION x it

    def cost_bound(self, rate: float, request) -> float:
        """Lowest cost per hour this option could reach (infinite without a price): the fleet ``replicas_for`` sizes
        (headroom and confidence band included, as the search will) at the highest rate a replica could be found to
        sustain: the analytic estimate with its margin, never above what the rate search allows under the ceiling."""
        if self.price is None:
            return math.inf
        top = max(min(self.estimate * SAFETY, UTILISATION * self.ceiling), 1e-9)
        replicas = request.replicas or replicas_for(rate, top, request, self.plan.engine.name)[0]
        return max(replicas, 1) * self.gpus * self.price


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

def plan_options(request, model: ModelFacts, plan_fn: Callable, on_note: Callable[[str], None],
                 deadline: float = math.inf, budget_s: float = math.inf) -> tuple[list[Option], list[Candidate]]:
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
    needless = 0
    for gpu, per_node, nodes in types:
        if time.monotonic() > deadline:
            skipped.append(gpu.name)
            continue
        price = price_for(gpu.name, overrides)
        fits = False  # a single-stage layout of one node holds the model (and meets the latency floor)
        smallest_tp = math.inf  # of a single-stage layout the rules' own plan fits (published checkpoints up to it)
        for tp, pp, ep in sorted(_layouts(per_node, nodes, request, moe), key=lambda layout: layout[1] > 1):
            if time.monotonic() > deadline:
                skipped.append(f"{gpu.name} TP{tp}xPP{pp} and later layouts")
                break
            if needless_pipeline(pp, fits, request):  # not even planned
                needless += 1
                refused.append(_refused(gpu, tp, pp, ep, f"not searched: a single-stage layout holds the model (rule {EXCLUDE_PP})"))
                continue
            hw = HardwareFacts(kind="gpu", gpus=[gpu] * min(per_node, tp * pp), nodes=max(1, math.ceil(tp * pp / per_node)),
                               source=gpu.source)
            plan, why = _plan_one(plan_fn, hw, tp, pp, ep, {})
            published = (_published_variants(plan_fn, hw, tp, pp, ep, plan, request, model)
                         if pp == 1 and tp <= smallest_tp else [])
            if plan is None and not published:
                refused.append(_refused(gpu, tp, pp, ep, why))
                continue
            if plan is not None and pp == 1:
                smallest_tp = min(smallest_tp, tp)
            plans = [plan, *_fp8_variants(plan_fn, hw, tp, pp, ep, plan, request, model)] if plan is not None else []
            for plan in plans + published:
                made, miss = _options_for(plan, gpu, model, w, targets, request, price)
                options += made
                fits = fits or bool(made and pp == 1 and plan.parallelism.nodes == 1)
                if miss is not None:
                    refused.append(miss)
        if price is None:
            on_note(f"no price for {gpu.name}: give --price-per-gpu-hour {gpu.name}=PRICE to rank it (left out of the cost ranking)")
    if skipped:
        on_note(f"time budget ({budget_s:g} s) reached while planning: not planned: {', '.join(skipped)}; the answer "
                "is the best among what was planned (pin --gpu or --tensor-parallel-size to search the rest)")
    if needless:
        on_note(said(EXCLUDE_PP, f"{needless} PP layouts skipped: tensor parallelism within a node holds the model"))
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


def _published_variants(plan_fn: Callable, hw, tp: int, pp: int, ep: bool, plan, request, model: ModelFacts) -> list:
    """The model's published quantized checkpoints (4-bit AWQ/GPTQ, INT8 W8A8) beside the rules' own choice (rule
    sizing.published-checkpoints), each planned with its format pinned and kept where the plan serves the published
    checkpoint itself (its engine loads the format on this GPU; data/formats_by_platform.yaml); one per weight width
    (AWQ and GPTQ INT4 run the same step model: a second is the same option twice)."""
    from ..model_facts.published import published

    rule = by_kind("published_checkpoint")
    listed = {k.lower(): v for k, v in published().checkpoints.items()}.get(model.name.lower(), [])
    methods = {c.method for c in listed if c.verified}
    out, bits = [], set()
    for method in [m for m in PUBLISHED_METHODS if m in methods]:  # AWQ before GPTQ: one checkpoint per weight width
        situation = {"quantization": request.quantization, "pre_quantized": bool(model.pre_quantized),
                     "chosen": plan.quantization.method if plan is not None else None, "method": method}
        if not applies(rule, situation) or weight_format(method).bits in bits:
            continue
        variant, _ = _plan_one(plan_fn, hw, tp, pp, ep, {"quantization": method})
        if variant is not None and variant.quantization.method == method and variant.quantization.published_checkpoint:
            out.append(variant)
            bits.add(weight_format(method).bits)
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
        lora=lora_step_term(request, model, gpu, plan.engine, tp, pp),  # the plan's LoRA kernels, as its performance
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
                          ceiling=throughput_ceiling(step, cfg, w.mean_input, w.mean_output),
                          price=price.usd_per_gpu_hour if price else None, price_source=price.source if price else None))
    return out, None


def _refused(gpu: GPUInfo, tp: int, pp: int, ep: bool, why: str, plan=None) -> Candidate:
    return Candidate(gpu=gpu.name, engine=plan.engine.name if plan else "-", quantization=plan.quantization.method if plan else "-",
                     kv_cache_dtype=plan.engine.kv_cache_dtype if plan else "-", tensor_parallel_size=tp, pipeline_parallel_size=pp,
                     expert_parallel=ep, gpus_per_replica=tp * pp, max_num_seqs=0, max_num_batched_tokens=0, kv_cache_tokens=0,
                     max_rate_per_replica=0.0, replicas=0, total_gpus=0, meets_targets=False, why_not=why)
