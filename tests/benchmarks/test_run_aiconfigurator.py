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
    assert job["notes"]["layout"].startswith("inferred: vllm default")


@pytest.fixture(scope="module")
def batch3(tmp_path_factory):
    pts = {p.id: p for p in load_dataset(Path(rac.HERE) / "prospective" / "batch3.yaml").points}
    return pts, rac.catalog_config_dirs(pts.values(), tmp_path_factory.mktemp("models3"))


def test_stated_expert_parallel_is_passed(batch3):
    pts, dirs = batch3
    for tp in (8, 4):
        job, _ = rac.plan_job(pts[f"inferencex832-h100-minimax-m25-fp8-vllm-tp{tp}-ep{tp}-c4-1k-1k"], dirs)
        a = job["args"]
        assert (a["tp_size"], a["attention_dp_size"], a["moe_tp_size"], a["moe_ep_size"]) == (tp, 1, 1, tp)
        assert job["notes"]["layout"] == f"stated: expert parallel {tp} (EP={tp})"


def test_dp_attention_splits_the_width_and_the_batch_per_rank(batch3):
    pts, dirs = batch3
    job, _ = rac.plan_job(pts["sglang-cookbook-glm52-h200-fp8-tp8-dpattn8-c1024-8192-1024"], dirs)
    a = job["args"]
    # --dp 8 --enable-dp-attention with DeepEP: attention tp 1 x 8 ranks, experts over 8 ranks; the stated
    # --max-running-requests 256 caps the 1024 clients and aiconfigurator counts the batch per DP rank.
    assert (a["tp_size"], a["attention_dp_size"], a["moe_tp_size"], a["moe_ep_size"]) == (1, 8, 1, 8)
    assert a["batch_size"] == 32 and "256" in job["notes"]["engine_cap"]


def test_a_prequantized_checkpoint_keeps_its_own_formats(batch3):
    pts, dirs = batch3
    job, _ = rac.plan_job(pts["gpustack-gpt-oss-120b-a100-vllm0110-tp1-sharegpt-n1000"], dirs)
    assert "gemm_quant_mode" not in job["args"] and "moe_quant_mode" not in job["args"]
    assert "mxfp4" in job["notes"]["quant"]
    assert (job["args"]["moe_tp_size"], job["args"]["moe_ep_size"]) == (1, 1)


def test_rtx_pro_6000_only_as_the_server_edition(points, dirs):
    point = points["vllm-ci-9515-llama8b_tp1"]
    server = point.model_copy(update={"gpu": "RTX-PRO-6000-Blackwell", "gpu_as_stated": "RTX PRO 6000 Server Edition"})
    job, _ = rac.plan_job(server, dirs)
    assert job["args"]["system_name"] == "rtx_pro_6000_server"
    workstation = server.model_copy(update={"gpu_as_stated": "RTX PRO 6000 Blackwell Workstation Edition"})
    job, why = rac.plan_job(workstation, dirs)
    assert job is None and "Server Edition" in why


def test_dense_replicas_are_not_modelled(points, dirs):
    point = points["vllm-ci-9515-llama8b_tp1"].model_copy(update={"dp": 2, "gpu_count": 2})
    job, why = rac.plan_job(point, dirs)
    assert job is None and "replicas" in why


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
    # output tokens are requests x the output length (aiconfigurator's agg tokens/s leaves out the first token)
    assert pred == {"output_tokens_per_s": pytest.approx(9.0 * round(point.output_tokens))}
    calls[1]["kv_cache_warning"] = "Requested batch_size (128) exceeds estimated KV cache capacity"
    pred, best = rac.predictions(point, calls)
    assert best["batch_size"] == 64  # the engine would queue what does not fit


def test_total_tokens_are_requests_times_prompt_and_output(points):
    point = next(p for p in points.values() if p.primary_metric == "total_tokens_per_s" and p.mode == "offline_throughput")
    calls = [{"batch_size": 64, "ttft_ms": 100.0, "tpot_ms": 10.0, "request_latency_ms": 1e4, "tokens_per_s": 600.0,
              "tokens_per_s_per_gpu": 600.0, "tokens_per_s_per_user": 10.0, "seq_per_s": 2.0}]
    pred, _ = rac.predictions(point, calls)
    tokens = max(1, round(point.input_tokens)) + max(1, round(point.output_tokens))
    assert pred["total_tokens_per_s"] == pytest.approx(2.0 * tokens)


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


def test_vllm_data_parallel_moe_spans_experts_over_all_ranks(batch3):
    pts, dirs = batch3
    base = pts["inferencex832-h100-minimax-m25-fp8-vllm-tp4-ep4-c4-1k-1k"]
    # vLLM flattens TP across DP for the experts (FusedMoEParallelConfig.make): DP2 x TP4 shards them over 8 ranks.
    tp_sharded = base.model_copy(update={"dp": 2, "gpu_count": 8, "quote": "vllm serve ... --data-parallel-size 2",
                                         "notes": "TP=4 with --data-parallel-size 2."})
    a = rac.plan_job(tp_sharded, dirs)[0]["args"]
    assert (a["tp_size"], a["attention_dp_size"], a["moe_tp_size"], a["moe_ep_size"]) == (4, 2, 8, 1)
    whole = tp_sharded.model_copy(update={"notes": "TP=4 with --data-parallel-size 2 --enable-expert-parallel."})
    a = rac.plan_job(whole, dirs)[0]["args"]
    assert (a["tp_size"], a["attention_dp_size"], a["moe_tp_size"], a["moe_ep_size"]) == (4, 2, 1, 8)


class _Estimate:
    """What cli_estimate returns, for a model whose KV cache holds ``capacity`` requests (a test double)."""

    def __init__(self, batch_size, capacity):
        self.ttft, self.tpot, self.backend_version = 100.0, 10.0, "x"
        self.raw = {"tokens/s": float(batch_size), "seq/s": batch_size / 100.0}
        self.kv_cache_warning = "exceeds estimated KV cache capacity" if batch_size > capacity else None


def test_offline_sweep_finds_the_largest_batch_that_fits_the_kv_cache():
    job = {"args": {"mode": "agg"}, "batch_sweep": [64, 128, 256, 512, 1024]}
    calls = []
    rac._sweep(lambda **a: _Estimate(a["batch_size"], capacity=300), job, calls)
    fitting = [c["batch_size"] for c in calls if not c["kv_cache_warning"]]
    assert 300 * 7 / 8 <= max(fitting) <= 300
    assert [c["batch_size"] for c in calls][:4] == [64, 128, 256, 512]  # stops climbing at the first that does not fit
    calls = []
    rac._sweep(lambda **a: _Estimate(a["batch_size"], capacity=20), job, calls)  # even 64 is too many
    assert 17 <= max(c["batch_size"] for c in calls if not c["kv_cache_warning"]) <= 20


def test_megamoe_spans_the_experts_and_deepseek_v4_keeps_an_fp8_kv_cache(tmp_path):
    pts = {p.id: p for p in load_dataset(Path(rac.HERE) / "prospective" / "batch4.yaml").points}
    point = pts["sglang-cookbook-dsv4-flash-fp4-b200-tp4-dpattn-c1024-8192-1024"]
    dirs = rac.catalog_config_dirs([point], tmp_path)
    job, _ = rac.plan_job(point, dirs)
    a = job["args"]
    # --tp 4 --dp 4 --enable-dp-attention --moe-a2a-backend megamoe: SGLang sets ep_size = tp_size for megamoe
    assert (a["tp_size"], a["attention_dp_size"], a["moe_tp_size"], a["moe_ep_size"]) == (1, 4, 1, 4)
    assert a["kvcache_quant_mode"] == "fp8" and "gemm_quant_mode" not in a  # the shipped FP4-expert checkpoint
