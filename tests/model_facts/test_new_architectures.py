"""The architectures this catalog round added, checked by hand: Granite 4 and Falcon-H1 (Mamba-2 hybrids: recurrent
state per sequence), DeepSeek-V4 (compressed / sparse attention over a sliding window, FP4 experts), GLM-5 (MLA with a
DSA indexer on some layers), Qwen3-VL's text decoder, Nemotron 3 Ultra (layer count from its block list).

Parameter counts against transformers' own classes are in test_params_vs_transformers.py (integration marker)."""

from __future__ import annotations

import pytest

from infer_advisor.engines.profiles import engine_profile
from infer_advisor.estimate.memory import estimate_memory, weights_bytes
from infer_advisor.model_facts import facts_from_config, resolve_model

GIB = 2**30

# Synthetic Granite-4-style hybrid (shapes made up for the arithmetic; no published config is in the catalog):
# 10 layers, 8 Mamba-2 and 2 attention, routed experts plus a shared MLP.
GRANITE = {
    "architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid", "hidden_size": 1024,
    "intermediate_size": 512, "shared_intermediate_size": 1024, "num_hidden_layers": 10, "num_attention_heads": 16,
    "num_key_value_heads": 4, "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2,
    "layer_types": ["mamba"] * 4 + ["attention"] + ["mamba"] * 4 + ["attention"],
    "mamba_n_heads": 32, "mamba_d_head": 64, "mamba_d_state": 128, "mamba_n_groups": 1, "mamba_d_conv": 4,
    "mamba_expand": 2, "position_embedding_type": "nope", "tie_word_embeddings": True, "torch_dtype": "bfloat16",
}
# Synthetic Falcon-H1-style parallel hybrid: every layer runs attention and a Mamba-2 mixer side by side.
FALCON_H1 = {
    "architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1", "hidden_size": 1024, "intermediate_size": 2048,
    "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 32000,
    "mamba_d_ssm": 1536, "mamba_n_heads": 24, "mamba_d_head": 64, "mamba_d_state": 128, "mamba_n_groups": 2,
    "mamba_d_conv": 4, "torch_dtype": "bfloat16",
}


def _per_sequence_delta(m, *, tp: int, context: int, sequences: int) -> float:
    """What ``sequences`` more requests of ``context`` tokens add to the needed bytes per GPU (vLLM accounting)."""
    vllm = engine_profile("vllm")
    one = estimate_memory(m, gpu_memory_bytes=141 * GIB, engine=vllm, tp=tp, context=context, concurrency=1)
    many = estimate_memory(m, gpu_memory_bytes=141 * GIB, engine=vllm, tp=tp, context=context, concurrency=1 + sequences)
    assert one.recurrent_state_bytes_per_sequence_per_gpu == many.recurrent_state_bytes_per_sequence_per_gpu
    return many.needed_bytes_per_gpu - one.needed_bytes_per_gpu, one


def test_granite4_hybrid_state_and_kv_by_hand():
    m = facts_from_config("acme/granite-like", GRANITE, "local")
    assert m.layer_counts == {"mamba": 8, "full": 2} and m.family == "moe"
    inner = 2 * 1024  # mamba_expand x hidden
    conv_channels = inner + 2 * 1 * 128  # x, B, C
    assert m.recurrent_state_conv_elements == 8 * (4 - 1) * conv_channels
    assert m.recurrent_state_ssm_elements == 8 * 32 * 64 * 128
    assert m.kv_cache_elements_per_token == 2 * 2 * 4 * (1024 // 16)  # 2 attention layers, K and V, 4 heads of 64
    state = (8 * 3 * conv_channels + 8 * 32 * 64 * 128) * 2  # bf16 conv and SSM state, bytes per sequence
    delta, one = _per_sequence_delta(m, tp=2, context=8192, sequences=5)
    assert one.recurrent_state_bytes_per_sequence_per_gpu == state / 2
    kv_token = m.kv_cache_elements_per_token * 2 / 2  # bf16, heads split over tp=2
    assert delta == pytest.approx(5 * (8192 * kv_token + state / 2), rel=1e-9)


def test_falcon_h1_parallel_hybrid_state_and_kv_by_hand():
    m = facts_from_config("acme/falcon-h1-like", FALCON_H1, "local")
    assert m.layer_counts == {"full": 6, "mamba": 6} and m.num_layers == 6
    conv_channels = 1536 + 2 * 2 * 128  # d_ssm + 2 x groups x state
    assert m.recurrent_state_conv_elements == 6 * 3 * conv_channels
    assert m.recurrent_state_ssm_elements == 6 * 24 * 64 * 128
    assert m.kv_cache_elements_per_token == 6 * 2 * 2 * 128  # attention in every layer
    state = (6 * 3 * conv_channels + 6 * 24 * 64 * 128) * 2
    delta, one = _per_sequence_delta(m, tp=1, context=4096, sequences=3)
    assert one.recurrent_state_bytes_per_sequence_per_gpu == state
    assert delta == pytest.approx(3 * (4096 * m.kv_cache_elements_per_token * 2 + state), rel=1e-9)


def test_deepseek_v4_flash_compressed_attention_and_fp4_experts_by_hand():
    m = resolve_model("deepseek-ai/DeepSeek-V4-Flash", source="catalog")
    ratios = m.config["compress_ratios"][:43]
    assert m.layer_counts == {"sliding": ratios.count(0), "csa": ratios.count(4), "hca": ratios.count(128)} == {
        "sliding": 2, "csa": 21, "hca": 20}
    # one shared K=V head of 512 per layer: every layer holds its last 128 tokens; CSA layers add one 512 entry and one
    # 128-wide indexer key per 4 tokens, HCA layers one 512 entry per 128 tokens
    assert (m.sliding_window, m.local_attention, m.num_kv_heads, m.attention) == (128, "sliding", 1, "mqa")
    assert m.sliding_kv_elements_per_token == 43 * 512
    assert m.kv_cache_elements_per_token == 21 * (512 + 128) // 4 + 20 * 512 // 128 == 3440
    # weights: FP8 with 128x128 one-byte (ue8m0) block scales, routed experts FP4 with a one-byte scale per 32
    assert m.weight_format == "fp8-block-fp4-experts" and m.pre_quantized == "fp8"
    p = m.params
    expected = p.expert_linear * (4 + 8 / 32) / 8 + (p.linear - p.expert_linear) * (1 + 1 / 16384) + (
        p.embedding + p.lm_head + p.other) * 2
    assert weights_bytes(m, m.weight_format, "bfloat16") == int(expected)
    vllm = engine_profile("vllm")
    est = estimate_memory(m, gpu_memory_bytes=141 * GIB, engine=vllm, quantization=m.weight_format, tp=8, context=65536)
    per_seq = (65536 * 3440 + 128 * 43 * 512) * 2 / 1  # bf16 KV, the one KV head replicated on every rank
    assert est.kv_cache_bytes_per_token_per_gpu == 3440 * 2
    assert est.max_concurrency == int(max(est.budget_bytes_per_gpu - (est.weights_bytes_per_gpu + est.activation_bytes_per_gpu
                                                                         + sum(est.overhead_bytes_per_gpu.values())), 0) // per_seq)
    nv = resolve_model("nvidia/DeepSeek-V4-Flash-NVFP4", source="catalog")
    assert nv.weight_format == "fp8-block-nvfp4-experts"
    assert weights_bytes(nv, nv.weight_format, "bfloat16") - weights_bytes(m, m.weight_format, "bfloat16") == int(
        p.expert_linear * (1 / 16 - 1 / 32))  # NVFP4's scale every 16 values instead of every 32


def test_glm5_indexer_runs_on_its_full_layers_only():
    five = resolve_model("zai-org/GLM-5", source="catalog")
    two = resolve_model("zai-org/GLM-5.2", source="catalog")
    # GLM-5.2: index_topk_freq 4, index_skip_topk_offset 3 -> layers 0-2 and every 4th from 6 run their own indexer
    kinds = two.config["indexer_types"]
    full = [i for i in range(78) if max(i - 3 + 1, 0) % 4 == 0]
    assert kinds.count("full") == len(full) == 21
    h, q_rank, ih, ihd = 6144, 2048, 32, 128
    indexer = q_rank * ih * ihd + h * ihd + h * ih + 2 * ihd  # wq_b, wk, weights_proj, k_norm (LayerNorm)
    assert five.num_parameters - two.num_parameters == (78 - 21) * indexer
    latent = 512 + 64
    assert five.kv_cache_elements_per_token == 78 * latent + 78 * ihd
    assert two.kv_cache_elements_per_token == 78 * latent + 21 * ihd
    assert two.attention == "mla" and two.family == "moe" and two.num_experts == 256


def test_qwen3_vl_text_decoder_ties_by_the_top_level_config():
    small = resolve_model("Qwen/Qwen3-VL-4B-Instruct", source="catalog")
    big = resolve_model("Qwen/Qwen3-VL-8B-Instruct", source="catalog")
    assert small.multimodal and small.tie_word_embeddings and small.params.lm_head == 0
    assert not big.tie_word_embeddings and big.params.lm_head == big.vocab_size * big.hidden_size
    # the same text decoder numbers as Qwen3-8B (transformers builds both to 8,190,735,360 parameters)
    assert big.num_parameters == resolve_model("Qwen/Qwen3-8B", source="catalog").num_parameters == 8_190_735_360
    thinking = resolve_model("Qwen/Qwen3-VL-32B-Thinking", source="catalog")
    assert thinking.name == "Qwen/Qwen3-VL-32B-Thinking" and thinking.num_parameters == resolve_model(
        "Qwen/Qwen3-VL-32B-Instruct", source="catalog").num_parameters


def test_nemotron3_ultra_takes_its_layer_count_from_the_block_list():
    m = resolve_model("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", source="catalog")
    assert "num_hidden_layers" not in m.config and m.num_layers == len(m.config["layers_block_type"]) == 108
    assert round(m.num_parameters / 1e9, 1) == 549.3 and m.recurrent_state_dtype == "float32"


def test_variants_resolve_under_their_own_id_with_the_shared_config():
    m = resolve_model("mistralai/Mistral-Small-3.2-24B-Instruct-2506", source="catalog")
    assert m.name == "mistralai/Mistral-Small-3.2-24B-Instruct-2506" and m.multimodal
    assert m.num_parameters == resolve_model("mistralai/Magistral-Small-2509", source="catalog").num_parameters
    distill = resolve_model("deepseek-r1-distill-qwen-32b", source="catalog")
    # a fine-tune of Qwen2.5-32B: the same parameter count (the Hub's safetensors total is 32,763,876,352)
    assert distill.num_parameters == resolve_model("Qwen/Qwen2.5-32B", source="catalog").num_parameters == 32_763_876_352


@pytest.mark.parametrize("bad", [
    {"compress_ratios": [0, 4]},  # shorter than the layers
    {"compress_ratios": [0] * 42 + [7, 0]},  # a ratio DeepSeek-V4 does not have
])
def test_deepseek_v4_layer_kinds_are_checked(bad):
    from infer_advisor.errors import ModelConfigError

    cfg = {**resolve_model("deepseek-ai/DeepSeek-V4-Flash", source="catalog").config, **bad}
    with pytest.raises(ModelConfigError, match="compress_ratios"):
        facts_from_config("x", cfg, "local")


def test_glm5_indexer_list_is_checked():
    from infer_advisor.errors import ModelConfigError

    cfg = {**resolve_model("zai-org/GLM-5.2", source="catalog").config, "indexer_types": ["full"] * 3}
    with pytest.raises(ModelConfigError, match="indexer_types"):
        facts_from_config("x", cfg, "local")


def test_a_mamba_width_that_heads_do_not_divide_is_refused():
    from infer_advisor.errors import ModelConfigError

    with pytest.raises(ModelConfigError, match="Mamba width"):
        facts_from_config("x", {**FALCON_H1, "mamba_n_heads": 25}, "local")


def test_deepseek_v4_plans_serve_its_own_checkpoint_format():
    from infer_advisor import advise

    plan = advise(model="deepseek-ai/DeepSeek-V4-Flash", gpu="H200:2", model_source="catalog")
    assert plan.feasible and plan.engine.name == "vllm"
    assert plan.quantization.method == "fp8-block-fp4-experts" and plan.quantization.pre_quantized
    assert not plan.quantization.needs_quantize_step
    m = resolve_model("deepseek-ai/DeepSeek-V4-Flash", source="catalog")
    assert plan.memory.weights_bytes == weights_bytes(m, "fp8-block-fp4-experts", plan.dtype)
    nv = advise(model="nvidia/DeepSeek-V4-Flash-NVFP4", gpu="B200:4", model_source="catalog")
    assert nv.feasible and nv.quantization.method == "fp8-block-nvfp4-experts"
