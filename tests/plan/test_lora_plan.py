"""--lora-adapters / --max-lora-rank: the plan's slots, the memory they take, the vLLM flags it emits."""

from __future__ import annotations

import pytest

from infer_advisor import advise
from infer_advisor.engines.argv import vllm_flags
from infer_advisor.errors import RequestError


def test_lora_slots_take_kv_memory_and_reach_the_flags():
    base = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", engine="vllm")
    plan = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", engine="vllm", lora_adapters=40, max_lora_rank=50)
    lora = plan.engine.lora
    assert (lora.max_loras, lora.max_lora_rank, lora.max_cpu_loras) == (16, 64, 40)  # rank 50 rounds up to vLLM's 64
    slot_bytes = 16 * 64 * 2_621_440 * 2  # estimate/lora.py, counted by hand in tests/estimate/test_lora.py
    assert plan.memory.overhead_bytes_per_gpu["lora"] == slot_bytes
    assert plan.memory.kv_cache_bytes_per_gpu == pytest.approx(base.memory.kv_cache_bytes_per_gpu - slot_bytes, abs=2**21)
    argv = vllm_flags(plan, "meta-llama/Llama-3.1-8B")
    i = argv.index("--enable-lora")
    assert argv[i:i + 7] == ["--enable-lora", "--max-loras", "16", "--max-lora-rank", "64", "--max-cpu-loras", "40"]
    assert "--enable-lora" not in vllm_flags(base, "meta-llama/Llama-3.1-8B")


def test_lora_limits_are_one_line_errors():
    with pytest.raises(RequestError, match="accepts ranks up to 512"):
        advise(model="meta-llama/Llama-3.1-8B", gpu="L4", engine="vllm", lora_adapters=2, max_lora_rank=1024)
    with pytest.raises(RequestError, match="no LoRA facts for llama.cpp"):
        advise(model="meta-llama/Llama-3.1-8B", gpu="L4", engine="llama.cpp", lora_adapters=2)
    with pytest.raises(RequestError, match="give --max-lora-rank"):
        advise(model="meta-llama/Llama-3.1-8B", gpu="L4", engine="sglang", lora_adapters=2)


def test_sglang_slots_flags_and_memory():
    from infer_advisor.engines.argv import sglang_flags

    plan = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", engine="sglang", lora_adapters=4, max_lora_rank=50)
    lora = plan.engine.lora
    assert (lora.max_loras, lora.max_lora_rank, lora.max_cpu_loras) == (5, 50, 5)  # a slot for base-model requests; any rank
    assert plan.memory.overhead_bytes_per_gpu["lora"] == 5 * 50 * 2_621_440 * 2  # same elements per slot as vLLM
    argv = sglang_flags(plan, "meta-llama/Llama-3.1-8B")
    i = argv.index("--enable-lora")
    assert argv[i:i + 9] == ["--enable-lora", "--max-loras-per-batch", "5", "--max-lora-rank", "50", "--lora-target-modules", "all",
                              "--max-loaded-loras", "5"]


def test_no_automatic_draft_head_with_adapters():
    kw = dict(model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100-80GB", engine="vllm", goal="latency")
    assert advise(**kw).speculative is not None  # a published EAGLE-3 head for the base model
    assert advise(**kw, lora_adapters=2, max_lora_rank=16).speculative is None  # trained on the base model, not the adapters
