"""What batched LoRA adds to an engine step: the shrink and expand kernels over every wrapped linear layer.

    >>> from infer_advisor import resolve_model
    >>> model = resolve_model("meta-llama/Llama-3.1-8B", source="catalog")
    >>> from infer_advisor.hardware.catalog import lookup_gpu
    >>> cost = lora_step_cost(model, gpu=lookup_gpu("H100-80GB"), engine="vllm", engine_version="0.19.0", slots=4,
    ...                       rank=16, tp=1, pp=1, mix=AdapterMix.uniform(4))
    >>> round(cost.seconds(decode=64, prefill_tokens=0, sequences=64) * 1e3, 1)   # ms: one stage, 64 decoding sequences
    2.5

Per decoder layer on one GPU (coefficients in ``data/lora.yaml`` ``kernels``, engine kernel counts by version):

    kernels x kernel_s  +  d x adapter_s  +  max(bytes / (eta_bw x BW), flops / (eta_c x PEAK))

- ``kernels``: the engine's LoRA launches per layer. vLLM 0.8+ (V1 ``punica_gpu.add_lora_linear``) runs one zeroing
  of the shrink buffer, one ``lora_shrink`` and one ``lora_expand`` Triton kernel per wrapped module, all slices and
  adapters in one launch (12 per Llama layer); vLLM before 0.8 (V0 ``add_lora_packed_nslice``) loops over the output
  slices, three kernels each (21 per Llama layer).
- ``d``: the distinct adapters in the step's batch, ``min(max_loras, sum_i 1 - (1 - p_i)^S)`` for ``S`` sequences
  drawn from the adapter mix ``p`` (vLLM's scheduler admits at most ``max_loras`` distinct adapters per batch). Each
  distinct adapter adds its own token tiles (SGMV-style programs) and its A and B weights to read. A step whose
  requests all run the base model skips the kernels (vLLM's ``no_lora_flag``): the term is weighted by the chance
  ``1 - (1 - share)^S`` that some request names an adapter.
- ``bytes``: ``d x rank x`` the slot's elements per unit rank (``estimate/lora.py``) in the LoRA dtype, plus the
  activations: every module's input read by the shrink and its output read and written by the expand's ``y +=``.
  Every further token tile of an adapter reads its weights again, from the L2 (``cache_bandwidth``): V1's shrink once
  per 32-token tile. vLLM V0's decode BGMV kernels run one program per token (``decode_tile_rows`` 1): each decoding
  token costs ``token_s`` plus its adapter's weights read at ``token_bandwidth`` (both from the H200 run of per-token
  Triton kernels, ``bgmv_token_equivalent_bytes`` and ``bgmv_reread_ratio`` in data/lora.yaml).
- ``flops``: ``2 x rows x rank x`` the slot's elements per unit rank, rows padded to the kernels' 16-row tile per
  adapter.

``kernel_s``, ``adapter_s`` and the efficiencies were measured on the lent H200 with torch stand-ins for the punica
kernels (``benchmarks/gpu/lora_kernels.py``); a Triton kernel's floor is taken to equal a torch kernel's (inferred,
not measured: no vLLM kernels ran there). Other GPUs scale the byte and FLOP terms by their datasheet ceilings, like
every other term of the step model. Engines that launch from the host without CUDA graphs also wait for ``kernels x
host_launch`` (the step model's host-bound rule, which counts these kernels).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from ..hardware.facts import GPUInfo
from ..model_facts.facts import ModelFacts
from .lora import lora_elements_per_slot_per_rank

LORA_TILE_ROWS = 16  # rows a punica/SGMV token tile pads an adapter's segment to (the smallest tensor-core M)


@dataclass(frozen=True)
class AdapterMix:
    """How a workload's requests spread over adapters: one share per adapter; what is left over runs the base model."""

    shares: tuple[float, ...]
    _memo: dict = field(default_factory=dict, compare=False, repr=False)  # sequences -> expected distinct

    @classmethod
    def uniform(cls, adapters: int) -> AdapterMix:
        """Every request names one of ``adapters`` adapters, equally often (the plan's default: the worst case)."""
        return cls(tuple([1.0 / adapters] * adapters)) if adapters > 0 else cls(())

    @classmethod
    def from_counts(cls, counts: dict[str | None, int]) -> AdapterMix:
        """Shares from requests counted per adapter name (None: requests on the base model)."""
        total = sum(counts.values())
        if total <= 0:
            return cls(())
        return cls(tuple(sorted((n / total for name, n in counts.items() if name is not None and n > 0), reverse=True)))

    @property
    def lora_share(self) -> float:
        return min(1.0, sum(self.shares))

    def expected_distinct(self, sequences: float) -> float:
        """Expected distinct adapters among ``sequences`` requests drawn from this mix (memoised: the simulator asks
        every step; equal shares are summed once, so 100,000 uniform adapters cost one power)."""
        if sequences <= 0:
            return 0.0
        got = self._memo.get(sequences)
        if got is None:
            groups = self._memo.setdefault("groups", Counter(self.shares))
            got = sum(n * (1.0 - (1.0 - p) ** sequences) for p, n in groups.items())
            self._memo[sequences] = got
        return got


@dataclass(frozen=True)
class LoRAStepCost:
    """Per-step seconds of one pipeline stage's LoRA kernels on one GPU (see the module docstring)."""

    layers: int
    elements_per_rank: float  # A and B elements of one slot per unit rank, per layer, on one GPU
    activation_elements: float  # per row and layer: module inputs read once, outputs read and written once
    rank: int
    max_loras: int
    kernels_per_layer: float
    kernel_s: float
    adapter_s: float
    bandwidth: float  # effective bytes/s (efficiency x datasheet)
    cache_bandwidth: float  # re-reads of an adapter's weights by later token tiles hit the L2
    flops: float  # effective FLOP/s
    decode_tile_rows: int  # decode rows that share one read of an adapter's weights (1: per token, BGMV)
    prefill_tile_rows: int
    token_s: float  # per-token kernels (decode_tile_rows 1): fixed seconds per decoding token and layer
    token_bandwidth: float  # per-token kernels: bytes/s at which each token re-reads its adapter's weights
    dtype_bytes: float
    mix: AdapterMix
    source: str

    def distinct(self, sequences: int) -> float:
        """Distinct adapters in a step of ``sequences`` (capped by the GPU slots and by the sequences themselves)."""
        return min(float(self.max_loras), self.mix.expected_distinct(sequences), float(sequences))

    def kernels_per_step(self) -> float:
        return self.layers * self.kernels_per_layer

    def seconds(self, decode: int, prefill_tokens: int, sequences: int) -> float:
        """Seconds the LoRA kernels add to a step of ``decode`` decoding sequences and ``prefill_tokens`` prompt tokens
        from ``sequences`` sequences in all (0 with no rows or no adapter in the mix)."""
        rows = decode + prefill_tokens
        if rows <= 0 or not self.mix.shares:
            return 0.0
        d = self.distinct(sequences)
        share = self.mix.lora_share
        padded = max(rows * share, d * LORA_TILE_ROWS) if d else 0.0
        slot = self.rank * self.elements_per_rank * self.dtype_bytes  # one adapter's A and B in one layer
        per_token = self.decode_tile_rows == 1  # V0 BGMV: one program per decoding token, priced per token below
        reads = max(d, share * ((0 if per_token else decode / self.decode_tile_rows) + prefill_tokens / self.prefill_tile_rows))
        memory = (d * slot + rows * self.activation_elements * self.dtype_bytes) / self.bandwidth + (reads - d) * slot / self.cache_bandwidth
        if per_token:
            memory += share * decode * (self.token_s + slot / self.token_bandwidth)
        work = max(memory, 2.0 * padded * self.rank * self.elements_per_rank / self.flops)
        # a step whose requests all run the base model skips the LoRA kernels (vLLM: no_lora_flag; V1 graphs without LoRA)
        active = 1.0 - (1.0 - share) ** max(sequences, 1)
        return active * self.layers * (self.kernels_per_layer * self.kernel_s + d * self.adapter_s + work)


def adapter_mix(adapters: int, counts: dict[str | None, int] | None = None) -> AdapterMix:
    """The mix a plan sizes for: the adapter column of --lengths-file when it has one (requests counted per adapter,
    None: the base model), else every request on one of ``adapters`` adapters, equally often."""
    if counts and any(name is not None for name in counts):
        return AdapterMix.from_counts(counts)
    return AdapterMix.uniform(adapters)


def _activation_elements(model: ModelFacts, tp: int) -> float:
    """Per row and layer on one GPU: the wrapped modules' inputs (read by the shrink) and outputs (read and written by
    the expand), with the same column/row-parallel split as the buffers (estimate/lora.py)."""
    h, i = model.hidden_size, model.intermediate_size
    q = model.num_attention_heads * model.head_dim
    kv = max(model.num_kv_heads // tp, 1) * tp * model.head_dim
    inputs = h + q / tp + (0 if model.num_experts else h + i / tp)
    outputs = (q + 2 * kv) / tp + h + (0 if model.num_experts else 2 * i / tp + h)
    return inputs + 2 * outputs


def lora_step_cost(model: ModelFacts, *, gpu: GPUInfo | None, engine: str, engine_version: str | None, slots: int, rank: int,
                   tp: int, pp: int, mix: AdapterMix, dtype_bytes: float = 2.0) -> LoRAStepCost | None:
    """The LoRA term of a step model for a plan with ``slots`` GPU slots of ``rank`` (None: no LoRA, an engine
    without LoRA facts, or no GPU)."""
    from ..engines.lora import lora_kernels, lora_profile

    if slots <= 0 or rank <= 0 or gpu is None:
        return None
    prof = lora_profile(engine, engine_version or "99")
    if prof is None or prof.kernels_per_module is None:
        return None
    k = lora_kernels()
    mods = 2 if model.num_experts else 4
    slices = 4 if model.num_experts else 7  # qkv (3) + o, and gate_up (2) + down where the MLP is dense
    per_layer = prof.kernels_per_module * mods + prof.kernels_per_slice * slices
    peak = (gpu.tflops.get("bf16") or gpu.tflops.get("fp16") or 0.0) * 1e12
    return LoRAStepCost(
        layers=math.ceil(model.num_layers / max(pp, 1)),
        elements_per_rank=lora_elements_per_slot_per_rank(model, tp) / model.num_layers,
        activation_elements=_activation_elements(model, tp), rank=rank, max_loras=slots, kernels_per_layer=per_layer,
        kernel_s=k.kernel_s.value, adapter_s=k.adapter_s.value,
        bandwidth=k.bandwidth_efficiency.value * gpu.memory_bandwidth_bytes_per_s,
        cache_bandwidth=k.cache_bandwidth_ratio.value * gpu.memory_bandwidth_bytes_per_s,
        decode_tile_rows=prof.decode_tile_rows or 1, prefill_tile_rows=prof.prefill_tile_rows or 1,
        token_s=k.bgmv_token_equivalent_bytes.value / gpu.memory_bandwidth_bytes_per_s,
        token_bandwidth=k.bgmv_reread_ratio.value * gpu.memory_bandwidth_bytes_per_s,
        flops=k.compute_efficiency.value * peak if peak else 1e12, dtype_bytes=dtype_bytes, mix=mix,
        source=f"estimated: {per_layer:g} LoRA launches per layer ({engine} {prof.first}+, data/lora.yaml kernels_per_module), "
               "launch floor, per-adapter cost and efficiencies fitted to an H200 measurement of SGMV-style Triton kernels "
               "(data/lora.yaml kernels; other GPUs by their datasheet bandwidth and peak)",
    )
