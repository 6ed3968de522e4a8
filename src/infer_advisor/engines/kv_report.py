"""How an engine version reports its KV cache at start-up and refuses to start (``data/engine_kv_report.yaml``).

    >>> from infer_advisor.engines.kv_report import kv_report
    >>> kv_report("vllm", "0.19.0").printed_tokens
    'layer_slots'
    >>> kv_report("vllm", "0.24.0").printed_tokens
    'concurrency'

The figures themselves are computed in :mod:`infer_advisor.estimate.engine_kv`; this module only says which rule and
which message text a version uses. Engines without an entry report the plan's own capacity (``pool_tokens``).
"""


from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped
from ..units import GIB

PrintedTokens = Literal["all_layers", "layer_slots", "concurrency", "pool_tokens"]


class KVReport(BaseModel):
    """One version range of one engine: how its log counts KV tokens, and its refusal messages."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    engine: str = ""
    first: str
    below: str | None
    printed_tokens: PrintedTokens
    no_memory: str | None = Field(default=None, description="The engine's error when no memory is left for the KV cache.")
    context_too_long: str | None = Field(default=None, description="The engine's error when one max_model_len request does not fit.")
    gib_format: Literal["%.2f", "round2"] = "%.2f"
    state_pages_prefix_caching: int = Field(
        default=1, ge=1, le=2,
        description="State pages one request holds per Mamba / gated-DeltaNet layer with prefix caching on, before "
        "speculative decoding's (MambaSpec.max_memory_usage_bytes: 2 in mamba_cache_mode 'align', 1 where not read).",
    )
    mamba_full_memory_ratio: float | None = Field(
        default=None, gt=0,
        description="SGLang: a hybrid model's recurrent-state pool takes rest x r / (1 + r) of the cache memory in whole "
        "request states, the full-attention token pool the rest (--mamba-full-memory-ratio; estimate/state_pool.py).",
    )
    mamba_pool_states: int | None = Field(
        default=None, gt=0,
        description="SGLang before the ratio: request states reserved for the recurrent-state pool before the token pool "
        "is sized (--max-mamba-cache-size's default).",
    )
    source: str = Field(min_length=8)

    def state_pages(self, prefix_caching: bool, num_speculative_tokens: int) -> int:
        """Pages of recurrent state per Mamba layer per request: one (two in 'align' mode, i.e. prefix caching on a
        hybrid model), plus one per speculative token (vLLM's ``num_speculative_blocks``)."""
        return (self.state_pages_prefix_caching if prefix_caching else 1) + num_speculative_tokens

    def covers(self, version: str) -> bool:
        from .versions import version_key

        v = version_key(version)
        return version_key(self.first) <= v and (self.below is None or v < version_key(self.below))

    def gib(self, nbytes: float) -> str:
        """Bytes as the engine prints GiB in its messages (``%.2f`` or ``round(x, 2)``)."""
        value = nbytes / GIB
        return f"{value:.2f}" if self.gib_format == "%.2f" else f"{round(value, 2)}"


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    engines: dict[str, list[KVReport]]


@cache
def _reports() -> dict[str, tuple[KVReport, ...]]:
    data = load_validated(shipped("data") / "engine_kv_report.yaml", _File)
    return {name: tuple(r.model_copy(update={"engine": name}) for r in ranges) for name, ranges in data.engines.items()}


# A constant of this module (no schema built at import for it; the file's ranges are validated when first read).
_POOL = KVReport.model_construct(engine="", first="0", below=None, printed_tokens="pool_tokens", source="the plan's own capacity (no entry)")


def kv_report(engine: str, version: str | None) -> KVReport:
    """The range of ``engine`` covering ``version`` (newest range beyond them all; the plan's capacity for unknown engines)."""
    from .versions import version_key

    ranges = _reports().get(engine)
    if not ranges or not version:
        return ranges[-1] if ranges else _POOL
    for rep in ranges:
        if rep.covers(version):
            return rep
    newest = max(ranges, key=lambda r: version_key(r.first))
    oldest = min(ranges, key=lambda r: version_key(r.first))
    return newest if version_key(version) >= version_key(newest.first) else oldest
