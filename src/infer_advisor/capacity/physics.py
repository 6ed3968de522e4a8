"""Physics as invariants: what no sized option may claim, whatever the simulator says.

For one replica (``gpus`` GPUs of one type, TP x PP) serving ``rate`` requests/s of ``mean_in`` prompt tokens (``cached``
of them served from a prefix cache) and ``mean_out`` answer tokens:

1. **arithmetic**: ``rate x (mean_in - cached + mean_out) x 2 x active parameters / gpus`` <= the GPU's dense peak in the
   compute dtype x the efficiency measured for that dtype (attention left out, so this is lenient);
2. **bytes**: decode tokens/s <= ``B x BW x eta / (weights per TP shard + B x context x KV bytes per token / (TP x PP))``
   with ``B`` the most sequences the KV cache and ``max_num_seqs`` allow: every decode cycle reads each stage's weights
   once per micro-batch and every sequence's KV once, and no schedule does better;
3. **throughput ceiling** (PP: stage count x best single-stage throughput): ``rate`` <= one replica with every cycle a
   full decode batch and prompt tokens at their marginal cost in it, timed by the step-time model through the pipeline
   (``simulate.pipeline``). A PP replica's cycle holds every stage's 1/PP of the work, so its ceiling is what its
   slowest stage can pass;

and at the step level (tested, ``tests/capacity/test_physics.py``): a step never takes less than its bytes over
the bandwidth nor its arithmetic over the peak, and TP never divides a step's time by more than the TP size.

The efficiencies are the H200 measurements of ``data/speed/kernels.yaml`` (``measured_ceilings`` over the datasheet
``reference_ceilings``): 16-bit matmul 81% of peak, FP8 69%, copy bandwidth 89%.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from ..estimate.step_time import StepModel, prefill_shape
from ..hardware.facts import GPUInfo
from ..model_facts.facts import ModelFacts
from ..simulate import SchedulerConfig

SLACK = 1.02  # float noise and the 4%-precision rate search: a claim within 2% of a ceiling is not a violation


@cache
def measured_efficiency() -> dict[str, float]:
    """Fractions of the datasheet ceilings reached by measured kernels (``kernels.yaml``)."""
    from ..estimate.speed_data import kernels

    k = kernels()
    ref, got = k.reference_ceilings, k.measured_ceilings
    return {
        "bf16": got["bf16_matmul_flops_per_s"] / ref["bf16_flops_per_s"],
        "fp8": got["fp8_scaled_mm_flops_per_s"] / ref["fp8_flops_per_s"],
        "bandwidth": got["copy_eager_bytes_read_plus_written_per_s"] / ref["memory_bandwidth_bytes_per_s"],
    }


@dataclass(frozen=True)
class PhysicsCheck:
    """One invariant against one claim: ``need`` must stay at or under ``limit``."""

    name: str  # arithmetic, bytes, throughput_ceiling
    need: float
    limit: float
    words: str

    @property
    def share(self) -> float:
        return self.need / self.limit if self.limit > 0 else math.inf

    @property
    def ok(self) -> bool:
        return self.share <= SLACK


def active_params_per_token(model: ModelFacts) -> float:
    """Parameters one token multiplies through (the embedding lookup is no arithmetic; routed experts: top-k of E)."""
    p = model.params
    linear = p.linear
    if model.family == "moe" and model.num_experts:
        linear = p.linear - p.expert_linear + p.expert_linear * model.num_experts_per_token / model.num_experts
    return float(linear + (p.lm_head or p.embedding))


def compute_peak(gpu: GPUInfo, quantization: str) -> tuple[float, str]:
    """(FLOP/s, efficiency key) of the GEMMs a weight format may run, the most generous that applies: FP8 formats on
    the FP8 peak, FP4 ones on the FP4 peak, where the GPU has one; everything else on the 16-bit peak."""
    t = gpu.tflops
    if "fp4" in quantization and t.get("fp4"):
        return t["fp4"] * 1e12, "fp8"
    if (quantization.startswith("fp8") or "fp4" in quantization) and t.get("fp8"):
        return t["fp8"] * 1e12, "fp8"
    return (t.get("bf16") or t.get("fp16") or t.get("fp32") or 0.0) * 1e12, "bf16"


def arithmetic_check(model: ModelFacts, gpu: GPUInfo, quantization: str, gpus: int, rate: float, mean_in: float,
                     mean_out: float, cached: float = 0.0) -> PhysicsCheck:
    peak, kind = compute_peak(gpu, quantization)
    tokens = max(mean_in - cached, 0.0) + mean_out
    need = rate * tokens * 2 * active_params_per_token(model) / max(gpus, 1)
    return PhysicsCheck("arithmetic", need, peak * measured_efficiency()[kind],
                        f"FLOP/s per GPU against {gpu.name}'s {kind} peak x {measured_efficiency()[kind]:.0%} measured")


def bytes_check(model: ModelFacts, gpu: GPUInfo, quantization: str, dtype: str, kv_cache_dtype: str, tp: int, pp: int,
                cfg: SchedulerConfig, rate: float, mean_in: float, mean_out: float) -> PhysicsCheck:
    from ..estimate.formats import dtype_bytes
    from ..estimate.memory import kv_bytes_per_token_per_gpu, weight_bytes_by_group

    groups = weight_bytes_by_group(model, quantization, dtype)
    ctx = mean_in + mean_out / 2
    batch = max(1.0, min(cfg.max_num_seqs, cfg.kv_capacity_tokens / max(ctx, 1.0)))
    moe = model.family == "moe" and model.num_experts
    linear = groups["linear"]
    if moe:  # routed experts a batch touches: E (1 - (1 - k/E)^B)
        e, k = model.num_experts, model.num_experts_per_token
        frac = model.params.expert_linear / model.params.linear if model.params.linear else 0.0
        linear = linear * (1 - frac) + linear * frac * (1 - (1 - k / e) ** batch)
    weights_shard = (linear + groups["lm_head" if model.params.lm_head else "embedding"]) / tp
    kv_b = dtype_bytes(dtype) if kv_cache_dtype == "auto" else dtype_bytes(kv_cache_dtype)
    full, sliding = kv_bytes_per_token_per_gpu(model, kv_b, tp, pp)  # one stage's layers, one GPU
    window_ctx = min(ctx, model.sliding_window) if model.sliding_window else ctx
    kv_per_seq = full * ctx + sliding * window_ctx  # per GPU of one stage
    bw = gpu.memory_bandwidth_bytes_per_s * measured_efficiency()["bandwidth"]
    cycle = (weights_shard + batch * kv_per_seq) / bw
    ceiling_tokens = batch / cycle
    return PhysicsCheck("bytes", rate * mean_out, ceiling_tokens,
                        f"decode tokens/s against {gpu.name}'s bandwidth x {measured_efficiency()['bandwidth']:.0%} measured "
                        f"at {batch:.0f} sequences (weights once per cycle, every KV once)")


def throughput_ceiling(step: StepModel, cfg: SchedulerConfig, mean_in: float, mean_out: float, cached: float = 0.0) -> float:
    """Requests/s of one replica if every cycle were a full decode batch carrying prompt tokens at their marginal cost."""
    from ..simulate.pipeline import PipelineStep

    timed = PipelineStep(step) if step.pp > 1 else step
    ctx = mean_in + mean_out / 2
    batch = max(1, min(cfg.max_num_seqs, int(cfg.kv_capacity_tokens / max(ctx, 1.0))))
    decode = timed.decode_seconds(batch, batch * ctx)
    prompt = max(1, int(round(mean_in - cached)))
    budget = cfg.max_num_batched_tokens * step.pp
    chunks = max(1, budget // prompt)
    s = prefill_shape(chunks, min(prompt, budget), prefix=int(cached))
    alone = timed.step_seconds(0, 0.0, s.prefill_tokens, s.prefill_pairs, s.prefill_chunks, s.completes) / s.prefill_tokens
    room = budget - batch
    per_prompt_token = alone
    if room > 0:  # prompt tokens riding in a decode step cost only what they add to it
        k = max(1, min(chunks, room // prompt))
        m = prefill_shape(k, min(prompt, room), prefix=int(cached))
        mixed = timed.step_seconds(batch, batch * ctx, m.prefill_tokens, m.prefill_pairs, m.prefill_chunks, m.completes)
        per_prompt_token = min(alone, max(mixed - decode, 0.0) / m.prefill_tokens)
    per_request = max(mean_out - 1, 0) * decode / batch + prompt * per_prompt_token
    return 1.0 / per_request if per_request > 0 else math.inf


def check_claim(model: ModelFacts, gpu: GPUInfo, step: StepModel, cfg: SchedulerConfig, *, quantization: str, dtype: str,
                kv_cache_dtype: str, rate: float, mean_in: float, mean_out: float, cached: float = 0.0) -> list[PhysicsCheck]:
    """Every invariant for one replica claimed to sustain ``rate`` requests/s."""
    tp, pp = step.tp, step.pp
    return [
        arithmetic_check(model, gpu, quantization, tp * pp, rate, mean_in, mean_out, cached),
        bytes_check(model, gpu, quantization, dtype, kv_cache_dtype, tp, pp, cfg, rate, mean_in, mean_out),
        PhysicsCheck("throughput_ceiling", rate, throughput_ceiling(step, cfg, mean_in, mean_out, cached),
                     "requests/s against full decode cycles through the slowest pipeline stage (step-time model)"),
    ]


def violations(checks: list[PhysicsCheck]) -> list[PhysicsCheck]:
    return [c for c in checks if not c.ok]


def within_physics(rate: float, checks: list[PhysicsCheck]) -> tuple[float, list[str]]:
    """``rate`` lowered to the tightest invariant it breaks (every check scales with the rate), and what was broken.
    A break is a bug in the step model or the simulator: the search reports it and never sizes past physics."""
    broken = violations(checks)
    if not broken or rate <= 0:
        return rate, []
    worst = max(c.share for c in broken)
    notes = [f"physics: {c.name} at {c.share:.0%} of its limit ({c.words})" for c in broken]
    return rate / worst, notes
