"""Validate benchmarks/published/incoming/nvidia.yaml together with speed_points.yaml, and preview its points.

    PYTHONPATH=. python benchmarks/published/incoming/check_nv.py            # validate, then measured vs predicted
    PYTHONPATH=. python benchmarks/published/incoming/check_nv.py --no-predict

The incoming file holds only new ``sources`` and ``points`` (no schema_version/description). This script
concatenates them onto the shipped dataset and validates the whole with ``schema.Dataset`` (unique source and
point ids, every point's source present, no source without points), then applies the cross-checks of
tests/benchmarks/test_published_points.py: canonical catalog names for models and GPUs, the primary figure in
its quote, the load parameter of each mode. The preview predicts each new point with the shipped speed model
(data/speed/fitted.yaml applied), the way benchmarks/speed_fit.py does, so the numbers are in-sample for no
point: the fitted coefficients never saw these sources.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.published.schema import DATA_FILE, Dataset  # noqa: E402

INCOMING = HERE / "nvidia.yaml"


def _numbers(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", text)]


def load_merged(path: Path = INCOMING) -> tuple[Dataset, set[str]]:
    """The shipped dataset with the incoming sources and points appended, validated; and the new point ids."""
    base = yaml.safe_load(DATA_FILE.read_text(encoding="utf-8"))
    new = yaml.safe_load(path.read_text(encoding="utf-8"))
    extra = set(new) - {"sources", "points"}
    if extra:
        raise ValueError(f"{path}: only 'sources' and 'points' belong here, not {sorted(extra)}")
    merged = dict(base)
    merged["sources"] = base["sources"] + new["sources"]
    merged["points"] = base["points"] + new["points"]
    return Dataset.model_validate(merged), {p["id"] for p in new["points"]}


def cross_check(data: Dataset, ids: set[str]) -> list[str]:
    """The checks of tests/benchmarks/test_published_points.py, on the new points; a list of problems."""
    from infer_advisor.hardware.catalog import find_entry as find_gpu
    from infer_advisor.model_facts.catalog import find_entry as find_model

    problems = []
    for p in data.points:
        if p.id not in ids:
            continue
        if not data.source(p.source_id).url.startswith("https://"):
            problems.append(f"{p.id}: source url")
        if p.model_in_catalog:
            entry = find_model(p.catalog_model)
            if entry is None or entry.name != p.catalog_model:
                problems.append(f"{p.id}: catalog_model {p.catalog_model} is not a canonical catalog name")
        elif find_model(p.model) is not None:
            problems.append(f"{p.id}: {p.model} is in the catalog; set catalog_model")
        if p.gpu_in_catalog:
            entry = find_gpu(p.gpu)
            if entry is None or entry.name != p.gpu:
                problems.append(f"{p.id}: GPU {p.gpu} is not a canonical catalog name")
        elif find_gpu(p.gpu) is not None or not (p.gpu_nearest_catalog and find_gpu(p.gpu_nearest_catalog)):
            problems.append(f"{p.id}: GPU {p.gpu} marked missing but found, or no nearest catalog GPU")
        value = p.metrics.value(p.primary_metric)
        found = _numbers(p.quote)
        if not any(abs(c - n) <= 1e-6 * max(1.0, abs(n)) for c in (value, value * 1000.0) for n in found):
            problems.append(f"{p.id}: {p.primary_metric}={value} not in its quote")
        need = {"static_batch": p.batch, "closed_loop": p.concurrency, "open_loop": p.request_rate,
                "offline_throughput": p.num_requests}
        if p.mode in need and need[p.mode] is None:
            problems.append(f"{p.id}: mode {p.mode} without its load parameter")
    return problems


def preview(data: Dataset, ids: set[str]) -> list[dict]:
    """Measured vs predicted primary metric of each new point, with the shipped (fitted) coefficients."""
    from benchmarks.speed_predict import predict_point

    rows = []
    for p in data.points:
        if p.id not in ids:
            continue
        measured = p.metrics.value(p.primary_metric)
        try:
            pred = predict_point(p)
            value, reason = pred.values.get(p.primary_metric), pred.reason
        except Exception as err:  # a point the model cannot take: report it, do not stop the preview
            value, reason = None, f"{type(err).__name__}: {err}"
        ok = value is not None and math.isfinite(value) and value > 0
        rows.append({"id": p.id, "engine": p.engine, "gpu": p.gpu, "mode": p.mode, "metric": p.primary_metric,
                     "measured": measured, "predicted": value if ok else None,
                     "error": value / measured - 1 if ok else None, "reason": None if ok else (reason or "no value")})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-predict", action="store_true", help="Validate only.")
    ap.add_argument("--file", type=Path, default=INCOMING)
    args = ap.parse_args()
    data, ids = load_merged(args.file)
    problems = cross_check(data, ids)
    new_sources = {p.source_id for p in data.points if p.id in ids}
    print(f"valid: {len(data.points)} points from {len(data.sources)} sources after merging "
          f"({len(ids)} new points from {len(new_sources)} new sources)")
    for line in problems:
        print("PROBLEM:", line)
    if problems:
        return 1
    if args.no_predict:
        return 0
    rows = preview(data, ids)
    print("\n| point | engine | GPU | mode | metric | measured | predicted | error |")
    print("|---|---|---|---|---|---:|---:|---:|")
    for r in rows:
        pred = f"{r['predicted']:.4g}" if r["predicted"] is not None else f"- ({r['reason']})"
        err = f"{r['error']:+.0%}" if r["error"] is not None else "-"
        print(f"| {r['id']} | {r['engine']} | {r['gpu']} | {r['mode']} | {r['metric']} | {r['measured']:.4g} | {pred} | {err} |")
    errs = [abs(r["error"]) for r in rows if r["error"] is not None]
    if errs:
        errs.sort()
        print(f"\npredicted {len(errs)} of {len(rows)}; median |error| {errs[len(errs) // 2]:.1%}")
        for engine in sorted({r["engine"] for r in rows}):
            e = sorted(abs(r["error"]) for r in rows if r["engine"] == engine and r["error"] is not None)
            if e:
                print(f"  {engine}: {len(e)} points, median |error| {e[len(e) // 2]:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
