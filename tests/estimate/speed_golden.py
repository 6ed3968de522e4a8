"""The golden table of speed predictions: a change to any coefficient or operator shows up here as a readable diff.

    python -m tests.estimate.speed_golden          # rewrite tests/estimate/golden_speed.json after an intended change

Each row is one plan-like case (model, GPU, engine, weights, layout, load) predicted by the step-time model
(one decode step and one prefill step) and by the simulator (closed loop at the concurrency).
"""

from __future__ import annotations

import json
from pathlib import Path

GOLDEN = Path(__file__).with_name("golden_speed.json")

CASES = [
    # model, gpu, engine, quantization, tp, pp, concurrency, input, output
    ("meta-llama/Llama-3.1-8B", "H200", "vllm", "none", 1, 1, 8, 32, 128),
    ("meta-llama/Llama-3.1-8B", "H100-80GB", "vllm", "fp8", 1, 1, 64, 1000, 200),
    ("meta-llama/Llama-3.1-70B", "H100-80GB", "vllm", "none", 4, 1, 32, 2000, 300),
    ("meta-llama/Llama-3.1-70B", "A100-80GB", "sglang", "awq", 2, 1, 16, 512, 256),
    ("meta-llama/Llama-3.1-70B", "L40S", "vllm", "fp8", 2, 2, 16, 512, 256),
    ("mistralai/Mixtral-8x7B-v0.1", "H200", "vllm", "none", 2, 1, 8, 32, 128),
    ("Qwen/Qwen3-30B-A3B", "H100-80GB", "trtllm", "fp8", 1, 1, 128, 1000, 1000),
    ("meta-llama/Meta-Llama-3-8B", "RTX-4090", "llama.cpp", "gguf-q4_k_m", 1, 1, 1, 0, 128),
    ("meta-llama/Llama-2-7b-hf", "H200", "transformers", "none", 1, 1, 8, 512, 64),
    ("meta-llama/Llama-2-7b-hf", "RTX-A6000", "ctranslate2", "ct2-int8", 1, 1, 1, 21, 200),
    ("meta-llama/Llama-3.2-3B", "cpu", "llama.cpp", "gguf-q4_k_m", 1, 1, 1, 64, 64),
]


def predict(case) -> dict:
    from infer_advisor.estimate.step_time import build_step_model, decode_shape, prefill_shape
    from infer_advisor.hardware import lookup_gpu
    from infer_advisor.model_facts import resolve_model
    from infer_advisor.simulate import LengthSpec, SchedulerConfig, Workload, simulate

    name, gpu_name, engine, quant, tp, pp, conc, inp, out = case
    model = resolve_model(name, source="catalog")
    gpu = None if gpu_name == "cpu" else lookup_gpu(gpu_name)
    dtype = "bfloat16" if gpu is None or "bf16" in gpu.tflops else "float16"
    sm = build_step_model(model, gpu=gpu, engine=engine, quantization=quant, dtype=dtype, tp=tp, pp=pp, cpu_cores=8)
    dec = sm.seconds(decode_shape(conc, inp + out / 2))
    pre = sm.seconds(prefill_shape(1, max(inp, 1)))
    cfg = SchedulerConfig(max_num_seqs=max(conc, 1), max_num_batched_tokens=8192, kv_capacity_tokens=conc * (inp + out) * 4 + 4096,
                          kv_admission=sm.profile.kv_admission, lanes=pp)
    res = simulate(sm, Workload(input_tokens=LengthSpec(mean=max(inp, 1)), output_tokens=LengthSpec(mean=out), arrival="closed",
                                concurrency=conc), cfg, requests=max(4 * conc, 16), warmup_fraction=0.25)
    return {"case": "|".join(map(str, case)), "decode_step_s": dec, "prefill_step_s": pre, "ttft_mean_s": res.ttft_s.mean,
            "tpot_mean_s": res.tpot_s.mean, "output_tokens_per_s": res.output_tokens_per_s}


def table() -> list[dict]:
    return [predict(c) for c in CASES]


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(table(), indent=1) + "\n")
    print(f"wrote {GOLDEN}")
