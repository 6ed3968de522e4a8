"""Grouped MoE GEMMs and dense GEMMs on the GPU at the batch sizes a decode step routes to its experts.

    python benchmarks/gpu/moe_gemm.py --out moe_gemm.json

For the speed model's MoE terms (issue 20, item 6): how long the expert matmuls of one MoE layer take when T tokens
are routed top-k over E experts, against the bytes of the experts actually touched and the FLOPs done. Shapes are
gpt-oss-120b's (E=128, top-4, hidden 2880, expert intermediate 2880: gate_up 2880->5760, down 2880->2880) and
Qwen3-30B-A3B's (E=128, top-8, hidden 2048, intermediate 768). bf16 through ``torch._grouped_mm`` where this torch
has it (one kernel over all experts, as vLLM's and SGLang's fused MoE do), else a loop of per-expert matmuls (the
result names which). Routing is uniform random (seeded): the expected number of distinct experts touched at T tokens
is E * (1 - (1 - k/E)^T). Timing: CUDA events around 20 replays after 5 warm-ups, median; inputs rotate over 4
copies so the experts' weights are not served from L2 between replays.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

SHAPES = {
    "gpt-oss-120b": dict(experts=128, top_k=4, hidden=2880, inter=2880),
    "qwen3-30b-a3b": dict(experts=128, top_k=8, hidden=2048, inter=768),
}
TOKENS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
DENSE_M = [1, 8, 32, 128, 512, 2048, 8192]


def _time(fn, reps=20, warm=5) -> float:
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times)


def _grouped(x, w, offs):
    return torch._grouped_mm(x, w, offs=offs)


def moe_layer(shape: dict, tokens: int, gen: torch.Generator, copies: int = 4) -> dict:
    e, k, h, i = shape["experts"], shape["top_k"], shape["hidden"], shape["inter"]
    dev, dt = "cuda", torch.bfloat16
    w_up = [torch.randn(e, h, 2 * i, device=dev, dtype=dt) * 0.02 for _ in range(copies)]
    w_down = [torch.randn(e, i, h, device=dev, dtype=dt) * 0.02 for _ in range(copies)]
    choice = torch.stack([torch.randperm(e, generator=gen)[:k] for _ in range(tokens)]).flatten()
    counts = torch.bincount(choice, minlength=e)
    rows = int(counts.sum())
    offs = torch.cumsum(counts, 0).to(torch.int32).to(dev)
    x = torch.randn(rows, h, device=dev, dtype=dt)
    y = torch.randn(rows, i, device=dev, dtype=dt)
    touched = int((counts > 0).sum())
    state = {"n": 0}
    kind = "torch._grouped_mm"
    try:
        _grouped(x, w_up[0], offs)
    except Exception as exc:  # older torch or unsupported shape: per-expert loop
        kind = f"per-expert loop ({type(exc).__name__})"

    def run():
        c = state["n"] % copies
        state["n"] += 1
        if kind == "torch._grouped_mm":
            _grouped(x, w_up[c], offs)
            _grouped(y, w_down[c], offs)
        else:
            start = 0
            for ex, n in enumerate(counts.tolist()):
                if n:
                    x[start:start + n] @ w_up[c][ex]
                    y[start:start + n] @ w_down[c][ex]
                    start += n

    t = _time(run)
    bytes_touched = touched * (h * 2 * i + i * h) * 2
    flops = 2 * rows * (h * 2 * i + i * h)
    return {"tokens": tokens, "routed_rows": rows, "experts_touched": touched,
            "expected_touched": e * (1 - (1 - k / e) ** tokens), "seconds": t,
            "weight_bytes_touched": bytes_touched, "achieved_bytes_per_s": bytes_touched / t,
            "flops": flops, "achieved_flops": flops / t, "kernel": kind}


def dense(m: int, h: int = 4096, n: int = 14336, copies: int = 4) -> dict:
    ws = [torch.randn(h, n, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
    x = torch.randn(m, h, device="cuda", dtype=torch.bfloat16)
    state = {"n": 0}

    def run():
        x @ ws[state["n"] % copies]
        state["n"] += 1

    t = _time(run)
    return {"m": m, "k": h, "n": n, "seconds": t, "achieved_bytes_per_s": h * n * 2 / t,
            "achieved_flops": 2 * m * h * n / t}


def copy_bandwidth() -> float:
    a = torch.empty(2 * 1024**3, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    t = _time(lambda: b.copy_(a), reps=10, warm=3)
    return 2 * a.numel() / t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    t0 = time.time()
    gen = torch.Generator().manual_seed(0)
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "copy_bytes_per_s": copy_bandwidth(), "moe": {}, "dense_bf16": []}
    for name, shape in SHAPES.items():
        res["moe"][name] = {"shape": shape, "points": [moe_layer(shape, t, gen) for t in TOKENS]}
    res["dense_bf16"] = [dense(m) for m in DENSE_M]
    res["wall_s"] = time.time() - t0
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"copy {res['copy_bytes_per_s'] / 1e12:.2f} TB/s")
    for name, r in res["moe"].items():
        for p in r["points"]:
            print(f"{name} T={p['tokens']:5d} touched {p['experts_touched']:3d} {p['seconds'] * 1e6:8.1f} us "
                  f"{p['achieved_bytes_per_s'] / 1e12:5.2f} TB/s {p['achieved_flops'] / 1e12:6.1f} TF/s {p['kernel']}")
    for p in res["dense_bf16"]:
        print(f"dense m={p['m']:5d} {p['seconds'] * 1e6:8.1f} us {p['achieved_bytes_per_s'] / 1e12:5.2f} TB/s "
              f"{p['achieved_flops'] / 1e12:6.1f} TF/s")


if __name__ == "__main__":
    main()
