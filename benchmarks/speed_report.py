"""Tables and a plot of the speed model against published measurements, beside NVIDIA's aiconfigurator.

    PYTHONPATH=. python benchmarks/speed_report.py --markdown benchmarks/results/speed_report.md --plot docs/accuracy_speed.png

Reads benchmarks/results/speed_fit.json (written by benchmarks/speed_fit.py: per point the measured value and
our leave-one-source-out error) and benchmarks/published/aiconfigurator_results.json (aiconfigurator 0.12.0 on
the same points, written by benchmarks/published/run_aiconfigurator.py). Every error of ours in these tables
comes from a fit that did not see the point's source.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIT = ROOT / "benchmarks" / "results" / "speed_fit.json"
AIC = ROOT / "benchmarks" / "published" / "aiconfigurator_results.json"
DATACENTER = ("vllm", "sglang", "trtllm")


def _med(xs):
    xs = [abs(x) for x in xs if x is not None and math.isfinite(x)]
    return statistics.median(xs) if xs else None


def _pct(x):
    return "n/a" if x is None else f"{x:.1%}"


def load():
    fit = json.loads(FIT.read_text())
    aic = {p["id"]: p for p in json.loads(AIC.read_text())["points"]} if AIC.exists() else {}
    return fit, aic


def markdown(fit, aic) -> str:
    pts = fit["points"]
    out = ["### Leave-one-source-out error by engine", "",
           "| engine | points | sources | LOSO median abs error | LOSO p90 | in-sample median | fitted coefficients |",
           "|---|---:|---:|---:|---:|---:|---|"]
    for e, s in sorted(fit["engines"].items()):
        coeffs = ", ".join(f"{k} {v:g}" for k, v in s["coefficients"].items()) or "none (assumed values)"
        out.append(f"| {e} | {s['points']} | {s['sources']} | {_pct(s['loso_median_abs_error'])} | {_pct(s['loso_p90_abs_error'])} | "
                   f"{_pct(s['in_sample_median_abs_error'])} | {coeffs} |")
    o = fit["overall"]
    out += ["", f"Datacenter engines (vLLM, SGLang, TensorRT-LLM incl. NIM): **{_pct(o['datacenter_loso_median_abs_error'])}** over "
            f"{o['datacenter_points']} points; all engines: **{_pct(o['all_loso_median_abs_error'])}** over {o['all_points']} points.", ""]
    same = [p for p in pts if aic.get(p["id"], {}).get("comparison") == "same-setup" and aic[p["id"]].get("primary_error") is not None]
    out += ["### Side by side with aiconfigurator 0.12.0 (points it can model with the same setup)", "",
            f"On the {len(same)} points where aiconfigurator models the stated setup, its median |error| is "
            f"**{_pct(_med([aic[p['id']]['primary_error'] for p in same]))}** and ours (leave-one-source-out) "
            f"**{_pct(_med([p.get('loso_error') for p in same]))}**.", "",
            "| point | engine | GPU | mode | metric | measured | ours (LOSO) | aiconfigurator |", "|---|---|---|---|---|---:|---:|---:|"]
    for p in sorted(pts, key=lambda r: (r["engine"], r["source_id"], r["id"])):
        a = aic.get(p["id"], {})
        aic_txt = (f"{a['primary_error']:+.0%}" + ("" if a.get("comparison") == "same-setup" else " (best over batch)")
                   if a.get("primary_error") is not None else "-")
        out.append(f"| {p['id']} | {p['engine']} | {p['gpu']} | {p['mode']} | {p['metric']} | {p['measured']:.4g} | "
                   f"{p.get('loso_error', float('nan')):+.0%} | {aic_txt} |")
    return "\n".join(out) + "\n"


def plot(fit, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [p for p in fit["points"] if math.isfinite(p.get("loso_error", math.nan))]
    engines = sorted({p["engine"] for p in pts})
    fig, ax = plt.subplots(figsize=(6.5, 6))
    for e in engines:
        sel = [p for p in pts if p["engine"] == e]
        ax.scatter([p["measured"] for p in sel], [p["measured"] * (1 + p["loso_error"]) for p in sel], label=e, s=18)
    lo = min(p["measured"] for p in pts) * 0.5
    hi = max(p["measured"] for p in pts) * 2
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.fill_between([lo, hi], [lo * 0.85, hi * 0.85], [lo * 1.15, hi * 1.15], color="grey", alpha=0.15, label="+-15%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("published measurement (its own unit: s or tokens/s)")
    ax.set_ylabel("predicted, leave-one-source-out")
    o = fit["overall"]
    ax.set_title(f"Speed model vs {len(pts)} published points: LOSO median |err| {o['all_loso_median_abs_error']:.1%}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--plot", type=Path)
    args = ap.parse_args()
    fit, aic = load()
    text = markdown(fit, aic)
    if args.markdown:
        args.markdown.write_text(text)
    else:
        print(text)
    if args.plot:
        plot(fit, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
