"""Predict the H200 CUDA-graph decode floor with the operator model and compare with the measured steps.

    PYTHONPATH=. python benchmarks/gpu/floor_check.py --table benchmarks/results/h200/floor_check.md \
        --plot docs/accuracy_h200_floor.png

The measured steps are benchmarks/gpu/measure_kernels.py's ``decode_step`` section (plain-PyTorch decoder, static
KV cache, one CUDA graph per step, random bf16 weights) for five catalog models at batch 1-256 and context
1024/4096. The prediction is estimate/step_time.py with the ``pytorch-graph`` engine profile, whose every
coefficient is measured (GEMM/attention/small-kernel timings and the profiler's kernel count): nothing in it
was fitted to these decode steps, so the comparison is out of sample.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import read_text  # noqa: E402

from infer_advisor.estimate.step_time import build_step_model, decode_shape
from infer_advisor.hardware import lookup_gpu
from infer_advisor.model_facts import resolve_model

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "benchmarks/results/h200/kernels_h200.json", ROOT / "benchmarks/results/h200/kernels2_h200.json"]


def rows() -> list[dict]:
    gpu = lookup_gpu("H200")
    out = []
    for f in FILES:
        for r in json.loads(read_text(f)).get("decode_step", []):
            if "seconds" not in r:
                continue
            model = resolve_model(r["model"], source="catalog")
            sm = build_step_model(model, gpu=gpu, engine="pytorch-graph")
            pred = sm.seconds(decode_shape(r["batch"], r["context"]))
            out.append({"model": r["model"], "batch": r["batch"], "context": r["context"], "measured_s": r["seconds"],
                        "predicted_s": pred, "error": pred / r["seconds"] - 1})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", type=Path)
    ap.add_argument("--plot", type=Path)
    args = ap.parse_args()
    data = rows()
    errs = [abs(r["error"]) for r in data]
    summary = {"points": len(data), "median_abs_error": statistics.median(errs), "max_abs_error": max(errs),
               "within_10_percent": sum(e <= 0.10 for e in errs)}
    print(json.dumps(summary))
    if args.table:
        lines = ["| model | batch | context | measured ms | predicted ms | error |", "|---|---:|---:|---:|---:|---:|"]
        for r in data:
            lines.append(f"| {r['model']} | {r['batch']} | {r['context']} | {r['measured_s'] * 1e3:.3f} | {r['predicted_s'] * 1e3:.3f} | {r['error']:+.1%} |")
        lines.append("")
        lines.append(f"{summary['points']} steps: median |error| {summary['median_abs_error']:.1%}, max {summary['max_abs_error']:.1%}, "
                     f"{summary['within_10_percent']} within 10%.")
        args.table.write_text("\n".join(lines) + "\n")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
        for model in sorted({r["model"] for r in data}):
            for ctx, marker in ((1024, "o"), (4096, "s")):
                pts = [r for r in data if r["model"] == model and r["context"] == ctx]
                if not pts:
                    continue
                line = ax.plot([r["batch"] for r in pts], [r["measured_s"] * 1e3 for r in pts], marker=marker, linestyle="-",
                               label=f"{model.split('/')[-1]} ctx {ctx} measured")
                ax.plot([r["batch"] for r in pts], [r["predicted_s"] * 1e3 for r in pts], marker=marker, linestyle=":",
                        color=line[0].get_color(), fillstyle="none")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch (sequences per decode step)")
        ax.set_ylabel("decode step, ms")
        ax.set_title(f"H200 graph-captured decode: measured (solid), predicted (dotted); median |err| {summary['median_abs_error']:.1%}", fontsize=9)
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
