"""How run_aiconfigurator.py maps a published point onto an aiconfigurator estimate (no aiconfigurator needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.published import run_aiconfigurator as rac
from benchmarks.published.schema import load_dataset


@pytest.fixture(scope="module")
def points():
    return {p.id: p for p in load_dataset().points}


@pytest.fixture(scope="module")
def dirs(points, tmp_path_factory):
    return rac.catalog_config_dirs(points.values(), tmp_path_factory.mktemp("models"))


def test_catalog_config_is_written_verbatim(dirs):
    from infer_advisor.model_facts.catalog import find_entry

    path = dirs["meta-llama/Llama-3.1-8B"]
    assert json.loads((Path(path) / "config.json").read_text()) == find_entry("meta-llama/Llama-3.1-8B").config


def test_static_batch_point_becomes_a_static_estimate(points, dirs):
    job, reason = rac.plan_job(points["vllm-ci-9515-llama8b_tp1"], dirs)
    assert reason is None
    args = job["args"]
    assert (args["mode"], args["batch_size"], args["isl"], args["osl"]) == ("static", 8, 32, 128)
    assert (args["system_name"], args["backend_name"], args["tp_size"]) == ("h200_sxm", "vllm", 1)
    assert args["gemm_quant_mode"] == "bfloat16" and job["batch_sweep"] is None


def test_closed_loop_uses_in_flight_batching_at_the_concurrency(points, dirs):
    job, _ = rac.plan_job(points["nim-llama33-70b-fp8-tp2-h100-5000-500-c25"], dirs)
    args = job["args"]
    assert (args["mode"], args["batch_size"], args["tp_size"]) == ("agg", 25, 2)
    assert (args["backend_name"], args["gemm_quant_mode"]) == ("trtllm", "fp8")


def test_offline_points_sweep_batches_up_to_the_request_count(points, dirs):
    job, _ = rac.plan_job(points["trtllm-v1-h200-llama31-8b-fp8-1000-1000"], dirs)
    assert job["args"]["mode"] == "agg"
    assert job["batch_sweep"] == [64, 128, 256, 512, 1024, 2048]  # 3000 requests: 4096 and 8192 are not asked
    assert job["args"]["ctx_tokens"] == 8192
    job, _ = rac.plan_job(points["sglang-v030-llama31-8b-a100-offline"], dirs)
    assert max(job["batch_sweep"]) <= 5000 and job["args"]["isl"] == 227


def test_moe_points_shard_experts_like_the_dense_layers(points, dirs):
    job, _ = rac.plan_job(points["vllm-ci-9515-mixtral8x7b_tp2"], dirs)
    assert (job["args"]["moe_tp_size"], job["args"]["moe_ep_size"], job["args"]["moe_quant_mode"]) == (2, 1, "bfloat16")


def test_prefill_point_is_a_context_only_estimate(points, dirs):
    job, _ = rac.plan_job(points["trtllm-05-h100-llama2-7b-fp8-ttft-2048"], dirs)
    args = job["args"]
    assert (args["mode"], args["batch_size"], args["isl"], args["osl"]) == ("static_ctx", 1, 2048, 1)
    assert args["kvcache_quant_mode"] == "fp8"


@pytest.mark.parametrize(
    ("point_id", "reason"),
    [
        ("llamacpp-xd-rtx-3090-llama3-8b-q4_k_m-tg512", "not an aiconfigurator backend"),
        ("dstack-mi300x-vllm-llama31-405b-tp8-n64", "no aiconfigurator system"),
        ("sglang-v030-llama31-8b-a100-rps4", "open-loop"),
        ("mistralrs-v082-b200-gemma4-e4b-vllm-bf16-decode-512", "not in the infer_advisor catalog"),
        ("mlc-perfbench-vllm-llama2-70b-fp16-a100x2", "no aiconfigurator system"),
    ],
)
def test_points_it_cannot_model_say_why(points, dirs, point_id, reason):
    job, why = rac.plan_job(points[point_id], dirs)
    assert job is None and reason in why


def test_predictions_pick_the_best_sweep_call_and_convert_units(points):
    point = points["trtllm-v1-h200-llama31-8b-fp8-1000-1000"]
    calls = [
        {"batch_size": 64, "ttft_ms": 100.0, "tpot_ms": 10.0, "request_latency_ms": 1e4, "tokens_per_s": 6000.0,
         "tokens_per_s_per_gpu": 6000.0, "tokens_per_s_per_user": 100.0, "seq_per_s": 6.0},
        {"batch_size": 128, "ttft_ms": 200.0, "tpot_ms": 12.0, "request_latency_ms": 1.2e4, "tokens_per_s": 9000.0,
         "tokens_per_s_per_gpu": 9000.0, "tokens_per_s_per_user": 80.0, "seq_per_s": 9.0},
        {"batch_size": 256, "error": "RuntimeError: OOM"},
    ]
    pred, best = rac.predictions(point, calls)
    assert best["batch_size"] == 128
    assert pred == {"output_tokens_per_s": 9000.0}


def test_shipped_results_name_existing_points():
    if not rac.RESULTS.exists():
        pytest.skip("aiconfigurator_results.json not generated in this checkout")
    report = json.loads(rac.RESULTS.read_text())
    ids = {p.id for p in load_dataset().points}
    assert {r["id"] for r in report["points"]} <= ids
    modelled = [r for r in report["points"] if r.get("primary_error") is not None]
    assert report["summary"]["modelled"] == len(modelled)
    for r in modelled:
        assert r["error"][r["primary_metric"]] == pytest.approx(
            r["predicted"][r["primary_metric"]] / r["measured"][r["primary_metric"]] - 1, abs=1e-3
        )
