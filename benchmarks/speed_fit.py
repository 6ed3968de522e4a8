"""Fit each engine's speed coefficients on published measurements, through the user's path, regularised to priors.

    PYTHONPATH=src:. python benchmarks/speed_fit.py --write            # fit, write data/speed/fitted.yaml (+ report)
    PYTHONPATH=src:. python benchmarks/speed_fit.py --loso --write     # and grade leave-one-source-out (slow)

Every prediction is ``advise()`` (``benchmarks/speed_predict.py``): the plan is made once per point, and the call
the plan made to ``estimate.speed.estimate_speed`` is recorded and replayed with trial coefficients (set through
``speed_data.trial_profiles``, read by the same ``engine_speed`` a user's plan reads). Open-loop points (``--rate``)
are re-planned whole.

What is fitted, per engine (few coefficients, each bounded and pulled toward its stated physical value by the prior
penalty of ``estimate/fit.py``): (1) the engine-wide kernel factors its points can identify (``ENGINE_PARAMS``) with
host terms at their priors; (2) per engine version range (``vllm@0.8`` ...: data/speed/engines.yaml ``versions``)
the host terms (per step, per sequence, per request) with (1) fixed. A range without points keeps its priors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import yaml

from benchmarks.published.schema import load_dataset
from benchmarks.speed_predict import engine_of, predict_point, use_dataset

import infer_advisor.estimate.speed as speed_module
from infer_advisor.estimate.fit import fit_coefficients, soft_l1, with_coefficients
from infer_advisor.estimate.speed_data import engine_speeds, profile_key, stated_profile, trial_profiles, version_row

ROOT = Path(__file__).resolve().parents[1]
FITTED = ROOT / "src" / "infer_advisor" / "data" / "speed" / "fitted.yaml"
REPORT = ROOT / "benchmarks" / "results" / "speed_fit.json"
ENGINE_PARAMS = {
    "vllm": ["attention_scale", "gemm_scale", "gddr_scale", "moe_scale", "amd_scale"],
    "trtllm": ["attention_scale", "prefill_attention_scale", "gemm_scale", "moe_scale"],
    "sglang": ["attention_scale", "gemm_scale", "amd_scale"],
    "tgi": ["gemm_scale", "amd_scale"],
    "llama.cpp": ["gemm_scale", "gddr_scale", "prefill_attention_scale", "amd_scale"],
    "mlc": ["gemm_scale"],
    "exllamav2": ["gemm_scale"],
    "ctranslate2": ["gemm_scale"],
}
HOST_PARAMS = ["step_overhead_s", "per_sequence_s", "request_overhead_s"]
ENGINE_ITERS, HOST_ITERS = 70, 40
LOSO_ITERS = (30, 15)  # leave-one-source-out refits: from the priors like the full fit, fewer iterations (time)
PARTIAL: Path | None = None  # where --loso writes its rows after each held-out source


class Point:
    """A published point with the plan's recorded speed call (replayed with trial coefficients)."""

    def __init__(self, p):
        self.p, self.call, self.version, self.pred = p, None, None, None

    @property
    def measured(self) -> float:
        return self.p.metrics.value(self.p.primary_metric)

    def predict(self) -> float | None:
        if self.p.mode == "open_loop" or self.call is None:
            v = predict_point(self.p).values.get(self.p.primary_metric)
        else:
            from benchmarks.speed_predict import _values

            args, kwargs = self.call
            v = _values(self.p, speed_module.estimate_speed(*args, **kwargs)).get(self.p.primary_metric)
        return v if v is not None and math.isfinite(v) and v > 0 else None

    def error(self) -> float | None:
        v = self.predict()
        return None if v is None else v / self.measured - 1


@contextmanager
def _recording(point: Point):
    original = speed_module.estimate_speed

    def record(*args, **kwargs):
        point.call = (args, kwargs)
        return original(*args, **kwargs)

    speed_module.estimate_speed = record
    try:
        yield
    finally:
        speed_module.estimate_speed = original


def prepare(points) -> list[Point]:
    """The points the user path predicts, each with its plan's recorded call and the engine version it planned."""
    out = []
    for p in points:
        pt = Point(p)
        with _recording(pt):
            pred = predict_point(p)
        if p.primary_metric not in pred.values:
            continue
        pt.pred = pred
        pt.version = pred.asked.get("engine_version")
        out.append(pt)
    return out


def key_of(pt: Point) -> str:
    engine = engine_of(pt.p)
    return profile_key(engine, version_row(engine_speeds(apply_fitted=False).engines[engine], pt.version))


def _trial(engine: str, wide: dict[str, float], host: dict[str, dict[str, float]]) -> dict:
    """Trial profiles of every version range of ``engine``: stated values, ``wide`` over all, ``host[key]`` over its range."""
    base = engine_speeds(apply_fitted=False).engines[engine]
    rows = base.versions or [None]
    out = {}
    for row in rows:
        key, prof = stated_profile(engine, row.first if row else None)
        out[key] = with_coefficients(with_coefficients(prof, wide), host.get(key, {}))
    return out


def _errors(pts: list[Point], profiles: dict) -> list[float | None]:
    with trial_profiles(profiles):
        return [pt.error() for pt in pts]


def fit_engine(engine: str, pts: list[Point], iters: tuple[int, int] = (ENGINE_ITERS, HOST_ITERS),
               start: dict[str, dict[str, float]] | None = None) -> dict[str, dict[str, float]]:
    """{profile key: coefficients}: the engine-wide factors under ``engine``, the host terms under each range key.

    ``start``: a fit to start from (its keys as returned here); the priors stay the stated values."""
    start = start or {}
    if not pts:
        return {}
    stated = engine_speeds(apply_fitted=False).engines[engine]
    names = [n for n in ENGINE_PARAMS.get(engine, []) if _identifiable(n, pts)]

    def wide_errors(trial_prof):
        return _errors(pts, _trial(engine, {n: getattr(trial_prof, n).value for n in names}, {}))

    wide = fit_coefficients(stated, names, wide_errors, iters=iters[0], start=start.get(engine)) if names else {}
    out = {engine: wide}
    for key in sorted({key_of(pt) for pt in pts}):
        group = [pt for pt in pts if key_of(pt) == key]
        _, row_prof = stated_profile(engine, next(pt.version for pt in group))
        row_prof = with_coefficients(row_prof, wide)
        host_names = [n for n in HOST_PARAMS if _identifiable(n, group)]

        def host_errors(trial_prof, key=key, group=group, host_names=host_names):
            return _errors(group, _trial(engine, wide, {key: {n: getattr(trial_prof, n).value for n in host_names}}))

        host = fit_coefficients(row_prof, host_names, host_errors, iters=iters[1], start=start.get(key)) if host_names else {}
        out[key] = {**out.get(key, {}), **host}  # an engine without version ranges keeps both under its name
    return out


def _identifiable(name: str, pts: list[Point]) -> bool:
    """Fit a coefficient only where some point depends on it (the prior holds it otherwise)."""
    from infer_advisor.hardware import lookup_gpu
    from infer_advisor.model_facts import resolve_model

    gpus = [lookup_gpu(g) for g in {pt.p.gpu for pt in pts}]
    if name == "gddr_scale":
        return any((g.memory_type or "").lower().startswith("gddr") for g in gpus)
    if name == "amd_scale":
        return any(g.vendor == "amd" for g in gpus)
    if name == "moe_scale":
        return any(resolve_model(m, source="catalog").num_experts > 0 for m in {pt.p.catalog_model for pt in pts})
    if name == "request_overhead_s":
        return any(pt.p.primary_metric in ("ttft_s", "e2e_s", "prefill_tokens_per_s") for pt in pts)
    return True


def profiles_of(engine: str, coeffs: dict[str, dict[str, float]]) -> dict:
    hosts = {k: v for k, v in coeffs.items() if k != engine}
    wide = {k: v for k, v in coeffs.get(engine, {}).items() if k not in HOST_PARAMS}
    if not engine_speeds(apply_fitted=False).engines[engine].versions:
        hosts[engine] = {k: v for k, v in coeffs.get(engine, {}).items() if k in HOST_PARAMS}
    return _trial(engine, wide, hosts)


def canonical_hash(engines: dict) -> str:
    """sha256 of the fitted coefficients only (keys sorted, values to 4 significant digits), so the hash names the model."""
    canon = {k: {n: float(f"{v:.4g}") for n, v in sorted(e["coefficients"].items())} for k, e in sorted(engines.items())}
    return hashlib.sha256(json.dumps(canon, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="Write data/speed/fitted.yaml and benchmarks/results/speed_fit.json.")
    ap.add_argument("--loso", action="store_true", help="Also grade leave-one-source-out (refits per held-out source).")
    ap.add_argument("--engines", default="", help="Comma-separated engines to fit (default: all with points).")
    ap.add_argument("--data", action="append", default=[], help="Extra point files (same schema) to fit on as well.")
    ap.add_argument("--reverse", action="store_true", help="--loso: hold the sources out in reverse order (a second process).")
    ap.add_argument("--coefficients-from", type=Path,
                    help="Take the full fit from this fitted.yaml instead of refitting (e.g. to grade it leave-one-source-out).")
    ap.add_argument("--refit", default="", help="With --coefficients-from: refit these engines (comma-separated), take the others from the file.")
    ap.add_argument("--start-from", type=Path, help="Start each engine's search from this fitted.yaml's coefficients (same priors and bounds).")
    ap.add_argument("--iters", default="", help="Nelder-Mead iterations 'engine-wide,host' (default 70,40).")
    ap.add_argument("--report", type=Path, help="Write the per-point report (JSON) here, without touching data/speed/fitted.yaml.")
    args = ap.parse_args()
    t0 = time.time()
    raw = list(load_dataset().points)
    for extra in args.data:
        ds = load_dataset(Path(extra))
        use_dataset(ds)
        raw += list(ds.points)
    pts = prepare(raw)
    engines = sorted({engine_of(pt.p) for pt in pts} & set(ENGINE_PARAMS))
    if args.engines:
        engines = [e for e in engines if e in args.engines.split(",")]
    by_engine = {e: [pt for pt in pts if engine_of(pt.p) == e] for e in engines}
    print(f"{len(pts)} points predictable through advise() ({time.time() - t0:.0f} s)", file=sys.stderr)
    full = {}
    given = yaml.safe_load(args.coefficients_from.read_text())["engines"] if args.coefficients_from else None
    refit = set(args.refit.split(",")) if args.refit else set()
    warm = yaml.safe_load(args.start_from.read_text())["engines"] if args.start_from else None
    iters = tuple(int(x) for x in args.iters.split(",")) if args.iters else (ENGINE_ITERS, HOST_ITERS)
    for e in engines:
        if given is not None and e not in refit:
            full[e] = {k: v["coefficients"] for k, v in given.items() if k.split("@")[0] == e}
            continue
        start = {k: v["coefficients"] for k, v in warm.items() if k.split("@")[0] == e} if warm else None
        full[e] = fit_engine(e, by_engine[e], iters=iters, start=start)
        print(f"  {e}: {full[e]} ({time.time() - t0:.0f} s)", file=sys.stderr)
    rows = _rows(pts, by_engine, full)
    if args.loso:
        global PARTIAL
        PARTIAL = args.report
        _loso(pts, by_engine, engines, rows, t0, full, args.reverse)
    summary = _summary(rows, by_engine, full)
    for k, s in summary.items():
        print(f"{k:16s} points {s['points']:3d} sources {s['sources']:2d} in-sample {s['in_sample_median_abs_error'] or 0:6.1%} "
              f"LOSO {s['loso_median_abs_error'] if s['loso_median_abs_error'] is not None else float('nan'):6.1%} {s['coefficients']}")
    overall = _overall(rows)
    print(json.dumps(overall))
    if args.report:
        args.report.write_text(json.dumps({"overall": overall, "engines": summary, "points": list(rows.values()), "data": args.data}, indent=1))
    if args.write:
        _write(summary, overall, rows, len(pts), len({pt.p.source_id for pt in pts}), args.data)
    return 0


def _rows(pts, by_engine, full) -> dict:
    rows = {}
    for e, group in by_engine.items():
        errs = _errors(group, profiles_of(e, full[e]))
        for pt, err in zip(group, errs):
            rows[pt.p.id] = {"id": pt.p.id, "engine": e, "key": key_of(pt), "source_id": pt.p.source_id, "gpu": pt.p.gpu,
                             "mode": pt.p.mode, "metric": pt.p.primary_metric, "measured": pt.measured,
                             "model": pt.p.catalog_model, "in_sample_error": math.nan if err is None else err,
                             "refused": pt.pred.refused}
    return rows


def _loso(pts, by_engine, engines, rows, t0, full, reverse: bool = False) -> None:
    """Refit each engine without one source (from the priors, as the full fit, with LOSO_ITERS iterations), predict that
    source. With ``--report`` the rows so far are written after every source (a long run can be read while it runs)."""
    for s in sorted({pt.p.source_id for pt in pts}, reverse=reverse):
        held = [pt for pt in pts if pt.p.source_id == s]
        for e in sorted({engine_of(pt.p) for pt in held} & set(engines)):
            train = [pt for pt in by_engine[e] if pt.p.source_id != s]
            coeffs = fit_engine(e, train, iters=LOSO_ITERS) if train else {}
            test = [pt for pt in held if engine_of(pt.p) == e]
            for pt, err in zip(test, _errors(test, profiles_of(e, coeffs))):
                rows[pt.p.id]["loso_error"] = math.nan if err is None else err
        print(f"  held out {s}: {len(held)} points ({time.time() - t0:.0f} s)", file=sys.stderr)
        if PARTIAL is not None:
            PARTIAL.write_text(json.dumps({"partial": True, "points": list(rows.values())}, indent=1))


def _med(xs):
    xs = [abs(x) for x in xs if x is not None and math.isfinite(x)]
    return statistics.median(xs) if xs else None


def _p90(xs):
    xs = sorted(abs(x) for x in xs if x is not None and math.isfinite(x))
    return xs[int(0.9 * (len(xs) - 1))] if xs else None


def _summary(rows, by_engine, full) -> dict:
    out = {}
    for e, group in by_engine.items():
        for key, coeffs in full[e].items():
            mine = [rows[pt.p.id] for pt in group if key in (e, rows[pt.p.id]["key"])]
            out[key] = {"points": len(mine), "sources": len({r["source_id"] for r in mine}), "coefficients": coeffs,
                        "band_90": band_90([r["in_sample_error"] for r in mine]),
                        "in_sample_median_abs_error": _med([r["in_sample_error"] for r in mine]),
                        "loso_median_abs_error": _med([r.get("loso_error") for r in mine]),
                        "loso_p90_abs_error": _p90([r.get("loso_error") for r in mine])}
    return out


def band_90(errors, tail: float = 0.05) -> list[float] | None:
    """The ``tail`` and ``1 - tail`` percentiles of measured / predicted (= 1 / (1 + error)); with the default 5th-95th,
    where the true figure falls 90% of the time if the errors to come are like these (``speed_prospective.choose_band``
    picks ``tail`` so that it does on sources held out)."""
    ratios = sorted(1 / (1 + e) for e in errors if e is not None and math.isfinite(e) and e > -1)
    if len(ratios) < 5:
        return None
    q = lambda f: ratios[min(len(ratios) - 1, max(0, round(f * (len(ratios) - 1))))]  # noqa: E731
    return [round(q(tail), 3), round(q(1 - tail), 3)]


def _overall(rows) -> dict:
    dc = [r for r in rows.values() if r["engine"] in ("vllm", "sglang", "trtllm")]
    return {"all_in_sample_median_abs_error": _med([r["in_sample_error"] for r in rows.values()]), "all_points": len(rows),
            "datacenter_in_sample_median_abs_error": _med([r["in_sample_error"] for r in dc]), "datacenter_points": len(dc),
            "all_loso_median_abs_error": _med([r.get("loso_error") for r in rows.values()]),
            "datacenter_loso_median_abs_error": _med([r.get("loso_error") for r in dc])}


def _write(summary, overall, rows, n_points, n_sources, extra=()) -> None:
    engines = {k: {"coefficients": s["coefficients"], "points": s["points"], "sources": s["sources"],
                   "loso_median_abs_error": _r(s["loso_median_abs_error"]), "loso_p90_abs_error": _r(s["loso_p90_abs_error"]),
                   "in_sample_median_abs_error": _r(s["in_sample_median_abs_error"]),
                   "band_90": s["band_90"], "band_from": "in-sample residuals at freeze" if s["band_90"] else None}
               for k, s in summary.items() if s["coefficients"]}
    fitted = {"generated_by": "benchmarks/speed_fit.py",
              "dataset": " + ".join(["benchmarks/published/speed_points.yaml", *extra])
                         + f" ({n_points} points predictable through advise(), {n_sources} sources)",
              "frozen_sha256": canonical_hash(engines), "frozen_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "engines": engines}
    FITTED.write_text("# Generated by benchmarks/speed_fit.py; do not edit by hand (rerun the script).\n"
                      "# frozen_sha256: sha256 of the canonical coefficients (benchmarks/speed_fit.py canonical_hash).\n"
                      + yaml.safe_dump(fitted, sort_keys=False, width=200))
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps({"overall": overall, "engines": summary, "points": list(rows.values())}, indent=1))
    print(f"wrote {FITTED} (sha256 {fitted['frozen_sha256']}) and {REPORT}")


def _r(v):
    return None if v is None else round(float(v), 4)


if __name__ == "__main__":
    raise SystemExit(main())
