"""Fit the LoRA step term's GPU coefficients (data/lora.yaml ``kernels``) to the H200 kernel measurement.

    python benchmarks/gpu/fit_lora.py benchmarks/results/h200/lora-kernels-2026-12-03/lora_kernels.json.gz
    python benchmarks/gpu/fit_lora.py --bgmv benchmarks/results/h200/lora-kernels-2026-12-03/lora_bgmv.json  # per-token kernels

Uses the ``triton_sgmv`` rows of benchmarks/gpu/lora_kernels.py: its own Triton kernels launched the way vLLM V1's
punica kernels are (a zeroed fp32 buffer, one split-K shrink and one expand per wrapped module over every slice and
adapter: 12 launches per Llama layer), so the per-launch floor, the per-adapter cost and the byte and FLOP rates are a
Triton SGMV kernel's on the H200. The model fitted is estimate/lora_cost.py's, per decoder layer:

    12 x kernel_s + d x adapter_s + max((d x slot + T x act) / (eta_bw x BW) + (reads - d) x slot / (ratio x BW),
                                        2 x max(T, 16 d) x rank x eps / (eta_c x PEAK))

with reads = max(d, T / 16) (the stand-in re-reads an adapter's weights once per 16-row tile), BW and PEAK the H200's
datasheet 4.8 TB/s and 989 TFLOP/s. Two stages: the launch floor from the cases where the work is negligible (least
squares on adapters), then the per-adapter cost and the three rates by a grid search minimising the mean squared log
error over every case. Prints the coefficients, the fit error by regime, the cuBLAS loop's rates (what tuned kernels
can reach) and the other stand-ins' figures.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import read_text  # noqa: E402

BW, PEAK = 4.8e12, 989.4e12  # H200 datasheet (data/gpus.yaml)
EPS = 81_920  # A and B elements per slot per unit rank per Llama-3.1-8B layer
ACT = (4096 + 4096 + 4096 + 14336) + 2 * (6144 + 4096 + 28672 + 4096)  # activation elements per row per layer
KERNELS = 12
TILE = 16


def model(row: dict, k: float, a: float, eta_bw: float, ratio: float, eta_c: float, kernels: int = KERNELS) -> float:
    t, d, r = row["tokens"], row["adapters"], row["rank"]
    slot = r * EPS * 2
    reads = max(d, t / TILE)
    memory = (d * slot + t * ACT * 2) / (eta_bw * BW) + (reads - d) * slot / (ratio * BW)
    flops = 2 * max(t, TILE * d) * r * EPS / (eta_c * PEAK)
    return kernels * k + d * a + max(memory, flops)


def launch_floor(rows: list[dict]) -> tuple[float, float]:
    """Stage 1: least squares of the per-layer increment on the adapters in the batch, over the cases where the work is
    negligible (rank <= 16, <= 64 tokens): intercept / 12 launches = the per-launch floor. Returns (floor, median |err|)."""
    sel = [r for r in rows if r["rank"] <= 16 and r["tokens"] <= 64]
    n = len(sel)
    sx, sy = sum(r["adapters"] for r in sel), sum(r["lora_s"] for r in sel)
    sxx, sxy = sum(r["adapters"] ** 2 for r in sel), sum(r["adapters"] * r["lora_s"] for r in sel)
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    intercept = (sy - slope * sx) / n
    err = statistics.median(abs((intercept + slope * r["adapters"]) / r["lora_s"] - 1) for r in sel)
    return intercept / KERNELS, err


def fit(rows: list[dict], k: float) -> tuple[dict, float]:
    """Stage 2: with the floor fixed, a grid over the per-adapter cost and the three rates, minimising the mean squared
    log error over every case."""
    grid = {
        "a": [x * 1e-7 for x in range(10, 36, 3)],
        "eta_bw": [0.1, 0.15, 0.2, 0.25, 0.3, 0.4],
        "ratio": [0.15, 0.25, 0.35, 0.5, 0.75, 1.0],
        "eta_c": [0.008, 0.01, 0.0125, 0.015, 0.02, 0.03],
    }
    best, best_err = None, math.inf
    for a, eta_bw, ratio, eta_c in itertools.product(*grid.values()):
        err = statistics.fmean((math.log(model(r, k, a, eta_bw, ratio, eta_c) / r["lora_s"])) ** 2 for r in rows)
        if err < best_err:
            best, best_err = dict(k=k, a=a, eta_bw=eta_bw, ratio=ratio, eta_c=eta_c), err
    return best, best_err


def cublas_rates(data: dict) -> tuple[dict, float]:
    """The per-adapter cuBLAS loop (segment_loop) with one adapter: its own launch floor (11 launches) and byte and FLOP
    rates, the efficiency an autotuned kernel can reach on the same work."""
    rows = [r for r in data["rows"] if r.get("method") == "segment_loop" and r.get("adapters") == 1 and r.get("lora_s", 0) > 0]
    best, best_err = None, math.inf
    for ks, eb, ec in itertools.product([x * 1e-7 for x in range(20, 61, 2)], [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
                                        [0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6]):
        err = statistics.fmean(math.log(model(r, ks, 0.0, eb, 1e9, ec, kernels=11) / r["lora_s"]) ** 2 for r in rows)
        if err < best_err:
            best, best_err = dict(k=ks, eta_bw=eb, eta_c=ec), err
    return best, math.sqrt(best_err)


def regime_errors(rows: list[dict], c: dict) -> dict:
    out = {}
    for name, sel in (("decode T<=256", lambda r: r["tokens"] <= 256), ("prefill T=2048", lambda r: r["tokens"] == 2048)):
        errs = [abs(model(r, **c) / r["lora_s"] - 1) for r in rows if sel(r)]
        out[name] = {"cases": len(errs), "median_abs_err": round(statistics.median(errs), 3), "max_abs_err": round(max(errs), 3)}
    return out


def _slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y on x."""
    n, sx, sy = len(points), sum(x for x, _ in points), sum(y for _, y in points)
    sxx, sxy = sum(x * x for x, _ in points), sum(x * y for x, y in points)
    return (n * sxy - sx * sy) / (n * sxx - sx * sx)


def bgmv_token_cost(path: Path) -> None:
    """Per-token kernels (a ``--bgmv-only`` run): the per-layer increment's slope on the tokens at each rank is one
    token's cost; across ranks it splits into a fixed part and the rank's share (that token's adapter weights re-read).
    Prints the fixed seconds (and the H200 bytes they equal) and the re-read rate (data/lora.yaml bgmv_* coefficients)."""
    rows = [r for r in json.loads(read_text(path))["rows"] if r.get("method") == "triton_bgmv" and r.get("lora_s", 0) > 0]
    per_token = {rank: _slope([(r["tokens"], r["lora_s"]) for r in rows if r["rank"] == rank]) for rank in sorted({r["rank"] for r in rows})}
    per_rank = _slope(list(per_token.items()))
    fixed = statistics.mean(s - per_rank * rank for rank, s in per_token.items())
    print(f"{len(rows)} triton_bgmv cases: us per token and layer by rank {({k: round(v * 1e6, 2) for k, v in per_token.items()})}; "
          f"fixed {fixed * 1e6:.2f} us = {fixed * BW:.3g} H200 bytes; per unit rank {per_rank * 1e6:.4f} us = re-read ratio "
          f"{EPS * 2 / (per_rank * BW):.2f}")


def main(argv: list[str]) -> int:
    if len(argv) > 2 and argv[1] == "--bgmv":  # fit_lora.py --bgmv lora_bgmv.json
        bgmv_token_cost(Path(argv[2]))
        return 0
    data = json.loads(read_text(Path(argv[1])))
    rows = [r for r in data["rows"] if r.get("method") == "triton_sgmv" and r.get("lora_s", 0) > 0]
    k, k_err = launch_floor(rows)
    coeffs, err = fit(rows, k)
    print(f"{len(rows)} triton_sgmv cases on {data['device']} (torch {data['torch']}, triton {data.get('triton')})")
    print(f"stage 1: {k * 1e6:.2f} us per launch (median |error| {k_err:.2f} over rank <= 16, <= 64 tokens)")
    print("stage 2:", {name: f"{v:.3g}" for name, v in coeffs.items()}, f"rms log error {math.sqrt(err):.3f}")
    print("by regime:", json.dumps(regime_errors(rows, coeffs)))
    cub, cub_err = cublas_rates(data)
    print("cuBLAS per-adapter loop, 1 adapter:", {name: f"{v:.3g}" for name, v in cub.items()}, f"rms log error {cub_err:.3f}")
    for method in ("triton_sgmv", "grouped_mm", "segment_loop", "gathered_bmm"):
        one = {(r["rank"], r["tokens"]): r["lora_s"] for r in data["rows"] if r.get("method") == method and r.get("adapters") == 1}
        print(f"{method:<13} 1 adapter, us per layer: " + ", ".join(f"r{rk} T{t}: {s * 1e6:.0f}" for (rk, t), s in sorted(one.items())
                                                                 if rk in (8, 128) and t in (1, 256, 2048)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
