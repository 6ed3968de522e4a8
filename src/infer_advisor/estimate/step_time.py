"""The step-time model: seconds of one engine step, built from operators. One function for the planner, the
simulator and calibrate alike.

    >>> sm = build_step_model(model, gpu=hw.gpu, engine="vllm", quantization="none", dtype="bfloat16",
    ...                       kv_cache_dtype="auto", tp=1, pp=1)
    >>> sm.seconds(StepShape(decode=8, decode_context=8 * 1024))      # one decode step of 8 sequences
    >>> sm.terms(StepShape(prefill_tokens=2048, prefill_pairs=2048 * 1024.5, prefill_chunks=1, completes=1))

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
- the engine on the host: ``step_overhead + per_sequence x sequences`` per step; engines without CUDA graphs
  are bound by ``kernels x host_launch`` when that exceeds the GPU's time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..hardware.facts import GPUInfo
from ..model_facts.facts import ModelFacts
from .formats import dtype_bytes
from .speed_data import EngineSpeed, engine_speed, engine_speeds, interp_log, kernels

GDDR_PREFIXES = ("gddr", "lpddr", "ddr")  # memory_type values of the GPU catalog that are not HBM


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


@dataclass
class Ceilings:
    """One device's datasheet ceilings (or the CPU's figures) and where they came from."""

    bandwidth: float
    peaks: dict[str, float]
    link_bandwidth: float
    link: str
    gddr: bool
    source: str


@dataclass
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
    gemm_kernels: int
    expert_bytes: float
    experts: int
    experts_per_token: int
    expert_flops_per_row: float
    kv_full_bytes_per_token: float  # per stage (all its layers), per GPU
    kv_window_bytes_per_token: float
    window: int | None
    q_width: float
    full_layer_share: float
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
    gemm_launch: float
    gemm_table: list
    gemm_peak: float
    gemm_compute_scale: float
    head_bw: float
    head_launch: float
    head_table: list
    head_peak: float
    grouped_launch: float
    grouped_bw: float
    grouped_scale: float
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
    notes: list[str] = field(default_factory=list)
    _layer_cache: dict = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------ the operators (one copy of each)

    def _gemm(self, rows: int, nbytes: float, flops_per_row: float, launch: float, bw: float, table, peak: float, scale: float) -> float:
        if nbytes <= 0:
            return 0.0
        eta = interp_log(table, max(rows, 1)) * scale
        return launch + max(nbytes / bw, rows * flops_per_row / (eta * peak))

    def _experts(self, rows: int) -> float:
        if not self.experts or rows <= 0:
            return 0.0
        e, k = self.experts, self.experts_per_token
        touched = e * (1.0 - (1.0 - k / e) ** rows)
        nbytes = self.expert_bytes * touched / e
        per_expert_rows = rows * k / max(touched, 1e-9)
        eta = self.grouped_scale * interp_log(self.gemm_table, max(per_expert_rows, 1.0)) * self.gemm_compute_scale
        return self.grouped_launch + max(nbytes / self.grouped_bw, rows * self.expert_flops_per_row / (eta * self.gemm_peak))

    def _allreduce(self, nbytes: float, parts: int) -> float:
        """The faster of the latency-optimised (one-shot) all-reduce and the ring, as engines choose."""
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
                                       self.gemm_bw, self.gemm_table, self.gemm_peak, self.gemm_compute_scale),
            "experts": self._experts(rows),
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
        """(decode, prefill) attention seconds over one stage's layers."""
        dec = pre = 0.0
        if decode:
            if window_context is None:
                window_context = min(decode_context, decode * self.window) if self.window else decode_context
            kv = decode_context * self.kv_full_bytes_per_token + window_context * self.kv_window_bytes_per_token
            dec = self.layers_per_stage * self.attn_launch + kv / self.attn_bw
        if prefill_tokens:
            chunk = prefill_tokens / max(chunks, 1)
            eta = interp_log(self.prefill_attn_table, chunk) * self.prefill_attn_scale
            pairs = prefill_pairs
            if self.window and self.full_layer_share < 1.0:  # sliding layers attend at most `window` keys per query
                capped = min(pairs, prefill_tokens * float(self.window))
                pairs = self.full_layer_share * pairs + (1 - self.full_layer_share) * capped
            flops = 4 * self.q_width * pairs * self.layers_per_stage
            pre = self.layers_per_stage * self.attn_launch + flops / (eta * self.attn_peak)
        return dec, pre

    def _head(self, sampled: int, rows: int) -> tuple[float, float, float]:
        """(lm_head, sampler, pipeline hand-off) seconds."""
        head = self._gemm(sampled, self.head_bytes, self.head_flops_per_row, self.head_launch, self.head_bw, self.head_table,
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
        return self.layers_per_stage * per_layer * self.pp + 4

    def terms(self, s: StepShape) -> dict[str, float]:
        """Every term of one step, in seconds, for a whole pass through the ``pp`` stages (sum = :meth:`seconds`)."""
        layer = {k: v * self.layers_per_stage for k, v in self.layer_terms(s.rows).items()}
        gpu = {**layer, **self.attention_terms(s), **self.head_terms(s)}
        gpu = {k: v * self.pp for k, v in gpu.items()}  # a token passes every stage in turn
        out = dict(gpu)
        if self.host_bound:
            launch_bound = self.kernel_count(s.decode, s.prefill_tokens) * self.host_launch_s
            out["host_launch_wait"] = max(0.0, launch_bound - sum(gpu.values()))
        out["engine_step_overhead"] = self.step_overhead_s
        out["engine_per_sequence"] = self.per_sequence_s * s.sequences
        return out

    def step_seconds(self, decode: int, decode_context: float, prefill_tokens: int = 0, prefill_pairs: float = 0.0,
                     chunks: int = 0, completes: int = 0, window_context: float | None = None) -> float:
        """Seconds of one step (the sum of :meth:`terms`, with the parts that depend only on row counts cached)."""
        rows = decode + prefill_tokens
        dec, pre = self._attention(decode, decode_context, window_context, prefill_tokens, prefill_pairs, chunks)
        gpu = self.layers_per_stage * self._layer_fixed(rows) + dec + pre + self._head_cached(decode + completes, rows)
        gpu *= self.pp
        if self.host_bound:
            gpu = max(gpu, self.kernel_count(decode, prefill_tokens) * self.host_launch_s)
        return gpu + self.step_overhead_s + self.per_sequence_s * (decode + chunks)

    def decode_seconds(self, batch: int, context_sum: float) -> float:
        """A decode-only step of ``batch`` sequences whose KV contexts sum to ``context_sum``."""
        return self.step_seconds(batch, context_sum)

    def seconds(self, s: StepShape) -> float:
        """Seconds of one step described by a :class:`StepShape`."""
        return self.step_seconds(s.decode, s.decode_context, s.prefill_tokens, s.prefill_pairs, s.prefill_chunks, s.completes,
                                 s.decode_window_context)

    def stage_seconds(self, s: StepShape) -> float:
        """One pipeline stage's share: the interval at which a pipelined engine can start the next micro-batch."""
        return self.seconds(s) / self.pp


# ---------------------------------------------------------------- building a StepModel


def device_ceilings(gpu: GPUInfo | None, *, cpu_cores: int | None, dtype: str) -> Ceilings:
    data = engine_speeds()
    if gpu is None:
        cpu = data.cpu
        cores = max(cpu_cores or 1, 1)
        flops = cpu.flops_per_core_per_s * cores * cpu.compute_efficiency
        return Ceilings(bandwidth=cpu.memory_bandwidth_bytes_per_s, peaks={k: flops for k in ("bf16", "fp16", "fp8", "int8", "fp4")},
                        link_bandwidth=1e12, link="none", gddr=False, source=f"CPU figures ({cpu.source})")
    t = gpu.tflops
    half = t.get("bf16") or t.get("fp16") or t.get("fp32") or 1.0
    peaks = {
        "bf16": (t.get("bf16") or t.get("fp16") or half) * 1e12,
        "fp16": (t.get("fp16") or t.get("bf16") or half) * 1e12,
        "fp8": (t.get("fp8") or 0.0) * 1e12,
        "int8": (t.get("int8") or 0.0) * 1e12,
        "fp4": (t.get("fp4") or 0.0) * 1e12,
    }
    mem_type = (gpu.memory_type or "").lower()
    return Ceilings(
        bandwidth=gpu.memory_bandwidth_bytes_per_s, peaks=peaks, link_bandwidth=gpu.interconnect_bandwidth_bytes_per_s,
        link=gpu.interconnect, gddr=mem_type.startswith(GDDR_PREFIXES),
        source=f"{gpu.name} datasheet figures ({gpu.source})",
    )


def _weight_kernel(profile: EngineSpeed, engine: str, quantization: str, gpu: GPUInfo | None):
    data = engine_speeds()
    name = profile.weight_kernels.get(quantization) or profile.weight_kernels.get("default", "bf16")
    seen = set()
    while True:
        wk = data.weight_kernels[name]
        cc = gpu.compute_capability if gpu is not None else None
        if wk.needs_compute_capability and (cc is None or cc < wk.needs_compute_capability) and wk.fallback and name not in seen:
            seen.add(name)
            name = wk.fallback
            continue
        return name, wk


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
) -> StepModel:
    """Precompute the step coefficients of one plan (engine x quantization x layout on one GPU type)."""
    from .memory import kv_bytes_per_token_per_gpu, weight_bytes_by_group

    prof = profile or engine_speed(engine)
    k = kernels()
    ceil = device_ceilings(gpu, cpu_cores=cpu_cores, dtype=dtype)
    data = engine_speeds()
    notes: list[str] = []

    # --- bytes and FLOPs (bytes from the memory model)
    groups = weight_bytes_by_group(model, quantization, dtype)
    p = model.params
    layers = max(model.num_layers, 1)
    stage_layers = math.ceil(layers / pp)
    expert_frac = p.expert_linear / p.linear if p.linear else 0.0
    linear_bytes_layer = groups["linear"] / layers / tp
    dense_bytes = linear_bytes_layer * (1 - expert_frac)
    expert_bytes = linear_bytes_layer * expert_frac
    dense_params_layer = (p.linear - p.expert_linear) / layers / tp
    moe = model.family == "moe" and model.num_experts > 0
    experts, top_k = (model.num_experts, model.num_experts_per_token) if moe else (0, 0)
    expert_flops_per_row = 2 * top_k * (p.expert_linear / layers / max(experts, 1)) / tp if moe else 0.0
    head_params = p.lm_head or p.embedding  # tied embeddings: the embedding matrix is the lm_head
    head_group = "lm_head" if p.lm_head else "embedding"
    head_bytes = groups[head_group] / tp
    head_flops_per_row = 2 * head_params / tp
    attn_gemms = 5 if model.attention == "mla" else 2
    mlp_gemms = (1 + (2 if model.num_shared_experts else 0)) if moe else 2
    act_b = dtype_bytes(dtype)
    kv_b = act_b if kv_cache_dtype == "auto" else dtype_bytes(kv_cache_dtype)
    full_tok, slide_tok = kv_bytes_per_token_per_gpu(model, kv_b, tp, pp)  # per GPU, one stage's layers
    total_kv = model.kv_cache_elements_per_token + model.sliding_kv_elements_per_token
    full_share = model.kv_cache_elements_per_token / total_kv if total_kv else 1.0
    q_width = model.num_attention_heads * model.head_dim / tp

    # --- efficiencies: measured curves x engine scales, on this device's datasheet ceilings
    wk_name, wk = _weight_kernel(prof, engine, quantization, gpu)
    curve = k.gemm[wk.curve]
    gddr = prof.gddr_scale.value if ceil.gddr else 1.0
    amd = prof.amd_scale.value if (gpu is not None and gpu.vendor == "amd") else 1.0
    gddr *= amd  # ROCm kernels against the NVIDIA-measured curves (a fitted factor, bandwidth and compute)
    gemm_scale = prof.gemm_scale.value
    bw_eff = min(curve.bandwidth_efficiency * wk.bandwidth_scale * gemm_scale * gddr, 0.98)
    peak = ceil.peaks.get(wk.peak) or ceil.peaks["bf16"]
    if not ceil.peaks.get(wk.peak):
        notes.append(f"{gpu.name if gpu else 'CPU'} has no {wk.peak} peak in the catalog: {wk_name} GEMMs use the 16-bit peak")
    head_curve = k.gemm["bf16"]
    on_gpu = gpu is not None
    if on_gpu:
        bw = ceil.bandwidth
        cpu_eff = 1.0
    else:
        cpu_eff = prof.cpu_bandwidth_efficiency.value if prof.cpu_bandwidth_efficiency else 0.5
        bw = ceil.bandwidth
        bw_eff = cpu_eff
    attn_eff = min(k.attention.decode.bandwidth_efficiency * prof.attention_scale.value * gddr, 0.98) if on_gpu else cpu_eff
    flat = [(1.0, 1.0)]  # on a CPU the measured GPU tile curves do not apply: the CPU ceiling already holds its efficiency
    link_name = ceil.link if ceil.link in data.links else "pcie"
    link = data.links[link_name] if on_gpu else None
    net = data.links.get("network")
    launch_on = 1.0 if on_gpu else 0.0
    return StepModel(
        engine=engine, profile=prof, layers_per_stage=stage_layers, pp=pp, tp=tp,
        dense_bytes=dense_bytes, dense_flops_per_row=2 * dense_params_layer, gemm_kernels=attn_gemms + mlp_gemms,
        expert_bytes=expert_bytes, experts=experts, experts_per_token=top_k, expert_flops_per_row=expert_flops_per_row,
        kv_full_bytes_per_token=full_tok, kv_window_bytes_per_token=slide_tok, window=model.sliding_window,
        q_width=q_width, full_layer_share=full_share, small_kernels=prof.small_kernels_per_layer if on_gpu else 0.0,
        hidden=model.hidden_size, act_bytes=act_b,
        head_bytes=head_bytes, head_flops_per_row=head_flops_per_row, vocab=model.vocab_size,
        ceil=ceil,
        gemm_bw=bw_eff * bw, gemm_launch=curve.launch_s * wk.launch_scale * launch_on,
        gemm_table=curve.compute_efficiency_by_tokens if on_gpu else flat, gemm_peak=peak,
        gemm_compute_scale=min(wk.compute_scale * gemm_scale * amd, 1.0) if on_gpu else min(gemm_scale, 1.0),  # CPU: no GPU kernel class
        head_bw=(min(head_curve.bandwidth_efficiency * gemm_scale * gddr, 0.98) if on_gpu else cpu_eff) * bw,
        head_launch=head_curve.launch_s * launch_on, head_table=head_curve.compute_efficiency_by_tokens if on_gpu else flat,
        head_peak=ceil.peaks["bf16"],
        grouped_launch=k.grouped_gemm.launch_s * launch_on,
        grouped_bw=(min(k.grouped_gemm.bandwidth_efficiency * wk.bandwidth_scale * gemm_scale * gddr * prof.moe_scale.value, 0.98)
                    if on_gpu else cpu_eff) * bw,
        grouped_scale=min(k.grouped_gemm.compute_efficiency_scale * prof.moe_scale.value, 1.0),
        attn_launch=k.attention.decode.launch_s * launch_on, attn_bw=attn_eff * bw,
        prefill_attn_table=k.attention.prefill.compute_efficiency_by_tokens if on_gpu else flat,
        prefill_attn_scale=prof.prefill_attention_scale.value, attn_peak=ceil.peaks["bf16"],
        small_s=k.small_kernel.seconds_per_kernel * launch_on, small_bw=(0.9 if on_gpu else cpu_eff) * bw,
        allreduce_latency=link.allreduce_latency_s if link else 0.0,
        small_message_bw=link.small_message_bytes_per_s if link else 1e12,
        nccl_latency=link.nccl_latency_s if link else 0.0,
        link_bw=(link.bus_efficiency * ceil.link_bandwidth) if link else 1e12,
        expert_parallel=expert_parallel,
        pp_link_bw=(net.bus_efficiency * 50e9) if (nodes > 1 and net) else ((link.bus_efficiency * ceil.link_bandwidth) if link else 1e12),
        pp_latency=(net.allreduce_latency_s if (nodes > 1 and net) else (link.allreduce_latency_s if link else 0.0)),
        host_bound=not prof.cuda_graphs and on_gpu, host_launch_s=prof.host_launch_s,
        step_overhead_s=prof.step_overhead_s.value, per_sequence_s=prof.per_sequence_s.value,
        notes=notes,
    )
