"""vLLM's LoRA facts by version (``data/lora.yaml``): accepted ranks, defaults, and whether the memory profile sees
the adapter buffers (when it does not, they come out of the headroom outside ``gpu_memory_utilization``).

    >>> lora_profile("vllm", "0.7.3").profiler_sees_lora, lora_profile("vllm", "0.19.0").profiler_sees_lora
    (False, True)
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped


class LoRAProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    first: str
    below: str | None
    profiler_sees_lora: bool
    profiler_source: str = Field(min_length=8)
    max_ranks: list[int] = Field(min_length=1)
    ranks_source: str = Field(min_length=8)
    default_max_loras: int = Field(ge=1)
    default_max_lora_rank: int = Field(ge=1)
    defaults_source: str = Field(min_length=8)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    vllm: list[LoRAProfile]


@cache
def _profiles() -> dict[str, tuple[LoRAProfile, ...]]:
    data = load_validated(shipped("data") / "lora.yaml", _File)
    return {"vllm": tuple(data.vllm)}


def lora_profile(engine: str, version: str) -> LoRAProfile | None:
    """The range of ``engine`` covering ``version`` (the newest for a newer version); None for an engine without LoRA facts."""
    from .memory import version_key

    ranges = _profiles().get(engine)
    if not ranges:
        return None
    key = version_key(version)
    for prof in ranges:
        if version_key(prof.first) <= key and (prof.below is None or key < version_key(prof.below)):
            return prof
    return max(ranges, key=lambda p: version_key(p.first)) if key >= version_key(ranges[-1].first) else ranges[0]
