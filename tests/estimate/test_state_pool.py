"""SGLang's recurrent-state pool of a hybrid model and the token pool it leaves (estimate/state_pool.py; memfix19, issue 23
batch 18, retrospective). Source: SGLang 0.5.9 model_runner_kv_cache_mixin.py handle_max_mamba_cache and server_args.py
mamba_full_memory_ratio = 0.9; 0.5.2-0.5.3 model_runner.py max_mamba_cache_size 512 (data/engine_kv_report.yaml)."""

import pytest

from infer_advisor.calibrate.memory import estimate_for_log
from infer_advisor.engines.kv_report import kv_report
from infer_advisor.engines.startup_log import StartupLog
from infer_advisor.estimate.state_pool import apart_from_states, state_pool


def test_versions_pick_sglangs_rule_and_vllm_keeps_states_in_its_pages():
    assert kv_report("sglang", "0.5.9").mamba_full_memory_ratio == 0.9
    assert kv_report("sglang", "0.5.23").mamba_full_memory_ratio == 0.9
    assert kv_report("sglang", "0.5.3").mamba_pool_states == 512 and kv_report("sglang", "0.5.3").mamba_full_memory_ratio is None
    assert state_pool(kv_report("sglang", "0.4.9"), free_bytes=1e9, state_bytes=1e6) is None
    assert state_pool(kv_report("vllm", "0.20.2"), free_bytes=1e9, state_bytes=1e6) is None  # vLLM pages them (engine_kv.py)
    assert state_pool(kv_report("sglang", "0.5.9"), free_bytes=1e9, state_bytes=0.0) is None  # a model without recurrent layers


def test_ratio_gives_the_states_r_over_1_plus_r_in_whole_states():
    """max_mamba_cache_size = int(rest x 0.9 / 1.9 // per_req); the token pool gets rest minus those states."""
    pool = state_pool(kv_report("sglang", "0.5.9"), free_bytes=19e9, state_bytes=1e7)
    assert pool.states == 900 and pool.attention_bytes == pytest.approx(10e9)
    fixed = state_pool(kv_report("sglang", "0.5.2"), free_bytes=19e9, state_bytes=1e7)
    assert fixed.states == 512 and fixed.attention_bytes == pytest.approx(19e9 - 512e7)
    assert apart_from_states(kv_report("vllm", "0.20.2"), 5e9, 1e7, 6e8) == (5e9, 6e8, None)
    assert apart_from_states(kv_report("sglang", "0.5.9"), 19e9, 1e7, 6e8) == (pytest.approx(10e9), 5.9e8, 900)


def _sglang_qwen36(version: str):
    log = StartupLog(engine="sglang", engine_version=version, tp=4, pp=1, max_model_len=262144, dtype="bfloat16",
                     quantization="fp8-block", gpu_memory_utilization=0.85, kv_cache_dtype="auto")
    return estimate_for_log(log, model="Qwen/Qwen3.6-35B-A3B", gpu="RTX-4090", engine_version=version)


def test_the_token_pool_of_a_hybrid_gdn_model_on_sglang_059_is_the_rest_over_1_9(monkeypatch):
    """Qwen3.6-35B-A3B at TP 4 (10 full-attention layers, 30 gated-DeltaNet layers with 16 MB of state per request on one
    GPU): the token pool SGLang prints is the memory left for the cache / 1.9 (within one state), at the full-attention
    bytes per token alone; without the rule every byte went to tokens (the batch-18 prediction, +91%)."""
    est = _sglang_qwen36("0.5.9")
    per_token, state = est.kv_cache_bytes_per_token_per_gpu, est.recurrent_state_bytes_per_sequence_per_gpu
    assert state > 0 and est.engine_kv_rule == "pool_tokens" and est.engine_kv_cache_tokens == est.kv_cache_tokens
    assert est.kv_cache_tokens == pytest.approx(est.kv_cache_bytes_per_gpu / per_token, abs=2)
    plain = kv_report("sglang", "0.5.9").model_copy(update={"mamba_full_memory_ratio": None})
    monkeypatch.setattr("infer_advisor.estimate.memory.kv_report", lambda engine, version: plain)
    rest = _sglang_qwen36("0.5.9").kv_cache_bytes_per_gpu
    assert est.kv_cache_bytes_per_gpu == pytest.approx(rest / 1.9, abs=state)
    assert est.max_concurrency <= int(rest * 0.9 / 1.9 // state)
