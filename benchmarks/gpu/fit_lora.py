"""Fit the LoRA step term's GPU coefficients (data/lora.yaml ``kernels``) to the H200 kernel measurement.

    python benchmarks/gpu/fit_lora.py benchmarks/results/h200/lora-kernels-2026-12-03/lora_kernels.json
    python benchmarks/gpu/fit_lora.py --bgmv lora_bgmv.json 2.69e-6 0.2   # the re-read rate from a --bgmv-only run

Uses the ``triton_sgmv`` rows of benchmarks/gpu/lora_kernels.py: its own Triton kernels launched the way vLLM V1's
punica kernels are (a zeroed fp32 buffer, one split-K shrink and one expand per wrapped module over every slice and
adapter: 12 launches per Llama layer), so the per-launch floor, the per-adapter cost and the byte and FLOP rates are a
Triton SGMV kernel's on the H200. The model fitted is estimate/lora_cost.py's, per decoder layer:

    12 x kernel_s + d x adapter_s + max((d x slot + T x act) / (eta_bw x BW) + (reads - d) x slot / (ratio x BW),
                                        2 x max(T, 16 d) x rank x eps / (eta_c x PEAK))

with reads = max(d, T / 16) (the stand-in re-reads an adapter's weights once per 16-row tile), BW and PEAK the H200's
datasheet 4.8 TB/s and 989 TFLOP/s, by a grid search minimising the mean squared log error over the cases
(every rank, token count and adapter count measured). Prints the coefficients, the fit error by regime, and the
other stand-ins' figures for comparison.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import sys
from pathlib import Path

BW, PEAK = 4.8e12, 989.4e12  # H200 datasheet (data/gpus.yaml)
EPS = 81_920  # A and B elements per slot per unit rank per Llama-3.1-8B layer
ACT = (4096 + 4096 + 4096 + 14336) + 2 * (6144 + 4096 + 28672 + 4096)  # activation elements per row per layer
KERNELS = 12
TILE = 16


def model(row: dict, k: float, a: float, eta_bw: float, ratio: float, eta_c: float) -> float:
    t, d, r = row["tokens"], row["adapters"], row["rank"]
    slot = r * EPS * 2
    reads = max(d, t / TILE)
    memory = (d * slot + t * ACT * 2) / (eta_bw * BW) + (reads - d) * slot / (ratio * BW)
    flops = 2 * max(t, TILE * d) * r * EPS / (eta_c * PEAK)
    return KERNELS * k + d * a + max(memory, flops)


def fit(rows: list[dict]) -> tuple[dict, float]:
    grid = {
        "k": [x * 1e-7 for x in range(15, 41)],  # 1.5-4 us per launch
        "a": [x * 1e-7 for x in range(0, 41, 2)],  # 0-4 us per adapter
        "eta_bw": [0.1, 0.125, 0.15, 0.175, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6],
        "ratio": [0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0],
        "eta_c": [0.005, 0.0075, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05],
    }
    best, best_err = None, math.inf
    for k, a, eta_bw, ratio, eta_c in itertools.product(*grid.values()):
        err = statistics.fmean((math.log(model(r, k, a, eta_bw, ratio, eta_c) / r["lora_s"])) ** 2 for r in rows)
        if err < best_err:
            best, best_err = dict(k=k, a=a, eta_bw=eta_bw, ratio=ratio, eta_c=eta_c), err
    return best, best_err


def regime_errors(rows: list[dict], c: dict) -> dict:
    out = {}
    for name, sel in (("decode T<=256", lambda r: r["tokens"] <= 256), ("prefill T=2048", lambda r: r["tokens"] == 2048)):
        errs = [abs(model(r, **c) / r["lora_s"] - 1) for r in rows if sel(r)]
        out[name] = {"cases": len(errs), "median_abs_err": round(statistics.median(errs), 3), "max_abs_err": round(max(errs), 3)}
    return out


def bgmv_ratio(path: Path, k: float, eta_bw: float) -> None:
    """The re-read rate from a ``--bgmv-only`` run: per-token kernels read each token's adapter weights, so with the launch
    floor and the activation term fixed, what is left per layer is T x slot / (ratio x BW); prints the median ratio."""
    data = json.loads(path.read_text())
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
    data = json.loads(Path(argv[1]).read_text())
    rows = [r for r in data["rows"] if r.get("method") == "triton_sgmv" and r.get("lora_s", 0) > 0]
    coeffs, err = fit(rows)
    print(f"{len(rows)} triton_sgmv cases on {data['device']} (torch {data['torch']}, triton {data.get('triton')})")
    print("fit:", {k: (f"{v:.3g}") for k, v in coeffs.items()}, f"rms log error {math.sqrt(err):.3f}")
    print("by regime:", json.dumps(regime_errors(rows, coeffs)))
    for method in ("triton_sgmv", "grouped_mm", "segment_loop", "gathered_bmm"):
        one = {(r["rank"], r["tokens"]): r["lora_s"] for r in data["rows"] if r.get("method") == method and r.get("adapters") == 1}
        print(f"{method:<13} 1 adapter, us per layer: " + ", ".join(f"r{rk} T{t}: {s * 1e6:.0f}" for (rk, t), s in sorted(one.items())
                                                                 if rk in (8, 128) and t in (1, 256, 2048)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
