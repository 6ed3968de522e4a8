"""SGLang's reserve outside ``mem_fraction_static`` (``data/engine_memory.yaml``): 0.5.3+'s sum (:class:`SGLangFraction`)
and 0.4.8-0.5.2's reserve by the GPU's memory band (:class:`SGLangReservedByMemory`).

SGLang 0.4.8 to 0.5.2 (pip wheels 0.4.8, 0.4.9, 0.4.10, 0.4.10.post2, 0.5.0rc0, 0.5.1 and 0.5.2 read; memfix20)
``srt/server_args.py`` ``ServerArgs.__post_init__`` reserve ``(base + tp x pp x per_rank) GiB`` by the nvidia-smi total
(``get_nvgpu_memory_capacity``, MiB) and set ``mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3)``; 0.5.3
replaced this with the chunk / graph-batch sum of ``SGLangFraction`` (its defaults by GPU: ``engines.memory.sglang_reserved_mib``).
The speculative (+2 GiB, 6 for STANDALONE in 0.5.2) and DP-attention (+4 GiB) additions are not modelled, as for the
0.5.3+ rule.

    >>> rule = SGLangReservedByMemory(spans=[("0.4.8", "0.5")], bands=[
    ...     ReservedBand(below_mib=163840, base_gib=12, per_rank_gib=0.5), ReservedBand(base_gib=32)], source="example rule")
    >>> rule.applies_to("0.4.10"), rule.applies_to("0.5"), rule.reserved_mib(183359, ranks=8)
    (True, False, 32768.0)
"""

from pydantic import BaseModel, ConfigDict, Field

from .versions import version_key


class SGLangFraction(BaseModel):
    """SGLang 0.5.3+'s mem_fraction_static rule (server_args._handle_gpu_memory_settings)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    reserved_base_mib: float = Field(ge=0)
    reserved_per_chunk_token_mib: float = Field(ge=0)
    reserved_per_graph_bs_mib: float = Field(ge=0)
    reserved_per_tp_mib: float = Field(ge=0)
    reserved_floor_mib_above_60gib: float = Field(ge=0)
    source: str = Field(min_length=8)

    def reserved_mib(self, gpu_mib: float, ranks: int, chunk: int, graph_bs: int, *, floor: bool = True) -> float:
        """base + max(chunk, 2048) x 1.5 + graph batch x 2 + ranks / 8 GiB, at least 10 GiB on a GPU above 60 GiB where
        ``floor`` (SGLang applies that minimum only to the fraction it picks itself, not to a --mem-fraction-static given)."""
        reserved = (self.reserved_base_mib + max(chunk, 2048) * self.reserved_per_chunk_token_mib
                    + graph_bs * self.reserved_per_graph_bs_mib + ranks * self.reserved_per_tp_mib)
        return max(reserved, self.reserved_floor_mib_above_60gib) if floor and gpu_mib > 60 * 1024 else reserved


class ReservedBand(BaseModel):
    """One GPU-memory band of the rule: GPUs below ``below_mib`` (None: every larger GPU) reserve base + ranks x per_rank GiB."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    below_mib: float | None = Field(default=None, gt=0, description="nvidia-smi total (MiB) the band stops at; None: no upper end.")
    base_gib: float = Field(ge=0)
    per_rank_gib: float = Field(default=0.0, ge=0, description="Added per rank of tp_size x pp_size.")


class SGLangReservedByMemory(BaseModel):
    """SGLang's reserved-by-memory-band fraction rule and the versions (within the profile's range) that use it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    spans: list[tuple[str, str]] = Field(
        min_length=1, description="[first, below) engine versions the rule holds for (a bare '0.5' sorts before '0.5.0').")
    bands: list[ReservedBand] = Field(min_length=1, description="Bands by increasing below_mib, the open one last.")
    source: str = Field(min_length=8)

    def applies_to(self, version: str | None) -> bool:
        if not version:
            return False
        key = version_key(version)
        return any(version_key(first) <= key < version_key(below) for first, below in self.spans)

    def reserved_mib(self, gpu_mib: float, ranks: int) -> float:
        """MiB the rule keeps out of ``mem_fraction_static`` on a GPU of ``gpu_mib`` (nvidia-smi total) at ``ranks`` = tp x pp."""
        band = next((b for b in self.bands if b.below_mib is None or gpu_mib < b.below_mib), self.bands[-1])
        return (band.base_gib + ranks * band.per_rank_gib) * 1024
