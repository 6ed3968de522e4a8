"""An explicit --context is kept or refused in one line (issue 22 finding 8); settings a user can reproduce (issue 23)."""

import pytest

from infer_advisor import advise
from infer_advisor.errors import DoesNotFitError
from infer_advisor.request import PlanRequest
from infer_advisor.plan.startup import startup_outcome


def test_an_explicit_context_is_kept_by_fp8_weights_and_kv_on_one_l4():
    plan = advise(model="meta-llama/Llama-3.1-8B", gpu="L4", context=131072)
    assert plan.feasible and plan.engine.max_model_len == 131072
    assert plan.engine.kv_cache_dtype == "fp8" and plan.quantization.method == "fp8"


def test_an_explicit_context_that_nothing_keeps_is_refused_naming_the_change():
    with pytest.raises(DoesNotFitError) as err:
        advise(model="meta-llama/Llama-3.1-8B", gpu="L4", context=131072, kv_cache_dtype="auto", quantization="none")
    text = str(err.value)
    assert "\n" not in text and "--gpu L4:2" in text and "--context 31,264 or less" in text


def test_the_default_context_is_still_lowered_with_a_warning():
    plan = advise(model="meta-llama/Llama-3.1-8B", gpu="L4")
    assert plan.feasible and plan.engine.max_model_len < 131072
    assert any("max_model_len lowered" in w for w in plan.warnings)


def test_latency_goal_keeps_the_engines_max_num_seqs():
    plan = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", goal="latency", concurrency=1, engine="vllm")
    assert plan.engine.max_num_seqs == 1024  # vLLM's default for >= 70 GiB (not 1 from the goal)


def test_a_kv_dtype_can_be_forced():
    plan = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", engine="vllm", kv_cache_dtype="bfloat16")
    assert plan.engine.kv_cache_dtype == "bfloat16"
    e5m2 = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", engine="vllm", kv_cache_dtype="fp8_e5m2")
    assert e5m2.engine.kv_cache_dtype == "fp8_e5m2"
    assert e5m2.memory.kv_cache_tokens > 1.9 * plan.memory.kv_cache_tokens


def test_startup_check_predicts_the_engine_refusal_with_settings_unchanged():
    out = startup_outcome(PlanRequest(model="openai/gpt-oss-120b", gpu="H100-80GB", engine="vllm", engine_version="0.10.1"))
    # vllm issue 23278 logged "No available memory for the cache blocks" (-2.14 GiB): a pip install of 0.10.1 without FlashInfer,
    # whose PyTorch sampler reserves 7.4 GiB at start-up; the vllm-openai image (the plan's default) runs FlashInfer's and
    # about 4.5 GiB less, which still refuses: one 131,072-token request does not fit
    assert not out.starts and out.refusal.startswith("To serve at least one request with the models's max seq len (131072)")
    ok = startup_outcome(PlanRequest(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", engine="vllm", context=8192,
                                     engine_version="0.19.0", gpu_memory_utilization=0.95))
    assert ok.starts and abs(ok.kv_cache_tokens - 476_000) / 476_000 < 0.01  # llm-d-planner's vLLM 0.19 log
