"""The performance model: TTFT, TPOT and tokens/s of one plan, as a fraction of the physical ceilings.

    >>> perf = estimate_speed(model, hw, engine="vllm", quantization="none", dtype="bfloat16", tp=1, pp=1,
    ...                       memory=mem, concurrency=8, input_tokens=512, output_tokens=200, calibration=None)
    >>> perf.tpot_s, perf.output_tokens_per_s_aggregate, perf.source

One engine step on one GPU costs ``serial + max(launch, bytes / (eta_bw x bandwidth), flops / (eta_c x peak))``
plus, under tensor parallelism, two all-reduces per layer of ``tokens x hidden`` activations (ring:
``2 (tp-1)/tp x bytes / interconnect + latency``). With ``pp`` stages a token passes every stage in turn.

- decode (memory bound): every step reads the per-GPU weights once (MoE: the shared part plus the experts
  the batch's tokens route to) and the KV cache of every sequence at its mean context ``input + output/2``.
- prefill (compute bound): ``2 x (active params - embedding - lm_head) x prompt tokens`` FLOPs, plus causal
  attention ``2 x layers x prompt^2 x q width`` per sequence, plus the lm_head on the last position.
  TTFT is the prefill of the whole batch's prompts in one step (all requests arrive together: the worst case
  for a static batch, the burst case for continuous batching).
- overhead: ``step_overhead_s`` per step is serial (scheduling, sampling, the host sync); the kernel-launch
  time ``layer_overhead_s x layers (+ moe_layer_overhead_s x MoE layers)`` overlaps the GPU's work, so a step
  takes ``step_overhead_s + max(launch, memory time, compute time)``: eager engines are launch bound at small
  batch (measured: transformers eager decodes Llama-2-7B in ~20 ms per step from batch 1 to 32 on an H200).
- KV traffic: engines that grow the cache by concatenation (transformers' DynamicCache) copy the whole
  cache every step; ``kv_traffic_factor`` counts the KV bytes moved per byte attended.

Byte counts come from the memory model (:class:`MemoryEstimate`); nothing here adds up weight bytes. The
efficiencies and overheads are an engine x quantization profile from ``data/perf_profiles.yaml`` (each with
its source), or from a calibration file written by `infer-advisor calibrate` (``source="calibrated"``).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped
from ..hardware.facts import HardwareFacts
from ..model_facts.facts import ModelFacts
from .memory import MemoryEstimate

ACT_DTYPE_KEY = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}  # dtype name -> GPUInfo.tflops key


class SpeedProfile(BaseModel):
    """How much of the ceilings one engine x quantization reaches, and its fixed cost per step."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    bandwidth_efficiency: float = Field(gt=0, le=1, description="Achieved / peak memory bandwidth in decode.")
    compute_efficiency: float = Field(gt=0, le=1, description="Achieved / peak dense tensor FLOPS in prefill.")
    step_overhead_s: float = Field(ge=0, description="Serial seconds per engine step (scheduling, sampling, host sync).")
    layer_overhead_s: float = Field(default=0.0, ge=0, description="Kernel-launch seconds per decoder layer per step; overlaps GPU work.")
    moe_layer_overhead_s: float = Field(default=0.0, ge=0, description="Extra launch seconds per MoE layer per step (routing, expert dispatch).")
    kv_traffic_factor: float = Field(default=1.0, ge=1, description="KV bytes moved per KV byte attended in decode (3: concatenating cache).")
    kind: Literal["measured", "published", "assumed"] = Field(description="measured here, taken from a published figure, or assumed.")
    source: str = Field(description="Where the numbers were measured or published.")


class CPUFigures(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    memory_bandwidth_bytes_per_s: float = Field(gt=0)
    flops_per_core_per_s: float = Field(gt=0)
    source: str


class PerfProfilesFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    profiles: dict[str, dict[str, SpeedProfile]] = Field(description="engine -> quantization (or 'default') -> profile.")
    cpu: CPUFigures
    allreduce_latency_s: float = Field(ge=0)
    allreduce_latency_source: str


class PerformanceEstimate(BaseModel):
    """Predicted speed of a plan at its concurrency; ``source`` says whether a calibration was used."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    source: Literal["estimated", "calibrated"] = Field(description="estimated: shipped default profile; calibrated: a measured profile.")
    profile: str = Field(description="Efficiency profile used (engine x quantization) and where it was measured.")
    concurrency: int
    input_tokens: int
    output_tokens: int
    ttft_s: float = Field(description="Time to first token: prefill of the prompt plus fixed overhead.")
    tpot_s: float = Field(description="Time per output token after the first, at this concurrency.")
    e2e_s: float = Field(description="End-to-end latency of one request.")
    output_tokens_per_s_per_request: float
    output_tokens_per_s_aggregate: float
    requests_per_s: float
    decode_fraction_of_bandwidth_ceiling: float = Field(description="Predicted decode speed / memory-bandwidth ceiling.")
    prefill_fraction_of_compute_ceiling: float = Field(description="Predicted prefill speed / compute (FLOPS) ceiling.")
    notes: list[str] = Field(default_factory=list)
    # Added fields (append-only).
    bandwidth_bytes_per_s: float = Field(default=0.0, description="Peak memory bandwidth of one device used (catalog/probe, or the CPU figure).")
    compute_flops_per_s: float = Field(default=0.0, description="Peak dense FLOPS of one device in the compute dtype.")
    decode_bytes_per_step_per_gpu: float = Field(default=0.0, description="Bytes one decode step reads on one GPU (weights + KV).")
    prefill_flops_per_gpu: float = Field(default=0.0, description="FLOPs of the batch's prefill on one GPU.")
    decode_ceiling_tokens_per_s: float = Field(default=0.0, description="Aggregate decode tokens/s at 100% of the bandwidth ceiling.")
    overhead_s_per_step: float = Field(default=0.0, description="Serial overhead + launch time per decode step from the profile.")
    calibration_file: str | None = Field(default=None, description="The calibration file used, if any.")


@cache
def perf_profiles() -> PerfProfilesFile:
    return load_validated(shipped("data") / "perf_profiles.yaml", PerfProfilesFile)


def speed_profile(engine: str, quantization: str) -> tuple[SpeedProfile, str]:
    """The shipped profile for ``engine`` x ``quantization`` (else the engine's ``default``) and its label."""
    from ..errors import RequestError

    table = perf_profiles().profiles
    if engine not in table:
        raise RequestError(f"No speed profile for engine '{engine}'. Known: {', '.join(table)}.")
    per = table[engine]
    key = quantization if quantization in per else "default"
    return per[key], f"{engine} x {key}"


# ---------------------------------------------------------------- the workload's bytes and FLOPs


class StepWork(BaseModel):
    """What one step moves and computes on one GPU (one pipeline stage), before efficiencies."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    bytes: float = Field(description="Bytes read once per step (weights; KV written in prefill).")
    kv_bytes: float = Field(default=0.0, description="KV bytes attended in decode (times the profile's kv_traffic_factor).")
    flops: float
    allreduce_bytes: float = Field(description="Bytes of one all-reduce message (tokens x hidden x act bytes).")
    layers: int
    moe_layers: int


def _expert_share(model: ModelFacts, tokens: int) -> float:
    """Fraction of the weight bytes read by ``tokens`` routed tokens (1.0 for dense models)."""
    if model.family != "moe" or not model.num_experts or not model.num_experts_per_token:
        return 1.0
    experts_frac = model.params.expert_linear / max(model.num_parameters, 1)
    k, e = model.num_experts_per_token, model.num_experts
    touched = 1.0 - (1.0 - k / e) ** max(tokens, 1)  # expected fraction of experts hit by ``tokens`` tokens
    return (1.0 - experts_frac) + experts_frac * touched


def _kv_bytes_per_seq(model: ModelFacts, memory: MemoryEstimate, context: float) -> float:
    full = memory.kv_cache_bytes_per_token_per_gpu
    sliding = full * model.sliding_kv_elements_per_token / model.kv_cache_elements_per_token if model.kv_cache_elements_per_token else 0.0
    held = min(context, model.sliding_window) if model.sliding_window else context
    return full * context + sliding * held


def _matmul_params(model: ModelFacts) -> float:
    """Parameters multiplied per token, lm_head excluded (embedding lookups are no matmul)."""
    return max(model.num_active_parameters - model.params.embedding - model.params.lm_head, 0)


def decode_work(model: ModelFacts, memory: MemoryEstimate, *, tp: int, pp: int, batch: int, context: float, act_bytes: float) -> StepWork:
    """One decode step of ``batch`` sequences at mean ``context`` tokens, on one GPU of one stage."""
    q_width = model.num_attention_heads * model.head_dim
    weights = memory.weights_bytes_per_gpu * _expert_share(model, batch)
    kv = batch * _kv_bytes_per_seq(model, memory, context)
    flops = batch * (2 * (_matmul_params(model) + model.params.lm_head) + 4 * model.num_layers * context * q_width) / (tp * pp)
    return StepWork(
        bytes=weights, kv_bytes=kv, flops=flops, allreduce_bytes=batch * model.hidden_size * act_bytes,
        layers=model.num_layers, moe_layers=model.num_layers if model.family == "moe" else 0,
    )


def prefill_work(model: ModelFacts, memory: MemoryEstimate, *, tp: int, pp: int, batch: int, prompt: int, act_bytes: float) -> StepWork:
    """Prefill of ``batch`` prompts of ``prompt`` tokens in one step, on one GPU of one stage."""
    q_width = model.num_attention_heads * model.head_dim
    tokens = batch * prompt
    linear = 2 * _matmul_params(model) * tokens + 2 * model.params.lm_head * batch
    attention = 2 * model.num_layers * prompt * prompt * q_width * batch  # causal QK^T and AV
    kv_written = batch * _kv_bytes_per_seq(model, memory, prompt)
    return StepWork(
        bytes=memory.weights_bytes_per_gpu * _expert_share(model, tokens) + kv_written,
        flops=(linear + attention) / (tp * pp), allreduce_bytes=tokens * model.hidden_size * act_bytes,
        layers=model.num_layers, moe_layers=model.num_layers if model.family == "moe" else 0,
    )


def launch_s(p: SpeedProfile, layers: int, moe_layers: int) -> float:
    """Kernel-launch time of one step over all layers (overlaps the GPU's work)."""
    return p.layer_overhead_s * layers + p.moe_layer_overhead_s * moe_layers


def step_time(work: StepWork, p: SpeedProfile, *, bandwidth: float, flops: float, tp: int, pp: int,
              interconnect: float, allreduce_latency: float) -> float:
    """Seconds of one step: serial overhead + max(launch, pp x roofline of one stage) + TP all-reduces of every layer."""
    moved = work.bytes + p.kv_traffic_factor * work.kv_bytes
    roofline = max(moved / (p.bandwidth_efficiency * bandwidth), work.flops / (p.compute_efficiency * flops))
    comm = 0.0
    if tp > 1:
        ring = 2 * (tp - 1) / tp * work.allreduce_bytes / interconnect + allreduce_latency
        comm = 2 * work.layers * ring
    return p.step_overhead_s + max(launch_s(p, work.layers, work.moe_layers), pp * roofline) + comm


# ---------------------------------------------------------------- the entry point


def device_ceilings(hw: HardwareFacts, dtype: str, quantization: str) -> tuple[float, float, float, list[str]]:
    """(bandwidth B/s, peak FLOP/s, interconnect B/s, notes) of one device for this plan."""
    notes: list[str] = []
    if hw.kind == "cpu" or hw.gpu is None:
        cpu = perf_profiles().cpu
        cores = hw.cpu.cores if hw.cpu else 1
        notes.append(f"CPU plan: memory bandwidth {cpu.memory_bandwidth_bytes_per_s / 1e9:.0f} GB/s and "
                     f"{cpu.flops_per_core_per_s / 1e9:.0f} GFLOP/s per core are typical figures ({cpu.source}), not measured here.")
        return cpu.memory_bandwidth_bytes_per_s, cpu.flops_per_core_per_s * cores, 1.0, notes
    g = hw.gpu
    key = ACT_DTYPE_KEY.get(dtype, "bf16")
    if quantization in ("fp8", "int8") and quantization in g.tflops:
        key = quantization
    peak = g.tflops.get(key) or g.tflops.get("fp16") or g.tflops.get("fp32")
    if not peak:
        notes.append(f"{g.name} has no {key} TFLOPS in the catalog: prefill assumed bandwidth-bound.")
        peak = float("inf")
    return g.memory_bandwidth_bytes_per_s, peak * 1e12, g.interconnect_bandwidth_bytes_per_s, notes


def estimate_speed(
    model: ModelFacts,
    hw: HardwareFacts,
    *,
    engine: str,
    quantization: str,
    dtype: str,
    tp: int,
    pp: int,
    memory: MemoryEstimate,
    concurrency: int,
    input_tokens: int,
    output_tokens: int,
    calibration: Path | None,
) -> PerformanceEstimate:
    """Predict TTFT, TPOT and tokens/s for one plan (see the module docstring for the model).

    ``calibration``: a JSON file from `infer-advisor calibrate`; its fitted profile replaces the shipped one
    (``source="calibrated"``). A file that does not validate raises :class:`~infer_advisor.errors.DataFileError`.
    """
    from .formats import dtype_bytes

    if calibration is not None:
        from .calibrate import load_calibration

        cal = load_calibration(calibration)
        profile, label = cal.profile(), f"calibrated {cal.engine} x {cal.quantization} on {cal.gpu} ({calibration})"
        source = "calibrated"
        notes = [] if cal.engine == engine else [f"calibration measured {cal.engine}, the plan uses {engine}"]
        if hw.gpu is not None and cal.gpu != hw.gpu.name:
            notes.append(f"calibration measured on {cal.gpu}, the plan is for {hw.gpu.name}: its efficiencies are applied to {hw.gpu.name}'s ceilings")
    else:
        profile, label = speed_profile(engine, quantization)
        label += f" ({profile.kind})"
        source, notes = "estimated", [f"speed profile {label}: {profile.source}"]
        if not label.startswith(f"{engine} x {quantization}"):
            notes.append(f"no speed profile for {engine} x {quantization}: the engine's default profile is used")
    bandwidth, flops, interconnect, dev_notes = device_ceilings(hw, dtype, quantization)
    notes.extend(dev_notes)
    act = dtype_bytes(dtype)
    lat = perf_profiles().allreduce_latency_s
    batch = max(concurrency, 1)
    mean_context = input_tokens + output_tokens / 2
    dec = decode_work(model, memory, tp=tp, pp=pp, batch=batch, context=mean_context, act_bytes=act)
    pre = prefill_work(model, memory, tp=tp, pp=pp, batch=batch, prompt=input_tokens, act_bytes=act)
    kw = dict(bandwidth=bandwidth, flops=flops, tp=tp, pp=pp, interconnect=interconnect, allreduce_latency=lat)
    tpot = step_time(dec, profile, **kw)
    ttft = step_time(pre, profile, **kw)
    e2e = ttft + max(output_tokens - 1, 0) * tpot
    ideal_decode = pp * (dec.bytes + dec.kv_bytes) / bandwidth
    ideal_prefill = pp * pre.flops / flops if flops != float("inf") else 0.0
    if pp > 1:
        notes.append("pipeline parallel: a token passes every stage in turn; aggregate assumes no micro-batch overlap (conservative).")
    return PerformanceEstimate(
        source=source,
        profile=label,
        concurrency=batch,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2e,
        output_tokens_per_s_per_request=output_tokens / e2e if e2e > 0 else 0.0,
        output_tokens_per_s_aggregate=batch * output_tokens / e2e if e2e > 0 else 0.0,
        requests_per_s=batch / e2e if e2e > 0 else 0.0,
        decode_fraction_of_bandwidth_ceiling=ideal_decode / tpot if tpot > 0 else 0.0,
        prefill_fraction_of_compute_ceiling=ideal_prefill / ttft if ttft > 0 else 0.0,
        notes=notes,
        bandwidth_bytes_per_s=bandwidth,
        compute_flops_per_s=flops if flops != float("inf") else 0.0,
        decode_bytes_per_step_per_gpu=dec.bytes + dec.kv_bytes,
        prefill_flops_per_gpu=pre.flops,
        decode_ceiling_tokens_per_s=batch / ideal_decode if ideal_decode > 0 else 0.0,
        overhead_s_per_step=profile.step_overhead_s + launch_s(profile, dec.layers, dec.moe_layers),
        calibration_file=str(calibration) if calibration is not None else None,
    )
