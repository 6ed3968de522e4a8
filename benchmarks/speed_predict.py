"""Predict a published measurement (benchmarks/published/speed_points.yaml) with infer_advisor's speed model.

One function, :func:`predict_point`, turns a point's setup into the step-time model and the simulator the
planner uses, and returns the predicted value of each metric the point reports, at the point's statistic
(mean / median / p90 / p99). Used by benchmarks/speed_fit.py (fit + leave-one-source-out) and
benchmarks/speed_report.py (tables and plots for docs/accuracy.md).

Which points can be predicted: the model is in the catalog (``catalog_model``), the GPU is in the GPU catalog,
and the weight format is known. Anything else returns a reason instead of a prediction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from infer_advisor.engines.profiles import engine_profiles
from infer_advisor.estimate.memory import estimate_memory
from infer_advisor.estimate.speed_data import EngineSpeed
from infer_advisor.estimate.step_time import build_step_model
from infer_advisor.simulate import LengthSpec, SchedulerConfig, Workload, simulate

ENGINE_MAP = {"nim": "trtllm", "exllama": "exllamav2"}  # published engine -> speed profile
# Published quantization label -> weight format (data/formats.yaml)
QUANT_MAP = {
    "none": "none", "fp8": "fp8", "int8": "int8", "awq": "awq", "gptq": "gptq", "nvfp4": "nvfp4",
    "gguf-q4_0": "gguf-q4_0", "gguf-q4_k_m": "gguf-q4_k_m", "gguf-q8_0": "gguf-q8_0", "gguf-f16": "gguf-f16",
    "mlc-q4f16_1": "mlc-q4f16_1", "exl2-4bpw": "exl2", "exl2-8bpw": "exl2-8bpw", "uqff-q4": "isq-q4k",
    "uqff-q8": "isq-q8_0", "bnb-nf4": "bnb-nf4",
}
# Batching limits by engine when a source does not state them: (max sequences, token budget per step). Sources:
# vLLM EngineArgs (256 seqs before 0.8; V1 on H100-class 1024 seqs, 8192-16384 tokens), TensorRT-LLM trtllm-bench
# defaults (max_batch_size 2048 / max_num_tokens 8192 unless tuned), SGLang server_args (chunked_prefill_size 8192),
# TGI launcher (max_batch_prefill_tokens 4096), llama.cpp server (n_batch 2048, one slot unless --parallel).
ENGINE_LIMITS = {
    "vllm": (256, 8192), "sglang": (512, 8192), "trtllm": (2048, 8192), "tgi": (128, 4096), "llama.cpp": (1, 2048),
    "ctranslate2": (32, 1_000_000), "transformers": (64, 1_000_000), "mlc": (64, 2048), "exllamav2": (16, 2048),
    "mistralrs": (16, 4096), "pytorch-graph": (256, 8192),
}
MEMORY_ENGINE = {"trtllm": "vllm", "mlc": "vllm", "exllamav2": "vllm", "mistralrs": "llama.cpp"}  # memory accounting stand-ins
MAX_SIM_REQUESTS = 1500


@dataclass
class Prediction:
    values: dict[str, float]
    reason: str | None = None


@lru_cache(maxsize=None)
def _model(name: str):
    from infer_advisor.model_facts import resolve_model

    return resolve_model(name, source="catalog")


@lru_cache(maxsize=None)
def _gpu(name: str):
    from infer_advisor.hardware import lookup_gpu

    return lookup_gpu(name)


def modelopt_fp8_kv(p) -> bool:
    """NVIDIA's ModelOpt FP8/NVFP4 checkpoints (nvidia/*-FP8, *-FP4) carry ``kv_cache_quant_algo: FP8`` in their
    hf_quant_config.json, which TensorRT-LLM and vLLM apply when the KV dtype is left on auto: the KV cache is fp8.
    Used only where the source names such a checkpoint and states no KV dtype (an inference, listed in the report)."""
    ckpt = (p.weights_checkpoint or "").lower()
    return ckpt.startswith("nvidia/") and p.quantization in ("fp8", "nvfp4")


def _stat(pcts, stat: str) -> float:
    key = {"median": "p50", "p90": "p90", "p99": "p99"}.get(stat, "mean")
    return pcts.get(key)


def predict_point(p, profile: EngineSpeed | None = None, max_requests: int = MAX_SIM_REQUESTS) -> Prediction:
    """Predicted values of every metric point ``p`` reports (or a reason it cannot be predicted)."""
    engine = ENGINE_MAP.get(p.engine, p.engine)
    if not p.model_in_catalog or not p.catalog_model:
        return Prediction({}, "model not in the catalog")
    if not p.gpu_in_catalog:
        return Prediction({}, "GPU not in the catalog")
    quant = QUANT_MAP.get(p.quantization)
    if quant is None:
        return Prediction({}, f"weight format {p.quantization} unknown")
    model = _model(p.catalog_model)
    gpu = _gpu(p.gpu)
    dtype = p.dtype or ("bfloat16" if "bf16" in gpu.tflops else "float16")
    if dtype == "bfloat16" and "bf16" not in gpu.tflops:
        dtype = "float16"
    kv = "fp8" if (p.kv_cache_dtype or "").startswith("fp8") else "auto"
    if p.kv_cache_dtype is None and modelopt_fp8_kv(p):
        kv = "fp8"
    sm = build_step_model(model, gpu=gpu, engine=engine, quantization=quant, dtype=dtype, kv_cache_dtype=kv, tp=p.tp, pp=p.pp,
                          profile=profile)
    max_seqs, budget = ENGINE_LIMITS.get(engine, (256, 8192))
    mem_profile = engine_profiles()[MEMORY_ENGINE.get(engine, engine) if MEMORY_ENGINE.get(engine, engine) in engine_profiles() else "vllm"]
    need = int(p.input_tokens + p.output_tokens) + 1
    context = max(need, 256)
    if mem_profile.kv_preallocated:
        kv_tokens = context * max_seqs
    else:
        mem = estimate_memory(model, gpu_memory_bytes=gpu.memory_bytes, engine=mem_profile, quantization=quant, dtype=dtype,
                              kv_cache_dtype=kv, tp=p.tp, pp=p.pp, context=context, concurrency=1, on_gpu=True)
        kv_tokens = max(mem.kv_cache_tokens, need)
    values: dict[str, float] = {}
    inp, out = max(int(round(p.input_tokens)), 0), max(int(round(p.output_tokens)), 1)
    wanted = p.metrics.present()

    if p.mode in ("batch1_decode", "prefill"):
        pre = 0.0
        done = 0
        while done < inp:  # the prompt in chunks of the engine's token budget
            c = min(budget, inp - done)
            pre += sm.step_seconds(0, 0.0, c, c * (done + (c + 1) / 2), 1, 1 if done + c >= inp else 0)
            done += c
        if inp == 0:
            pre = 0.0
        tpot = sm.decode_seconds(1, inp + out / 2)
        e2e = pre + (out - (1 if inp else 0)) * tpot
        for name in wanted:
            if name == "output_tokens_per_s_per_user":
                values[name] = out / e2e if p.mode == "batch1_decode" else 1 / tpot
            elif name in ("tpot_s", "itl_s"):
                values[name] = tpot
            elif name == "ttft_s":
                values[name] = pre if inp else tpot
            elif name == "e2e_s":
                values[name] = e2e
            elif name == "prefill_tokens_per_s":
                values[name] = inp / pre if pre else math.nan
            elif name == "output_tokens_per_s":
                values[name] = out / e2e
        return Prediction(values)

    lengths_fixed = p.length_distribution in ("fixed", "max")
    dist = "fixed" if lengths_fixed else "lognormal"
    w_in = LengthSpec(mean=max(inp, 1), distribution=dist)
    w_out = LengthSpec(mean=out, distribution=dist)
    replicas = p.dp
    if p.mode == "static_batch":
        n = p.batch // replicas if p.batch else 1
        seqs = max(max_seqs, n)
        workload = Workload(input_tokens=w_in, output_tokens=w_out, arrival="burst")
        count, warm = n, 0.0
    elif p.mode == "offline_throughput":
        n = min(p.num_requests or 1000, max_requests)
        seqs = max_seqs
        workload = Workload(input_tokens=w_in, output_tokens=w_out, arrival="burst")
        count, warm = max(1, n // replicas), 0.0
    elif p.mode == "closed_loop":
        c = max(1, (p.concurrency or 1) // replicas)
        seqs = max(max_seqs, c)
        workload = Workload(input_tokens=w_in, output_tokens=w_out, arrival="closed", concurrency=c)
        count, warm = max(p.num_requests or 0, 6 * c, 30), 0.2
    else:  # open loop
        seqs = max_seqs
        workload = Workload(input_tokens=w_in, output_tokens=w_out, arrival="poisson", rate=p.request_rate / replicas)
        count, warm = min(p.num_requests or 1000, max_requests), 0.1
    cfg = SchedulerConfig(max_num_seqs=seqs, max_num_batched_tokens=budget, kv_capacity_tokens=max(kv_tokens, 1), lanes=p.pp,
                          kv_admission=sm.profile.kv_admission)
    res = simulate(sm, workload, cfg, requests=count, warmup_fraction=warm, seed=0)
    for name, metric in wanted.items():
        stat = metric.stat
        if name == "ttft_s":
            values[name] = _stat(res.ttft_s, stat)
        elif name == "itl_s":
            values[name] = _stat(res.itl_s, stat)
        elif name == "tpot_s":
            values[name] = _stat(res.tpot_s, stat)
        elif name == "e2e_s":
            values[name] = _stat(res.e2e_s, stat)
        elif name == "output_tokens_per_s":
            values[name] = res.output_tokens_per_s * replicas
        elif name == "output_tokens_per_s_per_gpu":
            values[name] = res.output_tokens_per_s * replicas / p.gpu_count
        elif name == "total_tokens_per_s":
            values[name] = res.requests_per_s * replicas * (p.input_tokens + p.output_tokens)
        elif name == "requests_per_s":
            values[name] = res.requests_per_s * replicas
        elif name == "output_tokens_per_s_per_user":
            values[name] = 1 / res.tpot_s.mean if res.tpot_s.mean else math.nan
        elif name == "prefill_tokens_per_s":
            values[name] = p.input_tokens / res.ttft_s.mean if res.ttft_s.mean else math.nan
    if res.notes:
        return Prediction(values, "; ".join(res.notes) if not values else None)
    return Prediction(values)
