"""What an engine version uses on one GPU and layout when the user sets nothing, and the start-up modes that change
its memory profile: LoRA adapters on (:func:`with_lora`) and eager mode, no CUDA graphs (:func:`without_cuda_graphs`).

    >>> engine_settings("vllm", "0.27.1", None, enforce_eager=True).profile.cuda_graph_bytes
    0
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .lora import lora_profile
from .memory import MIB, EngineMemoryProfile, batch_defaults, default_memory_fraction, memory_profile, memory_profiles
from .profiles import engine_profile


class EngineSettings(BaseModel):
    """What an engine version uses on one GPU and layout when the user sets nothing: the plan's starting point."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    profile: EngineMemoryProfile
    version: str
    max_num_batched_tokens: int | None = Field(description="None: V0 profiles max(max_model_len, 2048), decided by the context.")
    max_num_seqs: int
    memory_fraction: float


def with_lora(engine: str, version: str, prof: EngineMemoryProfile, lora) -> EngineMemoryProfile:
    """``prof`` (the profile of ``engine`` at ``version``) as a start-up with LoRA on uses it. ``lora``: the version's
    engines/lora.py LoRAProfile: the V0 profile vLLM 0.8.0-0.8.2 fall back to (``memory_profile_version``), and V0's
    long-context chunked prefill left off (``v0_chunked_prefill_off``)."""
    if lora.memory_profile_version and lora.memory_profile_version != version:
        v0 = memory_profile(engine, lora.memory_profile_version)
        prof = v0.model_copy(update={"label": f"{v0.label}: what {engine} {version} runs with LoRA on"})
    if lora.v0_chunked_prefill_off and prof.chunked_prefill_above is not None:
        prof = prof.model_copy(update={"chunked_prefill_above": None, "label": f"{prof.label} (no default chunked prefill with LoRA)"})
    return prof


def without_cuda_graphs(prof: EngineMemoryProfile) -> EngineMemoryProfile:
    """``prof`` in eager mode (vLLM ``--enforce-eager``, SGLang ``--disable-cuda-graph``): no CUDA-graph pool, inside
    the budget or outside it. vLLM (0.33.0 read: ``VllmConfig.__post_init__`` sets ``cudagraph_mode = NONE`` and
    ``max_cudagraph_capture_size = 0`` under ``enforce_eager``; ``Worker.determine_available_memory`` then skips
    ``profile_cudagraph_memory``, so versions that subtract the pool from the KV budget (0.20 and later) give the KV
    cache that memory; earlier versions captured after sizing the KV cache, so only the headroom changes)."""
    return prof.model_copy(update={"cuda_graph_bytes": 0, "label": f"{prof.label}, eager (no CUDA graphs)"})


def engine_settings(engine: str, version: str | None, gpu, *, tp: int = 1, pp: int = 1, lora_adapters: int = 0,
                    enforce_eager: bool = False) -> EngineSettings:
    """The memory profile and per-GPU defaults of ``engine`` at ``version`` (default: pinned) on ``gpu`` (a GPUInfo or None).

    ``lora_adapters``: with adapters on (> 0), the profile the version's LoRA facts (engines/lora.py) say a start-up
    with LoRA uses (see :func:`with_lora`), the one place a plan looks them up for its memory profile;
    ``enforce_eager``: the engine runs without CUDA graphs (see :func:`without_cuda_graphs`)."""
    prof = memory_profile(engine, version)
    pinned = version or engine_profile(engine).version
    lora = lora_profile(engine, pinned) if lora_adapters > 0 else None
    if lora is not None:
        prof = with_lora(engine, pinned, prof, lora)
    if enforce_eager:
        prof = without_cuda_graphs(prof)
    usable = getattr(gpu, "budget_memory_bytes", None) if gpu is not None else None
    name = " ".join(filter(None, [getattr(gpu, "probed_name", None), getattr(gpu, "name", None)])) if gpu is not None else ""
    capability = getattr(gpu, "compute_capability", None) if gpu is not None else None
    tokens, seqs = batch_defaults(prof, usable_memory_bytes=usable, device_name=name, compute_capability=capability)
    driver = getattr(gpu, "driver_memory_bytes", None) if gpu is not None else None
    if gpu is not None and driver is None and usable:
        from ..hardware.catalog import catalog

        # CUDA keeps a reserve below the driver's total; HIP on AMD does not (the catalog's AMD totals are HIP's own)
        driver = usable + (catalog().cuda_reserve_mib * MIB if getattr(gpu, "vendor", "nvidia") == "nvidia" else 0)
    fraction = default_memory_fraction(prof, driver_memory_bytes=driver, tp=tp, pp=pp, chunked_prefill_tokens=tokens,
                                      version=pinned)
    no_chunking = engine not in memory_profiles() and engine_profile(engine).max_num_batched_tokens == 0
    tokens_out = None if (prof.activation_tokens == "max_model_len" or no_chunking) else tokens
    # Built from validated data and this function's own arithmetic (ints from the profile's tiers, a rounded float):
    # no validation to run, so no schema to build on the plan path (cold start, issue 19).
    return EngineSettings.model_construct(profile=prof, version=version or engine_profile(engine).version,
                                          max_num_batched_tokens=tokens_out, max_num_seqs=seqs, memory_fraction=float(fraction))
