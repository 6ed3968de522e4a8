"""Prospective grading: predict a batch of published points gathered after the profile was frozen, then grade.

    PYTHONPATH=src:. python benchmarks/speed_prospective.py predict benchmarks/published/prospective/batch1.yaml
        # -> batch1_predictions.json beside it: every point through advise() with the shipped (frozen) profile,
        #    stamped with the profile's sha256; commit this BEFORE any refit
    PYTHONPATH=src:. python benchmarks/speed_prospective.py grade benchmarks/published/prospective/batch1_predictions.json [--write]
        # -> median |error| overall, datacenter engines, without MoE, gpt-oss; by engine, GPU, metric, model family;
        #    the 90% band's coverage; --write puts the figures and the prospective band into data/speed/fitted.yaml;
        #    several prediction files are pooled (the band then comes from all of them); --markdown: the docs tables
    PYTHONPATH=src:. python benchmarks/speed_prospective.py aic benchmarks/published/prospective/batch1_predictions.json \\
        benchmarks/published/prospective/batch1_aiconfigurator.json     # aiconfigurator beside us on the points it models

The protocol (issue 20 item 5): the hash in data/speed/fitted.yaml names the coefficients; `predict` refuses to run
when the shipped profile's hash is not the one frozen (``/work``-independent: the hash is recomputed from the file).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import yaml

from benchmarks.published.schema import load_dataset
from benchmarks.speed_fit import FITTED, band_90, canonical_hash
from benchmarks.speed_predict import engine_of, predict_point, use_dataset

DATACENTER = ("vllm", "sglang", "trtllm")


def shipped_hash() -> tuple[str, str | None]:
    """(sha256 recomputed from data/speed/fitted.yaml's coefficients, the sha256 the file says it was frozen as)."""
    data = yaml.safe_load(FITTED.read_text())
    return canonical_hash(data["engines"]), data.get("frozen_sha256")


def predict(batch: Path) -> Path:
    recomputed, frozen = shipped_hash()
    if recomputed != frozen:
        raise SystemExit(f"data/speed/fitted.yaml's coefficients hash to {recomputed}, not the frozen {frozen}: refusing to grade")
    rows = []
    dataset = load_dataset(batch)
    use_dataset(dataset)
    for p in dataset.points:
        pred = predict_point(p)
        v = pred.values.get(p.primary_metric)
        measured = p.metrics.value(p.primary_metric)
        rows.append({"id": p.id, "source_id": p.source_id, "engine": engine_of(p), "engine_version": p.engine_version, "gpu": p.gpu,
                     "model": p.catalog_model, "model_family": _family(p.catalog_model), "moe": _moe(p.catalog_model),
                     "mode": p.mode, "metric": p.primary_metric, "measured": measured, "predicted": v,
                     "error": (v / measured - 1) if (v and measured and math.isfinite(v)) else None,
                     "all_predicted": pred.values, "reason": pred.reason, "refused_by_plan": pred.refused,
                     "band_90": _shipped_band(engine_of(p)), "doubt": p.doubt,
                     "asked": {k: (str(x) if not isinstance(x, (int, float, str, bool, type(None))) else x) for k, x in pred.asked.items()}})
    out = batch.with_name(batch.stem + "_predictions.json")
    out.write_text(json.dumps({"profile_sha256": frozen, "predicted_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                               "batch": str(batch), "command": f"python benchmarks/speed_prospective.py predict {batch}",
                               "points": rows}, indent=1))
    n = sum(r["error"] is not None for r in rows)
    print(f"{n} of {len(rows)} points predicted with profile {frozen[:12]}; wrote {out}")
    return out


def _family(name: str | None) -> str:
    """The catalog's model family (``Qwen3``, ``gpt-oss``, ``Llama 3.1`` ...) of a catalog model."""
    if not name:
        return "not in catalog"
    from infer_advisor._paths import shipped

    models = shipped("data") / "models"
    index = json.loads((models / "_index.json").read_text())
    table = index.get("names", index) if isinstance(index, dict) else {}
    entry = (table.get(name) or table.get(name.lower())) if isinstance(table, dict) else None
    if entry and (models / entry).exists():
        return json.loads((models / entry).read_text()).get("family") or name
    return name


def _shipped_band(engine: str) -> list[float] | None:
    fe = yaml.safe_load(FITTED.read_text())["engines"].get(engine) or {}
    return fe.get("band_90")


def _moe(name: str | None) -> bool:
    if not name:
        return False
    from infer_advisor.model_facts import resolve_model

    try:
        return resolve_model(name, source="catalog").num_experts > 0
    except Exception:  # noqa: BLE001
        return False


def _stats(rows) -> dict:
    errs = [abs(r["error"]) for r in rows if r["error"] is not None]
    if not errs:
        return {"points": 0}
    errs.sort()
    return {"points": len(errs), "median_abs_error": round(statistics.median(errs), 4),
            "p90_abs_error": round(errs[min(len(errs) - 1, math.ceil(0.9 * (len(errs) - 1)))], 4)}


def grade(pred_files: list[Path], write: bool, frozen_file: Path | None = None) -> dict:
    """Grade one batch's predictions, or several pooled (each graded with the profile frozen before it was read)."""
    datas = [json.loads(f.read_text()) for f in pred_files]
    for f, d in zip(pred_files, datas):
        d["name"] = f.stem.removesuffix("_predictions")
        _backfill_doubt(d)
    rows = [dict(r, batch=d["name"], profile_sha256=d["profile_sha256"]) for d in datas for r in d["points"] if r["error"] is not None]
    fitted = yaml.safe_load(FITTED.read_text())
    shas = [d["profile_sha256"] for d in datas]
    out = {"profile_sha256": shas[0] if len(shas) == 1 else shas, "predictions": ", ".join(map(str, pred_files)),
           "graded_points": len(rows), "ungraded_points": sum(len(d["points"]) for d in datas) - len(rows),
           "sources": len({r["source_id"] for r in rows}),
           "overall": _stats(rows), "datacenter": _stats([r for r in rows if r["engine"] in DATACENTER]),
           "without_moe": _stats([r for r in rows if not r["moe"]]), "moe": _stats([r for r in rows if r["moe"]]),
           "gpt_oss": _stats([r for r in rows if "gpt-oss" in (r["model"] or "")]),
           # secondary (pre-registered for batch 2): the same without the points whose source figure carries a `doubt`
           "without_doubt": _stats([r for r in rows if not r.get("doubt")]),
           "without_doubt_datacenter": _stats([r for r in rows if not r.get("doubt") and r["engine"] in DATACENTER]),
           "without_doubt_without_moe": _stats([r for r in rows if not r.get("doubt") and not r["moe"]]),
           # the plan refused the setup (infeasible) but still gave figures: graded with them, counted here
           "refused_by_plan_but_predicted": sum(1 for r in rows if r.get("refused_by_plan")),
           "not_predicted": [{"id": r["id"], "reason": r["reason"]} for d in datas for r in d["points"] if r["error"] is None]}
    for key in ("batch", "engine", "gpu", "metric", "model_family", "mode"):
        groups = defaultdict(list)
        for r in rows:
            groups[r[key]].append(r)
        out[f"by_{key}"] = {k: _stats(v) for k, v in sorted(groups.items())}
    frozen = yaml.safe_load(frozen_file.read_text()) if frozen_file else fitted
    for d in datas:
        if frozen.get("frozen_sha256") != d["profile_sha256"] and not all(r.get("band_90") for r in d["points"] if r["error"] is not None):
            print(f"note: some of {d['name']}'s predictions carry no band and {frozen_file or FITTED} is not the profile "
                  f"{d['profile_sha256'][:12]} that made them (pass --frozen-fitted): those points are left out of the "
                  f"frozen band's coverage", file=sys.stderr)
    frozen_bands = {d["profile_sha256"]: frozen for d in datas if frozen.get("frozen_sha256") == d["profile_sha256"]}
    out["frozen_band_coverage"] = _coverage(rows, frozen_bands)
    out["band_choice"] = choose_band(rows)
    out["prospective_band_coverage_leave_one_source_out"] = out["band_choice"]["held_out_coverage"]
    out["band_90"] = out["band_choice"]["band"]
    print(json.dumps({k: v for k, v in out.items() if not k.startswith("by_")}, indent=1))
    for key in ("by_batch", "by_engine", "by_gpu", "by_metric", "by_model_family"):
        print(key, json.dumps(out[key]))
    if write:
        _write_prospective(fitted, rows, out)
    return out


def _backfill_doubt(data: dict) -> None:
    """Predictions made before ``doubt`` was recorded with them: read it from the batch file they name."""
    if all("doubt" in r for r in data["points"]):
        return
    doubts = {p.id: p.doubt for p in load_dataset(Path(data["batch"])).points}
    for r in data["points"]:
        r.setdefault("doubt", doubts.get(r["id"]))


def _coverage(rows, frozen_by_sha: dict) -> dict:
    """How many prospective points fell inside the band the frozen profile shipped when it predicted them: the band
    recorded with each prediction, else the engine's band in that profile's fitted.yaml (``frozen_by_sha``)."""
    inside = total = 0
    for r in rows:
        frozen = frozen_by_sha.get(r["profile_sha256"]) or {"engines": {}}
        band = r.get("band_90") or (frozen["engines"].get(r["engine"]) or {}).get("band_90")
        if not band:
            continue
        total += 1
        ratio = 1 / (1 + r["error"])
        inside += band[0] <= ratio <= band[1]
    return {"points_with_a_band": total, "inside": inside, "coverage": round(inside / total, 4) if total else None}


TAILS = (0.05, 0.04, 0.03, 0.025, 0.02, 0.015, 0.01, 0.0)  # the band's tails tried, narrowest band first
TARGET_COVERAGE = 0.90  # a "90% band" must cover 90% of points it was not drawn from (issue 20: 85-95%)


def _band_loso(rows, tail: float = 0.05) -> dict:
    """The prospective band's forecast coverage: for each source, the band from the other sources' errors, tested on it."""
    inside = 0
    for r in rows:
        lo, hi = band_90([x["error"] for x in rows if x["source_id"] != r["source_id"]], tail) or (0.0, math.inf)
        inside += lo <= 1 / (1 + r["error"]) <= hi
    return {"points": len(rows), "inside": inside, "coverage": round(inside / len(rows), 4) if rows else None}


def choose_band(rows) -> dict:
    """The narrowest band (tails from ``TAILS``) whose coverage of each source, drawn from the other sources' errors,
    reaches ``TARGET_COVERAGE``; the widest tried if none does. Drawn from every source's errors for shipping.

    The 5th-95th percentile of the pooled errors covers 90% of those same errors by construction but less of a source
    it did not see (errors cluster by source: one page's setup or one engine release), so the tails widen until the
    held-out coverage is what the band claims."""
    tried = []
    for tail in TAILS:
        cov = _band_loso(rows, tail)
        tried.append({"tail": tail, "band": band_90([r["error"] for r in rows], tail), "held_out_coverage": cov})
        if cov["coverage"] is not None and cov["coverage"] >= TARGET_COVERAGE:
            break
    chosen = tried[-1]
    return {**chosen, "target": TARGET_COVERAGE, "tried": [{"tail": t["tail"], "band": t["band"],
                                                            "coverage": t["held_out_coverage"]["coverage"]} for t in tried]}


def _newest(shas):
    """The profile that predicted the newest batch (the last file graded)."""
    return shas[-1] if isinstance(shas, list) else shas


def _write_prospective(fitted, rows, out) -> None:
    """The prospective figures (per engine with >= 8 points, else all points) and the all-points band into fitted.yaml."""
    overall_band = out["band_90"]
    tail, cover = out["band_choice"]["tail"], out["band_choice"]["held_out_coverage"]["coverage"]
    batches = ", ".join(f"{b} {s['points']}" for b, s in out["by_batch"].items())
    fitted["prospective"] = {k: out[k] for k in ("profile_sha256", "predictions", "graded_points", "sources", "overall", "datacenter",
                                                  "without_moe", "gpt_oss", "frozen_band_coverage", "by_batch")}
    fitted["prospective"]["band_held_out_coverage"] = out["band_choice"]["held_out_coverage"]
    for key, fe in fitted["engines"].items():
        engine = key.split("@")[0]
        mine = [r for r in rows if r["engine"] == engine]
        use = mine if len(mine) >= 8 else rows
        st = _stats(use)
        fe.update({"prospective_scope": f"published {engine}" if len(mine) >= 8 else f"published (all engines; {len(mine)} {engine})",
                   "prospective_batches": len(out["by_batch"]),
                   "prospective_profile_sha256": _newest(out["profile_sha256"]),
                   "prospective_points": st["points"], "prospective_median_abs_error": st["median_abs_error"],
                   "prospective_p90_abs_error": st["p90_abs_error"],
                   # one band from all prospective points, its tails chosen to cover 90% of sources held out (choose_band)
                   "band_90": list(overall_band) if overall_band else None,  # a copy each: no YAML aliases
                   "band_from": f"prospective errors on all {len(rows)} points ({batches}), tails {tail:g}/{1 - tail:g}: "
                                f"covered {cover:.0%} of the points of each source when drawn without it"})
    header = "".join(line + "\n" for line in FITTED.read_text().splitlines() if line.startswith("#"))
    FITTED.write_text(header + yaml.safe_dump(fitted, sort_keys=False, width=200))
    print(f"wrote the prospective figures into {FITTED}")


def markdown(per_batch: dict[str, dict]) -> str:
    """docs/accuracy.md's prospective tables: one row per engine / GPU / metric / model family / load, the batches side
    by side (points, median and p90 |error| of each batch's own frozen profile)."""
    names = list(per_batch)
    cell = lambda st: f"{st['points']} | {st['median_abs_error']:.1%} | {st['p90_abs_error']:.1%}" if st and st.get("points") else "- | - | -"  # noqa: E731
    lines = []
    head = " | ".join(f"{n} points | median \\|error\\| | p90" for n in names)
    for key, label in (("overall", "all"), ("datacenter", "vLLM, SGLang, TensorRT-LLM"), ("without_moe", "without MoE models (dense)"),
                       ("moe", "MoE models"), ("gpt_oss", "gpt-oss"), ("without_doubt", "all, without points marked `doubt`"),
                       ("without_doubt_without_moe", "dense, without `doubt`")):
        if key == "overall":
            lines += ["| | " + head + " |", "|---|" + "---:|" * (3 * len(names))]
        lines.append(f"| {label} | " + " | ".join(cell(per_batch[n][key]) for n in names) + " |")
    for key in ("by_engine", "by_gpu", "by_metric", "by_model_family", "by_mode"):
        groups = sorted({g for n in names for g in per_batch[n][key]})
        lines += ["", f"| {key[3:].replace('_', ' ')} | " + head + " |", "|---|" + "---:|" * (3 * len(names))]
        lines += [f"| {g} | " + " | ".join(cell(per_batch[n][key].get(g)) for n in names) + " |" for g in groups]
    return "\n".join(lines) + "\n"


def side_by_side(pred_file: Path, aic_file: Path) -> dict:
    """Our frozen-profile error beside aiconfigurator's on the points of a batch it modelled (its primary metric)."""
    ours = {r["id"]: r for r in json.loads(pred_file.read_text())["points"] if r["error"] is not None}
    aic_report = json.loads(aic_file.read_text())
    aic = [a for a in aic_report["points"] if a.get("modelled") and a.get("primary_error") is not None]
    both = [(a, ours[a["id"]]) for a in aic if a["id"] in ours]
    med = lambda xs: round(statistics.median(abs(x) for x in xs), 4) if xs else None  # noqa: E731
    out = {"modelled_by_aiconfigurator": len(aic), "also_predicted_by_us": len(both),
           "aiconfigurator_median_abs_error": med([a["primary_error"] for a, _ in both]),
           "ours_median_abs_error": med([o["error"] for _, o in both])}
    pair = lambda sub: {"points": len(sub), "aiconfigurator": med([a["primary_error"] for a, _ in sub]),  # noqa: E731
                        "ours": med([o["error"] for _, o in sub])}
    for how in sorted({a.get("comparison") for a, _ in both}):
        out[how] = pair([(a, o) for a, o in both if a.get("comparison") == how])
    swept = [a for a, _ in both if "primary_error_ignoring_kv_warning" in a]
    out["best-over-batch-sizes_ignoring_kv_warning"] = {"points": len(swept), "aiconfigurator": med(
        [a["primary_error_ignoring_kv_warning"] for a in swept])}
    out["moe"] = pair([(a, o) for a, o in both if o.get("moe")])
    out["dense"] = pair([(a, o) for a, o in both if not o.get("moe")])
    out["by_engine"] = {e: pair([(a, o) for a, o in both if a["engine"] == e]) for e in sorted({a["engine"] for a, _ in both})}
    out["not_modelled_by_aiconfigurator"] = aic_report["summary"].get("not_modelled_reasons")
    out["points"] = [{"id": a["id"], "engine": a["engine"], "gpu": a["gpu"], "metric": a["primary_metric"], "moe": o.get("moe"),
                      "layout": (a.get("how_asked") or {}).get("layout"),
                      "aiconfigurator": a["primary_error"], "ours": round(o["error"], 4)} for a, o in both]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["predict", "grade", "aic"])
    ap.add_argument("file", type=Path, nargs="+", help="predict: one batch; grade: one or more *_predictions.json (pooled).")
    ap.add_argument("--write", action="store_true", help="grade: write the figures into data/speed/fitted.yaml.")
    ap.add_argument("--json", type=Path, help="grade: also write the full grade as JSON here.")
    ap.add_argument("--markdown", type=Path, help="grade: the prospective tables, each batch beside the others (docs/accuracy.md).")
    ap.add_argument("--frozen-fitted", type=Path, help="grade: the frozen profile's fitted.yaml (git show SHA:...), for its band.")
    args = ap.parse_args()
    if args.what == "aic":  # aic PREDICTIONS AICONFIGURATOR_JSON
        print(json.dumps(side_by_side(args.file[0], args.file[1]), indent=1))
        return 0
    if args.what == "predict":
        for f in args.file:
            predict(f)
        return 0
    result = grade(args.file, args.write, args.frozen_fitted)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    if args.markdown:
        per = {f.stem.removesuffix("_predictions"): grade([f], False, args.frozen_fitted) for f in args.file}
        if len(args.file) > 1:
            per["pooled"] = result
        args.markdown.write_text(markdown(per))
        print(f"wrote {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
