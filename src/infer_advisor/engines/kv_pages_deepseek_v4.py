"""vLLM's KV page facts for DeepSeek-V4 (``data/engine_kv_pages_deepseek_v4.yaml``, read in its source).

    >>> deepseek_v4_pages().row_bytes
    584
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped


class DeepseekV4Pages(BaseModel):
    """The page layout vLLM gives DeepSeek-V4's compressed attention, indexer, sliding-window and compressor-state caches."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    attention_block_tokens: int = Field(gt=0)
    row_bytes: int = Field(gt=0)
    page_alignment: int = Field(gt=0)
    indexer_row_bytes: int = Field(gt=0)
    swa_block_tokens: int = Field(gt=0)
    state_bytes_per_element: int = Field(gt=0)
    state_block_tokens: dict[int, int]
    state_window_factor: dict[int, int]
    head_dim: int = Field(gt=0)
    index_head_dim: int = Field(gt=0)
    bucket_allocator_from: str = Field(description="First vLLM version that sizes blocks by page-size buckets.")
    source: str = Field(min_length=8)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    deepseek_v4: DeepseekV4Pages


@cache
def deepseek_v4_pages() -> DeepseekV4Pages:
    return load_validated(shipped("data") / "engine_kv_pages_deepseek_v4.yaml", _File).deepseek_v4
