"""The pieces every engine's doctor shares: each engine's spelling of the knobs (data/doctor_flags.yaml), the findings
one engine's arithmetic returns, and one edit built from an argv.

    >>> engine_flags("llama.cpp").context
    '--ctx-size'
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .edits import Edit, LedgerLine

ROUND_TOKENS = 256

class EngineFlags(BaseModel):
    """One engine's spelling of the doctor's knobs (data/doctor_flags.yaml)."""

    model_config = ConfigDict(extra="forbid")

    memory_fraction: str | None
    context: str
    kv_8bit: list[str]
    max_seqs: str | None
    eager: list[str] | None
    tp: str | None
    prefill_tokens: str | None
    gpu_layers: str | None
    graph_bs: str | None
    ubatch: str | None = None  # the micro-batch (llama.cpp -ub), which sizes its compute buffer
    start_check: Literal["one_request", "any_kv"]
    source: str = Field(min_length=8)


class RuleOfThumb(BaseModel):
    """A figure the doctor sizes a first try by that no engine defines (data/doctor_flags.yaml rules_of_thumb)."""

    model_config = ConfigDict(extra="forbid")

    value: float
    source: str = Field(min_length=8)


class FlagsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    engines: dict[str, EngineFlags]
    rules_of_thumb: dict[str, RuleOfThumb] = Field(default_factory=dict)


@cache
def _flags_file() -> FlagsFile:
    from .._data import load_validated
    from .._paths import shipped

    return load_validated(shipped("data") / "doctor_flags.yaml", FlagsFile)


def engine_flags(engine: str) -> EngineFlags:
    return _flags_file().engines[engine]


def rule_of_thumb(name: str) -> float:
    """A rule-of-thumb figure of data/doctor_flags.yaml (its source says why; not the engine's)."""
    return _flags_file().rules_of_thumb[name].value


class Findings(BaseModel):
    """What one engine's arithmetic says of a log: the ledger, the binding term, whether it starts, the edits."""

    ledger: list[LedgerLine] = Field(default_factory=list)
    binding: str | None = None
    starts: bool | None = None
    kv_cache_tokens: int | None = None
    budget_bytes: int | None = None
    gpu_memory_bytes: int | None = None
    budget_base: str | None = None
    edits: list[Edit] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def engine_edit(change: list[str], starts: bool | None, cost: str, rank: float, *, tokens: int | None = None, length: int | None = None,
          concurrency: int | None = None) -> Edit:
    return Edit(change=" ".join(change), argv=change, starts=starts, kv_cache_tokens=tokens, max_concurrency=concurrency,
                max_model_len=length or 0, cost=cost, cost_rank=round(rank, 3))
