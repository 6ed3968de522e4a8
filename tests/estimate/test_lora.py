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
