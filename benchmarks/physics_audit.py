"""Count sized options that break physics (issue 21): the six sizing questions of the issue, every option each answer
shows (chosen, runners-up, best per GPU type), checked against the arithmetic and bytes invariants of
``capacity/physics.py`` (parameter counts, the memory model's bytes, datasheet peaks x measured efficiency).

    PYTHONPATH=src python benchmarks/physics_audit.py            # this checkout
    PYTHONPATH=/other/checkout/src python benchmarks/physics_audit.py --physics src/infer_advisor/capacity/physics.py

``--physics`` loads the checks from a file, so an older checkout without them can be audited by the same checks.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

QUESTIONS = [
    dict(model="meta-llama/Meta-Llama-3-8B", rate=36, input_tokens=214, output_tokens=200, gpu="RTX-3090:2"),
    dict(model="Qwen/Qwen3-32B", rate=58, input_tokens=512, output_tokens=200, gpu="H200"),
    dict(model="meta-llama/Llama-3.1-70B", rate=50, input_tokens=512, output_tokens=200, gpu="MI300X"),
    dict(model="meta-llama/Llama-3.1-8B", rate=200, input_tokens=512, output_tokens=200, gpu="B200", tensor_parallel_size=1),
    dict(model="meta-llama/Llama-3.1-8B", rate=50, input_tokens=1000, output_tokens=200, gpu="H100-80GB", ttft_p90=1.0, itl_p99=0.1),
    dict(model="openai/gpt-oss-120b", rate=50, input_tokens=1000, output_tokens=1000, gpu="H200"),
]


def _physics(path: str | None):
    if path is None:
        from infer_advisor.capacity import physics

        return physics
    spec = importlib.util.spec_from_file_location("infer_advisor.capacity.physics_audit", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--physics", default=None)
    args = ap.parse_args()
    phys = _physics(args.physics)
    from infer_advisor import size
    from infer_advisor.hardware import lookup_gpu
    from infer_advisor.model_facts import resolve_model
    from infer_advisor.simulate import SchedulerConfig

    total = broken = 0
    for q in QUESTIONS:
        r = size(**q)
        model = resolve_model(q["model"])
        seen = set()
        for c in [r.chosen, *r.runners_up, *r.best_per_gpu]:
            if c is None or not c.max_rate_per_replica:
                continue
            key = (c.gpu, c.layout, c.engine, c.quantization, c.max_num_batched_tokens)
            if key in seen:
                continue
            seen.add(key)
            gpu = lookup_gpu(c.gpu)
            cfg = SchedulerConfig(max_num_seqs=c.max_num_seqs, max_num_batched_tokens=c.max_num_batched_tokens,
                                  kv_capacity_tokens=max(c.kv_cache_tokens, 1))
            dtype = "bfloat16" if gpu.tflops.get("bf16") else "float16"
            checks = [phys.arithmetic_check(model, gpu, c.quantization, c.gpus_per_replica, c.max_rate_per_replica,
                                            q["input_tokens"], q["output_tokens"]),
                      phys.bytes_check(model, gpu, c.quantization, dtype, c.kv_cache_dtype, c.tensor_parallel_size,
                                       c.pipeline_parallel_size, cfg, c.max_rate_per_replica, q["input_tokens"],
                                       q["output_tokens"])]
            bad = [ch for ch in checks if not ch.ok]
            total += 1
            broken += bool(bad)
            shares = " ".join(f"{ch.name} {ch.share:.0%}" for ch in checks)
            print(f"{'BREAKS' if bad else 'ok    '} {q['model']:<28} {c.gpu:<10} {c.layout:<10} {c.quantization:<6} "
                  f"{c.max_rate_per_replica:8.2f} req/s/replica  {shares}")
    print(f"{broken} of {total} options break physics")
    return 0


if __name__ == "__main__":
    sys.exit(main())
