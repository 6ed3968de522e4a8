"""Predict a published measurement through exactly the path a user runs: ``advise()`` (= ``plan --json``).

A point's setup becomes the keywords a user would pass (:func:`point_request`: model, ``--gpu GPU:N``, engine and
version, weights, dtype, KV dtype, TP/PP/replicas, prompt and output lengths, concurrency or ``--rate``), the plan
is made by :func:`infer_advisor.advise`, and the point's metrics are read off ``plan.performance`` (or, for an
open-loop point, ``plan.capacity.chosen``, what ``plan --rate`` prints). Nothing here computes a speed: memory, KV
capacity, the engine version's batch limits and the step model are the plan's own, so grading and users agree
(issue 20, finding 7). ``benchmarks/speed_fit.py`` fits through the same function with trial coefficients
(``speed_data.trial_profiles``).

How each kind of measurement is asked (the user's nearest request; said in each prediction's ``asked``):
- ``batch1_decode`` / ``prefill``: ``--concurrency 1``; TTFT, time per output token, end-to-end as planned.
- ``static_batch`` (B requests start together) and ``closed_loop``: ``--concurrency B`` per replica.
- ``offline_throughput`` (N requests at once): ``--concurrency N`` (the engine runs its ``max_num_seqs`` at a time);
  with a dataset whose lengths spread (``published/length_shapes.yaml``: ShareGPT) also ``--requests N`` and its
  spreads, so the plan simulates that finite run to its last token (a closed loop of C clients over N requests too).
- ``open_loop`` (Poisson at R req/s): ``--rate R`` with the GPU, TP, PP and replicas pinned (median TTFT/ITL: the
  capacity report gives p50/p90/p99, so a mean is read at p50); its throughput as the benchmark divides it, over the
  whole run of ``num_requests`` (:func:`_finite_run_rate`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache

ENGINE_MAP = {"nim": "trtllm", "exllama": "exllamav2"}  # published engine -> the engine a user would plan
# Published quantization label -> the plan's --quantization value (data/formats.yaml)
QUANT_MAP = {
    "none": "none", "fp8": "fp8", "int8": "int8", "awq": "awq", "gptq": "gptq", "nvfp4": "nvfp4",
    "gguf-q4_0": "gguf-q4_0", "gguf-q4_k_m": "gguf-q4_k_m", "gguf-q8_0": "gguf-q8_0", "gguf-f16": "gguf-f16",
    "mlc-q4f16_1": "mlc-q4f16_1", "exl2-4bpw": "exl2", "exl2-8bpw": "exl2-8bpw", "uqff-q4": "isq-q4k",
    "uqff-q8": "isq-q8_0", "bnb-nf4": "bnb-nf4", "mxfp4": "auto", "mxfp4-experts": "auto",
}
# When a source states no engine version: the release in use at the source's date (GitHub release dates). Only the
# speed version range matters, so only the dates where a range starts are listed. An inference, said in `asked`.
RELEASES_BY_DATE = {
    "vllm": [("2024-09-04", "0.6.0"), ("2025-03-18", "0.8.0"), ("2025-10-02", "0.11.0")],
    "sglang": [("2024-12-04", "0.4.0")],
    "tgi": [("2024-04-12", "2.0.0")],
    "trtllm": [("2025-09-01", "1.0.0")],
}
OLDEST = {"vllm": "0.5.0", "sglang": "0.3.0", "tgi": "1.0.0", "trtllm": "0.9.0"}
MAX_OFFLINE_CONCURRENCY = 4096
# Sources whose per-user speed is, by their client's stated code, a request's output tokens over its whole time from
# sending to the last token (TTFT inside), not 1 / time per output token: France Travail's benchmark_llm_serving
# (`io_classes.py` 41 `speed_from_beginning = response_length / total_query_time`, `total_query_time = ending_timestamp
# - starting_timestamp` 31; the README row is the median of it at 10 workers: `make_graphs.py` 126-129,
# `make_readmes.py` 77). Added after batch 7 (speedfix8, retrospective).
PER_USER_FROM_REQUEST_START = {"francetravail-results-benchmark-llm-serving"}


@dataclass
class Prediction:
    values: dict[str, float]
    reason: str | None = None
    asked: dict = field(default_factory=dict)
    refused: str | None = None  # the plan's infeasible_reason, when it refused the setup and still gave numbers


def engine_of(p) -> str:
    return ENGINE_MAP.get(p.engine, p.engine)


def engine_version(p) -> tuple[str | None, str]:
    """(version to plan with, how it was read): the stated version, else the release at the source's date."""
    engine = engine_of(p)
    text = p.engine_version or ""
    if engine == "llama.cpp":
        m = re.search(r"\bb(\d{3,5})\b", text)
        return (f"b{m.group(1)}", "stated") if m else (None, "not stated: the pinned default")
    if p.engine != "nim":
        m = re.search(r"(?<![\w.])(\d+\.\d+(?:\.\d+)?)", text)
        if m:
            return m.group(1), "stated"
    if engine not in RELEASES_BY_DATE:
        return None, "not stated: the pinned default"
    when = _source_date(p.source_id)
    if when is None:
        return None, "not stated, source undated: the pinned default"
    version = OLDEST[engine]
    for start, release in RELEASES_BY_DATE[engine]:
        if when.isoformat() >= start:
            version = release
    return version, f"inferred from the source date {when} (release in use then)"


EXTRA_DATASETS: list = []  # other point files (a prospective batch) whose sources' dates the version inference may read


def use_dataset(dataset) -> None:
    """Let :func:`engine_version` read the source dates of ``dataset`` (a batch outside speed_points.yaml)."""
    EXTRA_DATASETS.append(dataset)
    _source_date.cache_clear()


@lru_cache(maxsize=None)
def _source_date(source_id: str) -> date | None:
    from benchmarks.published.schema import load_dataset

    text = ""
    for ds in [load_dataset(), *EXTRA_DATASETS]:
        found = [s for s in ds.sources if s.source_id == source_id]
        if found:
            text = found[0].date or ""
            break
    m = re.search(r"(\d{4})-(\d{2})(?:-(\d{2}))?", text)
    return date(int(m.group(1)), int(m.group(2)), int(m.group(3) or 15)) if m else None


def modelopt_fp8_kv(p) -> bool:
    """NVIDIA's ModelOpt FP8/NVFP4 checkpoints (nvidia/*-FP8, *-FP4) carry ``kv_cache_quant_algo: FP8`` in their
    hf_quant_config.json, which TensorRT-LLM and vLLM apply when the KV dtype is left on auto: the KV cache is fp8.
    Used only where the source names such a checkpoint and states no KV dtype (an inference)."""
    ckpt = (p.weights_checkpoint or "").lower()
    return ckpt.startswith("nvidia/") and p.quantization in ("fp8", "nvfp4")


def point_request(p, version: str | None = None) -> dict:
    """The keywords of ``advise()`` a user would pass for this point's setup (``plan --json`` flags)."""
    engine = engine_of(p)
    inp, out = max(int(round(p.input_tokens)), 1), max(int(round(p.output_tokens)), 1)
    kv = "fp8" if (p.kv_cache_dtype or "").startswith("fp8") or (p.kv_cache_dtype is None and modelopt_fp8_kv(p)) else "auto"
    quant = QUANT_MAP.get(p.quantization, "auto")
    model = _served_model(p)
    pre = _pre_quantized(model)
    if pre and (quant == "none" or pre.startswith(quant) or quant.startswith(pre)):
        # a published quantized checkpoint (gpt-oss's MXFP4 experts, DeepSeek-V3's block-FP8) labelled 'none' or with its
        # format's family ('fp8' for 'fp8-block'): the user serves the checkpoint as shipped (--quantization auto), not a
        # re-quantization of it (the plan refuses --quantization fp8 on an FP8 checkpoint)
        quant = "auto"
    kw = dict(model=model, model_source="catalog", gpu=_gpu_spec(p),
              engine=engine, quantization=quant, kv_cache_dtype=kv,
              tensor_parallel_size=p.tp, pipeline_parallel_size=p.pp, input_tokens=inp, output_tokens=out,
              context=inp + out)
    if p.dtype in ("bfloat16", "float16"):
        kw["dtype"] = p.dtype
    if version:
        kw["engine_version"] = version
    if p.dp > 1 or p.mode == "open_loop":
        kw["replicas"] = p.dp
    if p.mode == "open_loop":
        kw["rate"] = float(p.request_rate)
        kw.pop("context")
    else:
        kw["concurrency"] = _concurrency(p)
    shape = length_shape(p)
    if shape is not None and p.num_requests and p.mode in ("offline_throughput", "closed_loop"):
        # a finite run of num_requests with the dataset's length spread (benchmarks/published/length_shapes.yaml):
        # throughput over the whole run, the longest answers' tail included, as the benchmark divides it
        kw.update(requests=int(p.num_requests) // max(p.dp, 1), input_distribution=shape["input_distribution"],
                  output_distribution=_output_shape(p, shape), context=int(shape["max_request_tokens"]))
    own = _own_max_num_seqs(engine)
    if own is not None and p.mode in ("offline_throughput", "static_batch"):
        # the engine's benchmark tool sizes the batch itself (trtllm-bench / gptSessionBenchmark); the nearest plan flag
        # is --max-num-seqs at the engine's own default (data/engines.yaml own_max_num_seqs), above the planning cap
        kw["max_num_seqs"] = max(own, kw["concurrency"]) if p.mode == "static_batch" else own
    return kw


@lru_cache(maxsize=None)
def _length_shapes() -> dict:
    from pathlib import Path

    import yaml

    return yaml.safe_load((Path(__file__).parent / "published" / "length_shapes.yaml").read_text())


def length_shape(p) -> dict | None:
    """How the lengths of the point's benchmark dataset spread (``length_shapes.yaml``), or None when not named there."""
    return _length_shapes().get(p.length_distribution)


GPUS_PER_NODE = 8  # an HGX / MI300X platform: more GPUs than this are several nodes (a reading)


def _gpu_spec(p) -> str:
    """``--gpu`` as a user writes it: ``H100-80GB:8x2`` for 16 GPUs (two 8-GPU nodes; Tenstorrent's 16xH100 over
    InfiniBand), not one node of 16, which no HGX board has (batch 3, retrospective)."""
    if p.gpu_count > GPUS_PER_NODE and p.gpu_count % GPUS_PER_NODE == 0:
        return f"{p.gpu}:{GPUS_PER_NODE}x{p.gpu_count // GPUS_PER_NODE}"
    return f"{p.gpu}:{p.gpu_count}" if p.gpu_count > 1 else p.gpu


def _output_shape(p, shape: dict) -> str:
    """The answers' spread a user would name: the dataset's (ShareGPT: exponential, its tail up to the dataset's cap),
    but where the source states a generation budget (``max_output_tokens``, e.g. AccelMark's max_tokens 512 with
    greedy answers stopping at EOS) no answer runs past it, so the run ends with the budget, not the exponential's
    tail (~5x the mean for 100 answers): the bounded shape a user can name, ``uniform`` (mean +-50%: 174-522 for a
    348 mean under a 512 budget). A reading of the setup, found on batch 3 (retrospective)."""
    if p.max_output_tokens and p.max_output_tokens < 2 * max(p.output_tokens, 1):
        return "uniform"
    return shape["output_distribution"]


def _own_max_num_seqs(engine: str) -> int | None:
    from infer_advisor.engines.profiles import engine_profiles

    prof = engine_profiles().get(engine)
    return prof.own_max_num_seqs if prof is not None else None


@lru_cache(maxsize=None)
def _in_catalog(name: str) -> bool:
    from infer_advisor.errors import InferAdvisorError
    from infer_advisor.model_facts import resolve_model

    try:
        resolve_model(name, source="catalog")
    except InferAdvisorError:
        return False
    return True


def _served_model(p) -> str | None:
    """The checkpoint the point served when the catalog has it (its quantization_config: which modules stay in bf16,
    the KV dtype it sets), else the catalog model of the same shapes: a user names the checkpoint they serve. Meta's
    Llama-3.1-405B-FP8 keeps every self_attn and the first and last layers in bf16 (+9 GB per GPU at TP8 over an
    all-FP8 reading): found on batch 3's dstack runs (retrospective)."""
    ckpt = p.weights_checkpoint
    return ckpt if ckpt and ckpt != p.catalog_model and _in_catalog(ckpt) else p.catalog_model


@lru_cache(maxsize=None)
def _pre_quantized(name: str | None) -> str | None:
    """The quantization a catalog model's checkpoint already carries (fp8, mxfp4 ...), else None."""
    from infer_advisor.model_facts import resolve_model

    return resolve_model(name, source="catalog").pre_quantized if name else None


def _concurrency(p) -> int:
    per_replica = lambda n: max(1, int(n) // max(p.dp, 1))  # noqa: E731
    if p.mode in ("batch1_decode", "prefill"):
        return 1
    if p.mode == "static_batch":
        return per_replica(p.batch or 1)
    if p.mode == "closed_loop":
        return per_replica(p.concurrency or 1)
    return min(per_replica(p.num_requests or 1000), MAX_OFFLINE_CONCURRENCY)  # offline: all submitted at once


def plan_point(p):
    """(plan, the keywords asked): ``advise()`` at the point's engine version; a version the plan refuses (older than
    its memory profiles) is retried at the oldest version it plans, and said."""
    from infer_advisor import advise
    from infer_advisor.errors import RequestError

    version, how = engine_version(p)
    kw = point_request(p, version)
    try:
        return advise(**kw), {**kw, "version_from": how}
    except RequestError as err:
        if version is None or "older than" not in str(err):
            raise
    from infer_advisor.engines.memory import memory_profiles

    oldest = min((r.first for r in memory_profiles()[engine_of(p)]), key=lambda v: tuple(int(x) for x in re.findall(r"\d+", v)))
    kw = point_request(p, oldest)
    return advise(**kw), {**kw, "version_from": f"{how}; {version} is older than the plan's memory profiles: planned as {oldest}"}


def predict_point(p) -> Prediction:
    """Predicted values of every metric point ``p`` reports, read off the plan a user would get (or why not)."""
    if not p.model_in_catalog or not p.catalog_model:
        return Prediction({}, "model not in the catalog")
    if not p.gpu_in_catalog:
        return Prediction({}, "GPU not in the catalog")
    if p.quantization not in QUANT_MAP:
        return Prediction({}, f"weight format {p.quantization} unknown")
    from infer_advisor.errors import InferAdvisorError

    try:
        plan, asked = plan_point(p)
    except InferAdvisorError as err:
        return Prediction({}, f"plan refused: {err}")
    refused = None if plan.feasible else plan.infeasible_reason
    if p.mode == "open_loop":
        values = _open_loop_values(p, plan)
    else:
        values = _values(p, plan.performance)
    return Prediction(values, None if values else "no metric predicted", asked, refused)


def _values(p, perf) -> dict[str, float]:
    inp, out = max(int(round(p.input_tokens)), 0), max(int(round(p.output_tokens)), 1)
    reps = max(perf.replicas, 1)
    values: dict[str, float] = {}
    for name, metric in p.metrics.present().items():
        stat = metric.stat
        if name == "ttft_s":
            values[name] = perf.ttft_p90_s if (stat == "p90" and perf.ttft_p90_s) else perf.ttft_s
        elif name in ("tpot_s",):
            values[name] = perf.tpot_s
        elif name == "itl_s":
            values[name] = perf.itl_p99_s if (stat == "p99" and perf.itl_p99_s) else perf.tpot_s
        elif name == "e2e_s":
            values[name] = perf.e2e_s
        elif name == "output_tokens_per_s":
            values[name] = out / perf.e2e_s if p.mode in ("batch1_decode", "prefill") else perf.deployment_output_tokens_per_s
        elif name == "output_tokens_per_s_per_gpu":
            values[name] = perf.deployment_output_tokens_per_s / p.gpu_count
        elif name == "total_tokens_per_s":
            values[name] = perf.deployment_requests_per_s * (p.input_tokens + p.output_tokens)
        elif name == "requests_per_s":
            values[name] = perf.deployment_requests_per_s
        elif name == "output_tokens_per_s_per_user":
            whole = p.mode == "batch1_decode" or p.source_id in PER_USER_FROM_REQUEST_START
            values[name] = out / perf.e2e_s if whole else perf.output_tokens_per_s_per_request
        elif name == "prefill_tokens_per_s":
            values[name] = inp / perf.ttft_s if perf.ttft_s and inp else math.nan
    _ = reps
    return {k: v for k, v in values.items() if v is not None and math.isfinite(v)}


def _open_loop_values(p, plan) -> dict[str, float]:
    cap = plan.capacity.chosen if plan.capacity is not None else None
    if cap is None and plan.capacity is not None:
        # the pinned layout cannot sustain the rate: the plan lists it as saturated with the most it sustains, which a
        # benchmark of a fixed number of requests then measures (its queue grows; the run takes N / that rate)
        cap = next((c for c in plan.capacity.best_per_gpu if c.why_not == "saturated" and c.max_rate_per_replica), None)
    if cap is None:
        return {}
    values: dict[str, float] = {}
    for name, metric in p.metrics.present().items():
        stat = metric.stat
        if name == "ttft_s":
            values[name] = cap.ttft_p90_s if stat == "p90" else cap.ttft_p50_s
        elif name == "tpot_s" and stat != "p99" and cap.output_tokens_per_s_per_user:
            # a request's TPOT is its mean gap between tokens, prefill stalls included: its median over requests sits
            # near the mean gap at that load (1 / tokens per second per user), above the median single gap (ITL p50)
            values[name] = 1 / cap.output_tokens_per_s_per_user
        elif name in ("itl_s", "tpot_s"):
            values[name] = cap.itl_p99_s if stat == "p99" else cap.itl_p50_s
        elif name == "e2e_s" and stat == "p90":
            values[name] = cap.e2e_p90_s
        elif name == "e2e_s" and cap.ttft_p50_s is not None and cap.output_tokens_per_s_per_user:
            # a mean or median request's end-to-end latency from the same capacity report: its first token, then its
            # other tokens at the mean gap at that load (as tpot_s above). Added after batch 4 (GPUStack's Qwen3.5
            # open-loop latency pages report e2e_s and were left unpredicted; retrospective)
            values[name] = cap.ttft_p50_s + max(p.output_tokens - 1, 0) / cap.output_tokens_per_s_per_user
        elif name == "output_tokens_per_s":
            values[name] = _finite_run_rate(p, cap) * p.output_tokens
        elif name == "requests_per_s":
            values[name] = _finite_run_rate(p, cap)
        elif name == "output_tokens_per_s_per_user":
            values[name] = cap.output_tokens_per_s_per_user
    return {k: v for k, v in values.items() if v is not None and math.isfinite(v)}


def _finite_run_rate(p, cap) -> float:
    """Requests/s a benchmark of ``num_requests`` Poisson arrivals reports: it divides by the whole run, from the first
    request sent to the last one finished (``bench_serving``/``benchmark_serving``: ``total_output / dur_s``), so the
    arrival span ``(N - 1) / R`` plus the last request's own latency (the plan's p50 TTFT and ITL), not the sustained
    rate alone: 200 requests at 16 req/s of 512 tokens take 12.4 s to arrive and ~5 s more to finish."""
    rate = min(p.request_rate, cap.max_rate_per_replica * cap.replicas)
    n = p.num_requests
    if not n or n < 2 or rate <= 0 or rate < p.request_rate or cap.ttft_p50_s is None or cap.itl_p50_s is None:
        return rate  # saturated: the server's pace, not the arrivals', sets the run's length
    last = cap.ttft_p50_s + max(p.output_tokens - 1, 0) * cap.itl_p50_s
    return n / ((n - 1) / rate + last)
