"""vLLM's LoRA slot memory (estimate/lora.py) counted by hand from create_lora_weights' tensor shapes."""

from __future__ import annotations

import pytest

from infer_advisor.engines.lora import lora_profile
from infer_advisor.engines.profiles import engine_profile
from infer_advisor.estimate.lora import lora_bytes_per_gpu, lora_elements_per_slot_per_rank
from infer_advisor.estimate.memory import estimate_memory
from infer_advisor.model_facts import resolve_model

GIB = 2**30


@pytest.fixture(scope="module")
def llama8b():
    return resolve_model("meta-llama/Llama-3.1-8B")


def test_llama_8b_elements_by_hand(llama8b):
    h, q, kv, i = 4096, 32 * 128, 8 * 128, 14336
    qkv = 3 * h + (q + 2 * kv)  # A: one rank x h slice for each of q, k, v; B: (q + 2 kv) x rank
    o_proj = q + h  # row parallel: A rank x q, B h x rank
    gate_up = 2 * h + 2 * i
    down = i + h
    assert lora_elements_per_slot_per_rank(llama8b, tp=1) == 32 * (qkv + o_proj + gate_up + down) == 2_621_440
    # TP 2: column-parallel outputs and row-parallel inputs halve; A of qkv / gate_up and B of o / down stay whole
    assert lora_elements_per_slot_per_rank(llama8b, tp=2) == 32 * (3 * h + (q + 2 * kv) / 2 + q / 2 + h + 2 * h + i + i / 2 + h)
    assert lora_bytes_per_gpu(llama8b, slots=4, rank=64, tp=1, dtype_bytes=2) == 4 * 64 * 2_621_440 * 2
    assert lora_bytes_per_gpu(llama8b, slots=0, rank=64, tp=1, dtype_bytes=2) == 0


def test_profiler_sees_lora_in_v1_not_in_v0(llama8b):
    assert lora_profile("vllm", "0.7.3").profiler_sees_lora is False
    assert lora_profile("vllm", "0.19.0").profiler_sees_lora is True
    args = dict(gpu_memory_bytes=80 * GIB, engine=engine_profile("vllm"), context=8192)
    off = estimate_memory(llama8b, **args, engine_version="0.19.0")
    v1 = estimate_memory(llama8b, **args, engine_version="0.19.0", lora_slots=4, lora_rank=64)
    v0 = estimate_memory(llama8b, **args, engine_version="0.7.3", lora_slots=4, lora_rank=64)
    lora = 4 * 64 * 2_621_440 * 2
    assert v1.overhead_bytes_per_gpu["lora"] == lora and "lora" not in v1.outside_budget_bytes_per_gpu
    assert off.kv_cache_bytes_per_gpu - v1.kv_cache_bytes_per_gpu == pytest.approx(lora, abs=1)
    assert v0.outside_budget_bytes_per_gpu["lora"] == lora and v0.kv_cache_bytes_per_gpu == off.kv_cache_bytes_per_gpu


def test_vllm_0_8_0_to_0_8_2_runs_v0_with_lora(llama8b):
    """vLLM 0.8.0-0.8.2 fall back to V0 when LoRA is on (arg_utils._is_v1_supported_oracle, read at 0.8.2); 0.8.3 runs
    LoRA on V1. With LoRA the 0.8.2 plan takes the V0 memory profile, without it the version's own (V1)."""
    from infer_advisor.engines.lora import lora_memory_version
    from infer_advisor.engines.memory import memory_profile
    from infer_advisor.engines.settings import engine_settings

    assert lora_memory_version("vllm", "0.8.0") == lora_memory_version("vllm", "0.8.2") == "0.7.3"
    assert lora_memory_version("vllm", "0.8.3") == "0.8.3" and lora_memory_version("vllm", "0.19.0") == "0.19.0"
    v0, v1 = memory_profile("vllm", "0.7.3"), memory_profile("vllm", "0.8.2")
    assert v0.label != v1.label
    with_lora = engine_settings("vllm", "0.8.2", None, lora_adapters=1)
    assert with_lora.profile.label.startswith(v0.label) and "0.8.2" in with_lora.profile.label
    assert with_lora.version == "0.8.2"  # LoRA facts, flags and the KV report stay 0.8.2's
    assert engine_settings("vllm", "0.8.2", None).profile.label == v1.label
    assert engine_settings("vllm", "0.8.3", None, lora_adapters=1).profile.label == memory_profile("vllm", "0.8.3").label
    # the 0.8.2 V0 worker builds the LoRA manager inside the measured model load: the slots come out of the KV cache
    assert lora_profile("vllm", "0.8.2").profiler_sees_lora is True
    assert lora_profile("vllm", "0.8.2").kernels_per_module == lora_profile("vllm", "0.8.5").kernels_per_module == 3


def test_v0_keeps_chunked_prefill_off_with_lora(llama8b):
    """vLLM V0 turns chunked prefill on above 32K tokens only without LoRA ('and not self.enable_lora', arg_utils 0.5.3-0.8.2):
    with adapters a 0.7.3 plan at 131072 tokens profiles the whole max_model_len, not a 2048-token chunk."""
    from infer_advisor.engines.settings import engine_settings

    assert engine_settings("vllm", "0.7.3", None).profile.chunked_prefill_above == 32768
    assert engine_settings("vllm", "0.7.3", None, lora_adapters=1).profile.chunked_prefill_above is None
    assert engine_settings("vllm", "0.8.2", None, lora_adapters=1).profile.chunked_prefill_above is None
    args = dict(gpu_memory_bytes=80 * GIB, engine=engine_profile("vllm"), context=131072, engine_version="0.7.3")
    plain = estimate_memory(llama8b, **args, memory=engine_settings("vllm", "0.7.3", None).profile)
    lora = estimate_memory(llama8b, **args, memory=engine_settings("vllm", "0.7.3", None, lora_adapters=1).profile, lora_slots=1, lora_rank=16)
    assert plain.activation_tokens == 2048 and lora.activation_tokens == 131072
