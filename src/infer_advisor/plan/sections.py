"""The typed sections of a :class:`DeploymentPlan`, built from the layout the search chose: the engine's
configuration (and the server's in front of it, from ``engines.stacks``), quantization, hardware summary, speculative decoding,
prefix caching. Pure assembly: every figure comes from the search, the engine's settings or the data files.
"""

from __future__ import annotations

from ..engines.settings import EngineSettings
from ..engines.profiles import EngineProfile
from ..errors import RequestError
from ..estimate.formats import weight_format
from ..hardware.facts import HardwareFacts
from ..model_facts.facts import ModelFacts
from ..request import PlanRequest
from ..rules.evaluate import Trace
from ..engines.lora import lora_slots
from ..engines.stacks import server_stack
from .options import Choice, plan_max_num_seqs
from .models import (
    Decision,
    EngineConfig,
    GPUSummary,
    HardwareSummary,
    ModelSummary,
    Parallelism,
    PrefixCachingPlan,
    PublishedCheckpointRef,
    QuantizationPlan,
    RuleTrace,
    SpeculativePlan,
)


def speculative_plan(c: Choice, request: PlanRequest | None = None) -> SpeculativePlan | None:
    u = c.user_speculative
    if u is not None and request is not None and request.speculative_config:
        from ..engines.draft_shape import speculative_config_json

        return SpeculativePlan(
            method=u.method, draft_model=u.draft_model or "the model's own MTP layers",
            num_speculative_tokens=u.num_speculative_tokens, draft_params=u.params, source=u.source,
            params_source="the model's config (MTP layers) or data/speculative.yaml draft_models",
            config=speculative_config_json(request.speculative_config),
        )
    d = c.speculative
    if d is None:
        return None
    return SpeculativePlan(
        method=d.method, draft_model=d.draft, num_speculative_tokens=d.num_speculative_tokens, draft_params=d.params,
        source=d.source, params_source=d.params_source,
    )



def prefix_caching_plan(request: PlanRequest, c: Choice) -> PrefixCachingPlan:
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



def hardware_summary(hw: HardwareFacts) -> HardwareSummary:
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
        cpu_simd=hw.cpu.simd if hw.cpu else None,
        cpu_memory_bytes=hw.cpu.memory_bytes if hw.cpu else None,
        source=hw.source,
        notes=list(hw.notes),
    )



def _served_name(profile: EngineProfile, model: ModelFacts) -> str:
    if profile.served_model_name:  # a server that answers under a fixed name (data/engines.yaml)
        return profile.served_model_name
    return model.name.rstrip("/").split("/")[-1] if model.source == "local" else model.name



def _product_names(g) -> list[str]:
    from ..hardware.catalog import find_entry

    entry = find_entry(g.name)
    names = list(entry.nvml_names) if entry is not None else []
    if g.probed_name and g.probed_name not in names:
        names.insert(0, g.probed_name)
    return names



def engine_config(request: PlanRequest, model: ModelFacts, c: Choice, concurrency: int, settings: EngineSettings) -> EngineConfig:
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
    if p.batched_tokens_at_least_seqs and budget and budget < max_seqs:
        # the engine refuses max_num_batched_tokens < max_num_seqs at start-up (vLLM's SchedulerConfig)
        if request.max_num_seqs and request.max_num_batched_tokens:
            raise RequestError(f"--max-num-batched-tokens {budget} is below --max-num-seqs {max_seqs}: {p.display} refuses that at "
                               "start-up (every scheduled sequence needs a token of the budget); raise one or lower the other.")
        max_seqs = budget
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
        served_model_name=_served_name(p, model),
        alternative=p.alternative,
        defaults={  # None: not the engine's own default (a planning cap the launch command always passes)
            "max_num_seqs": None if "max_num_seqs" in p.planning_caps else settings.max_num_seqs,
            "max_num_batched_tokens": None if "max_num_batched_tokens" in p.planning_caps else default_tokens,
            "gpu_memory_utilization": settings.memory_fraction if reserve else None,
            "kv_cache_dtype": "auto",
        },
        memory_profile=settings.profile.label,
        lora=lora_slots(p.name, settings.version, request.lora_adapters, request.max_lora_rank),
        enforce_eager=request.enforce_eager,
    )
    stack = server_stack(p.name, request.stack, config.version)  # a server in front of the engine (--stack)
    return config.model_copy(update=stack.config) if stack is not None else config


def quantization_plan(model: ModelFacts, c: Choice, decisions: list[Decision] | None = None, where: dict | None = None) -> QuantizationPlan:
    """``where``: engine, platform, version and GPU (plan/checkpoint.py where()), so the published checkpoint is one
    the engine loads on the plan's platform."""
    method = c.quantization.value
    fmt = weight_format(method)
    pre = model.pre_quantized is not None
    gguf = fmt.gguf_of is not None  # llama.cpp's GGUF of the pre-quantized checkpoint: its published file is served
    published = _published(model, method, where or {}) if (gguf or not pre) and method not in {"none", "ct2-int8"} else None
    # Let vLLM/SGLang detect pre-quantized and published checkpoints (they pick awq_marlin/gptq_marlin themselves);
    # pass --quantization only for the methods the engine quantizes at load (data/engines.yaml load_time_quantizations).
    flag = method if (method in c.profile.load_time_quantizations and not pre and not published) else None
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
        if found is not None and method == "fp8" and where.get("platform") == "rocm":
            found = None  # a Hub search cannot tell a ModelOpt FP8 export from a ROCm-loadable one
    if found is None:
        return None
    return PublishedCheckpointRef(
        repo=found.repo, method=found.method, file=found.file, format=format_of(found), size_bytes=found.size_bytes,
        size_source=found.size_source,
        source=found.source,
    )


def model_summary(model: ModelFacts) -> ModelSummary:
    return ModelSummary(
        name=model.name, source=model.source, architecture=model.architecture, family=model.family,
        num_parameters=model.num_parameters, num_active_parameters=model.num_active_parameters,
        num_active_parameters_without_embedding=model.num_active_parameters_without_embedding,
        max_position_embeddings=model.max_position_embeddings, torch_dtype=model.torch_dtype,
        pre_quantized=model.pre_quantized, path=model.name if model.source == "local" else None, model_type=model.model_type,
    )


def parallelism(request: PlanRequest, hw: HardwareFacts, choice: Choice, replicas: int) -> Parallelism:
    return Parallelism(
        tensor_parallel_size=choice.layout.tp,
        pipeline_parallel_size=choice.layout.pp,
        nodes=choice.layout.nodes,
        replicas=replicas,
        executor="ray" if choice.layout.nodes > 1 else ("mp" if hw.kind == "gpu" else "none"),
        expert_parallel=choice.layout.ep,
        data_parallel_size=request.data_parallel_size or 1,
    )


def rule_traces(trace: list[Trace] | None) -> list[RuleTrace] | None:
    """``plan.explain``: every rule considered (``--explain``), or None."""
    if trace is None:
        return None
    return [
        RuleTrace(rule_id=t.rule.id, decides=t.rule.decides, matched=t.matched, applied_to=t.applied_to, why=t.why,
                  context=t.context, effect=t.rule.effect, score=t.score, blocked=t.blocked)
        for t in trace
    ]
