"""--enforce-eager: one setting from the request (or a start-up log) to the memory profile, the KV cache and the flags."""

from __future__ import annotations

import pytest

from infer_advisor import advise
from infer_advisor.engines.argv import sglang_flags, vllm_flags
from infer_advisor.engines.settings import engine_settings
from infer_advisor.engines.startup_log import parse_startup_log
from infer_advisor.estimate.engine_terms import cuda_graph_pool_bytes

MODEL = "Qwen/Qwen2.5-7B-Instruct"


def test_eager_profile_has_no_graph_pool():
    graphs = engine_settings("vllm", "0.27.1", None).profile
    eager = engine_settings("vllm", "0.27.1", None, enforce_eager=True).profile
    assert cuda_graph_pool_bytes(graphs, 28, 256, 0, 8192) > 0
    assert eager.cuda_graph_bytes == 0 and cuda_graph_pool_bytes(eager, 28, 256, 0, 8192) == 0
    assert "eager" in eager.label


def test_eager_gives_the_pool_to_the_kv_cache_where_the_version_budgets_it():
    """vLLM 0.20+ subtracts the profiled graph pool from the KV budget (the pool's bytes come back under eager);
    0.19 captures after sizing the KV cache (the KV cache is the same either way)."""
    for version, grows in (("0.27.1", True), ("0.19.0", False)):
        base = advise(model=MODEL, gpu="L4", engine="vllm", engine_version=version, context=4096, quantization="none")
        eager = advise(model=MODEL, gpu="L4", engine="vllm", engine_version=version, context=4096, quantization="none",
                       enforce_eager=True)
        pool = cuda_graph_pool_bytes(engine_settings("vllm", version, None).profile, 28, base.engine.max_num_seqs, 0,
                                     base.engine.max_num_batched_tokens)
        gained = eager.memory.kv_cache_bytes_per_gpu - base.memory.kv_cache_bytes_per_gpu
        assert gained == (pytest.approx(pool, abs=2**21) if grows else pytest.approx(0, abs=2**21))
        assert eager.engine.enforce_eager and not base.engine.enforce_eager


def test_eager_reaches_the_flags():
    plan = advise(model=MODEL, gpu="L4", engine="vllm", context=4096, enforce_eager=True)
    assert "--enforce-eager" in vllm_flags(plan, MODEL)
    assert any("speed figures assume CUDA graphs" in w for w in plan.warnings)
    assert "--enforce-eager" not in vllm_flags(advise(model=MODEL, gpu="L4", engine="vllm", context=4096), MODEL)
    sglang = advise(model=MODEL, gpu="L4", engine="sglang", context=4096, enforce_eager=True)
    assert "--disable-cuda-graph" in sglang_flags(sglang, MODEL)


@pytest.mark.parametrize(
    ("line", "eager"),
    [
        ("Initializing a V1 LLM engine (v0.14.0) with config: model='m', quantization=awq_marlin, enforce_eager=True, kv_cache_dtype=auto", True),
        ("non-default args: {'disable_log_stats': True, 'enforce_eager': True, 'model': 'm'}", True),
        ("Initializing a V1 LLM engine (v0.19.0) with config: model='m', enforce_eager=False, kv_cache_dtype=auto", False),
        ("vllm serve m --max-model-len 4096 --enforce-eager", True),
        ("To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI.", None),  # V0's hint
    ],
)
def test_startup_log_reads_enforce_eager(line, eager):
    log = line + "\nGPU KV cache size: 102,288 tokens\n"
    assert parse_startup_log(log, engine="vllm").enforce_eager is eager


def test_strict_outcome_takes_eager_as_the_grading_path_does():
    """plan --strict (startup_outcome) and benchmarks/memory_logs.py (estimate_for_log) give one figure for the same setup."""
    from infer_advisor.calibrate.memory import estimate_for_log
    from infer_advisor.engines.startup_log import StartupLog
    from infer_advisor.plan.startup import startup_outcome
    from infer_advisor.request import PlanRequest

    for eager in (False, True):
        request = PlanRequest(model=MODEL, gpu="L4", engine="vllm", engine_version="0.27.1", context=4096, quantization="none",
                              dtype="float16", gpu_memory_utilization=0.92, enforce_eager=eager)
        out = startup_outcome(request)
        log = StartupLog(engine="vllm", engine_version="0.27.1", tp=1, max_model_len=4096, dtype="float16",
                         gpu_memory_utilization=0.92, enforce_eager=eager)
        graded = estimate_for_log(log, model=MODEL, gpu="L4")
        assert out.kv_cache_tokens == graded.engine_kv_cache_tokens
        assert out.settings.get("enforce_eager", False) is eager
