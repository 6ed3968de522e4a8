"""Run NVIDIA's aiconfigurator on the published speed points it can model; write aiconfigurator_results.json.

    python benchmarks/published/run_aiconfigurator.py              # all points (~10-20 min on 2 busy cores)
    python benchmarks/published/run_aiconfigurator.py --only ID ...

aiconfigurator 0.12.0 lives in a benchmark-only cached venv (tests/support/venvs.py,
``ensure_venv("aiconfigurator", [["aiconfigurator==0.12.0"]])``); it is never a project dependency. This
script runs in the project venv, decides per point whether aiconfigurator can model it (GPU system with
collected data, engine trtllm/vllm/sglang, a catalog model, a load pattern aiconfigurator estimates) and
re-runs itself inside the aiconfigurator venv (``--worker``) to call ``aiconfigurator.cli.api.cli_estimate``
once per point, timing each call. The worker runs inside a network namespace without interfaces
(``unshare -rn``) when the kernel allows it, which shows the estimate needs no network.

How each mode is asked (aiconfigurator's ``--estimate-mode``):
  static_batch        -> static, batch = the stated batch (all requests start together, no IFB)
  batch1_decode       -> static, batch 1
  prefill             -> static_ctx, batch = stated batch or 1
  closed_loop         -> agg (in-flight batching) with batch = the stated concurrency (capped by a stated
                         --max-running-requests / --max-num-seqs / max_batch_size)
  offline_throughput  -> agg at batch 64, 128, ..., 8192 (up to the request count or a stated cap) until one
                         does not fit (aiconfigurator's out-of-memory refusal or its over-the-KV-cache warning),
                         then the largest batch that fits is bisected to within 1/8; the best tokens/s among
                         the batches that fit is the prediction (the engine picks its own batch; the sources
                         do not state it); 8192 prompt tokens per step (ctx_tokens), the TensorRT-LLM and
                         SGLang default token budget
  open_loop           -> not modelled (a Poisson request rate has no single concurrency to pass)
Batch sizes are per attention-DP rank, as aiconfigurator counts them.
Layout: tp and pp as the point states. For MoE models the expert layout (moe_tp/moe_ep) and attention DP
come from the launch flags the point's notes and quote state, else the engine's default, marked inferred
(benchmarks/published/aic_layout.py). Weight formats: the point's quantization label, except a checkpoint
that ships its own quantization_config (gpt-oss MXFP4 experts, block-FP8 DeepSeek/MiniMax/GLM, ModelOpt
NVFP4), whose formats aiconfigurator reads itself. Each record's ``how_asked`` says which applied.
Models are passed as a directory holding the infer_advisor catalog's config.json of the point's
catalog_model, so aiconfigurator sees exactly the layer shapes the dataset names.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
RESULTS = HERE / "aiconfigurator_results.json"
AIC_REQUIREMENT = "aiconfigurator==0.12.0"

# infer_advisor GPU catalog name -> aiconfigurator system that has collected kernel data (0.12.0 ships
# systems/data for a100_sxm, h100_sxm, h200_sxm, b200_sxm, b300_sxm, gb200, gb300, l40s, rtx_pro_6000_server,
# b60; its h100_pcie, a100_pcie, l4 and a30 folders are empty). The RTX PRO 6000 counts only where the source
# names the Server Edition (the system aiconfigurator measured).
SYSTEMS = {"A100-80GB": "a100_sxm", "H100-80GB": "h100_sxm", "H200": "h200_sxm", "B200": "b200_sxm", "L40S": "l40s",
           "RTX-PRO-6000-Blackwell": "rtx_pro_6000_server", "B300": "b300_sxm", "GB200": "gb200", "GB300": "gb300"}
# NIM serves Llama-3.3-70B FP8 TP2 through a TensorRT-LLM profile (the published table does not say which).
BACKENDS = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm", "nim": "trtllm"}
GEMM_QUANT = {"none": "bfloat16", "fp8": "fp8", "nvfp4": "nvfp4", "awq": "int4_wo", "gptq": "int4_wo"}
# The point's quantization label that means "the checkpoint as shipped" for each pre-quantized format its
# config.json names: aiconfigurator then reads the formats from that config itself (mxfp4 experts with bf16
# dense layers for gpt-oss, block-FP8 for DeepSeek/MiniMax/GLM, ModelOpt NVFP4).
# "none" is the dataset's label for a checkpoint as shipped whatever its format (gpt-oss, DeepSeek-V4's FP4 experts).
SHIPPED = {"mxfp4": {"none"}, "fp8": {"fp8", "none"}, "MIXED_PRECISION": {"nvfp4", "none"}, "nvfp4": {"nvfp4", "none"},
           "NVFP4": {"nvfp4", "none"}}
OFFLINE_BATCHES = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
# Prompt tokens one in-flight-batching step may take in offline runs: TensorRT-LLM's default max_num_tokens
# and SGLang's default chunked_prefill_size are both 8192 (aiconfigurator's own default is one prompt, the ISL).
OFFLINE_CTX_TOKENS = 8192


# ----------------------------------------------------------------------------------------------- planning
def plan_job(point, config_dirs: dict[str, str]) -> tuple[dict | None, str | None]:
    """The cli_estimate arguments for one point, or the reason aiconfigurator cannot model it."""
    from benchmarks.published import aic_layout  # the worker runs this file in aiconfigurator's venv

    reason = _not_modelled(point)
    if reason:
        return None, reason
    model = _model_key(point, config_dirs)
    config = json.loads((Path(config_dirs[model]) / "config.json").read_text())
    args: dict = {
        "model_path": config_dirs[model],
        "system_name": SYSTEMS[point.gpu],
        "backend_name": BACKENDS[point.engine],
        "isl": max(1, round(point.input_tokens)),
        "osl": max(1, round(point.output_tokens)),
        "tp_size": point.tp,
        "pp_size": point.pp,
        "kvcache_quant_mode": "fp8" if point.kv_cache_dtype == "fp8" else "bfloat16",
    }
    notes = {}
    if "DeepseekV4ForCausalLM" in config.get("architectures", []) and point.kv_cache_dtype in (None, "auto"):
        # DeepSeek-V4's sparse attention keeps an FP8 KV cache in every engine (aiconfigurator forces the same).
        args["kvcache_quant_mode"] = "fp8"
        notes["kv_cache"] = "fp8: DeepSeek-V4's sparse attention runs on an FP8 KV cache (kv dtype not stated)"
    if model != point.catalog_model:
        notes["model"] = f"aiconfigurator's bundled config.json of the stated checkpoint {model}"
    shipped = aic_layout.checkpoint_quant(config)
    if shipped and point.quantization in SHIPPED.get(shipped, ()):
        notes["quant"] = f"checkpoint's own quantization_config ({shipped}): formats read by aiconfigurator"
    else:
        gemm = GEMM_QUANT[point.quantization]
        args["gemm_quant_mode"] = gemm
        if aic_layout.is_moe(config):
            args["moe_quant_mode"] = aic_layout.MOE_QUANT[gemm]
    if aic_layout.is_moe(config):
        try:
            layout = aic_layout.moe_layout(point)
        except ValueError as err:
            return None, f"MoE layout: {err}"
        notes["layout"] = layout.pop("how")
        args.update(layout)
        if point.dp != 1 and layout["moe_tp_size"] * layout["moe_ep_size"] != point.tp * point.dp:
            return None, "data-parallel replicas (aiconfigurator estimates one replica)"
    elif point.dp != 1:
        return None, "data-parallel replicas of a dense model (aiconfigurator estimates one replica)"
    cap, cap_flag = aic_layout.engine_cap(point)
    if cap:
        notes["engine_cap"] = f"running requests capped at {cap} ({cap_flag})"
    # aiconfigurator's batch_size is per attention-DP rank (its global batch is batch_size x attention_dp_size,
    # sdk/backends/base_backend.py); SGLang splits --max-running-requests over the DP ranks the same way.
    per_rank = lambda n: max(1, -(-n // args.get("attention_dp_size", 1)))  # noqa: E731
    sweep = None
    if point.mode in ("static_batch", "batch1_decode"):
        args.update(mode="static", batch_size=per_rank(point.batch or 1))
    elif point.mode == "prefill":
        args.update(mode="static_ctx", batch_size=per_rank(point.batch or 1), osl=1)
    elif point.mode == "closed_loop":
        args.update(mode="agg", batch_size=per_rank(min(point.concurrency, cap or point.concurrency)))
    else:  # offline_throughput
        top = per_rank(min(point.num_requests, cap or point.num_requests))
        sweep = [b for b in OFFLINE_BATCHES if b <= top] + ([top] if cap and top not in OFFLINE_BATCHES else [])
        sweep = sweep or [top]
        args.update(mode="agg", ctx_tokens=max(args["isl"], OFFLINE_CTX_TOKENS))
    return {"id": point.id, "args": args, "batch_sweep": sweep, "notes": notes}, None


def _model_key(point, config_dirs: dict[str, str]) -> str:
    """The stated checkpoint where aiconfigurator bundles its config and our catalog maps it to another, else the catalog's."""
    ckpt = point.weights_checkpoint
    return ckpt if ckpt and ckpt != point.catalog_model and ckpt in config_dirs else point.catalog_model


def _not_modelled(point) -> str | None:
    """Why aiconfigurator cannot be asked about this point at all (before any call), or None."""
    if point.engine not in BACKENDS:
        return f"engine {point.engine!r} is not an aiconfigurator backend (trtllm, vllm, sglang)"
    system = SYSTEMS.get(point.gpu)
    if system is None:
        return f"no aiconfigurator system with collected data for GPU {point.gpu!r}"
    if system == "rtx_pro_6000_server" and "server" not in point.gpu_as_stated.lower():
        return f"no aiconfigurator system for {point.gpu_as_stated!r} (it has data for the Server Edition only)"
    if not point.model_in_catalog:
        return f"model {point.model!r} is not in the infer_advisor catalog (no config.json to pass)"
    if point.quantization not in GEMM_QUANT:
        return f"quantization {point.quantization!r} has no aiconfigurator GEMM mode"
    if point.mode == "open_loop":
        return "open-loop (Poisson request rate) serving: aiconfigurator estimates a fixed batch/concurrency"
    return None


def catalog_config_dirs(points, root: Path) -> dict[str, str]:
    """One directory per catalog model with its config.json (aiconfigurator accepts a local model path)."""
    from infer_advisor.model_facts.catalog import find_entry

    dirs = {}
    for name in sorted({p.catalog_model for p in points if p.catalog_model}):
        entry = find_entry(name)
        target = root / name.replace("/", "--")
        target.mkdir(parents=True, exist_ok=True)
        (target / "config.json").write_text(json.dumps(entry.config), encoding="utf-8")
        dirs[name] = str(target)
    return dirs


def bundled_config_dirs(points, bundled: Path | None, root: Path) -> dict[str, str]:
    """A directory per stated checkpoint that our catalog maps to another config and aiconfigurator ships a config of
    (``aiconfigurator_core/model_configs/<org>--<name>_config.json``, with its ``hf_quant_config.json`` if any)."""
    dirs = {}
    for p in points:
        ckpt = p.weights_checkpoint
        if not bundled or not ckpt or ckpt == p.catalog_model or ckpt in dirs:
            continue
        stem = ckpt.replace("/", "--")
        source = bundled / f"{stem}_config.json"
        if source.is_file():
            target = root / stem
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / "config.json")
            quant = bundled / f"{stem}_hf_quant_config.json"
            if quant.is_file():
                shutil.copyfile(quant, target / "hf_quant_config.json")
            dirs[ckpt] = str(target)
    return dirs


def _bundled_configs(py: Path) -> Path | None:
    code = "import aiconfigurator_core, pathlib; print(pathlib.Path(aiconfigurator_core.__file__).parent / 'model_configs')"
    out = subprocess.run([str(py), "-c", code], capture_output=True, text=True).stdout.strip()
    return Path(out) if out and Path(out).is_dir() else None


# ----------------------------------------------------------------------------------------------- worker
def worker(jobs_path: str, out_path: str) -> None:
    """Runs inside the aiconfigurator venv: one cli_estimate call per job (or per batch of a sweep)."""
    import logging

    logging.disable(logging.WARNING)
    t0 = time.perf_counter()
    from aiconfigurator.cli.api import cli_estimate

    import_s = time.perf_counter() - t0
    results = {}
    for job in json.loads(Path(jobs_path).read_text()):
        calls = []
        if not job["batch_sweep"]:
            calls.append(_estimate(cli_estimate, dict(job["args"])))
        else:
            _sweep(cli_estimate, job, calls)
        results[job["id"]] = calls
    Path(out_path).write_text(json.dumps({"import_seconds": round(import_s, 3), "results": results}, indent=1))


def _sweep(cli_estimate, job: dict, calls: list[dict]) -> None:
    """An offline point: batches up the sweep until one does not fit, then the largest that fits below it.

    "Does not fit" is aiconfigurator's own out-of-memory refusal or its warning that the batch exceeds the KV
    cache (the engine would queue the excess): the engine runs the largest batch that fits, so the gap between
    the last batch that fits and the first that does not is bisected to within 1/8.
    """
    call = lambda b: calls.append(_estimate(cli_estimate, {**job["args"], "batch_size": b})) or calls[-1]  # noqa: E731
    too_big = lambda c: c.get("kv_cache_warning") or "OOM" in c.get("error", "")  # noqa: E731
    fits = 0
    for batch in job["batch_sweep"]:
        c = call(batch)
        if "error" in c and not too_big(c):
            return  # aiconfigurator's refusal (no data, unsupported): larger batches are refused alike
        if not too_big(c):
            fits = batch
            continue
        hi = batch
        while hi - fits > max(1, fits // 8):
            mid = (fits + hi) // 2 if fits else hi // 2
            if too_big(call(mid)) or "error" in calls[-1]:
                hi = mid
            else:
                fits = mid
        return


def _estimate(cli_estimate, args: dict) -> dict:
    """One cli_estimate call: its figures, or aiconfigurator's own refusal (which is the result)."""
    start = time.perf_counter()
    try:
        r = cli_estimate(**args)
    except Exception as err:  # noqa: BLE001 - aiconfigurator's own refusal is the result
        return {
            "batch_size": args["batch_size"],
            "seconds": round(time.perf_counter() - start, 3),
            "error": f"{type(err).__name__}: {str(err).splitlines()[0][:300]}",
        }
    raw = r.raw
    return {
        "batch_size": args["batch_size"],
        "seconds": round(time.perf_counter() - start, 3),
        "ttft_ms": r.ttft,
        "tpot_ms": r.tpot,
        "request_latency_ms": _num(raw.get("request_latency")),
        "tokens_per_s": _num(raw.get("tokens/s")),
        "tokens_per_s_per_gpu": _num(raw.get("tokens/s/gpu")),
        "tokens_per_s_per_user": _num(raw.get("tokens/s/user")),
        "seq_per_s": _num(raw.get("seq/s")),
        "memory_gb": _num(raw.get("memory")),
        "backend_version": r.backend_version,
        "kv_cache_warning": getattr(r, "kv_cache_warning", None),
    }


def _num(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


# ----------------------------------------------------------------------------------------------- compare
def predictions(point, calls: list[dict], honour_kv_warning: bool = True) -> tuple[dict, dict | None]:
    """aiconfigurator's figure for each metric the point has, from the (best) successful call."""
    ok = [c for c in calls if "error" not in c]
    if not ok:
        return {}, None
    # A batch aiconfigurator itself says exceeds the KV cache would be queued by the engine: not a candidate
    # for the best of a sweep while a smaller batch fits.
    if honour_kv_warning:
        ok = [c for c in ok if not c.get("kv_cache_warning")] or ok
    best = max(ok, key=lambda c: c["tokens_per_s"] or 0.0) if len(ok) > 1 else ok[0]
    isl = max(1, round(point.input_tokens))
    osl = max(1, round(point.output_tokens))
    # In agg mode aiconfigurator's tokens/s counts the osl - 1 tokens of the generation phase (tokens/s =
    # seq/s x (osl - 1)); static mode counts osl. The benchmarks count every output token: seq/s x osl.
    tps = best["tokens_per_s"]
    per_output = best["seq_per_s"] * osl / tps if (tps and best["seq_per_s"]) else 1.0
    pred = {
        "ttft_s": best["ttft_ms"] / 1000.0,
        "tpot_s": best["tpot_ms"] / 1000.0 if best["tpot_ms"] else None,
        "itl_s": best["tpot_ms"] / 1000.0 if best["tpot_ms"] else None,
        "e2e_s": best["request_latency_ms"] / 1000.0 if best["request_latency_ms"] else None,
        "output_tokens_per_s": best["tokens_per_s"] * per_output if best["tokens_per_s"] else None,
        "output_tokens_per_s_per_gpu": best["tokens_per_s_per_gpu"] * per_output if best["tokens_per_s_per_gpu"] else None,
        "output_tokens_per_s_per_user": best["tokens_per_s_per_user"],
        "requests_per_s": best["seq_per_s"],
        "prefill_tokens_per_s": isl * (best["batch_size"] or 1) / (best["ttft_ms"] / 1000.0) if best["ttft_ms"] else None,
        # prompt and generated tokens per second: requests per second times the tokens of one request
        "total_tokens_per_s": best["seq_per_s"] * (isl + osl) if best["seq_per_s"] else None,
    }
    present = point.metrics.present()
    return {k: v for k, v in pred.items() if k in present and v}, best


def run(only: list[str] | None, out: Path, data_file: Path | None = None) -> dict:
    sys.path.insert(0, str(REPO))
    from benchmarks.published.schema import load_dataset
    from tests.support.venvs import ensure_venv

    data = load_dataset(data_file) if data_file else load_dataset()
    points = [p for p in data.points if not only or p.id in only]
    t0 = time.perf_counter()
    py = ensure_venv("aiconfigurator", [[AIC_REQUIREMENT]])
    venv_s = time.perf_counter() - t0
    tmp = Path(tempfile.mkdtemp(prefix="aic-points-"))
    try:
        dirs = catalog_config_dirs(points, tmp / "models")
        dirs.update(bundled_config_dirs(points, _bundled_configs(py), tmp / "bundled"))
        jobs, skipped = [], {}
        for p in points:
            job, reason = plan_job(p, dirs)
            (jobs.append(job) if job else skipped.__setitem__(p.id, reason))
        (tmp / "jobs.json").write_text(json.dumps(jobs))
        cmd = [str(py), str(Path(__file__).resolve()), "--worker", str(tmp / "jobs.json"), str(tmp / "out.json")]
        isolated = _can_unshare()
        if isolated:
            cmd = ["unshare", "-rn", *cmd]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
        t1 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        worker_s = time.perf_counter() - t1
        if proc.returncode != 0:
            raise SystemExit(f"aiconfigurator worker failed ({proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
        out_raw = json.loads((tmp / "out.json").read_text())
        version = subprocess.run(
            [str(py), "-c", "import importlib.metadata as m; print(m.version('aiconfigurator'))"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    records = []
    for p in points:
        rec: dict = {"id": p.id, "source_id": p.source_id, "engine": p.engine, "gpu": p.gpu, "mode": p.mode}
        if p.id in skipped:
            rec.update(modelled=False, reason=skipped[p.id])
            records.append(rec)
            continue
        job = next(j for j in jobs if j["id"] == p.id)
        calls = [_sanitize(c, dirs) for c in out_raw["results"][p.id]]
        pred, best = predictions(p, calls)
        args = {k: v for k, v in job["args"].items() if k != "model_path"}
        model = _model_key(p, dirs)
        args["model"] = f"{model} (" + ("catalog" if model == p.catalog_model else "aiconfigurator's bundled") + " config.json)"
        rec.update(
            modelled=bool(pred),
            aic_version=version,
            aic_system=job["args"]["system_name"],
            aic_backend=job["args"]["backend_name"],
            aic_backend_version=(best or {}).get("backend_version"),
            measured_engine_version=p.engine_version,
            api_call="aiconfigurator.cli.api.cli_estimate(**args)",
            args=args,
            batch_sweep=job["batch_sweep"],
            how_asked=job["notes"],
            calls=calls,
            call_seconds=[c["seconds"] for c in calls],
        )
        if p.engine == "nim":
            rec["assumption"] = "NIM's engine profile taken as TensorRT-LLM (not stated by the source)"
        if not pred:
            rec["reason"] = "aiconfigurator refused: " + "; ".join(c["error"] for c in calls if "error" in c)[:400]
        else:
            measured = {k: m.value for k, m in p.metrics.present().items()}
            rec["predicted"] = {k: round(v, 6) for k, v in pred.items()}
            rec["measured"] = measured
            rec["error"] = {k: round(pred[k] / measured[k] - 1.0, 4) for k in pred}
            rec["primary_metric"] = p.primary_metric
            rec["primary_error"] = rec["error"].get(p.primary_metric)
            rec["comparison"] = "best-over-batch-sizes" if job["batch_sweep"] else "same-setup"
            if job["batch_sweep"]:
                # Sensitivity: the best of the sweep had it counted batches aiconfigurator flags as over its KV cache.
                loose, _ = predictions(p, calls, honour_kv_warning=False)
                if p.primary_metric in loose:
                    rec["primary_error_ignoring_kv_warning"] = round(loose[p.primary_metric] / measured[p.primary_metric] - 1, 4)
        records.append(rec)

    modelled = [r for r in records if r.get("primary_error") is not None]
    same = [r for r in modelled if r["comparison"] == "same-setup"]
    swept = [r for r in modelled if r["comparison"] != "same-setup"]
    all_calls = [s for r in records for s in r.get("call_seconds", [])]
    summary = {
        "points": len(records),
        "modelled": len(modelled),
        "same_setup": len(same),
        "median_abs_primary_error": _median_abs([r["primary_error"] for r in same]),
        "median_abs_error_all_metrics": _median_abs([e for r in same for e in r["error"].values()]),
        "offline_best_over_batch_sizes": {
            "n": len(swept),
            "median_abs_primary_error": _median_abs([r["primary_error"] for r in swept]),
            "median_signed_primary_error": round(statistics.median(r["primary_error"] for r in swept), 4) if swept else None,
        },
        "by_engine": _group(same, "engine"),
        "by_mode": _group(same, "mode"),
        "by_source": _group(same, "source_id"),
        "not_modelled_reasons": _count_reasons(records),
    }
    report = {
        "generated_by": "PYTHONPATH=src:. python benchmarks/published/run_aiconfigurator.py"
        + (f" --data {_rel(data_file)} --out {_rel(out)}" if data_file else "") + (" --only ..." if only else ""),
        "aiconfigurator": {
            "requirement": AIC_REQUIREMENT,
            "version": version,
            "venv": "tests/support/venvs.py ensure_venv('aiconfigurator', [['aiconfigurator==0.12.0']])",
            "venv_ready_seconds": round(venv_s, 1),
            "worker_seconds": round(worker_s, 1),
            "import_seconds": out_raw["import_seconds"],
            "call_seconds_median": round(statistics.median(all_calls), 2) if all_calls else None,
            "call_seconds_max": round(max(all_calls), 2) if all_calls else None,
            "calls": len(all_calls),
            "network": (
                "not used: the worker ran in a network namespace without interfaces (unshare -rn)"
                if isolated
                else "not checked (unshare -rn unavailable); aiconfigurator reads its bundled data files"
            ),
            "error_definition": "predicted / measured - 1 for each metric the point reports",
            "headline": (
                "median |error| of the primary metric over 'same-setup' points (model, GPU, engine, TP, lengths and "
                "batch or concurrency all stated); offline points, whose running batch the sources do not state, are "
                "summarised apart as aiconfigurator's best throughput over batch sizes"
            ),
        },
        "summary": summary,
        "points": records,
    }
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return report


def _rel(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def _sanitize(call: dict, dirs: dict[str, str]) -> dict:
    """Error messages name the temporary model directory; write the catalog model name instead."""
    if "error" in call:
        for name, path in dirs.items():
            call = {**call, "error": call["error"].replace(path, name)}
    return call


def _median_abs(values):
    return round(statistics.median(abs(v) for v in values), 4) if values else None


def _group(records, key):
    groups: dict[str, list[float]] = {}
    for r in records:
        groups.setdefault(r[key], []).append(r["primary_error"])
    return {k: {"n": len(v), "median_abs_primary_error": _median_abs(v)} for k, v in sorted(groups.items())}


def _count_reasons(records):
    counts: dict[str, int] = {}
    for r in records:
        if not r.get("modelled"):
            key = _reason_key(r.get("reason", ""), r.get("aic_system"))
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _reason_key(reason: str, system: str | None = None) -> str:
    """A refusal without its per-point detail (paths, kernel keys), so that like refusals count together."""
    prefix = "aiconfigurator refused: "
    if not reason.startswith(prefix):
        return reason.split(" (")[0]
    msg = reason[len(prefix):]
    missing = re.search(r'(\w+) data missing for \w+ \{ quant: "(\w+)"', msg)
    if missing:
        return f"aiconfigurator: no {missing[1]} kernel data for {missing[2]} on {system}"
    for stop in (" {", " at /", " with the given", ". Supported", " for GPU", "; "):
        msg = msg.split(stop)[0]
    return "aiconfigurator: " + msg[:140]


def _can_unshare() -> bool:
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", help="point ids to run (default: all)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--data", type=Path, help="another point file (a prospective batch); default: speed_points.yaml")
    parser.add_argument("--worker", nargs=2, metavar=("JOBS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    report = run(args.only, args.out, args.data)
    s = report["summary"]
    print(
        f"aiconfigurator {report['aiconfigurator']['version']}: modelled {s['modelled']}/{s['points']} points "
        f"({s['same_setup']} with the same setup); median |error| of their primary metric {s['median_abs_primary_error']}; "
        f"offline best-over-batch: {s['offline_best_over_batch_sizes']}; "
        f"median call {report['aiconfigurator']['call_seconds_median']} s; wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
