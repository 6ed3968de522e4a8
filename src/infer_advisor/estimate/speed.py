"""A plan's speed: TTFT, time per output token and throughput at its concurrency, as a server schedules them.

    >>> perf = estimate_speed(model, hw, engine="vllm", quantization="none", dtype="bfloat16", tp=1, pp=1,
    ...                       memory=mem, concurrency=32, input_tokens=512, output_tokens=200)
    >>> perf.ttft_s, perf.tpot_s, perf.output_tokens_per_s_aggregate, perf.deployment_output_tokens_per_s

Two pieces, each in its own module, and nothing else: the step-time model (``estimate/step_time.py``: operators
on kernel efficiencies measured on the H200, engine coefficients fitted on published measurements) says how long
a step takes; the simulator (``simulate/``) runs ``concurrency`` clients back to back through the engine's
continuous batching (chunked prefill mixed into decode steps, its KV cache and sequence limits) and reports what
they see. Figures are per replica; ``deployment_*`` multiply by the replicas. ``accuracy`` says how far the
engine's coefficients have been off on published measurements they were not fitted to.
"""


import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._field_defaults import empty_dict, empty_list

from ..hardware.facts import HardwareFacts
from ..model_facts.facts import ModelFacts
from .memory import MemoryEstimate


class PerformanceEstimate(BaseModel):
    """Predicted speed of a plan at its concurrency; ``source`` says whether a calibration was used."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    source: Literal["estimated", "calibrated"] = Field(description="estimated: shipped engine profile; calibrated: a measured one.")
    profile: str = Field(description="Engine speed profile used, how its coefficients were obtained, and its held-out error.")
    concurrency: int
    input_tokens: int
    output_tokens: int
    ttft_s: float = Field(description="Mean time to first token with `concurrency` requests in flight (simulated), one replica.")
    tpot_s: float = Field(description="Mean time per output token after the first, at this concurrency (simulated).")
    e2e_s: float = Field(description="Mean end-to-end latency of one request at this concurrency.")
    output_tokens_per_s_per_request: float = Field(description="What one user sees: 1 / time per output token.")
    output_tokens_per_s_aggregate: float = Field(description="Output tokens/s of ONE replica at this concurrency.")
    requests_per_s: float = Field(description="Requests/s of one replica at this concurrency.")
    decode_fraction_of_bandwidth_ceiling: float = Field(description="Decode step at the ceiling (weights + KV at full bandwidth) / predicted step.")
    prefill_fraction_of_compute_ceiling: float = Field(description="Prefill at the dense peak / predicted prefill.")
    notes: list[str] = Field(default_factory=empty_list)
    # Added fields (append-only).
    bandwidth_bytes_per_s: float = Field(default=0.0, description="Peak memory bandwidth of one device used (catalog/probe, or the CPU figure).")
    compute_flops_per_s: float = Field(default=0.0, description="Peak dense FLOPS of one device in the compute dtype.")
    decode_bytes_per_step_per_gpu: float = Field(default=0.0, description="Bytes one decode step reads on one GPU (weights + KV).")
    prefill_flops_per_gpu: float = Field(default=0.0, description="FLOPs of one request's prefill on one GPU.")
    decode_ceiling_tokens_per_s: float = Field(default=0.0, description="Decode tokens/s of one replica at 100% of the bandwidth ceiling.")
    overhead_s_per_step: float = Field(default=0.0, description="Host overhead of one decode step (engine profile).")
    calibration_file: str | None = Field(default=None, description="The calibration file used, if any.")
    replicas: int = Field(default=1, description="Independent replicas the deployment runs.")
    deployment_output_tokens_per_s: float = Field(default=0.0, description="Output tokens/s of the whole deployment (replicas x one replica).")
    deployment_requests_per_s: float = Field(default=0.0, description="Requests/s of the whole deployment (replicas x one replica).")
    ttft_p90_s: float | None = Field(default=None, description="90th-percentile TTFT at this concurrency (simulated).")
    itl_p99_s: float | None = Field(default=None, description="99th-percentile gap between tokens at this concurrency (simulated).")
    ttft_alone_s: float | None = Field(default=None, description="TTFT of one request on an idle replica.")
    tpot_alone_s: float | None = Field(default=None, description="Time per output token of one request alone.")
    max_num_batched_tokens: int | None = Field(default=None, description="Token budget per step the simulation used.")
    decode_step_terms_s: dict[str, float] = Field(
        default_factory=empty_dict, description="The operator terms of one decode step at this concurrency (seconds): what the time goes to."
    )
    coefficients: str = Field(default="", description="fitted (published measurements), measured, calibrated or assumed.")
    accuracy: str | None = Field(
        default=None, description="How far this engine's predictions have been off on held-out published measurements."
    )
    error_band: tuple[float, float] | None = Field(
        default=None, description="Typical range of the true value / predicted value: 1 -+ the held-out p90 error."
    )
    term_sources: dict[str, str] = Field(
        default_factory=empty_dict, description="Where each step-time term's coefficients come from (printed by --explain)."
    )


@dataclass(frozen=True)
class FiniteRun:
    """A finite run of ``requests`` sent at once (``--requests``): an offline batch or a burst benchmark. Its throughput
    is the tokens over the run's makespan, so the few longest answers, decoding at a small batch after the rest have
    finished, count (a steady state at the concurrency leaves them out). Lengths are drawn with these spreads around
    the plan's means, capped at ``max_tokens`` per request."""

    requests: int
    input_distribution: str = "fixed"
    output_distribution: str = "fixed"
    max_tokens: int | None = None


def _calibrated_profile(path: Path, engine: str, gpu: str | None):
    """Apply a speed calibration's fitted coefficients (the mismatch check is the planner's, before this).

    On the engine's stated profile, without data/speed/fitted.yaml: the profile `calibrate` fitted them on, so the
    plan predicts the measured points as the fit did (llama.cpp's fitted prefill_attention_scale, 0.3, is not the
    stated 0.8 a CPU calibration was fitted with).
    """
    from ..errors import DataFileError
    from .calibration import load_calibration
    from .fit import with_coefficients
    from .speed_data import engine_speeds

    profile = engine_speeds(apply_fitted=False).engines[engine].model_copy(update={"measured_on": []})  # the calibration's own

    cal = load_calibration(path)
    values = getattr(cal, "coefficients", None)
    if not values:
        raise DataFileError(str(path), "a speed calibration from an older infer-advisor (efficiency profile, no step-time "
                                       "coefficients): rerun `infer-advisor calibrate` to make a new one")
    label = f"calibrated on {cal.gpu}: {cal.command}"
    errs = ", ".join(f"{k} {v:.0%}" for k, v in cal.fit_median_abs_error.items())
    accuracy = f"calibrated from {path}: {len(cal.points)} points measured on {cal.gpu}, fit median |error| {errs} (in-sample)"
    return with_coefficients(profile, dict(values), kind="measured", source=label), f"{engine} calibrated ({path})", accuracy


def _accuracy(profile) -> tuple[str, str | None, tuple[float, float] | None]:
    """(coefficient kind, the accuracy line, the 90% band of true / predicted) of an engine's speed profile.

    The headline is the frozen profile's error on published points gathered after it was frozen (prospective);
    before any prospective grading, the leave-one-source-out or in-sample figures, said as such.
    """
    kinds = {getattr(profile, n).kind for n in ("step_overhead_s", "per_sequence_s", "attention_scale", "prefill_attention_scale",
                                                "gemm_scale", "gddr_scale", "moe_scale")}
    fit = profile.fit or {}
    band = tuple(fit["band_90"]) if fit.get("band_90") else None
    sha = (fit.get("prospective_profile_sha256") or fit.get("frozen_sha256") or "")[:12]
    if "fitted" in kinds and fit.get("prospective_median_abs_error") is not None:
        refit = "" if fit.get("prospective_profile_sha256") == fit.get("frozen_sha256") else "; these coefficients are its refit on them"
        scope = fit.get("prospective_scope") or "published"
        batches = fit.get("prospective_batches") or 1
        who = f"frozen profile {sha}" if batches == 1 else f"the profile frozen before each of {batches} batches (latest {sha})"
        text = (f"{who} predicted {fit['prospective_points']} {scope} points gathered after it was frozen "
                f"(sources never used) at median |error| {fit['prospective_median_abs_error']:.0%}, p90 "
                f"{fit['prospective_p90_abs_error']:.0%}{refit} (docs/accuracy.md)")
        return "fitted", text, band
    if "fitted" in kinds and fit.get("loso_median_abs_error") is not None:
        p90 = fit.get("loso_p90_abs_error") or fit["loso_median_abs_error"]
        text = (f"leave-one-source-out median |error| {fit['loso_median_abs_error']:.0%}, p90 {p90:.0%}, on {fit['points']} published "
                f"points from {fit['sources']} sources (docs/accuracy.md)")
        return "fitted", text, band or (max(0.0, 1 - p90), 1 + p90)
    if "fitted" in kinds and fit.get("in_sample_median_abs_error") is not None:
        text = (f"in-sample median |error| {fit['in_sample_median_abs_error']:.0%} on {fit['points']} published points (not yet graded "
                f"on data it was not fitted to; docs/accuracy.md)")
        return "fitted", text, band
    if kinds <= {"measured"}:
        return "measured", "measured here (calibrated or the H200 kernels)", None
    return "assumed", "not graded: this engine's coefficients are assumed, not fitted to any measurement", None


def engine_accuracy(engine: str, version: str | None = None) -> str:
    """The accuracy line of ``engine``'s speed profile (what plans and sizing reports print)."""
    from .speed_data import engine_speed

    kind, text, band = _accuracy(engine_speed(engine, version))
    if kind == "assumed":
        return (f"{engine}'s speed coefficients are assumed, not fitted: treat throughput and latency as order-of-magnitude "
                "until calibrated (infer-advisor calibrate).")
    tail = f"; 90% of true figures within {band[0]:.2f}x-{band[1]:.2f}x the prediction" if band else ""
    return f"{engine} speed model: {text}{tail}."


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
    calibration: Path | None = None,
    kv_cache_dtype: str = "auto",
    nodes: int = 1,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    replicas: int = 1,
    expert_parallel: bool = False,
    prefix_tokens: int = 0,
    engine_version: str | None = None,
    lora=None,
    run: FiniteRun | None = None,
) -> PerformanceEstimate:
    """Predict one replica's speed at ``concurrency`` by simulating its continuous batching (module docstring).

    ``engine_version`` picks the engine's speed coefficients for that version range (default: its newest); ``lora``
    (:class:`~.lora_cost.LoRAStepCost`) adds the batched LoRA kernels to every step; ``run`` (:class:`FiniteRun`)
    simulates that finite run instead of a steady state (at most ``concurrency`` in flight).
    """
    from .speed_data import engine_speed
    from .step_time import build_step_model

    gpu = hw.gpu if hw.kind == "gpu" else None
    profile = engine_speed(engine, engine_version, gpu=gpu.name if gpu else None)
    label = f"{engine} speed profile" + (f" for {profile.version_range}" if profile.version_range else "")
    source = "estimated"
    kind, accuracy, band = _accuracy(profile)
    if calibration is not None:
        profile, label, accuracy = _calibrated_profile(calibration, engine, gpu.name if gpu else None)
        source, kind, band = "calibrated", "calibrated", None
    step = build_step_model(model, gpu=gpu, engine=engine, quantization=quantization, dtype=dtype, kv_cache_dtype=kv_cache_dtype,
                            tp=tp, pp=pp, nodes=nodes, expert_parallel=expert_parallel,
                            cpu_cores=hw.cpu.cores if hw.cpu else None, cpu_simd=hw.cpu.simd if hw.cpu else None, profile=profile,
                            lora=lora)
    notes = list(step.notes)
    if lora is not None:
        notes.append(f"LoRA: {lora.max_loras} slot(s) of rank {lora.rank}; each step runs the batched LoRA kernels ({lora.source})")
    notes.append(f"speed: operator step-time model on {step.ceil.source}; kernel efficiencies measured on the H200 "
                 f"(data/speed/kernels.yaml) applied to these ceilings; engine coefficients {kind} ({accuracy})")
    batch = max(1, concurrency)
    seqs = _running_cap(profile, memory, max(1, min(max_num_seqs or batch, 65536)), notes)
    budget = max_num_batched_tokens or 8192
    prompt = max(1, input_tokens - max(0, min(prefix_tokens, input_tokens - 1)))
    if prefix_tokens:
        notes.append(f"prefix caching: {input_tokens - prompt} of {input_tokens} prompt tokens are served from the cache (--shared-prefix-tokens)")
    res = _simulate(step, memory, batch, seqs, budget, prompt, input_tokens, output_tokens, profile.kv_admission, pp, run)
    if run is not None:
        notes.append(f"a finite run of {run.requests} requests ({min(batch, run.requests)} in flight at most), lengths "
                     f"{run.input_distribution}/{run.output_distribution} around the means: throughput is its tokens over "
                     "the time until the last finishes (simulated)")
    notes.extend(res.notes or [])
    if batch > seqs:
        notes.append(f"{batch} requests in flight but the engine schedules {seqs} at once: the rest queue (TTFT includes the wait)")
    if pp > 1:
        notes.append(f"pipeline parallel: {pp} micro-batches in flight, each step passes every stage in turn")
    fields = _figures(step, res, batch, seqs, budget, prompt, input_tokens, output_tokens)
    return PerformanceEstimate(
        source=source, profile=f"{label} ({kind})", concurrency=batch, input_tokens=input_tokens, output_tokens=output_tokens,
        notes=notes, calibration_file=str(calibration) if calibration is not None else None,
        replicas=max(1, replicas), deployment_output_tokens_per_s=res.output_tokens_per_s * max(1, replicas),
        deployment_requests_per_s=res.requests_per_s * max(1, replicas), max_num_batched_tokens=budget,
        coefficients=kind, accuracy=accuracy, error_band=band, **fields,
    )


def _running_cap(profile, memory: MemoryEstimate, seqs: int, notes: list[str]) -> int:
    """The engine's own limit on running requests where it is tighter than ``seqs``: a hybrid model's state pool."""
    state = memory.recurrent_state_bytes_per_sequence_per_gpu
    r = profile.hybrid_state_ratio
    if not (r and state > 0 and memory.kv_cache_bytes_per_gpu > 0):
        return seqs
    cap = max(1, int(memory.kv_cache_bytes_per_gpu * r / (1 + r) // state))
    if cap < seqs:
        notes.append(f"the engine runs at most {cap} requests at once: its recurrent-state pool takes r/(1+r) of the KV memory "
                     f"(r = {r:g}) at {state / 2**20:.1f} MiB per request ({profile.hybrid_state_source})")
        return cap
    return seqs


def _simulate(step, memory: MemoryEstimate, batch: int, seqs: int, budget: int, prompt: int, input_tokens: int,
              output_tokens: int, kv_admission: str, pp: int, run: FiniteRun | None = None):
    """``batch`` closed-loop clients through the engine's continuous batching (the simulate stage): a steady state, or
    with ``run`` that finite run from its first request to its last token."""
    from ..simulate import LengthSpec, SchedulerConfig, Workload, simulate

    kv_tokens = memory.kv_cache_tokens
    if memory.accounting == "peak":  # peak engines allocate as they go: the plan's own concurrency x context
        kv_tokens = max(kv_tokens, batch * (input_tokens + output_tokens))
    # The plan's own figures, typed here as validation would coerce them (no schema built for these internal models).
    cfg = SchedulerConfig.model_construct(max_num_seqs=int(seqs), max_num_batched_tokens=int(budget),
                                          kv_capacity_tokens=int(max(kv_tokens, 1)), kv_admission=kv_admission, lanes=int(pp))
    if run is not None:
        workload = Workload.model_construct(
            input_tokens=LengthSpec.model_construct(mean=float(prompt), distribution=run.input_distribution, spread=None),
            output_tokens=LengthSpec.model_construct(mean=float(max(output_tokens, 1)), distribution=run.output_distribution,
                                                     spread=None),
            arrival="burst" if batch >= run.requests else "closed", concurrency=int(min(batch, run.requests)),
            max_tokens=run.max_tokens, cached_prefix_tokens=0, trace=None, rate=None)
        return simulate(step, workload, cfg, requests=run.requests, warmup_fraction=0.0, seed=0)
    workload = Workload.model_construct(input_tokens=LengthSpec.model_construct(mean=float(prompt)),
                                        output_tokens=LengthSpec.model_construct(mean=float(max(output_tokens, 1))),
                                        arrival="closed", concurrency=int(batch))
    # enough requests for a steady state: 4 turns of the running batch, and every queued client served twice
    return simulate(step, workload, cfg, requests=max(4 * min(batch, seqs), 2 * batch, 48), warmup_fraction=0.25, seed=0)


def _figures(step, res, batch: int, seqs: int, budget: int, prompt: int, input_tokens: int, output_tokens: int) -> dict:
    """The estimate's figures: the simulated latencies (the simulator counts the per-request host cost, HTTP,
    tokenisation, first schedule: ``request_overhead_s``, outside the engine's steps, into TTFT and end-to-end; the
    fallbacks without a simulated figure add it here), the decode step's terms, and the fractions of the device's
    ceilings."""
    from .step_time import decode_shape

    req = step.request_overhead_s
    alone_prefill = _prefill_alone(step, prompt, budget)
    ctx = input_tokens + output_tokens / 2
    in_flight = min(batch, seqs)
    terms = step.terms(decode_shape(in_flight, ctx))
    decode_step = sum(terms.values())
    ttft = res.ttft_s.mean if math.isfinite(res.ttft_s.mean) else alone_prefill + req
    tpot = res.tpot_s.mean if math.isfinite(res.tpot_s.mean) else decode_step
    e2e = res.e2e_s.mean if math.isfinite(res.e2e_s.mean) else ttft + max(output_tokens - 1, 0) * tpot
    bandwidth = step.ceil.bandwidth
    weights_kv = step.decode_bytes(in_flight, ctx)
    ideal_decode = step.pp * weights_kv / bandwidth if bandwidth else 0.0
    peak = step.gemm_peak
    prefill_flops = (prompt * step.layers_per_stage * (step.dense_flops_per_row + step.expert_flops_per_row)
                     + 4 * step.q_width * prompt * (prompt + 1) / 2 * step.layers_per_stage + step.head_flops_per_row)
    ideal_prefill = step.pp * prefill_flops / peak if peak else 0.0
    terms_out = {k: v for k, v in terms.items() if v}
    return dict(
        ttft_s=ttft, tpot_s=tpot, e2e_s=e2e, output_tokens_per_s_per_request=1.0 / tpot if tpot > 0 else 0.0,
        output_tokens_per_s_aggregate=res.output_tokens_per_s, requests_per_s=res.requests_per_s,
        decode_fraction_of_bandwidth_ceiling=ideal_decode / decode_step if decode_step > 0 else 0.0,
        prefill_fraction_of_compute_ceiling=ideal_prefill / alone_prefill if alone_prefill > 0 else 0.0,
        bandwidth_bytes_per_s=bandwidth, compute_flops_per_s=peak, decode_bytes_per_step_per_gpu=weights_kv,
        prefill_flops_per_gpu=prefill_flops, decode_ceiling_tokens_per_s=in_flight / ideal_decode if ideal_decode > 0 else 0.0,
        overhead_s_per_step=terms.get("engine_step_overhead", 0.0) + terms.get("engine_per_sequence", 0.0) + terms.get("engine_sampling", 0.0)
        + terms.get("host_launch_wait", 0.0),
        ttft_p90_s=res.ttft_s.p90 if math.isfinite(res.ttft_s.p90) else None,
        itl_p99_s=res.itl_s.p99 if math.isfinite(res.itl_s.p99) else None,
        ttft_alone_s=alone_prefill + req, tpot_alone_s=step.decode_seconds(1, ctx),
        decode_step_terms_s=terms_out, term_sources=dict(step.sources),
    )


def _prefill_alone(step, prompt: int, budget: int) -> float:
    """One prompt on an idle replica, in chunks of the token budget."""
    t, done = 0.0, 0
    while done < prompt:
        c = min(budget, prompt - done)
        t += step.step_seconds(0, 0.0, c, c * (done + (c + 1) / 2), 1, 1 if done + c >= prompt else 0)
        done += c
    return t
