"""vLLM's LoRA facts by version (``data/lora.yaml``): accepted ranks, defaults, and whether the memory profile sees
the adapter buffers (when it does not, they come out of the headroom outside ``gpu_memory_utilization``).

    >>> lora_profile("vllm", "0.7.3").profiler_sees_lora, lora_profile("vllm", "0.19.0").profiler_sees_lora
    (False, True)
"""


from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped


class LoRAProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    first: str
    below: str | None
    profiler_sees_lora: bool
    profiler_source: str = Field(min_length=8)
    max_ranks: list[int] | None = Field(default=None, min_length=1, description="Ranks the engine accepts; None: any rank.")
    ranks_source: str = Field(min_length=8)
    default_max_loras: int = Field(ge=1)
    default_max_lora_rank: int | None = Field(default=None, ge=1, description="None: inferred from adapters named at start-up.")
    base_takes_slot: bool = Field(default=False, description="Requests on the base model hold a slot of their own (SGLang).")
    defaults_source: str = Field(min_length=8)
    kernels_per_module: float | None = Field(default=None, ge=0, description="LoRA kernels per wrapped linear module per step.")
    kernels_per_slice: float = Field(default=0.0, ge=0, description="LoRA kernels per output slice (qkv: 3, gate_up: 2).")
    kernels_source: str | None = Field(default=None, min_length=8)
    decode_tile_rows: int | None = Field(default=None, ge=1, description="Decode rows sharing one read of an adapter's weights.")
    prefill_tile_rows: int | None = Field(default=None, ge=1, description="Prompt rows sharing one read of an adapter's weights.")
    memory_profile_version: str | None = Field(
        default=None, description="The engine runs another engine generation when LoRA is on (vLLM 0.8.0-0.8.2 fall back to "
        "V0): the memory profile of this version applies, not the version's own.")
    memory_profile_source: str | None = Field(default=None, min_length=8)
    v0_chunked_prefill_off: bool = Field(
        default=False, description="The V0 engine does not turn chunked prefill on by default for long contexts when LoRA is on.")
    v0_chunked_prefill_source: str | None = Field(default=None, min_length=8)


class KernelCoefficient(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    value: float = Field(gt=0)
    bounds: tuple[float, float]
    source: str = Field(min_length=8)


class LoRAKernels(BaseModel):
    """The LoRA kernels' cost on the GPU, measured once (benchmarks/gpu/lora_kernels.py) and scaled to other GPUs."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    kernel_s: KernelCoefficient
    adapter_s: KernelCoefficient
    bandwidth_efficiency: KernelCoefficient
    cache_bandwidth_ratio: KernelCoefficient
    compute_efficiency: KernelCoefficient
    bgmv_token_equivalent_bytes: KernelCoefficient  # per-token kernels' fixed cost per token and layer, as H200 bytes
    bgmv_reread_ratio: KernelCoefficient  # per-token kernels' re-read rate of an adapter's weights, x datasheet bandwidth
    source: str = Field(min_length=8)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    vllm: list[LoRAProfile]
    sglang: list[LoRAProfile]
    kernels: LoRAKernels


@cache
def _data() -> _File:
    return load_validated(shipped("data") / "lora.yaml", _File)


def _profiles() -> dict[str, tuple[LoRAProfile, ...]]:
    return {"vllm": tuple(_data().vllm), "sglang": tuple(_data().sglang)}


def lora_kernels() -> LoRAKernels:
    """The measured LoRA kernel coefficients (``data/lora.yaml`` ``kernels``)."""
    return _data().kernels


def lora_profile(engine: str, version: str) -> LoRAProfile | None:
    """The range of ``engine`` covering ``version`` (the newest for a newer version); None for an engine without LoRA facts."""
    from .versions import version_key

    ranges = _profiles().get(engine)
    if not ranges:
        return None
    key = version_key(version)
    for prof in ranges:
        if version_key(prof.first) <= key and (prof.below is None or key < version_key(prof.below)):
            return prof
    return max(ranges, key=lambda p: version_key(p.first)) if key >= version_key(ranges[-1].first) else ranges[0]


def lora_memory_version(engine: str, version: str) -> str:
    """The version whose memory profile a start-up with LoRA on follows: ``version`` itself, or the V0 version
    vLLM 0.8.0-0.8.2 fall back to (``memory_profile_version`` in data/lora.yaml).

    >>> lora_memory_version("vllm", "0.8.2"), lora_memory_version("vllm", "0.8.5")
    ('0.7.3', '0.8.5')
    """
    prof = lora_profile(engine, version)
    return prof.memory_profile_version if prof is not None and prof.memory_profile_version else version


MAX_GPU_SLOTS = 16  # the plan keeps at most this many adapters on the GPU; the rest wait in host memory (--max-cpu-loras)


class LoRASlots(BaseModel):
    """The LoRA settings a plan emits: GPU slots, the rank every slot is sized for, and host-memory adapters."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    max_loras: int = Field(ge=1, description="Adapters held on the GPU at once (vLLM --max-loras, SGLang --max-loras-per-batch); every slot is allocated at start-up.")
    max_lora_rank: int = Field(ge=1, description="Rank every slot is sized for (vLLM --max-lora-rank): the largest adapter's rank, rounded up to one vLLM accepts.")
    max_cpu_loras: int = Field(ge=1, description="Adapters cached in host memory (vLLM --max-cpu-loras, SGLang --max-loaded-loras).")


def lora_slots(engine: str, version: str, adapters: int, rank: int | None) -> LoRASlots | None:
    """What a plan serving ``adapters`` LoRA adapters of at most ``rank`` sets (None: no adapters).

    All adapters stay on the GPU up to :data:`MAX_GPU_SLOTS` (each slot costs memory whether used or not); the rank is
    rounded up to the next one the version accepts."""
    from ..errors import RequestError

    if adapters <= 0:
        return None
    prof = lora_profile(engine, version)
    if prof is None:
        raise RequestError(f"--lora-adapters: no LoRA facts for {engine} here (data/lora.yaml covers vllm and sglang); "
                           "plan with --engine vllm or sglang.")
    wanted = rank or prof.default_max_lora_rank
    if wanted is None:
        raise RequestError(f"--lora-adapters with {engine}: give --max-lora-rank (the largest adapter rank); {engine} infers it "
                           "from adapters named at start-up, and the plan names none.")
    fits = [r for r in prof.max_ranks if r >= wanted] if prof.max_ranks else [wanted]
    if not fits:
        raise RequestError(f"--max-lora-rank {wanted}: {engine} {version} accepts ranks up to {max(prof.max_ranks)} ({prof.ranks_source}).")
    slots = min(adapters, MAX_GPU_SLOTS) + (1 if prof.base_takes_slot else 0)
    return LoRASlots(max_loras=slots, max_lora_rank=fits[0], max_cpu_loras=max(adapters, slots))
