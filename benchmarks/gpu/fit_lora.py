"""Fit the LoRA step term's GPU coefficients (data/lora.yaml ``kernels``) to the H200 kernel measurement.

    python benchmarks/gpu/fit_lora.py benchmarks/results/h200/lora-kernels-2026-12-03/lora_kernels.json.gz
    python benchmarks/gpu/fit_lora.py --bgmv lora_bgmv.json 2.69e-6 0.2   # the re-read rate from a --bgmv-only run

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


def bgmv_ratio(path: Path, k: float, eta_bw: float) -> None:
    """The re-read rate from a ``--bgmv-only`` run: per-token kernels read each token's adapter weights, so with the launch
    floor and the activation term fixed, what is left per layer is T x slot / (ratio x BW); prints the median ratio."""
    data = json.loads(read_text(path))
    ratios = []
    for r in data["rows"]:
        if r.get("method") != "triton_bgmv" or r.get("lora_s", 0) <= 0:
            continue
        t, rank = r["tokens"], r["rank"]
        left = r["lora_s"] - r["launches_per_layer"] * k - t * ACT * 2 / (eta_bw * BW)
        if left > 0:
            ratios.append(t * rank * EPS * 2 / (left * BW))
    print(f"{len(ratios)} triton_bgmv cases: re-read ratio median {statistics.median(ratios):.2f} "
          f"(range {min(ratios):.2f}-{max(ratios):.2f}); cache reads {data.get('cache_reads')}")


def main(argv: list[str]) -> int:
    if len(argv) > 3 and argv[1] == "--bgmv":  # fit_lora.py --bgmv lora_bgmv.json KERNEL_S ETA_BW
        bgmv_ratio(Path(argv[2]), float(argv[3]), float(argv[4]))
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
