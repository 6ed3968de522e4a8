"""The rotary embedding's cos/sin tables vLLM keeps on every GPU (data/rotary_cache.yaml), counted by hand."""

import pytest

from infer_advisor.engines.memory import memory_profile
from infer_advisor.engines.profiles import engine_profile
from infer_advisor.estimate.memory import estimate_memory
from infer_advisor.estimate.rotary import rotary_cache_bytes
from infer_advisor.model_facts import resolve_model

GiB, MiB = 2**30, 2**20


def test_gemma3_keeps_a_linear_scaled_global_table_and_a_local_one():
    """Gemma 3: global layers linear x8 over 131,072 positions (LinearScalingRotaryEmbedding: 1,048,576 rows), the
    sliding layers a plain 131,072-row table (rope_local_base_freq); head_dim 128 on 27B, in bf16."""
    model = resolve_model("google/gemma-3-27b-it", source="catalog")
    assert rotary_cache_bytes(model, "bfloat16") == (131072 * 8 + 131072) * 128 * 2  # 288 MiB


def test_llama3_rope_keeps_one_table_of_max_position_rows():
    model = resolve_model("meta-llama/Llama-3.1-8B", source="catalog")
    assert rotary_cache_bytes(model, "bfloat16") == 131072 * 128 * 2  # 32 MiB
    assert rotary_cache_bytes(model, "float32") == 131072 * 128 * 4


def test_gpt_oss_table_is_yarn_original_times_factor_in_float32():
    model = resolve_model("openai/gpt-oss-20b", source="catalog")  # yarn 32 x 4096, head_dim 64, get_rope(dtype=float32)
    assert rotary_cache_bytes(model, "bfloat16") == 4096 * 32 * 64 * 4


def test_a_model_without_rotary_positions_keeps_no_table():
    """ALiBi (MPT, a Falcon with alibi: true) and position-free attention (Jamba) build no rotary embedding."""
    llama = resolve_model("meta-llama/Llama-3.1-8B", source="catalog")
    for change in ({"model_type": "mpt"}, {"model_type": "jamba"}, {"alibi": True}):
        model = llama.model_copy(update={"config": {**llama.config, **change}})
        assert rotary_cache_bytes(model, "bfloat16") == 0.0, change


def test_vllm_counts_the_tables_with_the_weights():
    """gemma-3-27b-it on one H100, vLLM 0.19 (llm-d-planner log: 'weights memory: 51.45GiB'): within 0.5% with the
    288 MiB of tables; the source names them."""
    model = resolve_model("google/gemma-3-27b-it", source="catalog")
    est = estimate_memory(model, gpu_memory_bytes=80 * GiB, engine=engine_profile("vllm"), context=8192,
                          memory=memory_profile("vllm", "0.19.0"), engine_version="0.19.0")
    assert est.weights_bytes_per_gpu / GiB == pytest.approx(51.45, rel=0.005)
    assert "weights_rotary" in est.figure_sources
    assert memory_profile("vllm", "0.19.0").rotary_cache_layout is None


def test_sglang_keeps_the_table_in_float32_on_nvidia_and_in_the_model_dtype_on_rocm():
    """memfix18 (retrospective): SGLang RotaryEmbedding ('cache needs to be in FP32', .to(dtype) only off CUDA), built
    inside load_model, so in 'Load weight end ... mem usage'; Qwen3-8B: 40,960 x 128."""
    model = resolve_model("Qwen/Qwen3-8B", source="catalog")
    for version in ("0.4.4", "0.5.8", "0.5.19"):
        mp = memory_profile("sglang", version)
        assert mp.keeps_rotary_cache and mp.rotary_cache_layout == "sglang"
    assert rotary_cache_bytes(model, "bfloat16", "sglang") == 40960 * 128 * 4
    assert rotary_cache_bytes(model, "bfloat16", "sglang", nvidia=False) == 40960 * 128 * 2


def test_sglang_mla_yarn_keeps_two_float32_companion_tables():
    """SGLang deepseek_v2.py builds an MLA model's yarn rope as deepseek_yarn, whose DeepseekScalingRotaryEmbedding
    keeps cos_cached_total and sin_cached_total (float32, rows x rotary_dim each) beside cos_sin_cache; Kimi-K2.5:
    yarn 64 x 4096 rows, qk_rope_head_dim 64."""
    model = resolve_model("moonshotai/Kimi-K2.5", source="catalog")
    rows = 4096 * 64 * 64
    assert rotary_cache_bytes(model, "bfloat16", "sglang") == rows * (4 + 2 * 4)
    assert rotary_cache_bytes(model, "bfloat16", "sglang", nvidia=False) == rows * (2 + 2 * 4)


def test_gemma4_proportional_table_spans_the_global_head():
    """vLLM 0.19.0 / 0.20.0 gemma4_rope.py (rotary_dim = head_size) and gemma4.py (full layers: global_head_dim):
    gemma-4-31B keeps a 262,144 x 256 table for its sliding layers and a 262,144 x 512 one for its full layers (memfix13)."""
    model = resolve_model("nvidia/Gemma-4-31B-IT-NVFP4", source="catalog")
    assert rotary_cache_bytes(model, "bfloat16") == 262144 * (256 + 512) * 2  # 384 MiB
