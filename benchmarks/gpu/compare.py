"""Predicted (advise()) vs measured (measure_transformers.py) for every point: a Markdown table and a PNG.

    python benchmarks/gpu/compare.py benchmarks/results/h200/measure_transformers_warm.json \\
        --calibration benchmarks/results/h200/calibration_h200_transformers.json \\
        --table benchmarks/results/h200/comparison.md --plot docs/accuracy_h200.png

Predictions come from the public API only: ``advise(model, gpu="H200", engine="transformers", ...)`` with
the measured prompt/output lengths and batch, so the table checks what a user would be told.
Measured memory = torch.cuda.max_memory_allocated + the CUDA context (NVML used after init - before);
the NVML column is the device-level peak (allocator cache and fragmentation included).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

GIB = 2**30


def rows_for(path: Path, calibration: Path | None, gpu: str) -> list[dict]:
    from infer_advisor import advise

    raw = json.loads(path.read_text())
    ctx_bytes = raw["nvml_used_after_cuda_init_bytes"] - raw["nvml_used_before_cuda_bytes"]
    inp, out = raw["input_tokens"], raw["output_tokens"]
    rows = []
    for m in raw["models"]:
        for p in m.get("points", []):
            plan = advise(
                model=m["model"], gpu=gpu, engine="transformers", quantization="none", dtype=m["dtype"],
                concurrency=p["batch"], context=inp + out, input_tokens=inp, output_tokens=out,
                calibration=str(calibration) if calibration else None,
            )
            perf, mem = plan.performance, plan.memory
            warm = "decode_step_s_warm_median" in p
            tpot = p["decode_step_s_warm_median"] if warm else p["decode_step_s_median"]
            ttft = p["ttft_s_warm"] if warm else p["ttft_s"]
            rows.append(dict(
                model=m["model"], batch=p["batch"], allocator="warm" if warm else "cold",
                mem_pred=mem.total_bytes_per_gpu, mem_meas=p["peak_allocated_bytes"] + ctx_bytes,
                mem_nvml=p["nvml_peak_used_bytes"] - raw["nvml_used_before_cuda_bytes"],
                tok_pred=p["batch"] / perf.tpot_s, tok_meas=p["batch"] / tpot,
                ttft_pred=perf.ttft_s, ttft_meas=ttft, source=perf.source,
                bw_frac=perf.decode_fraction_of_bandwidth_ceiling,
            ))
    return rows


def err(pred: float, meas: float) -> float:
    return 100.0 * (pred - meas) / meas


def table(rows: list[dict]) -> str:
    head = ("| model | batch | memory pred / meas GiB (err) | NVML peak GiB (err) | decode tok/s pred / meas (err) "
            "| % of BW ceiling | TTFT ms pred / meas (err) |\n|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['mem_pred'] / GIB:.2f} / {r['mem_meas'] / GIB:.2f} ({err(r['mem_pred'], r['mem_meas']):+.1f}%) "
            f"| {r['mem_nvml'] / GIB:.2f} ({err(r['mem_pred'], r['mem_nvml']):+.1f}%) "
            f"| {r['tok_pred']:.0f} / {r['tok_meas']:.0f} ({err(r['tok_pred'], r['tok_meas']):+.1f}%) | {100 * r['bw_frac']:.0f}% "
            f"| {r['ttft_pred'] * 1e3:.0f} / {r['ttft_meas'] * 1e3:.0f} ({err(r['ttft_pred'], r['ttft_meas']):+.1f}%) |"
        )
    within = lambda key, pct: sum(abs(err(r[f"{key}_pred"], r[f"{key}_meas"])) <= pct for r in rows)  # noqa: E731
    n = len(rows)
    summary = (f"\nWithin target: memory ±3% {within('mem', 3)}/{n}, decode tok/s ±15% {within('tok', 15)}/{n}, "
               f"TTFT ±25% {within('ttft', 25)}/{n}.\n")
    return head + "\n".join(lines) + "\n" + summary


def plot(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8))
    panels = [("mem", "peak memory (GiB)", GIB, 0.03), ("tok", "decode tokens/s (aggregate)", 1, 0.15), ("ttft", "TTFT (s)", 1, 0.25)]
    models = sorted({r["model"] for r in rows})
    markers = dict(zip(models, "osD^vP*X"))
    for ax, (key, label, scale, band) in zip(axes, panels):
        vals = [(r[f"{key}_meas"] / scale, r[f"{key}_pred"] / scale, r["model"]) for r in rows]
        lo = min(min(v[0], v[1]) for v in vals) * 0.7
        hi = max(max(v[0], v[1]) for v in vals) * 1.4
        xs = [lo, hi]
        ax.plot(xs, xs, "k-", lw=1)
        ax.fill_between(xs, [x * (1 - band) for x in xs], [x * (1 + band) for x in xs], color="green", alpha=0.15,
                        label=f"±{band * 100:.0f}% target")
        for m in models:
            pts = [(a, b) for a, b, mm in vals if mm == m]
            ax.scatter([a for a, _ in pts], [b for _, b in pts], marker=markers[m], label=m.split("/")[-1])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"measured {label}")
        ax.set_ylabel(f"predicted {label}")
        ax.set_title(label)
    axes[0].legend(fontsize=7)
    fig.suptitle("infer-advisor predictions vs H200 measurements (transformers 5.17 eager, random weights, batch 1/8/32/128)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measurements", nargs="+", type=Path)
    ap.add_argument("--calibration", type=Path)
    ap.add_argument("--gpu", default="H200")
    ap.add_argument("--table", type=Path)
    ap.add_argument("--plot", type=Path)
    args = ap.parse_args(argv)
    rows = [r for path in args.measurements for r in rows_for(path, args.calibration, args.gpu)]
    text = table(rows)
    print(text)
    if args.table:
        args.table.write_text(text)
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
