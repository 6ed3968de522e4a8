"""Published speculative-decoding draft heads (``data/speculative.yaml``): which target model has one, and its size.

    >>> from infer_advisor.engines.speculative import draft_for
    >>> draft_for("meta-llama/Llama-3.3-70B-Instruct", ["eagle3"]).draft
    'yuhuili/EAGLE3-LLaMA3.3-Instruct-70B'
"""


from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped


class DraftPair(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    target: str = Field(description="Hub id of the target model.")
    draft: str = Field(description="Hub id of the published draft head.")
    method: Literal["eagle3", "draft"]
    num_speculative_tokens: int = Field(gt=0)
    params: int = Field(gt=0, description="Parameters of the draft head (for its weight memory).")
    kv_elements_per_token: int = Field(ge=0, description="KV-cache elements per token of the draft head's layers.")
    params_source: str
    source: str


class SpecMethod(BaseModel):
    """How vLLM holds one speculative method's draft in memory (``methods:`` in data/speculative.yaml)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    method: str
    draft: Literal["mtp", "model"]
    engines: list[str] = Field(default_factory=lambda: ["vllm"], description="Engines whose memory behaviour this describes.")
    source: str = Field(min_length=8)


class DraftModel(BaseModel):
    """The sizing fields of a draft model's config.json (``draft_models:``)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    name: str
    aliases: list[str] = Field(default_factory=list)
    method: str
    layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    num_attention_heads: int = Field(gt=0)
    num_kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    intermediate_size: int = Field(gt=0)
    fc_in: int = Field(ge=0, description="Input width of the draft's fc, in units of hidden_size (0: none).")
    fc_replicated: bool = False
    dtype: str = "bfloat16"
    source: str = Field(min_length=8)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    pairs: list[DraftPair]
    methods: list[SpecMethod] = Field(default_factory=list)
    draft_models: list[DraftModel] = Field(default_factory=list)


@cache
def speculative_data() -> _File:
    return load_validated(shipped("data") / "speculative.yaml", _File)


def draft_pairs() -> tuple[DraftPair, ...]:
    return tuple(speculative_data().pairs)


def draft_for(model: str, methods: list[str]) -> DraftPair | None:
    """The published draft head for ``model`` (Hub id, case-insensitive) usable by an engine offering ``methods``."""
    want = model.rstrip("/").lower()
    for pair in draft_pairs():
        if pair.target.lower() == want and pair.method in methods:
            return pair
    return None
