"""Counts of the published speed points, as the Markdown block README.md embeds.

    python -m benchmarks.published.summary          # print the block
    python -m benchmarks.published.summary --write  # replace the block in README.md

GPU class comes from the GPU catalog's memory type: HBM (datacenter) or GDDR (consumer and workstation
cards, and the L40S/L4/A10G class); GPUs missing from the catalog are counted apart.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from benchmarks.published.schema import Dataset, load_dataset

README = Path(__file__).with_name("README.md")
AIC_RESULTS = Path(__file__).with_name("aiconfigurator_results.json")
BEGIN = "<!-- counts:begin (python -m benchmarks.published.summary --write) -->"
END = "<!-- counts:end -->"
AIC_BEGIN = "<!-- aic:begin -->"
AIC_END = "<!-- aic:end -->"


def gpu_class(gpu: str, in_catalog: bool) -> str:
    from infer_advisor.hardware.catalog import find_entry

    if not in_catalog:
        return "not in catalog"
    memory = find_entry(gpu).memory_type.lower()
    return "datacenter HBM" if memory.startswith("hbm") else "GDDR (consumer/workstation)"


def _table(title: str, counts: Counter) -> str:
    rows = "\n".join(f"| {k} | {v} |" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))))
    return f"| {title} | points |\n|---|---:|\n{rows}"


def counts_block(data: Dataset) -> str:
    pts = data.points
    by_source = Counter(p.source_id for p in pts)
    parts = [
        f"{len(pts)} points from {len(data.sources)} sources.",
        _table("engine", Counter(p.engine for p in pts)),
        _table("GPU class", Counter(gpu_class(p.gpu, p.gpu_in_catalog) for p in pts)),
        _table("GPU", Counter(p.gpu for p in pts)),
        _table("mode", Counter(p.mode for p in pts)),
        _table("quantization", Counter(p.quantization for p in pts)),
        _table("tensor parallel", Counter(f"tp={p.tp}" for p in pts)),
        _table("source", by_source),
        f"Points with a `doubt`: {sum(1 for p in pts if p.doubt)}; with at least one inferred field: "
        f"{sum(1 for p in pts if p.inferred)}; model not in the catalog: {sum(1 for p in pts if not p.model_in_catalog)}; "
        f"GPU not in the catalog: {sum(1 for p in pts if not p.gpu_in_catalog)}.",
    ]
    return "\n\n".join(parts)


def aic_block(report: dict) -> str:
    """The aiconfigurator results as README Markdown: headline, groups, and one row per modelled point."""
    s, a = report["summary"], report["aiconfigurator"]
    pct = lambda x: "-" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    spct = lambda x: "-" if x is None else f"{100 * x:+.1f}%"  # noqa: E731
    off = s["offline_best_over_batch_sizes"]
    lines = [
        f"Results (`aiconfigurator_results.json`, aiconfigurator {a['version']}): {s['modelled']} of {s['points']} "
        f"points modelled. **Same setup ({s['same_setup']} points: model, GPU, engine, TP, lengths and batch or "
        f"concurrency as published): median |error| of the primary metric {pct(s['median_abs_primary_error'])}** "
        f"(all metrics of those points: {pct(s['median_abs_error_all_metrics'])}). Offline runs ({off['n']} points, "
        f"running batch not published; aiconfigurator's best throughput over batch sizes): median |error| "
        f"{pct(off['median_abs_primary_error'])}, median signed {pct(off['median_signed_primary_error'])}. "
        f"{a['calls']} estimate calls, "
        f"median {a['call_seconds_median']} s, max {a['call_seconds_max']} s each (after a {a['import_seconds']} s "
        f"import; 2 shared CPU cores); network: {a['network']}.",
        "",
        "Same-setup points by group:",
        "",
        "| group | points | median abs. error |",
        "|---|---:|---:|",
    ]
    for key in ("by_engine", "by_mode", "by_source"):
        for name, g in s[key].items():
            lines.append(f"| {key[3:]}: {name} | {g['n']} | {pct(g['median_abs_primary_error'])} |")
    lines += ["", "| point | comparison | primary metric | measured | aiconfigurator | error |", "|---|---|---|---:|---:|---:|"]
    for r in report["points"]:
        if r.get("primary_error") is None:
            continue
        m = r["primary_metric"]
        lines.append(
            f"| {r['id']} | {r['comparison']} | {m} | {r['measured'][m]:.4g} | {r['predicted'][m]:.4g} "
            f"| {spct(r['primary_error'])} |"
        )
    reasons = "; ".join(f"{k}: {v}" for k, v in sorted(s["not_modelled_reasons"].items(), key=lambda kv: -kv[1]))
    lines += ["", f"Not modelled ({s['points'] - s['modelled']}): {reasons}."]
    return "\n".join(lines)


def _replace(text: str, begin: str, end: str, block: str) -> str:
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    return f"{head}{begin}\n{block}\n{end}{tail}"


def render_readme(data: Dataset, text: str, report: dict | None) -> str:
    text = _replace(text, BEGIN, END, counts_block(data))
    if report is not None:
        text = _replace(text, AIC_BEGIN, AIC_END, aic_block(report))
    return text


def write_readme(data: Dataset, readme: Path = README) -> None:
    report = json.loads(AIC_RESULTS.read_text(encoding="utf-8")) if AIC_RESULTS.exists() else None
    readme.write_text(render_readme(data, readme.read_text(encoding="utf-8"), report), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Counts of the published speed points")
    parser.add_argument("--write", action="store_true", help="replace the counts block in README.md")
    args = parser.parse_args(argv)
    data = load_dataset()
    if args.write:
        write_readme(data)
    else:
        print(counts_block(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
