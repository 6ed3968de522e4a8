"""Choose engine, dtype, KV dtype, quantization and layout: rules rank the options, the memory model has the last word.

Order: engines by rule score; for the best engine, dtype and KV dtype by score; then every allowed
(quantization, layout) pair sorted by score, then by GPUs used. The first pair whose memory fits
``concurrency x context`` wins (pass 1). If none does, the first pair that holds one request of the full context wins, with
a warning that fewer requests fit at once; failing that, the first that holds one request of at least
``min_useful_context`` tokens, with ``max_model_len`` lowered (pass 2). If the engine has no such pair, the next engine is tried.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..engines.settings import engine_settings
from ..engines.profiles import EngineProfile, engine_profile, engine_profiles
from ..estimate.formats import weight_format
from ..estimate.memory import MemoryEstimate, estimate_memory
from ..hardware.facts import HardwareFacts
from ..model_facts.facts import ModelFacts
from .checkpoint import published_bytes, refusal, where
from ..rules.evaluate import Trace, Verdict, judge, rank
from ..rules.schema import Rule
from ..engines.lora import lora_slots
from .options import Choice, Layout, SearchResult, layouts, plan_max_num_seqs, prequantized_served

if TYPE_CHECKING:  # speculative decoding's modules are imported when a plan uses it (--speculative-config, or auto for latency)
    from ..engines.draft_shape import DraftShape
    from ..engines.speculative import DraftPair


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
    task = _Task(model, hw, request, facts, by, trace, calibrations, concurrency, context, input_tokens, request_tokens,
                 min_context, tp_sizes, kv_fallback_fraction, mem_bytes, mem_source)
    for ev in engine_order:
        engine = _engine_options(task, ev, result)
        if engine is not None and engine.run(result):
            return result
    if result.best_effort is None:
        result.best_effort = _fallback(model, hw, request, by, facts, engine_order, mem_bytes, concurrency, context, request_tokens, input_tokens, tp_sizes)
    return result


@dataclass
class _Task:
    """What one search is asked: the model, hardware, request, rules and workload (shared by every engine tried)."""

    model: ModelFacts
    hw: HardwareFacts
    request: Any
    facts: dict[str, Any]
    by: dict[str, list[Rule]]
    trace: list[Trace] | None
    calibrations: Any
    concurrency: int
    context: int
    input_tokens: int
    request_tokens: int
    min_context: int
    tp_sizes: list[int]
    kv_fallback_fraction: float
    mem_bytes: int
    mem_source: str

    @property
    def on_gpu(self) -> bool:
        return self.hw.kind == "gpu"


def _engine_options(t: _Task, ev: Verdict, result: SearchResult) -> _EngineSearch | None:
    """The engine's dtype, KV dtype and ranked (quantization, layout) candidates by the rules; None (with the reason
    recorded in ``result``) when the rules or the engine leave nothing to try."""
    request, model, trace = t.request, t.model, t.trace
    if not ev.allowed:
        result.forbidden.append(ev)
        return None
    profile = engine_profile(ev.value)
    if t.hw.kind not in profile.runs_on:
        result.rejected.append(f"{ev.value} does not run on {t.hw.kind}")
        return None
    f_e = {**t.facts, "engine": ev.value}
    dtypes = [request.dtype] if request.dtype != "auto" else ["bfloat16", "float16", "float32"]
    dv = rank(t.by["dtype"], "dtype", dtypes, f_e, trace, context=ev.value)[0]
    if not dv.allowed:
        result.forbidden.append(dv)
        return None
    f_d = {**f_e, "dtype": dv.value}
    kv_ranked = _rank_kv(t.by["kv_cache_dtype"], request, f_d, trace, ev.value)
    kv = kv_ranked[0]
    if not kv.allowed:
        result.forbidden.append(kv)
        return None
    user_draft = _user_draft(request, model)
    if user_draft is not None and ev.value not in user_draft.engines:
        result.rejected.append(f"{profile.display}: --speculative-config is planned for {', '.join(user_draft.engines)} only")
        return None
    quants = _quantizations(model, request, profile, result)
    if quants is None:
        return None
    f_k = {**f_d, "kv_cache_dtype": kv.value}
    engine = _EngineSearch(t, ev, profile, dv, kv, kv_ranked, user_draft)
    engine.rank_candidates(quants, f_k, result)
    return engine


def _user_draft(request: Any, model: ModelFacts) -> DraftShape | None:
    """The draft a --speculative-config names, as the engine holds it (a bad config is one clear error)."""
    text = getattr(request, "speculative_config", None)
    if not text:
        return None
    from ..engines.draft_shape import draft_shape, parse_speculative_config

    return draft_shape(parse_speculative_config(text), model)


def _quantizations(model: ModelFacts, request: Any, profile: EngineProfile, result: SearchResult) -> list[str] | None:
    """The weight formats to try on this engine (None, with the reason in ``result``, when none can apply)."""
    if model.pre_quantized:
        fmt = prequantized_served(model, profile)
        quants = [fmt] if fmt else []
        if not quants:
            result.rejected.append(f"pre-quantized format '{model.pre_quantized}' has no weight format here")
            return None
    elif request.quantization != "auto":
        quants = [request.quantization]
    else:  # formats only a published checkpoint can be in (fp8-block, mxfp4-experts, nvfp4) are not run
        quants = [q for q in profile.quantizations if not weight_format(q).checkpoint_only]
    if request.quantization not in ("auto", *quants) and model.pre_quantized:
        result.rejected.append(
            f"the checkpoint is already quantized ({model.pre_quantized}); --quantization {request.quantization} cannot apply"
        )
        return None
    return quants


@dataclass
class _EngineSearch:
    """One engine's passes over its ranked (quantization, layout) candidates; the memory model has the last word."""

    t: _Task
    ev: Verdict
    profile: EngineProfile
    dv: Verdict
    kv: Verdict
    kv_ranked: list[Verdict]
    user_draft: DraftShape | None = None  # --speculative-config
    candidates: list[tuple] = field(default_factory=list)
    layouts_refused: list[Verdict] = field(default_factory=list)
    estimates: list[tuple[Verdict, Verdict, Layout, MemoryEstimate]] = field(default_factory=list)

    def rank_candidates(self, quants: list[str], f_k: dict[str, Any], result: SearchResult) -> None:
        t, ev, profile = self.t, self.ev, self.profile
        q_verdicts = rank(t.by["quantization"], "quantization", quants, f_k, t.trace, context=ev.value)
        for qi, qv in enumerate(q_verdicts):
            if not qv.allowed:
                result.forbidden.append(qv)
                continue
            if qv.value not in profile.quantizations:
                result.rejected.append(f"{profile.display} cannot load weights in format '{qv.value}'")
                continue
            refused = refusal(t.model, qv.value, **where(profile.name, t.request, ev.value, t.hw))
            if refused is not None:  # data/formats_by_platform.yaml: the engine's own source says it cannot load it here
                result.rejected.append(f"{refused.why} ({refused.source})")
                continue
            fmt = weight_format(qv.value)
            f_q = {**f_k, "quantization": qv.value, "quant.group_size": fmt.group_size, "quant.bits": fmt.bits}
            for layout in layouts(t.hw, t.tp_sizes, t.request, t.model):
                f_l = {**f_q, "tp": layout.tp, "pp": layout.pp, "nodes": layout.nodes, "gpus_used": layout.gpus, "ep": layout.ep}
                lv = judge(t.by["layout"], "layout", str(layout), f_l, t.trace, context=f"{ev.value} + {qv.value}")
                if not lv.allowed:
                    self.layouts_refused.append(lv)
                    result.forbidden.append(lv)
                    continue
                self.candidates.append((-(qv.score + lv.score), layout.gpus, qi, qv, lv, layout))
        self.candidates.sort(key=lambda c: c[:3])

    def choice(self, qv: Verdict, lv: Verdict, layout: Layout, est: MemoryEstimate, context: int, lowered: bool = False,
               kvv: Verdict | None = None, **extra: Any) -> Choice:
        return Choice(self.ev, self.dv, kvv or self.kv, qv, lv, layout, est, context, lowered, self.profile,
                      user_speculative=self.user_draft, **extra)

    def estimate(
        self, qv: Verdict, layout: Layout, ctx: int, sequences: int | None = None, kvv: Verdict | None = None,
        draft: DraftPair | None = None,
    ) -> MemoryEstimate:
        t, profile, model, request = self.t, self.profile, self.t.model, self.t.request
        sequences = t.concurrency if sequences is None else sequences
        version = request.engine_version if request.engine == self.ev.value else None
        on_gpu, hw = t.on_gpu, t.hw
        settings = engine_settings(profile.name, version, hw.gpu if on_gpu else None, tp=layout.tp, pp=layout.pp,
                                   lora_adapters=request.lora_adapters, enforce_eager=request.enforce_eager)
        cal = (
            t.calibrations.memory_for(profile.name, settings.version, hw.gpu.name, layout.gpus, strict=request.calibration_mismatch == "refuse")
            if (t.calibrations and on_gpu) else None
        )
        lora = lora_slots(profile.name, settings.version, request.lora_adapters, request.max_lora_rank)
        return estimate_memory(
            model,
            lora_slots=lora.max_loras if lora else 0, lora_rank=lora.max_lora_rank if lora else 0,
            gpu_memory_bytes=t.mem_bytes,
            engine=profile,
            quantization=qv.value,
            dtype=self.dv.value,
            kv_cache_dtype=(kvv or self.kv).value,
            tp=layout.tp,
            pp=layout.pp,
            context=ctx,
            concurrency=sequences,
            request_tokens=min(t.request_tokens, ctx),
            input_tokens=t.input_tokens,
            max_num_batched_tokens=request.max_num_batched_tokens or settings.max_num_batched_tokens,
            max_num_seqs=getattr(request, "max_num_seqs", None) or plan_max_num_seqs(request.goal, t.concurrency, settings.max_num_seqs),
            memory_fraction=request.gpu_memory_utilization or settings.memory_fraction,
            on_gpu=on_gpu,
            draft_params=draft.params if draft else 0,
            draft_kv_elements_per_token=draft.kv_elements_per_token if draft else 0,
            memory=settings.profile,
            interconnect=hw.gpu.interconnect if on_gpu else "pcie",
            compute_capability=hw.gpu.compute_capability if on_gpu else None,
            calibration=cal.for_layout(layout.gpus) if cal is not None else None,
            gpu_memory_source=t.mem_source,
            engine_version=settings.version,
            # a published checkpoint the plan would serve, at its stated size (the same lookup advise makes)
            checkpoint_bytes=published_bytes(model, qv.value, **where(profile.name, request, self.ev.value, hw)),
            # the artifacts pass no prefix-caching flag: vLLM's default, off for hybrid models (1 state page per request)
            speculative=self.user_draft,
        )

    @staticmethod
    def holds(est: MemoryEstimate) -> bool:  # fits, and one request of the whole context fits its KV cache
        return est.fits and est.max_concurrency >= 1

    def run(self, result: SearchResult) -> bool:
        """Try the passes in order; True with ``result.choice`` set when one fits."""
        t = self.t
        found = self.with_draft() or self.first_fit()
        if found is None:
            seen = {(e[0].value, str(e[2])) for e in self.estimates}
            for *_, qv, lv, layout in self.candidates:
                if (qv.value, str(layout)) not in seen:
                    self.estimates.append((qv, lv, layout, self.estimate(qv, layout, t.context)))
            found = self.smaller_kv() or self.lowered()
        if found is not None:
            result.choice = found
            return True
        if self.estimates and result.best_effort is None:
            qv, lv, layout, est = min(self.estimates, key=lambda e: e[3].shortfall_bytes_per_gpu)
            result.best_effort = self.choice(qv, lv, layout, est, t.context)
            result.best_effort_allowed = True
            result.best_effort_layouts_refused = self.layouts_refused
        result.rejected.append(f"{self.profile.display}: no allowed quantization and layout fits in memory")
        return False

    def with_draft(self) -> Choice | None:
        """Pass 1 with speculative decoding for the latency goal, where the engine takes the published draft head on
        its command line (without it in the next passes when it does not fit)."""
        t, request = self.t, self.t.request
        # not with LoRA adapters: SGLang 0.5.9 refuses them with any draft but NGRAM (server_args check_lora_server_args),
        # and a draft head trained on the base model proposes the base model's tokens, not the adapters'
        if (not (request.speculative == "auto" and request.goal == "latency" and t.on_gpu) or self.user_draft is not None
                or request.lora_adapters):
            return None
        from ..engines.speculative import draft_for

        spec = draft_for(t.model.name, list(self.profile.speculative))
        if spec is None:
            return None
        for *_, qv, lv, layout in self.candidates:
            est = self.estimate(qv, layout, t.context, draft=spec)
            if self.holds(est):
                return self.choice(qv, lv, layout, est, t.context, speculative=spec)
        return None

    def first_fit(self) -> Choice | None:
        """Pass 1: the first candidates (by rule rank) whose memory holds concurrency x context; among equally ranked
        ones that fit, the goal picks by predicted speed."""
        t = self.t
        fitting: list[tuple[Verdict, Verdict, Layout, MemoryEstimate]] = []
        first_key = None
        for key, _, _, qv, lv, layout in self.candidates:
            if first_key is not None and key != first_key:
                break  # only layouts the rules rank as high as the first that fits compete on speed
            if first_key is not None and qv.value != fitting[0][0].value:
                continue
            est = self.estimate(qv, layout, t.context)
            self.estimates.append((qv, lv, layout, est))
            if self.holds(est):
                first_key = key if first_key is None else first_key
                fitting.append((qv, lv, layout, est))
        if not fitting:
            return None
        pick, why = 0, None
        if len(fitting) > 1 and t.on_gpu:
            from .layout_goal import pick_by_goal

            pick, why = pick_by_goal(t.model, t.hw, t.request, self.profile.name, self.dv.value, self.kv.value, fitting,
                                     t.concurrency, t.input_tokens, t.request_tokens)
        qv, lv, layout, est = fitting[pick]
        return self.choice(qv, lv, layout, est, t.context, layout_comparison=why)

    def smaller_kv(self) -> Choice | None:
        """Pass 1 again with a smaller KV cache dtype, before lowering anything. An explicitly asked-for context is
        worth a smaller KV dtype (fp8); the model's default full context is not, so it is lowered first (pass 2b),
        unless that cuts it hard (see :meth:`lowered`)."""
        t = self.t
        fallbacks = [v for v in self.kv_ranked[1:] if v.allowed] if t.request.context else []
        for alt in fallbacks:
            for *_, qv, lv, layout in self.candidates:
                est = self.estimate(qv, layout, t.context, kvv=alt)
                if self.holds(est):
                    return self.choice(qv, lv, layout, est, t.context, kvv=alt, kv_fallback=True)
        return None

    def lowered(self) -> Choice | None:
        """Pass 2 (fewer requests at once, then a lowered context); a hard cut tries the smaller KV dtypes the rules
        allow (fp8 halves the cache) with the weight format and layout kept. An explicit --context is never lowered:
        one request of it with every weight format, then with the smaller KV dtypes, or nothing (the caller refuses)."""
        t = self.t
        found = self.pass2(self.kv, False)
        for alt in [v for v in self.kv_ranked[1:] if v.allowed] if (t.request.context and found is None) else []:
            found = self.pass2(alt, True)
            if found is not None:
                break
        if found is not None and found.context_lowered and found.context < t.kv_fallback_fraction * t.context:
            for alt in [v for v in self.kv_ranked[1:] if v.allowed]:
                better = self.pass2(alt, True, keep=found)
                if better is not None and better.context > found.context:
                    better.kv_fallback_from_context = found.context
                    found = better
                    break
        if found is not None:
            found.kv_alternatives = [str(v.value) for v in self.kv_ranked if v.allowed and v.value != found.kv_cache_dtype.value]
        return found

    def pass2(self, kvv: Verdict, fallback: bool, keep: Choice | None = None) -> Choice | None:
        """Pass 2a (one request of the full context), then 2b (a lowered context) with KV dtype ``kvv``;
        with ``keep``, only its weight format and layout (a KV dtype change alone)."""
        t, profile, context = self.t, self.profile, self.t.context
        singles = [
            (qv, lv, layout, self.estimate(qv, layout, context, sequences=1, kvv=kvv))
            for qv, lv, layout, _ in self.estimates
            if keep is None or (qv.value == keep.quantization.value and layout == keep.layout)
        ]
        for qv, lv, layout, single in singles:  # pass 2a: any pair that holds one request of the full context
            if self.holds(single):
                return self.choice(qv, lv, layout, single, context, kvv=kvv, concurrency_lowered=True, kv_fallback=fallback)
        for qv, lv, layout, single in [] if t.request.context else singles:  # pass 2b: only then lower the context
            floor = min(t.min_context, context)
            if single.max_context >= floor:
                lowered = single.max_context
                if profile.memory_accounting == "reserve":
                    lowered -= lowered % profile.block_size
                shared, at_concurrency = lowered, self.estimate(qv, layout, lowered, kvv=kvv)  # still every request?
                if not at_concurrency.fits and t.concurrency * min(t.request_tokens, lowered) <= at_concurrency.kv_cache_tokens:
                    shared = at_concurrency.kv_cache_tokens  # a little shorter, so the larger batch's activations fit too
                    at_concurrency = self.estimate(qv, layout, shared, kvv=kvv)
                if self.holds(at_concurrency) and shared >= floor:
                    return self.choice(qv, lv, layout, at_concurrency, shared, True, kvv=kvv, kv_fallback=fallback)
                est2 = self.estimate(qv, layout, lowered, sequences=1, kvv=kvv)
                if self.holds(est2):
                    return self.choice(qv, lv, layout, est2, lowered, True, kvv=kvv, concurrency_lowered=True,
                                       kv_fallback=fallback)
        return None


KV_FAMILY = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}  # the rules judge an fp8 variant as fp8


def _rank_kv(rules, request, facts: dict, trace, engine: str) -> list[Verdict]:
    """KV-cache dtypes in order. Asked for explicitly (``--kv-cache-dtype auto`` included): that one only, auto meaning
    what the engine does (the model dtype). Left unset: the model dtype, and fp8 only as a fallback that keeps a context."""
    if "kv_cache_dtype" in request.model_fields_set or request.kv_cache_dtype != "auto":
        asked = request.kv_cache_dtype
        ranked = rank(rules, "kv_cache_dtype", [KV_FAMILY.get(asked, asked)], facts, trace, context=engine)
        return [replace(v, value=asked) for v in ranked]
    return rank(rules, "kv_cache_dtype", ["auto", "fp8"], facts, trace, context=engine)


def _fallback(model, hw, request, by, facts, engine_order, mem_bytes, concurrency, context, request_tokens, input_tokens, tp_sizes) -> Choice | None:
    """When the rules forbid every option, still describe the closest plan (marked infeasible by the caller)."""
    for ev in engine_order:
        profile = engine_profile(ev.value)
        if hw.kind not in profile.runs_on:
            continue
        f_e = {**facts, "engine": ev.value}
        dv = rank(by["dtype"], "dtype", ["bfloat16", "float16", "float32"] if request.dtype == "auto" else [request.dtype], f_e, None)[0]
        kv = rank(by["kv_cache_dtype"], "kv_cache_dtype", [request.kv_cache_dtype], {**f_e, "dtype": dv.value}, None)[0]
        fmt = prequantized_served(model, profile) or (
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
