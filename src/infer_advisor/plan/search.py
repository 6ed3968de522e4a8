"""Choose engine, dtype, KV dtype, quantization and layout: rules rank the options, the memory model has the last word.

Order: engines by rule score; for the best engine, dtype and KV dtype by score; then every allowed
(quantization, layout) pair sorted by score, then by GPUs used. The first pair whose memory fits
``concurrency x context`` wins (pass 1). If none does, the first pair that holds one request of the full context wins, with
a warning that fewer requests fit at once; failing that, the first that holds one request of at least
``min_useful_context`` tokens, with ``max_model_len`` lowered (pass 2). If the engine has no such pair, the next engine is tried.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engine_memory import engine_settings
from ..engines import EngineProfile, engine_profile, engine_profiles
from ..estimate.formats import weight_format
from ..estimate.memory import MemoryEstimate, estimate_memory
from ..hardware.facts import HardwareFacts
from ..model_facts.facts import ModelFacts
from .checkpoint import pick_published, platform_of, refusal
from ..rules.evaluate import Trace, Verdict, judge, rank
from ..rules.schema import Rule
from ..speculative import DraftPair, draft_for

# Pre-quantized checkpoints (config.json quant_method) map to the weight format used for bytes.
PRE_QUANT_FORMAT = {"awq": "awq", "gptq": "gptq", "fp8": "fp8", "compressed-tensors": "compressed-tensors-w4a16"}


def prequantized_format(model: ModelFacts) -> str | None:
    """The weight format of a pre-quantized checkpoint; NVIDIA ModelOpt checkpoints name theirs in quant_algo."""
    if model.weight_format:  # read from quantization_config by the model-facts stage (fp8-block, mxfp4-experts, nvfp4 ...)
        return model.weight_format
    if model.pre_quantized == "other" and isinstance(model.quantization_config, dict):
        qc = model.quantization_config
        if str(qc.get("quant_method", "")).lower() == "modelopt":
            algo = str(qc.get("quant_algo", "")).upper()
            return {"FP8": "fp8", "NVFP4": "nvfp4"}.get(algo)
    return PRE_QUANT_FORMAT.get(model.pre_quantized or "")


@dataclass
class Layout:
    tp: int
    pp: int
    nodes: int
    ep: bool = False  # MoE experts spread over the TP ranks instead of split within each expert

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    def __str__(self) -> str:
        return f"tp={self.tp} pp={self.pp} nodes={self.nodes}" + (" ep" if self.ep else "")


@dataclass
class Choice:
    engine: Verdict
    dtype: Verdict
    kv_cache_dtype: Verdict
    quantization: Verdict
    layout_verdict: Verdict
    layout: Layout
    memory: MemoryEstimate
    context: int
    context_lowered: bool
    profile: EngineProfile
    concurrency_lowered: bool = False
    kv_fallback: bool = False
    speculative: DraftPair | None = None
    kv_fallback_from_context: int | None = None  # the context the model-dtype KV cache would have allowed (cut hard)
    kv_alternatives: list[str] = field(default_factory=list)  # other KV dtypes the rules allow (for advice)
    layout_comparison: str | None = None  # why this layout beat the others that fit equally well (the goal's comparison)


@dataclass
class SearchResult:
    choice: Choice | None
    rejected: list[str] = field(default_factory=list)
    forbidden: list[Verdict] = field(default_factory=list)
    best_effort: Choice | None = None
    best_effort_allowed: bool = False  # the best-effort choice passed every rule and only failed on memory
    best_effort_layouts_refused: list[Verdict] = field(default_factory=list)  # layouts the rules took from its engine


def layouts(hw: HardwareFacts, tp_sizes: list[int], request: Any = None, model: ModelFacts | None = None) -> list[Layout]:
    """Tensor x pipeline layouts over one node (pipeline stages within the node too), then pipeline stages across nodes;
    the user's pins (--tensor-parallel-size, --pipeline-parallel-size, --enable-expert-parallel) select among them."""
    from ..errors import RequestError

    if hw.kind == "cpu":
        return [Layout(1, 1, 1)]
    per_node = hw.gpus_per_node
    tps = [t for t in tp_sizes if t <= per_node] + ([per_node] if per_node not in tp_sizes else [])
    out = [Layout(tp, 1, 1) for tp in tps]
    out += [Layout(tp, pp, 1) for pp in (2, 4, 8) for tp in tps if tp * pp <= per_node]
    for nodes in range(2, hw.nodes + 1):
        out.append(Layout(per_node, nodes, nodes))
    tp_pin = getattr(request, "tensor_parallel_size", None)
    pp_pin = getattr(request, "pipeline_parallel_size", None)
    if tp_pin or pp_pin:
        pinned = [lo for lo in out if (not tp_pin or lo.tp == tp_pin) and (not pp_pin or lo.pp == pp_pin)]
        if tp_pin and pp_pin and not pinned and tp_pin <= per_node and tp_pin * pp_pin <= hw.total_gpus:
            nodes = max(1, -(-tp_pin * pp_pin // per_node))
            if nodes <= hw.nodes and (nodes == 1 or tp_pin == per_node):
                pinned = [Layout(tp_pin, pp_pin, nodes)]
        if not pinned:
            asked = " x ".join(x for x in (f"--tensor-parallel-size {tp_pin}" if tp_pin else "",
                                           f"--pipeline-parallel-size {pp_pin}" if pp_pin else "") if x)
            raise RequestError(f"{asked} does not fit {per_node} GPU(s) per node x {hw.nodes} node(s): tensor parallelism stays within "
                               f"a node ({per_node} GPUs here); pipeline stages span nodes only at full-node tensor parallelism.")
        out = pinned
    ep = getattr(request, "enable_expert_parallel", None)
    if ep:
        if model is not None and model.family != "moe":
            raise RequestError(f"--enable-expert-parallel needs a mixture-of-experts model; {model.name} is dense.")
        out = [Layout(lo.tp, lo.pp, lo.nodes, ep=True) for lo in out]
    return out


def _by_decision(rules: tuple[Rule, ...]) -> dict[str, list[Rule]]:
    out: dict[str, list[Rule]] = {"engine": [], "dtype": [], "kv_cache_dtype": [], "quantization": [], "layout": []}
    for r in rules:
        out[r.decides].append(r)
    return out


def search(
    model: ModelFacts,
    hw: HardwareFacts,
    request: Any,
    rules: tuple[Rule, ...],
    facts: dict[str, Any],
    *,
    concurrency: int,
    context: int,
    input_tokens: int,
    request_tokens: int,
    min_context: int,
    tp_sizes: list[int],
    cpu_fraction: float,
    trace: list[Trace] | None,
    calibrations: Any = None,
    kv_fallback_fraction: float = 0.5,
) -> SearchResult:
    by = _by_decision(rules)
    result = SearchResult(choice=None)
    engines = [request.engine] if request.engine != "auto" else list(engine_profiles())
    engine_order = rank(by["engine"], "engine", engines, facts, trace)
    on_gpu = hw.kind == "gpu"
    # Engines budget on what CUDA gives a process (driver-reported total minus the driver's reserve), not the datasheet.
    mem_bytes = hw.gpu.budget_memory_bytes if on_gpu else int(hw.cpu.memory_bytes * cpu_fraction)
    mem_source = (hw.gpu.usable_memory_source or hw.gpu.source) if on_gpu else "probe: host RAM x cpu_memory_fraction"

    for ev in engine_order:
        if not ev.allowed:
            result.forbidden.append(ev)
            continue
        profile = engine_profile(ev.value)
        if hw.kind not in profile.runs_on:
            result.rejected.append(f"{ev.value} does not run on {hw.kind}")
            continue
        f_e = {**facts, "engine": ev.value}
        dtypes = [request.dtype] if request.dtype != "auto" else ["bfloat16", "float16", "float32"]
        dv = rank(by["dtype"], "dtype", dtypes, f_e, trace, context=ev.value)[0]
        if not dv.allowed:
            result.forbidden.append(dv)
            continue
        f_d = {**f_e, "dtype": dv.value}
        kvs = [request.kv_cache_dtype] if request.kv_cache_dtype != "auto" else ["auto", "fp8"]
        kv_ranked = rank(by["kv_cache_dtype"], "kv_cache_dtype", kvs, f_d, trace, context=ev.value)
        kv = kv_ranked[0]
        # An explicitly asked-for context is worth a smaller KV dtype (fp8) before any lowering; the model's
        # default full context is not, so it is lowered first (pass 2b), unless that cuts it hard (below).
        kv_allowed = [v for v in kv_ranked[1:] if v.allowed]
        kv_fallbacks = kv_allowed if request.context else []
        if not kv.allowed:
            result.forbidden.append(kv)
            continue
        f_k = {**f_d, "kv_cache_dtype": kv.value}
        layouts_refused: list[Verdict] = []
        if model.pre_quantized:
            fmt = prequantized_format(model)
            quants = [fmt] if fmt else []
            if not quants:
                result.rejected.append(f"pre-quantized format '{model.pre_quantized}' has no weight format here")
                continue
        elif request.quantization != "auto":
            quants = [request.quantization]
        else:  # formats only a published checkpoint can be in (fp8-block, mxfp4-experts, nvfp4) are not run
            quants = [q for q in profile.quantizations if not weight_format(q).checkpoint_only]
        if request.quantization not in ("auto", *quants) and model.pre_quantized:
            result.rejected.append(
                f"the checkpoint is already quantized ({model.pre_quantized}); --quantization {request.quantization} cannot apply"
            )
            continue
        q_verdicts = rank(by["quantization"], "quantization", quants, f_k, trace, context=ev.value)
        candidates = []
        for qi, qv in enumerate(q_verdicts):
            if not qv.allowed:
                result.forbidden.append(qv)
                continue
            if qv.value not in profile.quantizations:
                result.rejected.append(f"{profile.display} cannot load weights in format '{qv.value}'")
                continue
            refused = refusal(model, qv.value, **_where(profile.name, request, ev.value, hw))
            if refused is not None:  # data/formats_by_platform.yaml: the engine's own source says it cannot load it here
                result.rejected.append(f"{refused.why} ({refused.source})")
                continue
            fmt = weight_format(qv.value)
            f_q = {**f_k, "quantization": qv.value, "quant.group_size": fmt.group_size, "quant.bits": fmt.bits}
            for layout in layouts(hw, tp_sizes, request, model):
                f_l = {**f_q, "tp": layout.tp, "pp": layout.pp, "nodes": layout.nodes, "gpus_used": layout.gpus, "ep": layout.ep}
                lv = judge(by["layout"], "layout", str(layout), f_l, trace, context=f"{ev.value} + {qv.value}")
                if not lv.allowed:
                    layouts_refused.append(lv)
                    result.forbidden.append(lv)
                    continue
                candidates.append((-(qv.score + lv.score), layout.gpus, qi, qv, lv, layout))
        candidates.sort(key=lambda c: c[:3])
        # Speculative decoding for the latency goal, where the engine takes the published draft head on its command line.
        spec = (
            draft_for(model.name, list(profile.speculative))
            if request.speculative == "auto" and request.goal == "latency" and on_gpu
            else None
        )

        version = request.engine_version if request.engine == ev.value else None

        def estimate(
            qv: Verdict, layout: Layout, ctx: int, sequences: int = concurrency, kvv: Verdict | None = None, draft: DraftPair | None = None
        ) -> MemoryEstimate:
            settings = engine_settings(profile.name, version, hw.gpu if on_gpu else None, tp=layout.tp, pp=layout.pp)
            cal = (
                calibrations.memory_for(profile.name, settings.version, hw.gpu.name, layout.gpus, strict=request.calibration_mismatch == "refuse")
                if (calibrations and on_gpu) else None
            )
            return estimate_memory(
                model,
                gpu_memory_bytes=mem_bytes,
                engine=profile,
                quantization=qv.value,
                dtype=dv.value,
                kv_cache_dtype=(kvv or kv).value,
                tp=layout.tp,
                pp=layout.pp,
                context=ctx,
                concurrency=sequences,
                request_tokens=min(request_tokens, ctx),
                input_tokens=input_tokens,
                max_num_batched_tokens=request.max_num_batched_tokens or settings.max_num_batched_tokens,
                max_num_seqs=getattr(request, "max_num_seqs", None) or plan_max_num_seqs(request.goal, concurrency, settings.max_num_seqs),
                memory_fraction=request.gpu_memory_utilization or settings.memory_fraction,
                on_gpu=on_gpu,
                draft_params=draft.params if draft else 0,
                draft_kv_elements_per_token=draft.kv_elements_per_token if draft else 0,
                memory=settings.profile,
                interconnect=hw.gpu.interconnect if on_gpu else "pcie",
                calibration=cal.for_layout(layout.gpus) if cal is not None else None,
                gpu_memory_source=mem_source,
                engine_version=settings.version,
                # a published checkpoint the plan would serve, at its stated size (the same lookup advise makes)
                checkpoint_bytes=_published_bytes(model, qv.value, profile.name, request, ev.value, hw),
            )

        def holds(est: MemoryEstimate) -> bool:  # fits, and one request of the whole context fits its KV cache
            return est.fits and est.max_concurrency >= 1

        if spec is not None:  # pass 1 with the draft head; without it below when it does not fit
            for *_, qv, lv, layout in candidates:
                est = estimate(qv, layout, context, draft=spec)
                if holds(est):
                    result.choice = Choice(ev, dv, kv, qv, lv, layout, est, context, False, profile, speculative=spec)
                    return result
        estimates = []
        fitting: list[tuple[Verdict, Verdict, Layout, MemoryEstimate]] = []
        first_key = None
        for key, _, _, qv, lv, layout in candidates:
            if first_key is not None and key != first_key:
                break  # only layouts the rules rank as high as the first that fits compete on speed
            if first_key is not None and qv.value != fitting[0][0].value:
                continue
            est = estimate(qv, layout, context)
            estimates.append((qv, lv, layout, est))
            if holds(est):
                first_key = key if first_key is None else first_key
                fitting.append((qv, lv, layout, est))
        if fitting:
            pick, why = 0, None
            if len(fitting) > 1 and on_gpu:
                from .layout_goal import pick_by_goal

                pick, why = pick_by_goal(model, hw, request, profile.name, dv.value, kv.value, fitting, concurrency,
                                         input_tokens, request_tokens)
            qv, lv, layout, est = fitting[pick]
            result.choice = Choice(ev, dv, kv, qv, lv, layout, est, context, False, profile, layout_comparison=why)
            return result
        seen = {(e[0].value, str(e[2])) for e in estimates}
        for *_, qv, lv, layout in candidates:
            if (qv.value, str(layout)) not in seen:
                estimates.append((qv, lv, layout, estimate(qv, layout, context)))
        for alt in kv_fallbacks:  # pass 1 again with a smaller KV cache dtype, before lowering anything
            for *_, qv, lv, layout in candidates:
                est = estimate(qv, layout, context, kvv=alt)
                if holds(est):
                    result.choice = Choice(ev, dv, alt, qv, lv, layout, est, context, False, profile, kv_fallback=True)
                    return result
        def pass2(kvv: Verdict, fallback: bool, keep: Choice | None = None) -> Choice | None:
            """Pass 2a (one request of the full context), then 2b (a lowered context) with KV dtype ``kvv``;
            with ``keep``, only its weight format and layout (a KV dtype change alone)."""
            singles = [
                (qv, lv, layout, estimate(qv, layout, context, sequences=1, kvv=kvv))
                for qv, lv, layout, _ in estimates
                if keep is None or (qv.value == keep.quantization.value and layout == keep.layout)
            ]
            for qv, lv, layout, single in singles:  # pass 2a: any pair that holds one request of the full context
                if holds(single):
                    return Choice(ev, dv, kvv, qv, lv, layout, single, context, False, profile, concurrency_lowered=True,
                                  kv_fallback=fallback)
            for qv, lv, layout, single in singles:  # pass 2b: only then lower the context
                floor = min(min_context, context)
                if single.max_context >= floor:
                    lowered = single.max_context
                    if profile.memory_accounting == "reserve":
                        lowered -= lowered % profile.block_size
                    shared, at_concurrency = lowered, estimate(qv, layout, lowered, kvv=kvv)  # still every request?
                    if not at_concurrency.fits and concurrency * min(request_tokens, lowered) <= at_concurrency.kv_cache_tokens:
                        shared = at_concurrency.kv_cache_tokens  # a little shorter, so the larger batch's activations fit too
                        at_concurrency = estimate(qv, layout, shared, kvv=kvv)
                    if holds(at_concurrency) and shared >= floor:
                        return Choice(ev, dv, kvv, qv, lv, layout, at_concurrency, shared, True, profile, kv_fallback=fallback)
                    est2 = estimate(qv, layout, lowered, sequences=1, kvv=kvv)
                    if holds(est2):
                        return Choice(ev, dv, kvv, qv, lv, layout, est2, lowered, True, profile, concurrency_lowered=True,
                                      kv_fallback=fallback)
            return None

        found = pass2(kv, False)
        if found is not None and found.context_lowered and found.context < kv_fallback_fraction * context:
            # Cut hard: a smaller KV dtype the rules allow (fp8 halves the cache) keeps more of the context; the
            # weight format and layout stay as chosen.
            for alt in kv_allowed:
                better = pass2(alt, True, keep=found)
                if better is not None and better.context > found.context:
                    better.kv_fallback_from_context = found.context
                    found = better
                    break
        if found is not None:
            found.kv_alternatives = [str(v.value) for v in kv_ranked if v.allowed and v.value != found.kv_cache_dtype.value]
            result.choice = found
            return result
        if estimates and result.best_effort is None:
            qv, lv, layout, est = min(estimates, key=lambda e: e[3].shortfall_bytes_per_gpu)
            result.best_effort = Choice(ev, dv, kv, qv, lv, layout, est, context, False, profile)
            result.best_effort_allowed = True
            result.best_effort_layouts_refused = layouts_refused
        result.rejected.append(f"{profile.display}: no allowed quantization and layout fits in memory")
    if result.best_effort is None:
        result.best_effort = _fallback(model, hw, request, by, facts, engine_order, mem_bytes, concurrency, context, request_tokens, input_tokens, tp_sizes)
    return result


def plan_max_num_seqs(goal: str, concurrency: int, default: int) -> int:
    """Sequences the engine schedules at once: the engine version's default, or the batch itself for latency plans."""
    return max(concurrency, 1) if goal == "latency" else default


def _fallback(model, hw, request, by, facts, engine_order, mem_bytes, concurrency, context, request_tokens, input_tokens, tp_sizes) -> Choice | None:
    """When the rules forbid every option, still describe the closest plan (marked infeasible by the caller)."""
    for ev in engine_order:
        profile = engine_profile(ev.value)
        if hw.kind not in profile.runs_on:
            continue
        f_e = {**facts, "engine": ev.value}
        dv = rank(by["dtype"], "dtype", ["bfloat16", "float16", "float32"] if request.dtype == "auto" else [request.dtype], f_e, None)[0]
        kv = rank(by["kv_cache_dtype"], "kv_cache_dtype", [request.kv_cache_dtype], {**f_e, "dtype": dv.value}, None)[0]
        fmt = prequantized_format(model) or (
            request.quantization if request.quantization not in ("auto",) else profile.quantizations[0]
        )
        if fmt not in profile.quantizations:
            fmt = profile.quantizations[0]
        qv = Verdict(value=fmt, allowed=False)
        layout = layouts(hw, tp_sizes, request, model)[-1]
        est = estimate_memory(
            model, gpu_memory_bytes=mem_bytes, engine=profile, quantization=fmt, dtype=dv.value, kv_cache_dtype=kv.value,
            tp=layout.tp, pp=layout.pp, context=context, concurrency=concurrency,
            request_tokens=min(request_tokens, context), input_tokens=input_tokens, on_gpu=hw.kind == "gpu",
        )
        return Choice(ev, dv, kv, qv, Verdict(value=str(layout), allowed=False), layout, est, context, False, profile)
    return None


def _where(engine: str, request: Any, engine_value: str, hw: HardwareFacts) -> dict:
    """Engine, platform, version and GPU architecture: what the compatibility table is asked with."""
    gpu = hw.gpu if hw.kind == "gpu" else None
    return dict(
        engine=engine, platform=platform_of(hw.kind, gpu.vendor if gpu else None),
        version=request.engine_version if request.engine == engine_value else None,
        compute_capability=gpu.compute_capability if gpu is not None and gpu.vendor == "nvidia" else None,
        gfx=gpu.gfx_arch if gpu is not None else None,
    )


def _published_bytes(model: ModelFacts, method: str, engine: str, request: Any, engine_value: str, hw: HardwareFacts) -> int | None:
    """The stated size of the published checkpoint the plan would serve (the same pick advise makes), if stated."""
    ckpt = pick_published(model, method, **_where(engine, request, engine_value, hw))
    return ckpt.size_bytes if ckpt is not None else None
