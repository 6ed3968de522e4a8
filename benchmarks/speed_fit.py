"""Fit each engine's speed coefficients on published measurements and grade them leave-one-source-out.

    PYTHONPATH=. python benchmarks/speed_fit.py --write      # fit, grade, write data/speed/fitted.yaml + the report

What is fitted: per engine, the coefficients of data/speed/engines.yaml that its points can identify
(``FIT_PARAMS``); the kernel efficiencies stay the measured H200 ones. Objective: a soft-L1 loss on
log(predicted / measured) of each point's primary metric, minimised by Nelder-Mead inside bounds.

How it is graded: for every source S, every engine is refitted on the points NOT from S, and S's points are
predicted with those coefficients (an engine left with no points keeps its assumed values). The error of a
point is always from the fit that did not see its source. ``benchmarks/results/speed_fit.json`` keeps, per
point, the measured value, the leave-one-source-out and in-sample predictions, and the fit's coefficients.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

from benchmarks.published.schema import load_dataset
from benchmarks.speed_predict import ENGINE_MAP, predict_point

from infer_advisor.estimate.fit import fit_coefficients, soft_l1, with_coefficients
from infer_advisor.estimate.speed_data import engine_speeds

ROOT = Path(__file__).resolve().parents[1]
FIT_MAX_REQUESTS = 500  # simulated requests per open-loop/offline point while fitting (the report reruns at full size)
FITTED = ROOT / "src" / "infer_advisor" / "data" / "speed" / "fitted.yaml"
REPORT = ROOT / "benchmarks" / "results" / "speed_fit.json"

# The coefficients each engine's published points can identify (the others keep their stated values).
FIT_PARAMS = {
    "vllm": ["step_overhead_s", "per_sequence_s", "attention_scale", "gemm_scale", "gddr_scale", "moe_scale", "amd_scale"],
    "trtllm": ["step_overhead_s", "per_sequence_s", "attention_scale", "prefill_attention_scale", "gemm_scale", "moe_scale"],
    "sglang": ["step_overhead_s", "attention_scale", "amd_scale"],
    "tgi": ["step_overhead_s", "gemm_scale", "amd_scale"],
    "llama.cpp": ["step_overhead_s", "gemm_scale", "gddr_scale", "prefill_attention_scale", "amd_scale"],
    "mlc": ["gemm_scale"],
    "exllamav2": ["gemm_scale"],
    "ctranslate2": ["step_overhead_s", "gemm_scale"],
    # transformers: measured on the H200 (calibrate), not fitted here; its published points only grade it.
}


def _errors(points, profile) -> list[float | None]:
    out = []
    for p in points:
        v = predict_point(p, profile=profile, max_requests=FIT_MAX_REQUESTS).values.get(p.primary_metric)
        out.append(v / p.metrics.value(p.primary_metric) - 1 if v is not None and math.isfinite(v) and v > 0 else None)
    return out


def _loss(points, engine: str, values: dict[str, float]) -> tuple[float, list[float | None]]:
    prof = with_coefficients(engine_speeds(apply_fitted=False).engines[engine], values)
    errs = _errors(points, prof)
    return soft_l1(errs), [math.nan if e is None else e for e in errs]


def fit_engine(engine: str, points) -> dict[str, float]:
    if not points:
        return {}
    base = engine_speeds(apply_fitted=False).engines[engine]
    return fit_coefficients(base, FIT_PARAMS.get(engine, []), lambda prof: _errors(points, prof))


def usable(points):
    out = []
    for p in points:
        engine = ENGINE_MAP.get(p.engine, p.engine)
        if engine not in engine_speeds(apply_fitted=False).engines:
            continue
        pr = predict_point(p)
        if p.primary_metric in pr.values and math.isfinite(pr.values[p.primary_metric]):
            out.append(p)
    return out


def engine_of(p) -> str:
    return ENGINE_MAP.get(p.engine, p.engine)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="Write data/speed/fitted.yaml and benchmarks/results/speed_fit.json.")
    ap.add_argument("--engines", default="", help="Comma-separated engines to fit (default: all with points).")
    args = ap.parse_args()
    t0 = time.time()
    data = load_dataset()
    pts = usable(data.points)
    engines = sorted({engine_of(p) for p in pts})
    if args.engines:
        engines = [e for e in engines if e in args.engines.split(",")]
    by_engine = {e: [p for p in pts if engine_of(p) == e] for e in engines}

    full = {e: fit_engine(e, by_engine[e]) for e in engines}
    print(f"fitted on all points in {time.time() - t0:.0f} s", file=sys.stderr)

    rows = {}
    for e in engines:
        _, errs = _loss(by_engine[e], e, full[e])
        for p, err in zip(by_engine[e], errs):
            rows[p.id] = {"id": p.id, "engine": e, "source_id": p.source_id, "gpu": p.gpu, "mode": p.mode, "metric": p.primary_metric,
                          "measured": p.metrics.value(p.primary_metric), "in_sample_error": err}
    sources = sorted({p.source_id for p in pts})
    loso_coeffs = {}
    for s in sources:
        held = [p for p in pts if p.source_id == s]
        for e in sorted({engine_of(p) for p in held} & set(engines)):
            train = [p for p in by_engine[e] if p.source_id != s]
            coeffs = fit_engine(e, train) if train else {}
            loso_coeffs[f"{s}|{e}"] = coeffs
            test = [p for p in held if engine_of(p) == e]
            _, errs = _loss(test, e, coeffs)
            for p, err in zip(test, errs):
                rows[p.id]["loso_error"] = err
                rows[p.id]["loso_train_points"] = len(train)
        print(f"  held out {s}: {len(held)} points ({time.time() - t0:.0f} s)", file=sys.stderr)

    summary = {}
    for e in engines:
        errs = [abs(rows[p.id]["loso_error"]) for p in by_engine[e] if math.isfinite(rows[p.id].get("loso_error", math.nan))]
        ins = [abs(rows[p.id]["in_sample_error"]) for p in by_engine[e] if math.isfinite(rows[p.id]["in_sample_error"])]
        summary[e] = {
            "points": len(by_engine[e]), "sources": len({p.source_id for p in by_engine[e]}),
            "loso_median_abs_error": statistics.median(errs) if errs else None,
            "loso_p90_abs_error": sorted(errs)[int(0.9 * (len(errs) - 1))] if errs else None,
            "in_sample_median_abs_error": statistics.median(ins) if ins else None,
            "coefficients": full[e],
        }
    dc = [abs(r["loso_error"]) for r in rows.values() if r["engine"] in ("vllm", "sglang", "trtllm") and math.isfinite(r.get("loso_error", math.nan))]
    allr = [abs(r["loso_error"]) for r in rows.values() if math.isfinite(r.get("loso_error", math.nan))]
    overall = {"datacenter_loso_median_abs_error": statistics.median(dc) if dc else None, "datacenter_points": len(dc),
               "all_loso_median_abs_error": statistics.median(allr) if allr else None, "all_points": len(allr)}
    for e, s in summary.items():
        print(f"{e:12s} points {s['points']:3d} sources {s['sources']:2d} LOSO median |err| {s['loso_median_abs_error'] or 0:6.1%} "
              f"p90 {s['loso_p90_abs_error'] or 0:6.1%} in-sample {s['in_sample_median_abs_error'] or 0:6.1%} {s['coefficients']}")
    print(json.dumps(overall))
    if args.write:
        import yaml

        fitted = {
            "generated_by": "benchmarks/speed_fit.py",
            "dataset": f"benchmarks/published/speed_points.yaml ({len(pts)} predictable points, {len(sources)} sources)",
            "engines": {e: {"coefficients": s["coefficients"], "points": s["points"], "sources": s["sources"],
                            "loso_median_abs_error": _r(s["loso_median_abs_error"]), "loso_p90_abs_error": _r(s["loso_p90_abs_error"]),
                            "in_sample_median_abs_error": _r(s["in_sample_median_abs_error"])}
                        for e, s in summary.items() if s["coefficients"]},
        }
        FITTED.write_text("# Generated by benchmarks/speed_fit.py; do not edit by hand (rerun the script).\n"
                          + yaml.safe_dump(fitted, sort_keys=False, width=200))
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(json.dumps({"overall": overall, "engines": summary, "points": list(rows.values()),
                                      "loso_coefficients": loso_coeffs}, indent=1))
        print(f"wrote {FITTED} and {REPORT}")
    return 0


def _r(v):
    return None if v is None else round(float(v), 4)


if __name__ == "__main__":
    raise SystemExit(main())
