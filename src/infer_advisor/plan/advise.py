"""`advise()`: model facts + hardware facts + rules + memory model -> DeploymentPlan."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._data import format_validation_error, load_validated
from .._paths import shipped
from ..engines.memory import version_note
from ..engines.settings import EngineSettings, engine_settings
from ..engines.stacks import server_stack
from ..errors import DoesNotFitError, RequestError
from ..hardware.facts import HardwareFacts
from ..model_facts.facts import ModelFacts
from ..rules.evaluate import Trace
from ..rules.loader import load_rules
from .facts import base_facts
from ..request import PlanRequest
from .decisions import hw_words, plan_decisions, plural, why_not
from .checkpoint import where
from .keep_context import context_is_the_limit, context_refusal
from .layouts import search
from .options import Choice
from .models import Decision, DeploymentPlan, MemoryPlan
from .sections import (
    engine_config,
    hardware_summary,
    model_summary,
    parallelism,
    prefix_caching_plan,
    quantization_plan,
    rule_traces,
    speculative_plan,
)

if TYPE_CHECKING:  # read only with --calibration (imported in _load_calibrations)
    from ..estimate.calibration import Calibrations


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


def plan_request(model: str | None, request: PlanRequest | None, options: dict[str, Any]) -> PlanRequest:
    """The :class:`PlanRequest` of ``advise()``'s arguments: ``request`` as given, else built from the keywords."""
    if request is not None:
        return request
    if model is not None:
        options["model"] = model
    try:
        return PlanRequest(**options)
    except ValidationError as err:
        raise RequestError(format_validation_error(err)) from None


def advise(
    model: str | None = None,
    *,
    request: PlanRequest | None = None,
    explain: bool = False,
    model_facts: ModelFacts | None = None,
    hardware: HardwareFacts | None = None,
    speed: bool = True,
    suggest: bool = True,
    **options: Any,
) -> DeploymentPlan:
    """The plan stage: the deployment of ``model`` on one named GPU setup: engine, quantization, dtype,
    parallelism, memory and speed.

        >>> from infer_advisor.plan import advise
        >>> plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
        >>> plan.engine.name, plan.parallelism.tensor_parallel_size
        ('vllm', 1)

    Sizing a fleet for a traffic ``rate`` is the capacity stage's, over this one: the public
    :func:`infer_advisor.advise` (``infer_advisor/api.py``) composes the two. Arguments as there; ``speed=False``
    leaves ``performance`` out (the capacity search plans hundreds of pinned replicas and simulates them itself);
    ``suggest=False`` leaves out the hardware suggestion of a plan that does not fit (a search over every catalog GPU
    that the capacity search, which reports an infeasible replica by its reason, does not need).
    """
    request = plan_request(model, request, options)
    if model_facts is None:
        from ..model_facts import resolve_model

        model_facts = resolve_model(request.model, revision=request.revision, source=request.model_source)
    if hardware is None and request.rate:
        raise RequestError("A traffic rate is sized by infer_advisor.advise(rate=...) or infer_advisor.size(), "
                           "not by the plan stage alone (infer_advisor.plan.advise).")
    if hardware is None:
        from ..hardware import resolve_hardware

        from ..hardware.spec import searches_gpu_types

        if searches_gpu_types(request.gpu):
            raise RequestError(f"--gpu {request.gpu} searches GPU types for a traffic rate: add --rate REQUESTS_PER_S "
                               "(and latency targets such as --ttft-p90 1 --itl-p99 0.06).")
        hardware = resolve_hardware(request.gpu)
    return _plan(request, model_facts, hardware, explain, speed, suggest)


def _plan(request: PlanRequest, model: ModelFacts, hw: HardwareFacts, explain: bool, speed: bool = True,
          suggest: bool = True) -> DeploymentPlan:
    w = _workload(request, model, hw.kind)
    _check_request(request, model, w)
    calibrations = _load_calibrations(request)
    rules = load_rules(request.rules)
    trace: list[Trace] | None = [] if explain else None
    result = _search(model, hw, request, rules, w, trace, calibrations)
    warnings = list(hw.notes)
    choice = result.choice
    feasible = choice is not None
    reason = suggestion = None
    if choice is None and request.context and context_is_the_limit(result):  # an explicit context is kept or refused
        raise DoesNotFitError(context_refusal(
            model, hw, request, result, lambda req, h: _search(model, h, req, rules, _workload(req, model, h.kind), None, calibrations)
        ))
    if choice is None:
        choice = result.best_effort
        reason = why_not(model, hw, request, result)
        suggestion = _suggest_hardware(request, model) if suggest else None
        if choice is None:
            raise RequestError(f"No engine runs {model.name} on {hw_words(hw)}: {reason}.")
    settings = _settings(request, hw, choice)
    warnings += _calibration_warnings(request, hw, choice, settings, calibrations)
    note = version_note(choice.profile.name, settings.version)
    if note:
        warnings.append(note)
    speed_file = calibrations.speed[0][0] if calibrations and calibrations.speed else None
    engine_cfg = engine_config(request, model, choice, w.concurrency, settings)
    if hw.kind == "gpu" and hw.gpu is not None and hw.gpu.vendor == "amd":  # the ROCm build, at the planned version
        rocm = choice.profile.rocm_image_by_gpu.get(hw.gpu.name) or choice.profile.rocm_image
        if rocm:
            engine_cfg.image = rocm.replace(choice.profile.version, settings.version)
    replicas = _replicas(request, hw, choice)
    prefix = request.shared_prefix_tokens if (request.shared_prefix_tokens and prefix_caching_plan(request, choice).enabled) else 0
    perf = _performance(request, model, hw, choice, w.concurrency, w.input_tokens, w.output_tokens, speed_file,
                        engine=engine_cfg, replicas=replicas, prefix_tokens=prefix or 0) if speed else None
    warnings += _fit_warnings(choice, w, request, model.name)
    if choice.profile.maintenance_note:
        warnings.append(choice.profile.maintenance_note)
    if request.enforce_eager and speed:  # the step-time model's terms come from CUDA-graph runs
        warnings.append("--enforce-eager: the memory figures have no CUDA-graph pool; the speed figures assume CUDA graphs "
                        "(eager decode steps at small batches are slower, not modelled).")
    decisions = plan_decisions(choice, result, request, unit="GPU" if hw.kind == "gpu" else "socket")
    stack = server_stack(choice.profile.name, request.stack, engine_cfg.version)
    if stack is not None:  # the server --stack put in front of the engine: its decision and what the estimate leaves out
        decisions.append(Decision(**stack.decision))
        if stack.note:
            warnings.append(stack.note)
    return DeploymentPlan(
        feasible=feasible,
        infeasible_reason=reason,
        suggestion=suggestion,
        request=request,
        model=model_summary(model),
        hardware=hardware_summary(hw),
        engine=engine_cfg,
        quantization=quantization_plan(model, choice, decisions, where(choice.profile.name, request, choice.engine.value, hw)),
        dtype=choice.dtype.value,
        parallelism=parallelism(request, hw, choice, replicas),
        memory=MemoryPlan(**choice.memory.model_dump()),
        performance=perf,
        decisions=decisions,
        warnings=warnings,
        explain=rule_traces(trace),
        speculative=speculative_plan(choice, request),
        prefix_caching=prefix_caching_plan(request, choice),
    )


def _check_request(request: PlanRequest, model: ModelFacts, w: _Workload) -> None:
    """Refuse a request that contradicts the model or itself (one line each)."""
    if request.context and request.context > model.max_position_embeddings:
        raise RequestError(
            f"--context {request.context} exceeds {model.name}'s max_position_embeddings ({model.max_position_embeddings}); "
            f"use --context {model.max_position_embeddings} or less."
        )
    if request.engine_version and request.engine == "auto":
        raise RequestError(f"--engine-version {request.engine_version} needs --engine (which engine is at that version?).")
    if request.shared_prefix_tokens and request.shared_prefix_tokens > w.input_tokens:
        raise RequestError(
            f"--shared-prefix-tokens {request.shared_prefix_tokens} is longer than the prompt ({w.input_tokens} tokens); "
            "it is the part of --input-tokens every request shares."
        )


def _fit_warnings(choice: Choice, w: _Workload, request: PlanRequest, model_name: str) -> list[str]:
    """What the memory model had to give up (a lowered max_model_len, fewer requests at once than asked), said in the
    user's terms: a default the user never set (the model's full context, the goal's concurrency) is named as such."""
    concurrency, context, request_tokens = w.concurrency, w.context, w.request_tokens
    many = plural(concurrency, "concurrent request") + ("" if request.concurrency else
                                                           f" (the {request.goal} goal's default; --concurrency sets it)")
    warnings = []
    if choice.context_lowered:
        # Advise only what the rules would then allow: no fp8 KV cache where a gate refuses it (CPU, older GPUs).
        fixes = ["add GPUs"] + [f"use --kv-cache-dtype {k}" for k in choice.kv_alternatives if k != "auto"]
        fixes.append("lower --concurrency" if concurrency > 1 else "use a smaller --context")
        fix = f"{', '.join(fixes[:-1])}, or {fixes[-1]}"
        if request.context:
            warnings.append(
                f"--context {context:,} does not fit: max_model_len lowered to {choice.context:,}; the KV cache holds "
                f"{choice.memory.kv_cache_tokens:,} tokens, not {many} x {context:,} ({fix})."
            )
        else:
            warnings.append(
                f"max_model_len lowered to {choice.context:,} tokens, below {model_name}'s full {context:,}: the server refuses "
                f"longer requests (the KV cache holds {choice.memory.kv_cache_tokens:,} tokens). For longer ones: {fix}."
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
            f"{many} {what} do not fit: the KV cache holds {held:,} tokens; "
            f"expect queueing beyond about {plural(max(held // max(per, 1), 1), 'request')} "
            f"({' or '.join(fixes)} to serve more)."
        )
    return warnings


def _settings(request: PlanRequest, hw: HardwareFacts, c: Choice) -> EngineSettings:
    version = request.engine_version if request.engine == c.profile.name else None
    return engine_settings(c.profile.name, version, hw.gpu if hw.kind == "gpu" else None, tp=c.layout.tp, pp=c.layout.pp,
                           lora_adapters=request.lora_adapters, enforce_eager=request.enforce_eager)


def _load_calibrations(request: PlanRequest) -> Calibrations | None:
    if not request.calibration:
        return None
    from ..estimate.calibration import load_calibrations

    return load_calibrations(list(request.calibration))


def _calibration_warnings(request: PlanRequest, hw: HardwareFacts, c: Choice, settings: EngineSettings, cals: Calibrations | None) -> list[str]:
    """Refuse (or, with --calibration-mismatch warn, flag) a calibration made for another engine, version or GPU."""
    if cals is None:
        return []
    from ..estimate.calibration_file import check_applies

    gpu = hw.gpu.name if hw.kind == "gpu" else None
    out = []
    headers = [(m.path, m.header) for m in cals.memory] + [(path, cal.header()) for path, cal in cals.speed]
    for path, header in headers:
        warning = check_applies(header, path=path, engine=c.profile.name, engine_version=settings.version if header.engine_version else None,
                                gpu=gpu, mode=request.calibration_mismatch)
        if warning:
            out.append(warning)
    return out


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


MAX_BURST = 4096  # the most requests in flight a plan takes (PlanRequest.concurrency's bound)


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
        # a finite run (--requests) without --concurrency sends them all at once (up to the concurrency field's bound)
        concurrency=request.concurrency or (min(request.requests, MAX_BURST) if request.requests else None)
        or (d.cpu_concurrency if kind == "cpu" else d.concurrency[request.goal]),
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
        run=finite_run(request, model),
        engine_version=engine.version if engine is not None else None,
        lora=lora_step_term(request, model, hw.gpu if hw.kind == "gpu" else None, engine, choice.layout.tp, choice.layout.pp),
    )


def finite_run(request, model):
    """The finite run --requests asks for (None: a steady state at the concurrency): how many, their length spreads,
    and the longest request (--context, else the model's window) that sampled lengths are capped at."""
    if not request.requests:
        return None
    from ..estimate.speed import FiniteRun

    return FiniteRun(requests=request.requests, input_distribution=request.input_distribution,
                     output_distribution=request.output_distribution,
                     max_tokens=request.context or model.max_position_embeddings)


def lora_step_term(request, model, gpu, engine, tp: int, pp: int):
    """The plan's LoRA step term (None without adapters): its GPU slots and rank, and the adapter mix of the
    --lengths-file adapter column (else every request on one of --lora-adapters adapters, uniformly). The planner and
    the fleet sizing both call it, so both size for the same step."""
    slots = engine.lora if engine is not None else None
    if slots is None or gpu is None:
        return None
    from ..estimate.lora_cost import adapter_mix, lora_step_cost
    from ..simulate.workload import adapter_counts

    counts = adapter_counts(request.lengths_file) if request.lengths_file is not None else None
    return lora_step_cost(model, gpu=gpu, engine=engine.name, engine_version=engine.version, slots=slots.max_loras,
                          rank=slots.max_lora_rank, tp=tp, pp=pp, mix=adapter_mix(request.lora_adapters, counts))
