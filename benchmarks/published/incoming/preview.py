"""Measured vs predicted for the points of incoming/*.yaml, with the speed model as shipped (data/speed/fitted.yaml applied).

    PYTHONPATH=. python benchmarks/published/incoming/preview.py [amd.yaml ...] [--also-source dstack]

A preview before the lead merges a file into speed_points.yaml and reruns benchmarks/speed_fit.py: these are in-sample
predictions of a fit that never saw the new points (so for new sources they are out-of-source already), at full
simulation size (benchmarks/speed_predict.py, MAX_SIM_REQUESTS).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from benchmarks.published.incoming.check import merged  # noqa: E402
from benchmarks.published.schema import Dataset  # noqa: E402
from benchmarks.speed_predict import predict_point  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--also-source", action="append", default=[], help="also show points whose source_id starts with this")
    args = ap.parse_args()
    files = [HERE / f for f in args.files] or sorted(HERE.glob("*.yaml"))
    data = Dataset.model_validate(merged(files))
    new_ids = {p["id"] for f in files for p in (yaml.safe_load(f.read_text(encoding="utf-8")) or {}).get("points") or []}
    rows, errs = [], {}
    for p in data.points:
        if p.id not in new_ids and not any(p.source_id.startswith(s) for s in args.also_source):
            continue
        pr = predict_point(p)
        measured = p.metrics.value(p.primary_metric)
        pred = pr.values.get(p.primary_metric)
        ok = pred is not None and math.isfinite(pred) and pred > 0
        err = pred / measured - 1 if ok else None
        if err is not None:
            errs.setdefault(p.source_id, []).append(abs(err))
        rows.append((p.id, p.engine, p.mode, p.primary_metric, measured, pred if ok else None, err, pr.reason))
    print("| point | engine | mode | metric | measured | predicted | error |")
    print("|---|---|---|---|---:|---:|---:|")
    for pid, eng, mode, metric, m, pred, err, reason in rows:
        ptxt = f"{pred:.4g}" if pred is not None else f"({reason or 'no value'})"
        etxt = f"{err:+.1%}" if err is not None else "-"
        print(f"| {pid} | {eng} | {mode} | {metric} | {m:.4g} | {ptxt} | {etxt} |")
    print()
    print("| source | points | median abs. error |")
    print("|---|---:|---:|")
    for s, e in errs.items():
        print(f"| {s} | {len(e)} | {statistics.median(e):.1%} |")
    allv = [x for e in errs.values() for x in e]
    if allv:
        print(f"| all | {len(allv)} | {statistics.median(allv):.1%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
