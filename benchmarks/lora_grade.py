"""Grade the LoRA-aware plan against published measurements (benchmarks/published/lora_points.yaml).

    python benchmarks/lora_grade.py                  # both tables (markdown, for docs/lora.md)
    python benchmarks/lora_grade.py --json out.json  # the same figures as JSON

Every figure goes through ``advise()``, the path a user runs:

- throughput drop: the plan's aggregate output tokens/s at the entry's concurrency and mean lengths (a finite run of
  the source's prompts with its dataset's length spread where the entry names them: ``finite_run``), once without
  adapters and once with ``lora_adapters`` / ``max_lora_rank``; when fewer adapters are in use than GPU slots
  (``adapters_used``), a ``--lengths-file`` whose adapter column names only those. Pass: within 15 points of the
  published drop.
- KV capacity: the plan's engine-printed KV tokens for the log's model, GPU, version, max_model_len,
  gpu_memory_utilization, LoRA slots and, where the log states them, max_num_batched_tokens and max_num_seqs
  (``KV_SETTINGS``: every key a graded entry's ``settings`` may carry). Pass: within 5% of the log. ``plan_engine_version`` (when an entry has one)
  is the version the plan is asked for a run the plan cannot express otherwise (a V1 run forced with VLLM_USE_V1=1).

Nothing here was fitted to these points (lora_points.yaml says what was inferred for each setup).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).parent
POINTS = HERE / "published" / "lora_points.yaml"
DROP_POINTS_LIMIT = 15.0
KV_LIMIT_PCT = 5.0
# the keys of a graded start-up log's `settings` that predicted_kv passes to advise() (a stated key it did not pass
# would be graded as if the log had not stated it: max_num_seqs until session 9, lora10, retrospective)
KV_SETTINGS = frozenset({"max_model_len", "gpu_memory_utilization", "tp", "max_num_batched_tokens", "max_num_seqs",
                         "max_loras", "max_lora_rank"})


def points() -> dict:
    return yaml.safe_load(POINTS.read_text(encoding="utf-8"))


def _model(entry: dict, folder: Path) -> str:
    """The catalog name, or a folder holding the entry's transcribed config.json for a model outside the catalog."""
    cfg = entry.get("config")
    if not cfg:
        return entry["predict"]["model"] if "predict" in entry else entry["model"]
    target = folder / entry["id"]
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text(json.dumps(cfg["fields"]))
    return str(target)


def _mix_file(folder: Path, name: str, used: int, inp: int, out: int) -> Path:
    """A --lengths-file naming ``used`` adapters, equally often, at the entry's mean lengths."""
    path = folder / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps({"input_tokens": inp, "output_tokens": out, "adapter": f"a{k % used}"})
                              for k in range(max(used, 1) * 8)) + "\n")
    return path


def finite_run(p: dict) -> dict:
    """A point whose source ran a fixed number of prompts from a named dataset (``requests``, ``length_distribution``)
    is asked as the speed grade asks one (benchmarks/speed_predict.py): a finite run of that many requests with the
    dataset's length spread (published/length_shapes.yaml), throughput over the whole run; else a steady state."""
    if not p.get("requests") or not p.get("length_distribution"):
        return {}
    shape = yaml.safe_load((HERE / "published" / "length_shapes.yaml").read_text(encoding="utf-8"))[p["length_distribution"]]
    return dict(requests=p["requests"], input_distribution=shape["input_distribution"],
                output_distribution=shape["output_distribution"], context=int(shape["max_request_tokens"]))


def predicted_drop(entry: dict, folder: Path) -> dict:
    from infer_advisor.plan import advise

    p = entry["predict"]
    common = dict(model=p["model"], gpu=p["gpu"], engine="vllm", engine_version=p["engine_version"], concurrency=p["concurrency"],
                  input_tokens=p["input_tokens"], output_tokens=p["output_tokens"], max_num_seqs=p.get("max_num_seqs"), **finite_run(p))
    base = advise(**common).performance
    extra = {}
    if p.get("adapters_used") and p["adapters_used"] < p["lora_adapters"]:
        extra["lengths_file"] = _mix_file(folder, entry["id"], p["adapters_used"], p["input_tokens"], p["output_tokens"])
    lora = advise(**common, lora_adapters=p["lora_adapters"], max_lora_rank=p["max_lora_rank"], **extra).performance
    drop = (1 - lora.output_tokens_per_s_aggregate / base.output_tokens_per_s_aggregate) * 100
    return {"base_tokens_per_s": round(base.output_tokens_per_s_aggregate, 1), "lora_tokens_per_s": round(lora.output_tokens_per_s_aggregate, 1),
            "lora_step_s": lora.decode_step_terms_s.get("lora"), "predicted_drop_pct": round(drop, 1)}


def predicted_kv(entry: dict, folder: Path) -> dict:
    from infer_advisor.plan import advise

    s = entry["settings"]
    if set(s) - KV_SETTINGS:
        raise ValueError(f"{entry['id']}: settings {sorted(set(s) - KV_SETTINGS)} are stated but not passed to the plan")
    plan = advise(model=_model(entry, folder), gpu=entry["gpu"], engine="vllm", engine_version=entry.get("plan_engine_version") or entry["engine_version"].split()[0],
                  context=s["max_model_len"], gpu_memory_utilization=s["gpu_memory_utilization"], tensor_parallel_size=s["tp"],
                  max_num_batched_tokens=s.get("max_num_batched_tokens"), max_num_seqs=s.get("max_num_seqs"),
                  lora_adapters=s["max_loras"], max_lora_rank=s["max_lora_rank"], speed=False)
    m = plan.memory
    tokens = m.engine_kv_cache_tokens or m.kv_cache_tokens
    return {"predicted_kv_tokens": tokens, "lora_gib": round((m.overhead_bytes_per_gpu.get("lora", 0)
                                                             + m.outside_budget_bytes_per_gpu.get("lora", 0)) / 2**30, 3)}


def grade() -> dict:
    data = points()
    drops, logs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for e in data["throughput_drops"]:
            row = {"id": e["id"], "url": e.get("url"), "published_drop_pct": e.get("drop_pct"), "graded": bool(e.get("graded"))}
            if e.get("graded"):
                row.update(predicted_drop(e, folder))
                row["points_off"] = round(row["predicted_drop_pct"] - e["drop_pct"], 1)
                row["pass"] = abs(row["points_off"]) <= DROP_POINTS_LIMIT
            else:
                row["not_graded"] = e.get("not_graded")
            drops.append(row)
        for e in data["startup_logs_with_lora"]:
            row = {"id": e["id"], "graded": bool(e.get("graded"))}
            if e.get("graded"):
                meas = e["measured"]["kv_cache_tokens"]
                row.update(predicted_kv(e, folder), measured_kv_tokens=meas, gpu=e["gpu"],
                           version=e["engine_version"].split(" (")[0])
                row["error_pct"] = round((row["predicted_kv_tokens"] - meas) / meas * 100, 2)
                row["pass"] = abs(row["error_pct"]) <= KV_LIMIT_PCT
            else:
                row["not_graded"] = e.get("not_graded")
            logs.append(row)
    return {"throughput_drops": drops, "startup_logs": logs, "sglang_memory": [sglang_pool(e) for e in data.get("sglang_memory_logs", [])]}


def sglang_pool(entry: dict) -> dict:
    """The logged memory between SGLang's weights and the end of its memory pool, less the KV cache, against the LoRA
    pool estimate/lora.py sizes for the logged slots and rank (the same bytes a plan's ledger shows)."""
    from infer_advisor.estimate.lora import lora_bytes_per_gpu
    from infer_advisor.model_facts import resolve_model

    s, m = entry["settings"], entry["measured"]
    pool = lora_bytes_per_gpu(resolve_model(entry["model"]), slots=s["max_loras_per_batch"], rank=s["max_lora_rank"], tp=1, dtype_bytes=2)
    residual = m["avail_after_weights_gb"] - m["avail_after_memory_pool_gb"] - m["kv_k_gb"] - m["kv_v_gb"]
    return {"id": entry["id"], "predicted_lora_pool_gib": round(pool / 2**30, 3), "logged_pool_and_rest_gib": round(residual, 2)}


def markdown(res: dict) -> str:
    out = ["| point | published drop | predicted drop | points off | within 15 |", "|---|---|---|---|---|"]
    for r in res["throughput_drops"]:
        if r["graded"]:
            out.append(f"| {r['id']} | {r['published_drop_pct']}% | {r['predicted_drop_pct']}% | {r['points_off']:+} | "
                       f"{'yes' if r['pass'] else 'no'} |")
        else:
            out.append(f"| {r['id']} | {r['published_drop_pct']}% | not graded: {r['not_graded']} | | |")
    out += ["", "| log | GPU | vLLM | logged KV tokens | predicted | error | within 5% |", "|---|---|---|---|---|---|---|"]
    for r in res["startup_logs"]:
        if r["graded"]:
            out.append(f"| {r['id']} | {r['gpu']} | {r['version']} | {r['measured_kv_tokens']:,} | {r['predicted_kv_tokens']:,} | "
                       f"{r['error_pct']:+.2f}% | {'yes' if r['pass'] else 'no'} |")
        else:
            out.append(f"| {r['id']} | | | | not graded: {r['not_graded']} | | |")
    for r in res.get("sglang_memory", []):
        out += ["", f"SGLang LoRA pool ({r['id']}): predicted {r['predicted_lora_pool_gib']} GiB; the log leaves "
                    f"{r['logged_pool_and_rest_gib']} GiB for the pool and the request table"]
    graded_d = [r for r in res["throughput_drops"] if r["graded"]]
    graded_k = [r for r in res["startup_logs"] if r["graded"]]
    out += ["", f"throughput drops within {DROP_POINTS_LIMIT:g} points: {sum(r['pass'] for r in graded_d)} of {len(graded_d)} graded; "
                f"KV within {KV_LIMIT_PCT:g}%: {sum(r['pass'] for r in graded_k)} of {len(graded_k)} graded (5 logs wanted)"]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    res = grade()
    print(markdown(res))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
