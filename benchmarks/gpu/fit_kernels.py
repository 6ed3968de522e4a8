"""Turn raw H200 kernel timings into the speed model's kernel coefficients (data/speed/kernels.yaml).

    python benchmarks/gpu/fit_kernels.py benchmarks/results/h200/kernels_h200.json \
        benchmarks/results/h200/kernels2_h200.json --out src/infer_advisor/data/speed/kernels.yaml

Every coefficient is a fraction of the reference GPU's DATASHEET ceiling (H200: 4.8 TB/s, 989 dense bf16
TFLOP/s, 1979 fp8), so the same curves apply to any GPU through its own datasheet figures:

- GEMM ``t = launch + max(bytes / (bw_eff x BW), flops / (eta_c(M) x PEAK))``: ``launch`` and ``bw_eff``
  by least squares over every shape at M <= 16 (memory bound); ``eta_c(M)`` per M by the value that
  minimises the median |log error| over the shapes at that M (tensor-core tiles make small M inefficient).
- decode attention ``t = launch + kv_bytes / (bw_eff x BW)`` (SDPA flash, GQA) by least squares.
- prefill attention ``eta(L)``: achieved causal-attention FLOP/s over the bf16 peak, per prompt length.
- grouped (MoE) GEMM: like a GEMM, from ``torch._grouped_mm`` over Qwen3-30B-A3B's experts.
- small kernels (norms, RoPE, activations, adds; second file): seconds per kernel in a CUDA graph.

Writes the YAML with each figure's fit error; prints a summary. Pure Python + numpy.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import read_text  # noqa: E402

import numpy as np

MEMORY_BOUND_ROWS = 128  # below this many rows every measured GEMM on the H200 is memory bound
REF = {"name": "H200", "bandwidth": 4.8e12, "bf16": 989e12, "fp8": 1979e12}


def _lsq(x: list[float], y: list[float]) -> tuple[float, float]:
    a = np.array([[1.0, v] for v in x])
    c, *_ = np.linalg.lstsq(a, np.array(y), rcond=None)
    return float(c[0]), float(c[1])


def _med_abs_err(pred, meas) -> float:
    return float(statistics.median(abs(p / m - 1) for p, m in zip(pred, meas)))


def fit_gemm(rows: list[dict], dtype: str) -> dict:
    dense = [r for r in rows if r.get("dtype") == dtype and "seconds" in r and ".expert." not in r["shape"]]
    small = [r for r in dense if r["m"] <= 16]
    launch, inv_bw = _lsq([r["weight_bytes"] for r in small], [r["seconds"] for r in small])
    bw = 1.0 / inv_bw
    peak = REF[dtype]
    table = []
    for m in sorted({r["m"] for r in dense}):
        at = [r for r in dense if r["m"] == m]
        best = None
        for eta in np.linspace(0.02, 0.95, 187):
            pred = [launch + max(r["weight_bytes"] / bw, 2 * r["m_run"] * r["k"] * r["n"] / (eta * peak)) for r in at]
            err = statistics.median(abs(math.log(p / r["seconds"])) for p, r in zip(pred, at))
            if best is None or err < best[0] - 1e-12:
                best = (err, float(eta))
        table.append([m, round(best[1], 3)])
    # Below MEMORY_BOUND_ROWS the products are memory bound on the reference GPU for every shape, so the fitted
    # eta there only says "compute does not bind" (any small value fits). Hold the efficiency found at that row
    # count instead: compute time then grows in proportion to the rows, and a GPU with less compute per byte of
    # bandwidth is not made compute bound at batch 1 by an artefact of the fit.
    floor = next(eta for m, eta in table if m >= MEMORY_BOUND_ROWS)
    table = [[m, max(eta, floor) if m < MEMORY_BOUND_ROWS else eta] for m, eta in table]
    model = {"launch_s": launch, "bandwidth_efficiency": bw / REF["bandwidth"], "compute_efficiency_by_tokens": table}
    pred = [gemm_time(model, r["weight_bytes"], 2 * r["m_run"] * r["k"] * r["n"], r["m"], dtype) for r in dense]
    model["fit_points"] = len(dense)
    model["fit_median_abs_error"] = round(_med_abs_err(pred, [r["seconds"] for r in dense]), 4)
    model["launch_s"] = float(f"{launch:.4g}")
    model["bandwidth_efficiency"] = round(model["bandwidth_efficiency"], 4)
    return model


def interp(table: list[list[float]], x: float) -> float:
    """Piecewise-linear in log(x), clamped at the ends (the same rule the speed model uses)."""
    if x <= table[0][0]:
        return table[0][1]
    for (x0, y0), (x1, y1) in zip(table, table[1:]):
        if x <= x1:
            f = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return y0 + f * (y1 - y0)
    return table[-1][1]


def gemm_time(model: dict, wbytes: float, flops: float, m: int, dtype: str) -> float:
    bw = model["bandwidth_efficiency"] * REF["bandwidth"]
    eta = interp(model["compute_efficiency_by_tokens"], m)
    return model["launch_s"] + max(wbytes / bw, flops / (eta * REF[dtype]))


def fit_attention(rows: list[dict]) -> dict:
    dec = [r for r in rows if r.get("kind") == "decode" and "seconds" in r]
    best = None  # relative-error fit: small and large reads matter alike
    for launch in np.linspace(0.0, 20e-6, 81):
        for eff in np.linspace(0.2, 1.0, 161):
            inv = 1.0 / (eff * REF["bandwidth"])
            err = statistics.median(abs(math.log((launch + r["kv_bytes"] * inv) / r["seconds"])) for r in dec)
            if best is None or err < best[0] - 1e-12:
                best = (err, float(launch), inv)
    _, launch, inv_bw = best
    launch, inv_bw = float(launch), float(inv_bw)
    pred = [launch + r["kv_bytes"] * inv_bw for r in dec]
    pre = [r for r in rows if r.get("kind") == "prefill" and "seconds" in r]
    return {
        "decode": {
            "launch_s": float(f"{launch:.4g}"),
            "bandwidth_efficiency": round(1.0 / inv_bw / REF["bandwidth"], 4),
            "fit_points": len(dec),
            "fit_median_abs_error": round(_med_abs_err(pred, [r["seconds"] for r in dec]), 4),
        },
        "prefill": {
            "compute_efficiency_by_tokens": [[r["context"], round(r["flops_per_s"] / REF["bf16"], 4)] for r in pre],
            "fit_points": len(pre),
        },
    }


def fit_grouped(rows: list[dict], dense_bf16: dict) -> dict:
    """Grouped GEMM = launch + max(bytes / (bw x BW), flops / (scale x eta_dense(rows per expert) x PEAK))."""
    ok = [r for r in rows if "seconds" in r]
    if not ok:
        return {}
    mem = [r for r in ok if r["tokens"] <= 256]
    launch, inv_bw = _lsq([r["weight_bytes"] for r in mem], [r["seconds"] for r in mem])
    launch, inv_bw = max(float(launch), 0.0), float(inv_bw)
    ratios = []
    for r in ok:
        per_expert = r["routed"] / max(r["experts_touched"], 1)
        if r["flops"] / REF["bf16"] > r["weight_bytes"] * inv_bw:  # compute can bind here
            achieved = r["flops"] / (r["seconds"] - launch) / REF["bf16"]
            ratios.append(achieved / interp(dense_bf16["compute_efficiency_by_tokens"], per_expert))
    scale = float(statistics.median(ratios)) if ratios else 1.0
    model = {"launch_s": float(f"{launch:.4g}"), "bandwidth_efficiency": round(1.0 / inv_bw / REF["bandwidth"], 4),
             "compute_efficiency_scale": round(min(scale, 1.0), 4)}
    pred = []
    for r in ok:
        per_expert = r["routed"] / max(r["experts_touched"], 1)
        eta = model["compute_efficiency_scale"] * interp(dense_bf16["compute_efficiency_by_tokens"], per_expert)
        pred.append(model["launch_s"] + max(r["weight_bytes"] / (model["bandwidth_efficiency"] * REF["bandwidth"]), r["flops"] / (eta * REF["bf16"])))
    model["fit_points"] = len(ok)
    model["fit_median_abs_error"] = round(_med_abs_err(pred, [r["seconds"] for r in ok]), 4)
    model["note"] = ("two grouped GEMMs (gate_up, down) per MoE layer through torch._grouped_mm, balanced routing, rows padded "
                     "to 16 per expert; compute efficiency = scale x the dense bf16 curve at the rows each expert gets")
    return model


def fit_small(rows: list[dict]) -> dict:
    ok = [r for r in rows if "seconds_per_kernel" in r and r.get("m", 0) <= 256]
    if not ok:
        return {}
    per = [r["seconds_per_kernel"] for r in ok]
    return {"seconds_per_kernel": float(f"{statistics.median(per):.4g}"), "fit_points": len(ok),
            "range_s": [float(f"{min(per):.3g}"), float(f"{max(per):.3g}")]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    raw: dict = {}
    for f in args.files:
        d = json.loads(read_text(f))
        for k, v in d.items():
            if isinstance(v, list) and isinstance(raw.get(k), list):
                raw[k] = raw[k] + v
            else:
                raw.setdefault(k, v)
    out = {
        "reference_gpu": REF["name"],
        "reference_ceilings": {"memory_bandwidth_bytes_per_s": REF["bandwidth"], "bf16_flops_per_s": REF["bf16"], "fp8_flops_per_s": REF["fp8"]},
        "source": "measured on the lent H200 by benchmarks/gpu/measure_kernels.py ("
        + ", ".join(str(f) for f in args.files) + "); fitted by benchmarks/gpu/fit_kernels.py",
        "measured_ceilings": {
            **raw.get("ceilings", {}),
            **({"copy_eager_bytes_read_plus_written_per_s": raw["copy_eager"]["copy_bytes_read_plus_written_per_s"],
                "note": "the graph-replayed 4 GiB copy ran slower than the same copy launched eagerly; the eager figure "
                        "matches the GEMV-derived bandwidth (gemm.*.bandwidth_efficiency x 4.8 TB/s)"}
               if "copy_bytes_read_plus_written_per_s" in raw.get("copy_eager", {}) else {}),
        },
        "gemm": {"bf16": fit_gemm(raw["gemm"], "bf16"), "fp8": fit_gemm(raw["gemm"], "fp8")},
        "attention": fit_attention(raw["attention"]),
        "grouped_gemm": fit_grouped(raw.get("grouped_gemm", []), fit_gemm(raw["gemm"], "bf16")),
        "small_kernel": fit_small(raw.get("small_kernels", [])),
        "sdpa_backend": raw.get("sdpa", {}).get("backend"),
    }
    text = json.dumps(out, indent=1)
    if args.out:
        import yaml

        args.out.parent.mkdir(parents=True, exist_ok=True)
        header = "# Generated by benchmarks/gpu/fit_kernels.py from measured H200 kernel timings; do not edit by hand.\n"
        args.out.write_text(header + yaml.safe_dump(out, sort_keys=False, width=200, default_flow_style=None))
    print(text[:3000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
