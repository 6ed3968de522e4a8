"""`advise()`: model facts + hardware facts + rules + memory model -> DeploymentPlan."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._data import format_validation_error, load_validated
from .._paths import shipped
from ..engine_memory import EngineSettings, engine_settings, version_note
from ..errors import RequestError
from ..estimate.calibration_file import Calibrations
from ..estimate.formats import weight_format
from ..hardware.facts import HardwareFacts
from ..model_facts.facts import ModelFacts
from ..rules.evaluate import Trace
from ..rules.loader import load_rules
from .facts import base_facts
from .models import (
    Decision,
    DeploymentPlan,
    EngineConfig,
    GPUSummary,
    HardwareSummary,
    MemoryPlan,
    ModelSummary,
    Parallelism,
    PrefixCachingPlan,
    PublishedCheckpointRef,
    QuantizationPlan,
    RuleTrace,
    SpeculativePlan,
)
from .request import PlanRequest
from .search import Choice, _where, plan_max_num_seqs, search


class Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    concurrency: dict[str, int]
    concurrency_source: str
    cpu_concurrency: int
    input_tokens: int
    output_tokens: int
    workload_source: str
    min_useful_context: int
    min_useful_context_source: str
    kv_fallback_context_fraction: float = Field(gt=0, le=1)
    kv_fallback_context_fraction_source: str
    cpu_memory_fraction: float
    cpu_memory_fraction_source: str
    tensor_parallel_sizes: list[int]
    tensor_parallel_sizes_source: str


@cache
def defaults() -> Defaults:
    return load_validated(shipped("data") / "defaults.yaml", Defaults)


def advise(
    model: str | None = None,
    *,
    request: PlanRequest | None = None,
    explain: bool = False,
    model_facts: ModelFacts | None = None,
    hardware: HardwareFacts | None = None,
    progress: Any = None,
    **options: Any,
) -> DeploymentPlan:
    """Recommend how to deploy ``model``: engine, quantization, dtype, parallelism, memory and speed.

        >>> from infer_advisor import advise
        >>> plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
        >>> plan.engine.name, plan.parallelism.tensor_parallel_size
        ('vllm', 1)
        >>> plan.render("docker", out="deploy/")          # Dockerfile + README

    Args:
        model: Hub id, local folder or catalog name. Every other :class:`PlanRequest` field is a keyword
            (``gpu="H100-80GB:8"``, ``goal="latency"``, ``context=8192``, ``rules="my-rules/"`` ...).
        request: a ready :class:`PlanRequest` instead of keywords.
        explain: keep every rule considered (matched or not) in ``plan.explain``.
        model_facts, hardware: pre-resolved facts (skips the model/hardware stages; used by tools and tests).
        progress: with ``rate``, a callable that receives a line now and then while a long sizing search runs.

    With ``rate`` (requests/s) and optional latency targets, the plan is the cheapest fleet that meets them, found by
    simulating every GPU type and layout searched (``gpu="any"``, a comma list, or one GPU type); ``plan.capacity``
    holds the comparison (see :func:`infer_advisor.size`).

    An impossible request returns a plan with ``feasible=False``, the reason and a ``suggestion``;
    bad input raises an :class:`~infer_advisor.errors.InferAdvisorError` subclass.
    """
    if request is None:
        if model is not None:
            options["model"] = model
        try:
            request = PlanRequest(**options)
        except ValidationError as err:
            raise RequestError(format_validation_error(err)) from None
    if model_facts is None:
        from ..model_facts import resolve_model

        model_facts = resolve_model(request.model, revision=request.revision, source=request.model_source)
    if hardware is None and request.rate:
        from .sized import sized_plan

        return sized_plan(request, model_facts, explain, progress=progress)
    if hardware is None:
        from ..hardware import resolve_hardware

        from ..hardware.spec import searches_gpu_types

        if searches_gpu_types(request.gpu):
            raise RequestError(f"--gpu {request.gpu} searches GPU types for a traffic rate: add --rate REQUESTS_PER_S "
                               "(and latency targets such as --ttft-p90 1 --itl-p99 0.06).")
        hardware = resolve_hardware(request.gpu)
    return _plan(request, model_facts, hardware, explain)


def _plan(request: PlanRequest, model: ModelFacts, hw: HardwareFacts, explain: bool) -> DeploymentPlan:
    if request.context and request.context > model.max_position_embeddings:
        raise RequestError(
            f"--context {request.context} exceeds {model.name}'s max_position_embeddings ({model.max_position_embeddings}); "
            f"use --context {model.max_position_embeddings} or less."
        )
    if request.engine_version and request.engine == "auto":
        raise RequestError(f"--engine-version {request.engine_version} needs --engine (which engine is at that version?).")
    w = _workload(request, model, hw.kind)
    if request.shared_prefix_tokens and request.shared_prefix_tokens > w.input_tokens:
        raise RequestError(
            f"--shared-prefix-tokens {request.shared_prefix_tokens} is longer than the prompt ({w.input_tokens} tokens); "
            "it is the part of --input-tokens every request shares."
        )
    concurrency, context, input_tokens, output_tokens, request_tokens = (
        w.concurrency, w.context, w.input_tokens, w.output_tokens, w.request_tokens
    )
    calibrations = _load_calibrations(request)
    rules = load_rules(request.rules)
    trace: list[Trace] | None = [] if explain else None
    result = _search(model, hw, request, rules, w, trace, calibrations)
    warnings = list(hw.notes)
    choice = result.choice
    feasible = choice is not None
    reason = suggestion = None
    if choice is None:
        choice = result.best_effort
        reason = _why_not(model, hw, request, result)
        suggestion = _suggest_hardware(request, model)
        if choice is None:
            raise RequestError(f"No engine runs {model.name} on {_hw_words(hw)}: {reason}.")
    settings = _settings(request, hw, choice)
    warnings += _calibration_warnings(request, hw, choice, settings, calibrations)
    note = version_note(choice.profile.name, settings.version)
    if note:
        warnings.append(note)
    speed_file = calibrations.speed[0][0] if calibrations and calibrations.speed else None
    engine_cfg = _engine_config(request, model, choice, concurrency, settings)
    if hw.kind == "gpu" and hw.gpu is not None and hw.gpu.vendor == "amd":  # the ROCm build, at the planned version
        rocm = choice.profile.rocm_image_by_gpu.get(hw.gpu.name) or choice.profile.rocm_image
        if rocm:
            engine_cfg.image = rocm.replace(choice.profile.version, settings.version)
    replicas = _replicas(request, hw, choice)
    prefix = request.shared_prefix_tokens if (request.shared_prefix_tokens and _prefix_caching(request, choice).enabled) else 0
    perf = _performance(request, model, hw, choice, concurrency, input_tokens, output_tokens, speed_file,
                        engine=engine_cfg, replicas=replicas, prefix_tokens=prefix or 0)
    if choice.context_lowered:
        # Advise only what the rules would then allow: no fp8 KV cache where a gate refuses it (CPU, older GPUs).
        fixes = ["add GPUs"] + [f"use --kv-cache-dtype {k}" for k in choice.kv_alternatives if k != "auto"]
        fixes.append("lower --concurrency" if concurrency > 1 else "use a smaller --context")
        warnings.append(
            f"max_model_len lowered from {context:,} to {choice.context:,}: the KV cache holds "
            f"{choice.memory.kv_cache_tokens:,} tokens, not {concurrency} x {context:,} "
            f"({', '.join(fixes[:-1])}, or {fixes[-1]})."
        )
    if choice.concurrency_lowered:
        held = choice.memory.kv_cache_tokens
        if choice.profile.kv_preallocated:  # every slot holds the full context from start-up (llama.cpp)
            per, what = choice.context, f"of {choice.context:,} tokens each ({choice.profile.display} reserves every slot's full context)"
        else:
            per = min(request_tokens, choice.context)
            what = f"of ~{per:,} tokens"
        fixes = ["add GPUs"] + (["quantize"] if choice.quantization.value == "none" else [])
        if choice.profile.kv_preallocated:
            fixes.append("lower --context")
        warnings.append(
            f"{_plural(concurrency, 'concurrent request')} {what} do not fit: the KV cache holds {held:,} tokens; "
            f"expect queueing beyond about {_plural(max(held // max(per, 1), 1), 'request')} "
            f"({' or '.join(fixes)} to serve more)."
        )
    if choice.profile.maintenance_note:
        warnings.append(choice.profile.maintenance_note)
    decisions = _decisions(choice, result, request, unit="GPU" if hw.kind == "gpu" else "socket")
    if engine_cfg.server == "triton":
        decisions.append(_triton_decision(engine_cfg))
        warnings.append(_triton_memory_note())
    return DeploymentPlan(
        feasible=feasible,
        infeasible_reason=reason,
        suggestion=suggestion,
        request=request,
        model=ModelSummary(
            name=model.name, source=model.source, architecture=model.architecture, family=model.family,
            num_parameters=model.num_parameters, num_active_parameters=model.num_active_parameters,
            max_position_embeddings=model.max_position_embeddings, torch_dtype=model.torch_dtype,
            pre_quantized=model.pre_quantized, path=model.name if model.source == "local" else None, model_type=model.model_type,
        ),
        hardware=_hardware_summary(hw),
        engine=engine_cfg,
        quantization=_quantization(model, choice, decisions, _where(choice.profile.name, request, choice.engine.value, hw)),
        dtype=choice.dtype.value,
        parallelism=Parallelism(
            tensor_parallel_size=choice.layout.tp,
            pipeline_parallel_size=choice.layout.pp,
            nodes=choice.layout.nodes,
            replicas=replicas,
            executor="ray" if choice.layout.nodes > 1 else ("mp" if hw.kind == "gpu" else "none"),
            expert_parallel=choice.layout.ep,
            data_parallel_size=request.data_parallel_size or 1,
        ),
        memory=MemoryPlan(**choice.memory.model_dump()),
        performance=perf,
        decisions=decisions,
        warnings=warnings,
        explain=[
            RuleTrace(rule_id=t.rule.id, decides=t.rule.decides, matched=t.matched, applied_to=t.applied_to, why=t.why,
                      context=t.context, effect=t.rule.effect, score=t.score, blocked=t.blocked)
            for t in trace
        ]
        if trace is not None
        else None,
        speculative=_speculative(choice),
        prefix_caching=_prefix_caching(request, choice),
    )


def _speculative(c: Choice) -> SpeculativePlan | None:
    d = c.speculative
    if d is None:
        return None
    return SpeculativePlan(
        method=d.method, draft_model=d.draft, num_speculative_tokens=d.num_speculative_tokens, draft_params=d.params,
        source=d.source, params_source=d.params_source,
    )


def _prefix_caching(request: PlanRequest, c: Choice) -> PrefixCachingPlan:
    p = c.profile
    shared = request.shared_prefix_tokens
    if p.prefix_caching == "default-on":
        how = f"on by default in {p.display}; the artifacts keep it on" + (f" for the {shared} shared prompt tokens" if shared else "")
        return PrefixCachingPlan(enabled=True, shared_prefix_tokens=shared, how=how, source=p.prefix_caching_source)
    if p.prefix_caching == "flag":
        on = bool(shared)
        how = "turned on with the engine's flag for the shared prompt prefix" if on else "off (no --shared-prefix-tokens given)"
        return PrefixCachingPlan(enabled=on, shared_prefix_tokens=shared, how=how, source=p.prefix_caching_source)
    how = f"{p.display} has no prefix caching" + ("; every request pays the shared prefix's prefill" if shared else "")
    return PrefixCachingPlan(enabled=False, shared_prefix_tokens=shared, how=how, source=p.prefix_caching_source)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _weights_words(method: str) -> str:
    return "unquantized weights" if method == "none" else f"{method} weights"


def _hw_words(hw: HardwareFacts) -> str:
    if hw.kind == "cpu":
        return "CPU"
    n = f"{hw.gpus_per_node}x " if hw.gpus_per_node > 1 else ""
    nodes = f" x {hw.nodes} nodes" if hw.nodes > 1 else ""
    return f"{n}{hw.gpu.name}{nodes}"


def _hardware_summary(hw: HardwareFacts) -> HardwareSummary:
    return HardwareSummary(
        kind=hw.kind,
        gpus=[
            GPUSummary(
                name=g.name, memory_bytes=g.memory_bytes, compute_capability=g.compute_capability,
                memory_bandwidth_bytes_per_s=g.memory_bandwidth_bytes_per_s, interconnect=g.interconnect, source=g.source,
                vendor=g.vendor, product_names=_product_names(g),
                usable_memory_bytes=g.usable_memory_bytes, usable_memory_source=g.usable_memory_source, gfx_arch=g.gfx_arch,
            )
            for g in hw.gpus
        ],
        gpus_per_node=hw.gpus_per_node,
        nodes=hw.nodes,
        cpu_cores=hw.cpu.cores if hw.cpu else None,
        cpu_memory_bytes=hw.cpu.memory_bytes if hw.cpu else None,
        source=hw.source,
        notes=list(hw.notes),
    )


def _served_name(engine: str, model: ModelFacts) -> str:
    if engine == "mistralrs":
        return "default"  # mistral.rs answers requests for its one model under the name "default"
    return model.name.rstrip("/").split("/")[-1] if model.source == "local" else model.name


def _product_names(g) -> list[str]:
    from ..hardware.catalog import find_entry

    entry = find_entry(g.name)
    names = list(entry.nvml_names) if entry is not None else []
    if g.probed_name and g.probed_name not in names:
        names.insert(0, g.probed_name)
    return names


def _engine_config(request: PlanRequest, model: ModelFacts, c: Choice, concurrency: int, settings: EngineSettings) -> EngineConfig:
    p = c.profile
    reserve = p.memory_accounting in ("reserve", "reserve-free")
    max_seqs = request.max_num_seqs or plan_max_num_seqs(request.goal, concurrency, settings.max_num_seqs)
    if p.kv_preallocated:  # every slot holds max_model_len from start-up: as many slots as the memory model counted
        max_seqs = max(c.memory.max_concurrency, 1) if c.concurrency_lowered else min(concurrency, settings.max_num_seqs)
        if request.max_num_seqs:
            max_seqs = min(max_seqs, request.max_num_seqs)
    # V0 profiles and schedules max(max_model_len, floor) tokens per step unless told otherwise
    default_tokens = settings.max_num_batched_tokens or (c.memory.activation_tokens if reserve else None)
    budget = request.max_num_batched_tokens or default_tokens
    if p.name == "vllm" and budget and budget < max_seqs:
        # vLLM's SchedulerConfig refuses max_num_batched_tokens < max_num_seqs at start-up
        if request.max_num_seqs and request.max_num_batched_tokens:
            raise RequestError(f"--max-num-batched-tokens {budget} is below --max-num-seqs {max_seqs}: vLLM refuses that at "
                               "start-up (every scheduled sequence needs a token of the budget); raise one or lower the other.")
        max_seqs = budget
    alternative = {
        "vllm": "sglang", "sglang": "vllm", "tgi": "vllm", "ctranslate2": "vllm", "trtllm": "vllm", "mlc": "exllamav2",
        "exllamav2": "mlc", "mistralrs": "llama.cpp", "llama.cpp": "mistralrs",
    }.get(p.name)
    fraction = request.gpu_memory_utilization or settings.memory_fraction
    config = EngineConfig(
        name=p.name,
        version=settings.version,
        image=p.image.replace(p.version, settings.version) if settings.version != p.version else p.image,
        http_server=p.http_server,
        port=p.port,
        health_path=p.health_path,
        max_model_len=c.context,
        max_num_seqs=max_seqs,
        max_num_batched_tokens=request.max_num_batched_tokens or default_tokens or None,
        gpu_memory_utilization=fraction if reserve else None,
        kv_cache_dtype=c.kv_cache_dtype.value,
        served_model_name=_served_name(p.name, model),
        alternative=alternative,
        defaults={  # None: not the engine's own default (a planning cap the launch command always passes)
            "max_num_seqs": None if "max_num_seqs" in p.planning_caps else settings.max_num_seqs,
            "max_num_batched_tokens": None if "max_num_batched_tokens" in p.planning_caps else default_tokens,
            "gpu_memory_utilization": settings.memory_fraction if reserve else None,
            "kv_cache_dtype": "auto",
        },
        memory_profile=settings.profile.label,
    )
    if p.name == "trtllm" and request.stack == "nvidia-triton":
        return _triton(config)
    return config


def _triton(config: EngineConfig) -> EngineConfig:
    """The same TensorRT-LLM engine behind Triton Inference Server (--stack nvidia-triton): Triton's image, HTTP port,
    readiness path and model name (data/triton.yaml)."""
    from ..triton import triton_facts, triton_release

    facts, release = triton_facts(), triton_release(config.version)
    return config.model_copy(update=dict(
        image=facts.image_for(release), port=facts.http_port, health_path=facts.health_path,
        served_model_name=facts.model_name, server="triton", server_version=release.triton,
    ))


def _triton_decision(engine: EngineConfig) -> Decision:
    from ..triton import triton_release

    release = triton_release(engine.version)
    return Decision(
        rule_id="server.triton", decides="server", value=engine.image, effect="set",
        reason=f"--stack nvidia-triton: TensorRT-LLM {engine.version} served by Triton {release.triton} (tritonserver "
        f"{release.triton_server_version}) through its TensorRT-LLM backend's LLM API model '{engine.served_model_name}'",
        source=release.source,
    )


def _triton_memory_note() -> str:
    from ..triton import triton_facts

    pool = triton_facts().cuda_memory_pool_bytes
    return (
        f"Triton's own process holds a CUDA context and its {pool / 2**20:.0f} MiB CUDA memory pool on each GPU "
        "(tritonserver defaults), outside the memory estimate; TensorRT-LLM's KV cache takes its fraction of the memory "
        "free after them, so it holds slightly fewer tokens than estimated."
    )


def _settings(request: PlanRequest, hw: HardwareFacts, c: Choice) -> EngineSettings:
    version = request.engine_version if request.engine == c.profile.name else None
    return engine_settings(c.profile.name, version, hw.gpu if hw.kind == "gpu" else None, tp=c.layout.tp, pp=c.layout.pp)


def _load_calibrations(request: PlanRequest) -> Calibrations | None:
    if not request.calibration:
        return None
    from ..estimate.calibration_file import load_calibrations

    return load_calibrations(list(request.calibration))


def _calibration_warnings(request: PlanRequest, hw: HardwareFacts, c: Choice, settings: EngineSettings, cals: Calibrations | None) -> list[str]:
    """Refuse (or, with --calibration-mismatch warn, flag) a calibration made for another engine, version or GPU."""
    from ..estimate.calibration_file import check_applies

    if cals is None:
        return []
    gpu = hw.gpu.name if hw.kind == "gpu" else None
    out = []
    headers = [(m.path, m.header) for m in cals.memory] + [(path, cal.header()) for path, cal in cals.speed]
    for path, header in headers:
        warning = check_applies(header, path=path, engine=c.profile.name, engine_version=settings.version if header.engine_version else None,
                                gpu=gpu, mode=request.calibration_mismatch)
        if warning:
            out.append(warning)
    return out


def _quantization(model: ModelFacts, c: Choice, decisions: list[Decision] | None = None, where: dict | None = None) -> QuantizationPlan:
    method = c.quantization.value
    fmt = weight_format(method)
    pre = model.pre_quantized is not None
    published = _published(model, method, where or {}) if not pre and method not in {"none", "ct2-int8"} else None
    # Let vLLM/SGLang detect pre-quantized and published checkpoints (they pick awq_marlin/gptq_marlin themselves);
    # pass --quantization only for on-the-fly methods.
    flag = method if (method in {"fp8"} and not pre and not published and c.profile.name in {"vllm", "sglang"}) else None
    needs_step = (not pre and not published and method not in {"none", "fp8"} and not fmt.applied_at_load
                  and fmt.converter is None)
    if published is not None and decisions is not None:
        decisions.append(
            Decision(
                rule_id="published-checkpoint", decides="quantization", value=published.repo, effect="set",
                reason=f"{published.repo} is a published {method} checkpoint of {model.name}: served as is, no quantize step",
                source=published.source,
            )
        )
    return QuantizationPlan(
        method=method, bits=fmt.bits, group_size=fmt.group_size, pre_quantized=pre, engine_flag=flag,
        needs_quantize_step=needs_step, published_checkpoint=published,
        converter=fmt.converter if not pre and not published else None,
    )


def _published(model: ModelFacts, method: str, where: dict) -> PublishedCheckpointRef | None:
    """A published checkpoint of ``model`` in ``method`` that the engine loads on the plan's platform: the data file
    first (plan/checkpoint.py), then (online, Hub models) the Hub."""
    from ..model_facts.published import hub_quantized
    from .checkpoint import format_of, pick_published

    if model.source == "local":
        return None
    found = pick_published(model, method, **where) if where else None
    if found is None and model.source == "hub":
        found = hub_quantized(model.name, method)
    if found is None:
        return None
    return PublishedCheckpointRef(
        repo=found.repo, method=found.method, file=found.file, format=format_of(found), size_bytes=found.size_bytes, size_source=found.size_source,
        source=found.source,
    )


def _decisions(c: Choice, result, request: PlanRequest, unit: str = "GPU") -> list[Decision]:
    out: list[Decision] = []
    seen: set[tuple[str, str]] = set()

    def add(rule, decides: str, value: str) -> None:
        key = (rule.id, value)
        if key not in seen:
            seen.add(key)
            out.append(Decision(rule_id=rule.id, decides=decides, value=value, effect=rule.effect, reason=rule.reason, source=rule.source))

    for decides, verdict in (("engine", c.engine), ("dtype", c.dtype), ("kv_cache_dtype", c.kv_cache_dtype), ("quantization", c.quantization)):
        for rule in verdict.matched:
            add(rule, decides, str(verdict.value))
        if not verdict.matched:  # no rule spoke for it: the user asked for it, or the memory model let it through
            asked = str(getattr(request, decides)) == str(verdict.value)
            out.append(Decision(rule_id=f"request.{decides}" if asked else "memory.fit", decides=decides, value=str(verdict.value), effect="set",
                                reason=f"asked for with --{decides.replace('_', '-')}" if asked else "the highest-ranked allowed option whose memory fits",
                                source="request" if asked else "estimate.memory (estimated)"))
    for rule in c.layout_verdict.matched:
        add(rule, "layout", str(c.layout))
    for v in result.forbidden:
        if v.blocked_by:
            add(v.blocked_by, v.blocked_by.decides, f"not {v.value}")
    out.append(
        Decision(
            rule_id="memory.fit", decides="layout", value=str(c.layout), effect="set",
            reason=f"the first allowed layout (by rule score, then fewest GPUs) for {_weights_words(c.quantization.value)} "
            f"whose memory fits: {c.memory.total_bytes_per_gpu / 2**30:.1f} GiB per {unit} of "
            f"{c.memory.gpu_memory_bytes / 2**30:.1f} GiB, KV cache {c.memory.kv_cache_tokens:,} tokens",
            source="estimate.memory (estimated)",
        )
    )
    if c.layout_comparison:
        out.append(
            Decision(
                rule_id="layout.goal", decides="layout", value=str(c.layout), effect="set", reason=c.layout_comparison,
                source="estimate.step_time (estimated)",
            )
        )
    if c.kv_fallback:
        out.append(
            Decision(
                rule_id="memory.kv-cache-dtype", decides="kv_cache_dtype", value=str(c.kv_cache_dtype.value), effect="set",
                reason=(
                    f"with a model-dtype KV cache memory would cut max_model_len to {c.kv_fallback_from_context:,} tokens; "
                    f"the next allowed KV dtype keeps {c.context:,}"
                    if c.kv_fallback_from_context
                    else "no weight format or layout holds concurrency x context with a model-dtype KV cache; "
                    "the next allowed KV dtype does, so it is used instead of lowering the context"
                ),
                source="estimate.memory (estimated)",
            )
        )
    if c.speculative is not None:
        out.append(
            Decision(
                rule_id="speculative.published-draft", decides="speculative", value=c.speculative.draft, effect="set",
                reason=f"the latency goal, an engine that takes a {c.speculative.method} head on its command line, and a published "
                "head for this model whose memory fits (data/speculative.yaml; --speculative off turns it off)",
                source=c.speculative.source,
            )
        )
    if c.context_lowered:
        out.append(
            Decision(
                rule_id="memory.context-lowered", decides="context", value=str(c.context), effect="set",
                reason="the context (asked for, or the model's) does not fit at the requested concurrency; "
                "max_model_len lowered to what fits",
                source="estimate.memory (estimated)",
            )
        )
    return out


def _why_not(model: ModelFacts, hw: HardwareFacts, request: PlanRequest, result) -> str:
    refusals: list[str] = []
    for v in result.forbidden:
        rule = v.blocked_by
        if rule is None:
            continue
        line = f"{v.value} refused by rule {rule.id}: {rule.reason}"
        asked = {request.engine, request.quantization} - {"auto"}
        unasked_engine = rule.decides == "engine" and request.engine == "auto"  # an engine nobody asked for explains nothing
        if line not in refusals and (str(v.value) in asked or result.choice is None and not result.best_effort_allowed and not unasked_engine):
            refusals.append(line)
    parts = refusals[:3]
    be = result.best_effort
    if be is not None and result.best_effort_allowed:
        m = be.memory
        device = "the CPU memory" if hw.kind == "cpu" else f"each {hw.gpu.name}"
        parts.append(
            f"{model.name} in {be.quantization.value} at {be.layout} needs {m.needed_bytes_per_gpu / 2**30:.1f} GiB per device "
            f"(weights {m.weights_bytes_per_gpu / 2**30:.1f}, KV for {m.required_kv_tokens} tokens, activations and overheads) "
            f"but {device} offers {m.budget_bytes_per_gpu / 2**30:.1f} GiB"
        )
        refused = {f"{v.value} refused by rule {v.blocked_by.id}: {v.blocked_by.reason}" for v in result.best_effort_layouts_refused}
        parts.extend(sorted(refused)[:3])  # why the larger layouts were not tried
    if not parts:
        parts.extend(list(dict.fromkeys(result.rejected))[:2])
    return "; ".join(parts) or "no allowed engine, quantization and layout fits"


def _suggest_hardware(request: PlanRequest, model: ModelFacts) -> str | None:
    from ..hardware import gpu_catalog
    from ..hardware.facts import HardwareFacts as HF

    w = _workload(request, model, "gpu")
    rules = load_rules(request.rules)
    own = _requested_gpu_name(request.gpu)
    options = []
    for gpu in gpu_catalog():
        for count in (1, 2, 4, 8):
            for nodes in (1, 2, 4):
                # the user's GPU first (more of the same, then more nodes), then other hardware by total memory
                options.append((gpu.name != own, gpu.memory_bytes * count * nodes, nodes, count, gpu))
    options.sort(key=lambda o: (o[0], o[1], o[2], o[3], o[4].name))
    for _, _, nodes, count, gpu in options:
        hw = HF(kind="gpu", gpus=[gpu] * count, nodes=nodes, source="catalog")
        try:
            r = _search(model, hw, request, rules, w, None)
        except RequestError:  # a pinned layout this hardware cannot hold (TP 8 on 4 GPUs): not a suggestion
            continue
        if r.choice is not None:
            spec = f"{gpu.name}:{count}" + (f"x{nodes}" if nodes > 1 else "")
            return f"--gpu {spec} ({r.choice.profile.display}, {r.choice.quantization.value}, {r.choice.layout})"
    return None


def _requested_gpu_name(spec: str) -> str | None:
    """The catalog name of the GPU the user named (``H100:8x2`` -> ``H100-80GB``), or None for auto/CPU/a spec."""
    from ..errors import InferAdvisorError
    from ..hardware import parse_spec

    try:
        return parse_spec(spec).name
    except InferAdvisorError:  # an unknown name has already been refused by resolve_hardware
        return None


@dataclass(frozen=True)
class _Workload:
    concurrency: int
    context: int
    input_tokens: int
    output_tokens: int
    request_tokens: int


def _workload(request: PlanRequest, model: ModelFacts, kind: str) -> _Workload:
    """The request's workload with the goal's defaults filled in (one place for the planner and the suggestion)."""
    d = defaults()
    context = request.context or model.max_position_embeddings
    input_tokens = request.input_tokens or min(d.input_tokens, context)
    output_tokens = request.output_tokens or d.output_tokens
    return _Workload(
        concurrency=request.concurrency or (d.cpu_concurrency if kind == "cpu" else d.concurrency[request.goal]),
        context=context,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        request_tokens=request.context or (input_tokens + output_tokens),
    )


def _search(model: ModelFacts, hw: HardwareFacts, request: PlanRequest, rules, w: _Workload, trace: list[Trace] | None, calibrations=None):
    d = defaults()
    return search(
        model, hw, request, rules, base_facts(model, hw, request, w.concurrency, w.context),
        concurrency=w.concurrency, context=w.context, input_tokens=w.input_tokens, request_tokens=w.request_tokens,
        min_context=d.min_useful_context, tp_sizes=d.tensor_parallel_sizes, cpu_fraction=d.cpu_memory_fraction, trace=trace,
        calibrations=calibrations,
        kv_fallback_fraction=d.kv_fallback_context_fraction,
    )


def _replicas(request: PlanRequest, hw: HardwareFacts, c: Choice) -> int:
    """Independent replicas over the GPUs given (or as pinned with --replicas / --data-parallel-size)."""
    if hw.kind != "gpu":
        if request.data_parallel_size and request.data_parallel_size > 1:
            raise RequestError("--data-parallel-size runs several GPU replicas in one engine process; a CPU plan has one.")
        return 1
    dp = request.data_parallel_size
    if dp:
        if request.replicas and request.replicas != dp:
            raise RequestError(f"--replicas {request.replicas} and --data-parallel-size {dp} disagree: data-parallel ranks "
                               "are the replicas of one engine process; give one of them.")
        if c.layout.nodes > 1:
            raise RequestError(f"--data-parallel-size {dp}: this layout already spans {c.layout.nodes} nodes; data-parallel "
                               "ranks of one engine process are planned within a node (use --replicas for more copies).")
        if dp * c.layout.gpus > hw.gpus_per_node:
            raise RequestError(f"--data-parallel-size {dp} x {c.layout.gpus} GPUs per rank ({c.layout}) needs "
                               f"{dp * c.layout.gpus} GPUs on one node; {hw.gpus_per_node} given (--gpu NAME:COUNT).")
        return dp
    if request.replicas:
        return request.replicas
    return max(hw.total_gpus // c.layout.gpus, 1)


def _performance(request, model, hw, choice: Choice, concurrency, input_tokens, output_tokens, calibration: Path | None = None,
                 *, engine=None, replicas: int = 1, prefix_tokens: int = 0):
    from ..estimate.speed import estimate_speed

    return estimate_speed(
        model, hw, engine=choice.profile.name, quantization=choice.quantization.value, dtype=choice.dtype.value,
        tp=choice.layout.tp, pp=choice.layout.pp, memory=choice.memory, concurrency=concurrency,
        input_tokens=input_tokens, output_tokens=output_tokens,
        calibration=calibration, kv_cache_dtype=choice.kv_cache_dtype.value, nodes=choice.layout.nodes,
        max_num_seqs=engine.max_num_seqs if engine is not None else None,
        max_num_batched_tokens=(engine.max_num_batched_tokens if engine is not None else None) or request.max_num_batched_tokens,
        replicas=replicas, expert_parallel=bool(request.enable_expert_parallel), prefix_tokens=prefix_tokens,
    )
