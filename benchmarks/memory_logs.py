"""Predicted KV-cache capacity against published vLLM start-up logs (benchmarks/published/startup_logs.yaml).

    python benchmarks/memory_logs.py                 # the table for docs/accuracy.md and the median |error|
    python benchmarks/memory_logs.py --json out.json # the same figures as JSON

Columns, per log: the KV tokens it printed (or that follow from its figures, marked *derived*); the plan's figure
before issue 11 (read from benchmarks/published/startup_logs_before.json, made by `--baseline` against the code of
commit 8cc5fc1: datasheet memory, one fixed vLLM profile); the figure now with the log's engine version given
(`estimate_for_log`: the log's model, GPU, TP, max_model_len, gpu_memory_utilization, the version's memory profile);
after `calibrate --from-log` on the same log; and after calibrating from a *different* log of the same engine
version x GPU (its `calibrate_from`), the honest test of what a calibration carries over. † marks a log that was a
source of a figure in data/engine_memory.yaml (its `informed_profile`): the summary also gives the median over the
held-out logs, which informed nothing.

`--baseline OUT.json` runs only old-API calls (estimate_memory with the engines.yaml profile and the catalog's
datasheet memory), so it can be pointed at an older checkout: PYTHONPATH=/tmp/base/src python ... --baseline F.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).parent
LOGS = HERE / "published" / "startup_logs.yaml"
BEFORE = HERE / "published" / "startup_logs_before.json"
PROSPECTIVE = HERE / "published" / "startup_logs_prospective.json"  # issue-23 logs, predicted by the frozen code of 745df12
# Each batch of new logs and the file with its prospective predictions (made by the code of the named commit, before any
# change made in response to that batch): batch -> (file, frozen commit).
BATCHES = {
    "issue-23": (PROSPECTIVE, "745df12"),
    "issue-23b": (HERE / "published" / "startup_logs_prospective_b.json", "6a41b14"),
    "issue-23c": (HERE / "published" / "startup_logs_prospective_c.json", "9cdd0b4"),
    "issue-23d": (HERE / "published" / "startup_logs_prospective_d.json", "82219fd"),  # main with memfix4's frozen model (3d175d7)
    "issue-23e": (HERE / "published" / "startup_logs_prospective_e.json", "98c58dc"),  # main with memfix5's frozen model (c2c32fe)
    "issue-23f": (HERE / "published" / "startup_logs_prospective_f.json", "47da8f9"),  # main with memfix6's frozen model (42d2016)
    "issue-23g": (HERE / "published" / "startup_logs_prospective_g.json", "00740e9"),  # main with memfix7's frozen model (e4b1228)
    "issue-23h": (HERE / "published" / "startup_logs_prospective_h.json", "1163d6b"),  # main with memfix8's frozen model (27eebad)
    "issue-23i": (HERE / "published" / "startup_logs_prospective_i.json", "6c3b7eb"),  # main with memfix9's frozen model (8541455)
    "issue-23j": (HERE / "published" / "startup_logs_prospective_j.json", "5006226"),  # main with memfix10's frozen model (5a8dfa1)
    "issue-23k": (HERE / "published" / "startup_logs_prospective_k.json", "172b7db"),  # main with memfix11's frozen model (4a731a0)
    "issue-23l": (HERE / "published" / "startup_logs_prospective_l.json", "dda3d1e"),  # main with memfix12's frozen model (21bb131)
    "issue-23m": (HERE / "published" / "startup_logs_prospective_m.json", "52f5148"),  # main with memfix13's frozen model (f6a25a0)
    "issue-23n": (HERE / "published" / "startup_logs_prospective_n.json", "84961fe"),  # main with memfix14's frozen model (84961fe)
    "issue-23o": (HERE / "published" / "startup_logs_prospective_o.json", "21208f9"),  # main with memfix15's frozen model (d0335dd)
    "issue-23p": (HERE / "published" / "startup_logs_prospective_p.json", "eda7ca3"),  # main's code as merged (memfix15's model)
    "issue-23q": (HERE / "published" / "startup_logs_prospective_q.json", "25dc7a8"),  # main with memfix16's frozen model (cc289cc)
    "issue-23r": (HERE / "published" / "startup_logs_prospective_r.json", "95b6e72"),  # main with memfix18's frozen model (7f2cd29)
    "issue-23s": (HERE / "published" / "startup_logs_prospective_s.json", "8224577"),  # main with memfix19's frozen model (f092eec)
    "issue-23t": (HERE / "published" / "startup_logs_prospective_t.json", "43dc411"),  # main as merged for memfreeze20 (memfix20's model)
}
# The label each later batch's rows carry in the new-logs table and the prefix of its own summary lines.
BATCH_LABELS = {"issue-23b": ("batch 2", "batch2_"), "issue-23c": ("batch 3", "batch3_"), "issue-23d": ("batch 4", "batch4_"),
                "issue-23e": ("batch 5", "batch5_"), "issue-23f": ("batch 6", "batch6_"),
                "issue-23g": ("batch 7", "batch7_"), "issue-23h": ("batch 8", "batch8_"),
                "issue-23i": ("batch 9", "batch9_"), "issue-23j": ("batch 10", "batch10_"),
                "issue-23k": ("batch 11", "batch11_"), "issue-23l": ("batch 12", "batch12_"),
                "issue-23m": ("batch 13", "batch13_"), "issue-23n": ("batch 14", "batch14_"),
                "issue-23o": ("batch 15", "batch15_"), "issue-23p": ("batch 16", "batch16_"),
                "issue-23q": ("batch 17", "batch17_"), "issue-23r": ("batch 18", "batch18_"),
                "issue-23s": ("batch 19", "batch19_"), "issue-23t": ("batch 20", "batch20_")}
GIB = 2**30


def entries() -> list[dict]:
    return yaml.safe_load(LOGS.read_text(encoding="utf-8"))["logs"]


def model_ref(entry: dict, by_id: dict[str, dict], folder: Path) -> str:
    """The catalog name, or a folder with the transcribed config.json for a model outside the catalog."""
    cfg = entry.get("config") or (by_id[entry["config_from"]].get("config") if entry.get("config_from") else None)
    if cfg is None:
        return entry["model"]
    target = folder / entry["model"].replace("/", "--")
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text(json.dumps(cfg["fields"]))
    return str(target)


def startup_log(entry: dict):
    """The StartupLog the entry's published figures amount to (the type `calibrate --from-log` parses logs into)."""
    try:
        from infer_advisor.engines.startup_log import StartupLog
    except ImportError:  # older code: calibrate/ (issue 19 phase 1), or the code frozen for the prospective figures (745df12)
        try:
            from infer_advisor.engines.startup_log import StartupLog
        except ImportError:
            from infer_advisor.estimate.startup_log import StartupLog

    m = entry["measured"]

    def gib(key: str) -> int | None:
        return round(m[key] * GIB) if m.get(key) is not None else None

    return StartupLog(
        engine=entry["engine"], engine_version=entry["engine_version"], tp=entry["tp"], pp=1, max_model_len=entry["max_model_len"],
        dtype=entry["dtype"], quantization=None if entry["quantization"] == "none" else entry["quantization"],
        gpu_memory_utilization=entry["gpu_memory_utilization"], total_gpu_memory_bytes=gib("total_gpu_memory_gib"),
        weights_bytes=gib("weights_gib"), non_torch_bytes=gib("non_torch_gib"), activation_bytes=gib("activation_gib"),
        cuda_graph_bytes=gib("cuda_graph_gib"), kv_cache_bytes=gib("kv_cache_gib"), kv_cache_tokens=m["kv_cache_tokens"],
        max_concurrency=m.get("max_concurrency"), max_num_batched_tokens=entry.get("max_num_batched_tokens"),
        max_num_seqs=entry.get("max_num_seqs"), kv_cache_dtype=entry.get("kv_cache_dtype"),
        **_optional(StartupLog, speculative_config=entry.get("speculative_config"), prefix_caching=entry.get("prefix_caching"),
                    language_model_only=entry.get("language_model_only"), sampler=entry.get("sampler"),
                    linear_kernel=entry.get("linear_kernel"), enforce_eager=entry.get("enforce_eager"),
                    quantization_group_size=entry.get("quantization_group_size")),
    )


def _optional(log_type, **fields) -> dict:
    """Fields the StartupLog of the code on the path has (the code frozen for a batch's prospective figures may lack them)."""
    return {k: v for k, v in fields.items() if k in log_type.model_fields and v is not None}


def _calibration_module():
    try:  # after the issue-19 move
        from infer_advisor.calibrate import memory as memory_calibration
    except ImportError:  # the code frozen for the prospective figures (commit 745df12)
        from infer_advisor.estimate import memory_calibration
    return memory_calibration


def version_for(entry: dict) -> str:
    """The engine version whose memory profile predicts the entry (`profile_version` where none covers its own).

    An entry whose note says its `profile_version` stands in because no profile covered its version ("there is no
    SGLang memory profile before 0.5 here") takes its own version once a range covers it (memfix15: SGLang 0.3-0.4.5).
    """
    pinned, own = entry.get("profile_version"), entry["engine_version"]
    if pinned and "memory profile before" in str(entry.get("version_note", "")):
        from infer_advisor.engines.memory import memory_profiles

        if any(p.covers(str(own)) for p in memory_profiles().get(entry["engine"], ())):
            return str(own)
    return pinned or own


def estimate(entry: dict, model: str, calibration=None):
    """The plan's MemoryEstimate for the setup the entry describes (the path `calibrate --from-log` compares)."""
    est = _calibration_module().estimate_for_log(
        startup_log(entry), model=model, gpu=entry["gpu"], engine_version=version_for(entry), calibration=calibration
    )
    return est


def engine_tokens(est) -> int:
    """The token figure the engine prints: the new field where this code has it, else the plan's capacity."""
    return getattr(est, "engine_kv_cache_tokens", None) or est.kv_cache_tokens


def predict(entry: dict, model: str, calibration=None) -> int:
    return engine_tokens(estimate(entry, model, calibration))


def calibration_from(entry: dict, model: str):
    return _calibration_module().fit_memory_calibration(
        startup_log(entry), source=entry["id"], model=model, gpu=entry["gpu"], engine_version=version_for(entry)
    )


def prediction_record(entry: dict, model: str) -> dict:
    """What the code on the path predicts for one entry: engine-printed tokens, KV GiB and weights GiB per GPU, outcome."""
    est = estimate(entry, model)
    one_request = getattr(est, "engine_starts", None)
    if one_request is None:  # older code: the engine refuses when one max_model_len request does not fit
        one_request = est.max_concurrency >= 1
    return {
        "kv_cache_tokens": engine_tokens(est), "effective_kv_cache_tokens": est.kv_cache_tokens,
        "kv_cache_gib": round(est.kv_cache_bytes_per_gpu / GIB, 3), "weights_gib": round(est.weights_bytes_per_gpu / GIB, 3),
        "outcome": "starts" if one_request else "refused",
    }


def prospective(out: Path, batch: str = "issue-23") -> int:
    """Predict every entry of one batch (`collected: <batch>`) with the code on PYTHONPATH and write the figures (run once,
    frozen code)."""
    by_id = {e["id"]: e for e in entries()}
    preds = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, e in by_id.items():
            if e.get("collected") == batch:
                preds[i] = prediction_record(e, model_ref(e, by_id, Path(tmp)))
    out.write_text(json.dumps({"batch": batch, "code_commit": _head_commit(), "predictions": preds}, indent=2) + "\n")
    print(f"wrote {out} ({len(preds)} predictions)")
    return 0


def _head_commit() -> str | None:
    """The checkout's commit, recorded with a batch's prospective figures (None outside a git checkout)."""
    import subprocess

    done = subprocess.run(["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or None


def baseline(entry: dict, model: str) -> int:
    """What `plan` predicted before issue 11 (old API only): datasheet memory, engines.yaml's one vLLM profile."""
    from infer_advisor.engines.profiles import engine_profile
    from infer_advisor.estimate.memory import estimate_memory
    from infer_advisor.hardware import lookup_gpu
    from infer_advisor.model_facts import resolve_model

    est = estimate_memory(
        resolve_model(model), gpu_memory_bytes=lookup_gpu(entry["gpu"]).memory_bytes, engine=engine_profile(entry["engine"]),
        quantization=entry["quantization"], dtype=entry["dtype"], tp=entry["tp"], context=entry["max_model_len"],
        memory_fraction=entry["gpu_memory_utilization"], max_num_batched_tokens=entry.get("max_num_batched_tokens"),
    )
    return est.kv_cache_tokens


def err(pred: float | None, meas: float | None) -> float | None:
    return None if pred is None or not meas or meas <= 0 else (pred - meas) / meas * 100


def rows() -> list[dict]:
    before = json.loads(BEFORE.read_text()) if BEFORE.exists() else {"predictions": {}}
    out = []
    by_id = {e["id"]: e for e in entries()}
    with tempfile.TemporaryDirectory() as tmp:
        for e in by_id.values():
            if e.get("collected") in BATCHES:
                continue  # graded apart: new_rows()
            model = model_ref(e, by_id, Path(tmp))
            meas = e["measured"]["kv_cache_tokens"]
            row = {
                "id": e["id"], "source": e["source"], "version": e["engine_version"], "gpu": e["gpu"], "tp": e["tp"], "model": e["model"],
                "max_model_len": e["max_model_len"], "util": e["gpu_memory_utilization"], "measured": meas, "derived": bool(e.get("derived")),
                "informed_profile": bool(e.get("informed_profile")),
                "before": before["predictions"].get(e["id"]), "after": predict(e, model),
                "same_setup": predict(e, model, calibration_from(e, model)),
            }
            others = []
            for other_id in e.get("calibrate_from", []):
                other = by_id[other_id]
                others.append((other_id, predict(e, model, calibration_from(other, model_ref(other, by_id, Path(tmp))))))
            row["other_setup"] = others
            out.append(row)
    return out


def _full_attention(model: str) -> bool:
    from infer_advisor.model_facts import resolve_model

    facts = resolve_model(model, source="auto")
    return set(facts.layer_counts or {"full": 1}) == {"full"} and not facts.sliding_window


def new_rows() -> list[dict]:
    """The issue-23 logs: the frozen code's prospective figures (one file per batch, BATCHES) and this code's."""
    frozen = {}
    for path, sha in BATCHES.values():
        if path.exists():
            frozen.update({i: {**p, "frozen": sha} for i, p in json.loads(path.read_text())["predictions"].items()})
    by_id = {e["id"]: e for e in entries()}
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for e in by_id.values():
            if e.get("collected") not in BATCHES or e["id"] not in frozen:
                continue
            model = model_ref(e, by_id, Path(tmp))
            m = e["measured"]
            out.append({
                "id": e["id"], "batch": e["collected"], "source": e["source"], "engine": e["engine"], "version": e["engine_version"], "gpu": e["gpu"],
                "tp": e["tp"], "model": e["model"], "measured_tokens": m["kv_cache_tokens"], "measured_gib": m.get("kv_cache_gib"),
                "measured_weights_gib": m.get("weights_gib"), "outcome": e.get("outcome", "starts"),
                "weights_only": bool(e.get("weights_only")), "informed_profile": bool(e.get("informed_profile")),
                "pre_release": bool(e.get("pre_release")), "full_attention": _full_attention(model), "prospective": frozen[e["id"]], "now": prediction_record(e, model),
            })
    return out


def new_summary(rs: list[dict]) -> dict:
    kv = [r for r in rs if r["measured_tokens"] > 0]
    gib = [r for r in rs if r["measured_gib"] and r["measured_gib"] > 0]
    wts = [r for r in rs if r["measured_weights_gib"]]
    out: dict = {"new_logs": len(rs), "new_logs_with_kv_tokens": len(kv)}
    for when in ("prospective", "now"):
        out[f"median_abs_error_new_tokens_{when}_pct"] = median_abs([err(r[when]["kv_cache_tokens"], r["measured_tokens"]) for r in kv])
        out[f"median_abs_error_new_tokens_{when}_full_attention_pct"] = median_abs(
            [err(r[when]["kv_cache_tokens"], r["measured_tokens"]) for r in kv if r["full_attention"]])
        out[f"median_abs_error_new_gib_{when}_pct"] = median_abs([err(r[when]["kv_cache_gib"], r["measured_gib"]) for r in gib])
        out[f"max_abs_error_new_weights_{when}_pct"] = max((abs(err(r[when]["weights_gib"], r["measured_weights_gib"])) for r in wts), default=None)
        out[f"max_abs_error_new_weights_{when}_released_pct"] = max(  # a pre-release engine build (its entry says why) apart
            (abs(err(r[when]["weights_gib"], r["measured_weights_gib"])) for r in wts if not r.get("pre_release")), default=None)
        out[f"outcomes_right_{when}"] = sum(r[when]["outcome"] == r["outcome"] for r in rs if not r["weights_only"])
    out["full_attention_logs"] = sum(r["full_attention"] for r in kv)
    out["logs_with_weights"] = len(wts)
    return out


def new_table(rs: list[dict]) -> str:
    lines = [
        "| log | engine | GPU x TP | model | KV tokens logged | prospective (frozen code) | now | KV GiB logged: prospective / now | weights GiB logged: prospective / now | outcome: logged / prospective / now |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rs:
        t = r["measured_tokens"]
        p, n = r["prospective"], r["now"]

        def c(pred, meas):  # noqa: ANN001, ANN202
            e = err(pred, meas)
            return f"{pred:,}" if e is None else f"{pred:,} ({e:+.1f}%)"

        def g(pred, meas):  # noqa: ANN001, ANN202
            e = err(pred, meas)
            return f"{pred:.2f}" if e is None else f"{pred:.2f} ({e:+.1f}%)"

        tok = (f"{t:,}" if t else "-") + (f" ({BATCH_LABELS[r['batch']][0]})" if r["batch"] in BATCH_LABELS else "") + (" †" if r["informed_profile"] else "") + ("" if r["full_attention"] else " (hybrid/SWA)")
        gib = f"{r['measured_gib']}: {g(p['kv_cache_gib'], r['measured_gib'])} / {g(n['kv_cache_gib'], r['measured_gib'])}" if r["measured_gib"] is not None else "-"
        w = r["measured_weights_gib"]
        wt = f"{w}: {g(p['weights_gib'], w)} / {g(n['weights_gib'], w)}" if w else "-"
        lines.append(
            f"| [{r['id']}]({r['source']}) | {r['engine']} {r['version']} | {r['gpu']} x {r['tp']} | {r['model']} | {tok} | "
            f"{c(p['kv_cache_tokens'], t) if t else '-'} | {c(n['kv_cache_tokens'], t) if t else '-'} | {gib} | {wt} | "
            f"{r['outcome']} / {p['outcome']} / {n['outcome']} |"
        )
    return "\n".join(lines)


def median_abs(values: list[float | None]) -> float | None:
    vals = [abs(v) for v in values if v is not None]
    return statistics.median(vals) if vals else None


def table(rs: list[dict]) -> str:
    lines = [
        "| log | vLLM | GPU x TP | model | max_model_len / util | KV tokens logged | before | now, version given | calibrated, same log | calibrated from another setup |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rs:
        m = r["measured"]

        def cell(p):  # noqa: ANN001, ANN202
            return "-" if p is None else f"{p:,} ({err(p, m):+.1f}%)"

        other = "; ".join(f"{cell(p)} from `{oid}`" for oid, p in r["other_setup"]) or "-"
        logged = f"{m:,}" + (" *derived*" if r["derived"] else "") + (" †" if r["informed_profile"] else "")
        name = f"[{r['id']}]({r['source']})" if r["source"].startswith("http") else f"{r['id']} ({r['source']})"
        lines.append(
            f"| {name} | {r['version']} | {r['gpu']} x {r['tp']} | {r['model']} | {r['max_model_len']} / {r['util']} | "
            f"{logged} | {cell(r['before'])} | {cell(r['after'])} | {cell(r['same_setup'])} | {other} |"
        )
    return "\n".join(lines)


def summary(rs: list[dict]) -> dict[str, float | None]:
    other = [err(p, r["measured"]) for r in rs for _, p in r["other_setup"]]
    printed = [r for r in rs if not r["derived"]]
    held_out = [r for r in rs if not r["informed_profile"]]
    return {
        "logs": len(rs),
        "median_abs_error_before_pct": median_abs([err(r["before"], r["measured"]) for r in rs]),
        "median_abs_error_now_pct": median_abs([err(r["after"], r["measured"]) for r in rs]),
        "printed_logs": len(printed),
        "median_abs_error_before_printed_only_pct": median_abs([err(r["before"], r["measured"]) for r in printed]),
        "median_abs_error_now_printed_only_pct": median_abs([err(r["after"], r["measured"]) for r in printed]),
        "held_out_logs": len(held_out),
        "median_abs_error_before_held_out_pct": median_abs([err(r["before"], r["measured"]) for r in held_out]),
        "median_abs_error_now_held_out_pct": median_abs([err(r["after"], r["measured"]) for r in held_out]),
        "median_abs_error_calibrated_same_log_pct": median_abs([err(r["same_setup"], r["measured"]) for r in rs]),
        "median_abs_error_calibrated_other_setup_pct": median_abs(other),
        "calibrated_other_setup_pairs": len(other),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="also write the rows and the summary as JSON")
    ap.add_argument("--baseline", type=Path, help="write the old code's predictions (old API only) to this JSON file")
    ap.add_argument("--prospective", type=Path, help="write this code's predictions for one batch of new logs to this JSON file")
    ap.add_argument("--batch", default="issue-23", choices=list(BATCHES), help="the batch --prospective predicts")
    args = ap.parse_args(argv)
    if args.prospective:
        return prospective(args.prospective, args.batch)
    if args.baseline:
        by_id = {e["id"]: e for e in entries()}
        with tempfile.TemporaryDirectory() as tmp:
            preds = {i: baseline(e, model_ref(e, by_id, Path(tmp))) for i, e in by_id.items()}
        args.baseline.write_text(json.dumps({"predictions": preds}, indent=2) + "\n")
        print(f"wrote {args.baseline} ({len(preds)} predictions)")
        return 0
    rs = rows()
    print(table(rs))
    s = summary(rs)
    new = new_rows()
    print()
    print(new_table(new))
    s.update(new_summary(new))
    for batch, (_label, prefix) in BATCH_LABELS.items():
        s.update({f"{prefix}{k}": v for k, v in new_summary([r for r in new if r["batch"] == batch]).items()})
    print()
    for k, v in s.items():
        print(f"{k}: {v:.1f}" if isinstance(v, float) else f"{k}: {v}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rs, "new_rows": new, "summary": s}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
