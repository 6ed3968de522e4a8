"""What the engine does at start-up with exactly the settings given: no search, nothing changed.

    >>> out = startup_outcome(PlanRequest(model="meta-llama/Llama-3.1-8B", gpu="L4", engine="vllm", context=131072))
    >>> out.starts, out.kv_cache_tokens
    (False, 31264)
    >>> print(out.refusal)
    To serve at least one request with the model's max seq len (131072), (16.0 GiB KV cache is needed, ...

`infer-advisor plan --startup-check` prints it: the engine starts with N tokens (the figure its log prints), or refuses
with its own error text (data/engine_kv_report.yaml). The settings are the request's as given: engine (vLLM when
'auto'), --engine-version, --quantization ('auto': the checkpoint's own format, else none), --dtype, --kv-cache-dtype,
--context as max_model_len (the model's full context when unset, as the engine does), --tensor-parallel-size (default:
every GPU given), --gpu-memory-utilization, --max-num-seqs and --max-num-batched-tokens (default: the version's own).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ..request import PlanRequest
from ..units import GIB


class StartupOutcome(BaseModel):
    """The engine's predicted start-up with the settings as given."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    engine: str
    engine_version: str
    settings: dict[str, str | bool | int | float] = Field(description="The settings the prediction used (as the engine would get them).")
    starts: bool
    kv_cache_tokens: int = Field(description="What the engine's log prints ('GPU KV cache size: N tokens' for vLLM).")
    max_concurrency: float = Field(description="'Maximum concurrency for <max_model_len> tokens per request'.")
    effective_kv_cache_tokens: int = Field(description="The plan's effective capacity (window-capped sliding layers).")
    kv_cache_gib_per_gpu: float
    weights_gib_per_gpu: float
    refusal: str | None = Field(default=None, description="The engine's own error text when it refuses.")


def startup_outcome(request: PlanRequest) -> StartupOutcome:
    """Predict the engine's start-up for ``request``'s settings, unchanged (see the module docstring)."""
    from ..engines.settings import engine_settings
    from ..engines.profiles import engine_profile
    from ..estimate.memory import estimate_memory
    from ..hardware import resolve_hardware
    from ..model_facts import resolve_model
    from .options import prequantized_format

    model = resolve_model(request.model, revision=request.revision, source=request.model_source)
    hw = resolve_hardware(request.gpu)
    engine = "vllm" if request.engine == "auto" else request.engine
    tp = request.tensor_parallel_size or (hw.gpus_per_node if hw.kind == "gpu" else 1)
    pp = request.pipeline_parallel_size or 1
    settings = engine_settings(engine, request.engine_version, hw.gpu if hw.kind == "gpu" else None, tp=tp, pp=pp,
                               enforce_eager=request.enforce_eager)
    quant = prequantized_format(model) or ("none" if request.quantization == "auto" else request.quantization)
    dtype = request.dtype if request.dtype != "auto" else ("float16" if model.torch_dtype == "float16" else "bfloat16")
    context = request.context or model.max_position_embeddings
    est = estimate_memory(
        model, gpu_memory_bytes=hw.gpu.budget_memory_bytes if hw.kind == "gpu" else hw.cpu.memory_bytes,
        engine=engine_profile(engine), quantization=quant, dtype=dtype, kv_cache_dtype=request.kv_cache_dtype, tp=tp, pp=pp,
        context=context, max_num_batched_tokens=request.max_num_batched_tokens or settings.max_num_batched_tokens,
        max_num_seqs=request.max_num_seqs or settings.max_num_seqs, on_gpu=hw.kind == "gpu",
        memory_fraction=request.gpu_memory_utilization or settings.memory_fraction, memory=settings.profile,
        interconnect=hw.gpu.interconnect if hw.kind == "gpu" else "pcie", engine_version=settings.version,
        compute_capability=hw.gpu.compute_capability if hw.kind == "gpu" else None,
    )
    used = {
        "max_model_len": context, "tensor_parallel_size": tp, "pipeline_parallel_size": pp, "quantization": quant, "dtype": dtype,
        "kv_cache_dtype": request.kv_cache_dtype, "gpu_memory_utilization": request.gpu_memory_utilization or settings.memory_fraction,
        "max_num_seqs": request.max_num_seqs or settings.max_num_seqs,
        **({"enforce_eager": True} if request.enforce_eager else {}),
    }
    return StartupOutcome(
        engine=engine, engine_version=settings.version, settings=used, starts=bool(est.engine_starts),
        kv_cache_tokens=est.engine_kv_cache_tokens or 0, max_concurrency=est.engine_max_concurrency or 0.0,
        effective_kv_cache_tokens=est.kv_cache_tokens, kv_cache_gib_per_gpu=round(est.kv_cache_bytes_per_gpu / GIB, 2),
        weights_gib_per_gpu=round(est.weights_bytes_per_gpu / GIB, 2), refusal=est.engine_refusal,
    )


def outcome_lines(out: StartupOutcome) -> list[str]:
    """The prediction in words, one fact per line."""
    head = f"{out.engine} {out.engine_version} with {', '.join(f'{k}={v}' for k, v in out.settings.items())}"
    if not out.starts:
        return [head, f"refuses to start: {out.refusal or 'no memory left for the KV cache'}"]
    return [
        head,
        f"starts: GPU KV cache size {out.kv_cache_tokens:,} tokens, maximum concurrency {out.max_concurrency:.2f}x for "
        f"{out.settings['max_model_len']:,} tokens per request ({out.kv_cache_gib_per_gpu} GiB of KV, "
        f"{out.weights_gib_per_gpu} GiB of weights per GPU; effective capacity {out.effective_kv_cache_tokens:,} tokens)",
    ]
