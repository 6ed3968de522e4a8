"""The step-time model: seconds of one engine step, built from operators. One function for the planner, the
simulator and calibrate alike (a real case: tests/estimate/test_step_time.py)::

    sm = build_step_model(model, gpu=hw.gpu, engine="vllm", quantization="none", dtype="bfloat16",
                          kv_cache_dtype="auto", tp=1, pp=1)
    sm.seconds(StepShape(decode=8, decode_context=8 * 1024))      # one decode step of 8 sequences
    sm.terms(StepShape(prefill_tokens=2048, prefill_pairs=2048 * 1024.5, prefill_chunks=1, completes=1))

A step holds ``decode`` sequences producing one token each (their KV contexts sum to ``decode_context``) and
prefill chunks of ``prefill_tokens`` prompt tokens in all (``prefill_pairs``: query-key pairs their causal
attention computes). ``M = decode + prefill_tokens`` rows go through every weight GEMM. Per GPU of one
pipeline stage, every term a data entry with its source (``data/speed/``):

- weight GEMMs, per layer: ``gemm_kernels x launch + max(bytes / (eta_bw x BW), M x flops / (eta_c(M) x PEAK))``
  with the launch time and efficiencies measured on the H200 (``kernels.yaml``) as fractions of its
  datasheet ceilings, applied to this GPU's datasheet (x the engine's fitted scale; GDDR cards x a fitted
  factor). Bytes come from the memory model; 4-bit/8-bit formats run their own kernel class
  (``weight_kernels``: which peak, dequantisation cost).
- MoE experts: ``E (1 - (1 - k/E)^M)`` distinct experts are read per layer; grouped-GEMM launch, bandwidth and
  compute efficiency (at the rows each expert gets) measured on the H200. Shared experts run every token.
- attention: decode reads every sequence's KV (``launch + kv_bytes / (eta x BW)``, sliding-window layers at most
  the window); prefill computes ``4 x q_width x pairs`` FLOPs at the measured efficiency for its chunk length.
- small kernels (norms, RoPE, activation, residual adds, cache writes): ``n x (t + bytes / BW)`` per layer,
  ``n`` from the engine (how much it fuses).
- tensor parallel: two all-reduces per layer of ``M x hidden`` activations, ``latency + 2 (tp-1)/tp x bytes /
  (bus_efficiency x link)`` (expert parallel: all-to-all for the MoE layers); pipeline parallel: each
  stage holds ``layers / pp`` and sends ``M x hidden`` to the next; a token passes every stage in turn.
- the engine on the host: ``step_overhead + per_sequence x sequences`` per step, and for servers that sample on the
  CPU ``vocab x sampler_s_per_vocab`` per sampled sequence; engines without CUDA graphs are bound by
  ``kernels x host_launch`` when that exceeds the GPU's time.
- a kernel class may switch kernels above one row (``batched_bandwidth_scale``: llama.cpp's f16 mat-vec for one
  row, tensor-core tiles for more), so the weight GEMMs of a step of one row read at ``gemm_bw``, others at
  ``gemm_bw_batched``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..hardware.facts import GPUInfo
from ..model_facts.facts import ModelFacts
from .speed_data import EngineSpeed, engine_speed, interp_log, measured_label
from .step_inputs import Ceilings, attention_and_links, device_ceilings, gemm_efficiencies, shapes, term_sources

if TYPE_CHECKING:  # the LoRA term is built by plan (estimate/lora_cost.py) only when the engine serves adapters
    from .lora_cost import LoRAStepCost

# Rows per expert a fused-MoE kernel pads to (one tile): the measured torch._grouped_mm pads to 16 (kernels.yaml
# grouped_gemm note); vLLM's fused_moe uses BLOCK_SIZE_M 16 at small batch (fused_moe.get_default_config).
MOE_TILE_ROWS = 16
# Grouped-GEMM bandwidth efficiency by routed rows per expert, relative to the measured figure (kernels.yaml
# grouped_gemm, rows padded to 16): bf16 torch._grouped_mm on the lent H200 over gpt-oss-120b and Qwen3-30B-A3B
# expert shapes reached 0.51-0.52 of the datasheet bandwidth at ~1 row per touched expert, 0.60 at 4-8 and 0.62-0.64
# at 64 (eager timings less ~30 us of launch; /work/coord/h200/llamacpp-steps-2026-12-03/moe_gemm.json, committed on
# main under benchmarks/results/h200/): as fractions of the 64-row figure.
MOE_BW_BY_ROWS_PER_EXPERT = [(1.0, 0.81), (4.0, 0.94), (8.0, 0.95), (64.0, 1.0)]


@dataclass(frozen=True)
class StepShape:
    """What one engine step processes (see the module docstring)."""

    decode: int = 0
    decode_context: float = 0.0
    prefill_tokens: int = 0
    prefill_pairs: float = 0.0
    prefill_chunks: int = 0
    completes: int = 0  # prefills that finish in this step and sample their first token
    decode_window_context: float | None = None  # sum of min(context, window); default min(decode_context, decode x window)

    @property
    def rows(self) -> int:
        return self.decode + self.prefill_tokens

    @property
    def sequences(self) -> int:
        return self.decode + self.prefill_chunks

    @property
    def sampled(self) -> int:
        return self.decode + self.completes


def decode_shape(batch: int, context: float) -> StepShape:
    """A decode-only step: ``batch`` sequences at ``context`` tokens each."""
    return StepShape(decode=batch, decode_context=batch * context)


def prefill_shape(prompts: int, tokens: int, prefix: int = 0) -> StepShape:
    """One step prefilling ``prompts`` chunks of ``tokens`` tokens each after ``prefix`` cached tokens."""
    pairs = prompts * tokens * (prefix + (tokens + 1) / 2)
    return StepShape(prefill_tokens=prompts * tokens, prefill_pairs=pairs, prefill_chunks=prompts, completes=prompts)


@dataclass(eq=False)  # compared by identity: it carries caches, and a generated __eq__ over 50 fields costs every start
class StepModel:
    """Precomputed per-step coefficients of one plan; :meth:`seconds` is cheap enough for the simulator."""

    engine: str
    profile: EngineSpeed
    layers_per_stage: int
    pp: int
    tp: int
    # per layer, per GPU
    dense_bytes: float
    dense_flops_per_row: float
    gemm_kernels: float
    expert_bytes: float
    expert_stored_bytes: float  # the experts as the format stores them (the mat-vec path; expert_bytes: the fitted count)
    experts: int
    experts_per_token: int
    expert_flops_per_row: float
    moe_routing_kernels: float
    kv_full_bytes_per_token: float  # per stage (all its layers), per GPU
    kv_window_bytes_per_token: float
    window: int | None
    q_width: float
    full_layer_share: float
    attn_layers_per_stage: float
    moe_layer_share: float  # layers with routed experts / all layers (hybrid block models: the MoE blocks only)
    recurrent_layers_per_stage: float
    state_bytes_per_seq: float  # per GPU, one stage's recurrent layers
    small_kernels: float
    hidden: int
    act_bytes: float
    # head, per GPU
    head_bytes: float
    head_flops_per_row: float
    vocab: int
    # device
    ceil: Ceilings
    gemm_bw: float
    gemm_bw_batched: float  # the weight GEMMs' bandwidth above one row (the kernel class may switch kernels there)
    gemm_launch: float
    gemm_table: list
    gemm_peak: float
    gemm_compute_scale: float
    head_bw: float
    head_bw_batched: float  # above one sampled row (on a CPU the tiled kernel; on a GPU the same as head_bw)
    head_launch: float
    head_table: list
    head_peak: float
    grouped_launch: float
    grouped_bw: float
    grouped_scale: float
    expert_peak: float
    expert_compute_scale: float
    expert_matvec_bw: float
    expert_matvec_max_rows: int  # up to these rows the experts run as a mat-vec over the selected ids (llama.cpp: 1)
    attn_launch: float
    attn_bw: float
    prefill_attn_table: list
    prefill_attn_scale: float
    attn_peak: float
    small_s: float
    small_bw: float
    allreduce_latency: float
    small_message_bw: float
    nccl_latency: float
    link_bw: float
    expert_parallel: bool
    pp_link_bw: float
    pp_latency: float
    host_bound: bool
    host_launch_s: float
    step_overhead_s: float
    per_sequence_s: float
    tp_nodes: int = 1  # nodes one tensor-parallel group spans: its all-reduces cross the network too
    request_overhead_s: float = 0.0  # per request, outside the steps: before the scheduler sees it (simulate), into TTFT
    sampler_s: float = 0.0  # host seconds per sampled sequence per step (vocab x sampler_s_per_vocab)
    prompt_host_s: float = 0.0  # seconds per prompt chunk in a step, inside the step (llama-server's prompt batch)
    prompt_host_per_token_s: float = 0.0  # the same per prompt token
    lora: LoRAStepCost | None = None  # batched LoRA kernels (estimate/lora_cost.py); None without adapters
    sources: dict[str, str] = field(default_factory=dict)  # term -> where its coefficients come from (--explain)
    notes: list[str] = field(default_factory=list)
    _layer_cache: dict = field(default_factory=dict, repr=False)
    _eta_cache: dict = field(default_factory=dict, repr=False)  # prefill-attention efficiency by chunk length

    # ------------------------------------------------------------ the operators (one copy of each)

    def _gemm(self, rows: int, nbytes: float, flops_per_row: float, launch: float, bw: float, table, peak: float, scale: float) -> float:
        if nbytes <= 0:
            return 0.0
        eta = interp_log(table, max(rows, 1)) * scale
        return launch + max(nbytes / bw, rows * flops_per_row / (eta * peak))

    def experts_touched(self, rows: int) -> float:
        """Expected distinct experts a step of ``rows`` tokens routes to: ``E (1 - (1 - k/E)^rows)``."""
        if not self.experts or rows <= 0:
            return 0.0
        e, k = self.experts, self.experts_per_token
        return e * (1.0 - (1.0 - k / e) ** rows)

    def _experts(self, rows: int) -> float:
        """Grouped GEMMs over the experts touched: their bytes, and FLOPs on rows padded to the kernel's tile per expert."""
        touched = self.experts_touched(rows)
        if not touched:
            return 0.0
        nbytes = self.expert_bytes * touched / self.experts
        if rows <= self.expert_matvec_max_rows:  # the selected experts' bytes at the class's mat-vec bandwidth, no padding
            nbytes = self.expert_stored_bytes * touched / self.experts
            eta = interp_log(self.gemm_table, 1.0) * self.expert_compute_scale
            return self.grouped_launch * self.moe_layer_share + max(nbytes / self.expert_matvec_bw,
                                                                    rows * self.expert_flops_per_row / (eta * self.expert_peak))
        per_expert_rows = rows * self.experts_per_token / touched
        padded = touched * max(MOE_TILE_ROWS, math.ceil(per_expert_rows / MOE_TILE_ROWS) * MOE_TILE_ROWS)
        eta = self.grouped_scale * interp_log(self.gemm_table, max(per_expert_rows, 1.0)) * self.expert_compute_scale
        flops = max(rows * self.experts_per_token, padded) * self.expert_flops_per_row / self.experts_per_token
        bw = self.grouped_bw * (interp_log(MOE_BW_BY_ROWS_PER_EXPERT, per_expert_rows) if self.grouped_launch else 1.0)
        return self.grouped_launch * self.moe_layer_share + max(nbytes / bw, flops / (eta * self.expert_peak))

    def _moe_routing(self, rows: int) -> float:
        """Router top-k, sort/align, permute and combine: small kernels plus the rows x k activations moved twice."""
        if not self.experts or rows <= 0:
            return 0.0
        moved = 2 * 2 * rows * self.experts_per_token * self.hidden * self.act_bytes
        return (self.moe_routing_kernels * self.small_s + moved / self.small_bw) * self.moe_layer_share

    def _allreduce(self, nbytes: float, parts: int) -> float:
        """The faster of the latency-optimised (one-shot) all-reduce and the ring, as engines choose."""
        if parts <= 1:
            return 0.0
        if self.tp_nodes > 1 and parts >= self.tp_nodes:
            # a group over nodes (NCCL, hierarchical): within each node over its link, then between the nodes over the
            # network, at its latency and bandwidth (data/speed/engines.yaml links.network), once per all-reduce
            n = self.tp_nodes
            return self._allreduce_link(nbytes, parts // n) + self.pp_latency + 2 * (n - 1) / n * nbytes / self.pp_link_bw
        return self._allreduce_link(nbytes, parts)

    def _allreduce_link(self, nbytes: float, parts: int) -> float:
        if parts <= 1:
            return 0.0
        moved = 2 * (parts - 1) / parts * nbytes
        return min(self.allreduce_latency + moved / self.small_message_bw, self.nccl_latency + moved / self.link_bw)

    def layer_terms(self, rows: int) -> dict[str, float]:
        """Seconds per decoder layer that depend only on the rows in the step (weights, small kernels, comm)."""
        act = rows * self.hidden * self.act_bytes
        comm = self._allreduce(act, self.tp)  # after attention
        if self.experts and self.expert_parallel:
            comm += 2 * self._allreduce(act * self.experts_per_token / 2, self.tp)  # dispatch + combine (all-to-all)
        else:
            comm += self._allreduce(act, self.tp)  # after the MLP
        return {
            "weights_gemm": self._gemm(rows, self.dense_bytes, self.dense_flops_per_row, self.gemm_launch * self.gemm_kernels,
                                       self.gemm_bw if rows <= 1 else self.gemm_bw_batched, self.gemm_table, self.gemm_peak,
                                       self.gemm_compute_scale),
            "experts": self._experts(rows),
            "moe_routing": self._moe_routing(rows),
            "small_kernels": self.small_kernels * (self.small_s + 3 * act / self.small_bw) if rows else 0.0,
            "tp_communication": comm if rows else 0.0,
        }

    def _layer_fixed(self, rows: int) -> float:
        cached = self._layer_cache.get(rows)
        if cached is None:
            cached = sum(self.layer_terms(rows).values())
            if len(self._layer_cache) < 65536:
                self._layer_cache[rows] = cached
        return cached

    def _attention(self, decode: int, decode_context: float, window_context: float | None, prefill_tokens: int,
                   prefill_pairs: float, chunks: int) -> tuple[float, float]:
        """(decode, prefill) attention seconds over one stage's attention layers, and the recurrent mixers of hybrid
        layers (a state per sequence instead of a KV cache; their projections are in the weight GEMMs)."""
        dec = pre = 0.0
        if decode:
            if window_context is None:
                window_context = min(decode_context, decode * self.window) if self.window else decode_context
            kv = decode_context * self.kv_full_bytes_per_token + window_context * self.kv_window_bytes_per_token
            dec = self.attn_layers_per_stage * self.attn_launch + kv / self.attn_bw
            if self.recurrent_layers_per_stage:  # hybrid Mamba / DeltaNet layers: each sequence's state read and written
                dec += self.recurrent_layers_per_stage * self.attn_launch + 2 * decode * self.state_bytes_per_seq / self.attn_bw
        if prefill_tokens:
            chunk = prefill_tokens / max(chunks, 1)
            eta = self._eta_cache.get(chunk)
            if eta is None:
                eta = interp_log(self.prefill_attn_table, chunk) * self.prefill_attn_scale
                if len(self._eta_cache) < 65536:
                    self._eta_cache[chunk] = eta
            pairs = prefill_pairs
            if self.window and self.full_layer_share < 1.0:  # sliding layers attend at most `window` keys per query
                capped = min(pairs, prefill_tokens * float(self.window))
                pairs = self.full_layer_share * pairs + (1 - self.full_layer_share) * capped
            flops = 4 * self.q_width * pairs * self.attn_layers_per_stage
            pre = (self.attn_layers_per_stage + self.recurrent_layers_per_stage) * self.attn_launch + flops / (eta * self.attn_peak)
        return dec, pre

    def _head(self, sampled: int, rows: int) -> tuple[float, float, float]:
        """(lm_head, sampler, pipeline hand-off) seconds."""
        head = self._gemm(sampled, self.head_bytes, self.head_flops_per_row, self.head_launch,
                          self.head_bw if sampled <= 1 else self.head_bw_batched, self.head_table,
                          self.head_peak, self.gemm_compute_scale) if sampled else 0.0
        sampler = 2 * self.small_s + sampled * self.vocab * 4 / self.small_bw if sampled else 0.0
        p2p = (self.pp_latency + rows * self.hidden * self.act_bytes / self.pp_link_bw) if self.pp > 1 else 0.0
        return head, sampler, p2p

    def _head_cached(self, sampled: int, rows: int) -> float:
        if self.pp > 1:
            return sum(self._head(sampled, rows))
        key = -1 - sampled  # negative keys: head terms (non-negative keys: layer terms by rows)
        cached = self._layer_cache.get(key)
        if cached is None:
            cached = sum(self._head(sampled, rows))
            if len(self._layer_cache) < 65536:
                self._layer_cache[key] = cached
        return cached

    def attention_terms(self, s: StepShape) -> dict[str, float]:
        """Seconds of all attention layers of one stage."""
        dec, pre = self._attention(s.decode, s.decode_context, s.decode_window_context, s.prefill_tokens, s.prefill_pairs,
                                   s.prefill_chunks)
        return {"attention_decode": dec, "attention_prefill": pre}

    def head_terms(self, s: StepShape) -> dict[str, float]:
        """lm_head over the rows that sample, the sampler, and the hand-off between pipeline stages."""
        head, sampler, p2p = self._head(s.sampled, s.rows)
        return {"lm_head": head, "sampler": sampler, "pp_transfer": p2p}

    def kernel_count(self, decode: int, prefill_tokens: int) -> float:
        per_layer = self.gemm_kernels + self.small_kernels + (1 if decode or prefill_tokens else 0) + (6 if self.experts else 0)
        lora = self.lora.kernels_per_step() * self.pp if self.lora is not None else 0.0
        return self.layers_per_stage * per_layer * self.pp + lora + 4

    def terms(self, s: StepShape) -> dict[str, float]:
        """Every term of one step, in seconds, for a whole pass through the ``pp`` stages (sum = :meth:`seconds`)."""
        layer = {k: v * self.layers_per_stage for k, v in self.layer_terms(s.rows).items()}
        gpu = {**layer, **self.attention_terms(s), **self.head_terms(s)}
        if self.lora is not None:
            gpu["lora"] = self.lora.seconds(s.decode, s.prefill_tokens, s.sequences)
        gpu = {k: v * self.pp for k, v in gpu.items()}  # a token passes every stage in turn
        out = dict(gpu)
        if self.host_bound:
            launch_bound = self.kernel_count(s.decode, s.prefill_tokens) * self.host_launch_s
            out["host_launch_wait"] = max(0.0, launch_bound - sum(gpu.values()))
        out["engine_step_overhead"] = self.step_overhead_s
        out["engine_per_sequence"] = self.per_sequence_s * s.sequences
        if self.sampler_s:
            out["engine_sampling"] = self.sampler_s * s.sampled
        if s.prefill_tokens and (self.prompt_host_s or self.prompt_host_per_token_s):
            out["engine_prompt_host"] = self.prompt_host_s * s.prefill_chunks + self.prompt_host_per_token_s * s.prefill_tokens
        return out

    def step_seconds(self, decode: int, decode_context: float, prefill_tokens: int = 0, prefill_pairs: float = 0.0,
                     chunks: int = 0, completes: int = 0, window_context: float | None = None) -> float:
        """Seconds of one step (the sum of :meth:`terms`, with the parts that depend only on row counts cached)."""
        rows = decode + prefill_tokens
        dec, pre = self._attention(decode, decode_context, window_context, prefill_tokens, prefill_pairs, chunks)
        layer = self._layer_cache.get(rows)  # the simulator's hot path: the cached look-up inline
        if layer is None:
            layer = self._layer_fixed(rows)
        gpu = self.layers_per_stage * layer + dec + pre + self._head_cached(decode + completes, rows)
        if self.lora is not None:
            gpu += self.lora.seconds(decode, prefill_tokens, decode + chunks)
        gpu *= self.pp
        if self.host_bound:
            gpu = max(gpu, self.kernel_count(decode, prefill_tokens) * self.host_launch_s)
        return (gpu + self.step_overhead_s + self.per_sequence_s * (decode + chunks) + self.sampler_s * (decode + completes)
                + self.prompt_host_s * chunks + self.prompt_host_per_token_s * prefill_tokens)

    def decode_seconds(self, batch: int, context_sum: float) -> float:
        """A decode-only step of ``batch`` sequences whose KV contexts sum to ``context_sum``."""
        return self.step_seconds(batch, context_sum)

    def seconds(self, s: StepShape) -> float:
        """Seconds of one step described by a :class:`StepShape`."""
        return self.step_seconds(s.decode, s.decode_context, s.prefill_tokens, s.prefill_pairs, s.prefill_chunks, s.completes,
                                 s.decode_window_context)

    def decode_bytes(self, batch: int, context: float) -> float:
        """Bytes one decode step of ``batch`` sequences at ``context`` reads on one GPU: dense weights, the experts
        the batch touches, the lm_head and every sequence's KV."""
        experts = self.expert_bytes * self.experts_touched(batch) / self.experts if self.experts else self.expert_bytes
        kv = batch * context * (self.kv_full_bytes_per_token + self.kv_window_bytes_per_token)
        return self.layers_per_stage * (self.dense_bytes + experts) + self.head_bytes + kv

    def stage_seconds(self, s: StepShape) -> float:
        """One pipeline stage's share: the interval at which a pipelined engine can start the next micro-batch."""
        return self.seconds(s) / self.pp


# ---------------------------------------------------------------- building a StepModel (inputs: estimate/step_inputs.py)


def build_step_model(
    model: ModelFacts,
    *,
    gpu: GPUInfo | None,
    engine: str,
    quantization: str = "none",
    dtype: str = "bfloat16",
    kv_cache_dtype: str = "auto",
    tp: int = 1,
    pp: int = 1,
    nodes: int = 1,
    expert_parallel: bool = False,
    cpu_cores: int | None = None,
    profile: EngineSpeed | None = None,
    engine_version: str | None = None,
    cpu_simd: str | None = None,
    lora: LoRAStepCost | None = None,
) -> StepModel:
    """Precompute the step coefficients of one plan (engine at a version x quantization x layout on one GPU type)."""
    prof = profile or engine_speed(engine, engine_version, gpu=gpu.name if gpu else None)
    ceil = device_ceilings(gpu, cpu_cores=cpu_cores, dtype=dtype, cpu_simd=cpu_simd)
    notes: list[str] = []
    measured = measured_label(prof, gpu.name if gpu else None)
    if measured:
        notes.append(f"{engine} host and kernel coefficients measured on {gpu.name}: {measured}")
    gemms, weights = gemm_efficiencies(prof, quantization, gpu, ceil, notes, row_elements=model.hidden_size)
    on_gpu = gpu is not None
    if prof.version_range:
        notes.append(f"{engine} speed coefficients for {prof.version_range}")
    layer_facts = shapes(model, quantization, dtype, kv_cache_dtype, tp, pp)
    block_share = layer_facts.pop("block_share")
    return StepModel(
        engine=engine, profile=prof, ceil=ceil, **layer_facts,
        moe_routing_kernels=prof.moe_routing_kernels if on_gpu else 0.0,
        small_kernels=prof.small_kernels_per_layer * block_share if on_gpu else 0.0,
        **gemms, **attention_and_links(prof, gpu, ceil, nodes),
        expert_parallel=expert_parallel, tp_nodes=max(1, nodes // max(pp, 1)) if tp > 1 else 1,
        host_bound=not prof.cuda_graphs and on_gpu, host_launch_s=prof.host_launch_s,
        step_overhead_s=prof.step_overhead_s.value, per_sequence_s=prof.per_sequence_s.value,
        request_overhead_s=prof.request_overhead_s.value, notes=notes, lora=lora,
        sources={**term_sources(prof, ceil, weights), **({"lora": lora.source} if lora is not None else {})},
        sampler_s=model.vocab_size * prof.sampler_s_per_vocab.value if prof.sampler_s_per_vocab else 0.0,
        prompt_host_s=prof.prompt_host_s.value if prof.prompt_host_s else 0.0,
        prompt_host_per_token_s=prof.prompt_host_s_per_token.value if prof.prompt_host_s_per_token else 0.0,
    )
