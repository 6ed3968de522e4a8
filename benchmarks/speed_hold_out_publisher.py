"""Hold one publisher's points out of the speed fit, refit the engines they use, and predict them (a held-out check).

    PYTHONPATH=src:. python benchmarks/speed_hold_out_publisher.py gpustack --data benchmarks/published/prospective/batch1.yaml \
        --data benchmarks/published/prospective/batch2.yaml --out benchmarks/results/speed_hold_out_gpustack.json

Every source whose id starts with the given prefix is held out (one lab's pages share a method: leave-one-source-out
would keep its sibling pages in the fit). Same fit as ``speed_fit.py`` (priors, bounds, iterations); a report only,
never written into data/speed/fitted.yaml.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from benchmarks.published.schema import load_dataset
from benchmarks.speed_fit import ENGINE_PARAMS, _errors, fit_engine, prepare, profiles_of
from benchmarks.speed_predict import engine_of, use_dataset


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prefix", help="source_id prefix of the publisher to hold out (e.g. gpustack)")
    ap.add_argument("--data", action="append", default=[], help="extra point files (prospective batches)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    t0 = time.time()
    raw = list(load_dataset().points)
    for extra in args.data:
        ds = load_dataset(Path(extra))
        use_dataset(ds)
        raw += list(ds.points)
    pts = prepare(raw)
    held = [pt for pt in pts if pt.p.source_id.startswith(args.prefix)]
    kept = [pt for pt in pts if not pt.p.source_id.startswith(args.prefix)]
    rows = []
    for engine in sorted({engine_of(pt.p) for pt in held} & set(ENGINE_PARAMS)):
        coeffs = fit_engine(engine, [pt for pt in kept if engine_of(pt.p) == engine])
        mine = [pt for pt in held if engine_of(pt.p) == engine]
        errs = _errors(mine, profiles_of(engine, coeffs))
        rows += [{"id": pt.p.id, "engine": engine, "gpu": pt.p.gpu, "error": e} for pt, e in zip(mine, errs)]
        print(f"{engine}: {coeffs} ({time.time() - t0:.0f} s)", file=sys.stderr)
    errs = [abs(r["error"]) for r in rows if r["error"] is not None]
    out = {"held_out_prefix": args.prefix, "points": len(errs), "median_abs_error": round(statistics.median(errs), 4) if errs else None,
           "data": args.data, "rows": rows}
    args.out.write_text(json.dumps(out, indent=1))
    print(f"{len(errs)} held-out points, median |error| {out['median_abs_error']}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
