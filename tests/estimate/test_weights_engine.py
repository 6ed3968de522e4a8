"""What one GPU holds beyond its shard (estimate/weights_engine.py), by hand from the model's config and vLLM's code:
MLA's absorbed matrices (V0 0.7.1-0.7.3) and Machete's zero points in the scales' dtype (Hopper, AWQ, 0.19 on)."""

import pytest

from infer_advisor.engines.memory import memory_profile
from infer_advisor.estimate.weights_engine import expanded_zero_point_bytes, mla_absorbed_bytes
from infer_advisor.model_facts import resolve_model


def test_mla_absorption_only_in_v0_from_071():
    assert memory_profile("vllm", "0.7.0").absorbs_mla("0.7.0") is None  # no MLA backend in 0.7.0
    for version in ("0.7.1", "0.7.2", "0.7.3"):
        assert memory_profile("vllm", version).absorbs_mla(version) is not None
    for version in ("0.8.0", "0.10.1", "0.19.0"):  # 0.8.0 keeps views of kv_b_proj (W_UV, W_UK_T)
        assert memory_profile("vllm", version).absorbs_mla(version) is None


def test_mla_absorbed_bytes_by_hand():
    absorption = memory_profile("vllm", "0.7.1").absorbs_mla("0.7.1")
    lite = resolve_model("deepseek-ai/DeepSeek-V2-Lite")  # no q_lora_rank: q_in = hidden 2048; 16 heads, 512 + 64
    heads = 16 // 8
    per_layer = (2048 * heads * 512 + heads * 512 * 2048) * 2 + 2048 * heads * 64 * 2
    assert mla_absorbed_bytes(lite, absorption, "none", "float16", tp=8) == per_layer * 27
    v3 = resolve_model("deepseek-ai/DeepSeek-V3")  # q_lora_rank 1536, 128 heads, hidden 7168; FP8: requantized to 1 byte
    heads = 128 // 8
    per_layer = (1536 * heads * 512 + heads * 512 * 7168) * 1 + 1536 * heads * 64 * 2
    assert mla_absorbed_bytes(v3, absorption, "fp8", "bfloat16", tp=8) == per_layer * 61
    assert mla_absorbed_bytes(resolve_model("Qwen/Qwen3-8B"), absorption, "none", "bfloat16", tp=1) == 0
    assert mla_absorbed_bytes(lite, None, "none", "float16", tp=8) == 0


def test_machete_zero_points_on_hopper_awq_only():
    for version in ("0.19.0", "0.24.0", "0.28.0", "0.31.0", "0.33.0"):
        assert memory_profile("vllm", version).expands_zero_points("awq", version, 9.0)
    assert not memory_profile("vllm", "0.18.0").expands_zero_points("awq", "0.18.0", 9.0)  # Marlin, packed int4 zeros
    assert not memory_profile("vllm", "0.31.0").expands_zero_points("awq", "0.31.0", 8.9)  # L40S: Marlin
    assert not memory_profile("vllm", "0.31.0").expands_zero_points("gptq", "0.31.0", 9.0)  # symmetric: no zeros
    model = resolve_model("Qwen/Qwen2.5-7B-Instruct-AWQ")
    # one fp16 zero per 128 quantized weights instead of a packed 4-bit one
    assert expanded_zero_point_bytes(model, "awq", "float16", None, tp=1, pp=1) == model.params.linear / 128 * 1.5
    assert expanded_zero_point_bytes(model, "none", "float16", None, tp=1, pp=1) == 0


def test_expert_biases_in_fp32_under_triton_mxfp4_by_hand():
    """gpt-oss-20b (24 layers, 32 experts, hidden 2880, intermediate 2880): vLLM's Triton MXFP4 backend keeps w13_bias
    (2 x intermediate, split over TP) and w2_bias (hidden, whole on every rank) in fp32 (mxfp4.py / oracle/mxfp4.py,
    0.11.0-0.33.0); the even split counts them in bf16."""
    from infer_advisor.estimate.weights_engine import expert_bias_bytes

    model = resolve_model("openai/gpt-oss-20b")
    assert model.params.expert_other == 24 * 32 * (2 * 2880 + 2880)
    triton = next(p for p in memory_profile("vllm", "0.19.0").expert_padding if p.bias_bytes)
    assert triton.bias_bytes == 4
    per_rank_tp2 = 24 * 32 * (2880 + 2880)  # gate_up half, down whole
    assert expert_bias_bytes(model, triton, "bfloat16", tp=2, pp=1) == per_rank_tp2 * 4 - 24 * 32 * 8640 * 2 / 2
    assert expert_bias_bytes(model, triton, "bfloat16", tp=1, pp=1) == 24 * 32 * 8640 * (4 - 2)
    assert expert_bias_bytes(model, None, "bfloat16", tp=2, pp=1) == 0
    assert expert_bias_bytes(resolve_model("Qwen/Qwen3-8B"), triton, "bfloat16", tp=1, pp=1) == 0


def test_marlin_keeps_block_fp8_scales_per_128_inputs_below_sm89():
    """vLLM marlin_utils_fp8.py (0.33.0 read): block-FP8 scales repeated along the outputs (block_n) and permuted with
    group_size = block_k 128, in the model dtype: 2 bytes per 128 weights in place of one fp32 per 128 x 128 block."""
    from infer_advisor.estimate.weights_engine import marlin_scale_bytes

    prof = memory_profile("vllm", "0.19.0")
    assert prof.marlin_fp8_for("fp8-block", 8.0) is not None  # A100
    assert prof.marlin_fp8_for("fp8-block", 8.9) is None and prof.marlin_fp8_for("fp8-block", 9.0) is None  # FP8 units
    assert prof.marlin_fp8_for("fp8", 8.0) is None  # per-channel scales: one per output, negligible
    assert memory_profile("vllm", "0.14.0").marlin_fp8_for("fp8-block", 8.0) is None  # not read before 0.17
    model = resolve_model("Qwen/Qwen3-8B")
    assert marlin_scale_bytes(model, "fp8-block", "bfloat16", 128, tp=2, pp=1) == pytest.approx(
        model.params.linear * (2 / 128 - 4 / 16384) / 2)


def test_dsa_indexer_is_whole_on_every_rank_by_hand():
    """vLLM deepseek_v2.py Indexer (0.19.0 / 0.20.0 read, memfix13): wq_b ReplicatedLinear in the format (model dtype
    where the checkpoint ignores it), wk and weights_proj unquantized and unsplit. GLM-5.1-FP8 (78 indexer layers,
    q_lora_rank 2048, 32 x 128 index heads, hidden 6144) at TP 8: block-FP8 wq_b, bf16 wk / weights_proj."""
    from infer_advisor.estimate.weights import linear_bytes_per_param
    from infer_advisor.estimate.weights_engine import indexer_bytes

    model = resolve_model("zai-org/GLM-5.1-FP8", source="catalog")
    q, k, fmt = 2048 * 32 * 128, 6144 * (128 + 32), linear_bytes_per_param("fp8-block", "bfloat16", None)
    expected = 78 * (q * fmt + k * 2) - 78 * (q + k) * fmt / 8
    assert indexer_bytes(model, "fp8-block", "bfloat16", None, tp=8, pp=1) == pytest.approx(expected)
    assert indexer_bytes(resolve_model("Qwen/Qwen3-8B"), "none", "bfloat16", None, tp=8, pp=1) == 0.0


def test_mla_down_projections_in_the_model_dtype_where_the_checkpoint_ignores_self_attn():
    """memfix16 (retrospective): the engines' ReplicatedLinear takes the quant_config, whose ignore list gives
    q_a_proj / kv_a_proj_with_mqa the unquantized method. Kimi-K2.5's compressed-tensors config ignores
    're:.*self_attn.*' (61 layers, hidden 7168, q_lora_rank 1536, kv_lora_rank 512 + rope 64, 384 experts, 60 MoE
    layers): the down-projections in bf16, not int4; the router unquantized as before."""
    from infer_advisor.estimate.weights import replicated_bytes

    model = resolve_model("moonshotai/Kimi-K2.5", source="catalog")
    expected = 61 * 7168 * (1536 + 512 + 64) * 2 + 7168 * 384 * 60 * 2
    assert replicated_bytes(model, model.weight_format, "bfloat16", None) == pytest.approx(expected)


def test_sglang_keeps_mla_down_projections_and_router_whole_from_046():
    """SGLang deepseek_v2.py (0.4.6.post5, 0.5.8.post1, 0.5.12 read, memfix16): fused_qkv_a_proj_with_mqa and
    kv_a_proj_with_mqa are ReplicatedLinear, MoEGate's weight a full Parameter."""
    assert memory_profile("sglang", "0.5.8").replicates_mla_and_router
    assert memory_profile("sglang", "0.4.6").replicates_mla_and_router


def test_sglang_w_kc_w_vc_copies_of_kv_b_proj_by_hand():
    """SGLang post_load_weights (0.5.8.post1 / 0.5.12 read, memfix16): w_kc / w_vc copies of kv_b_proj beside it, bf16
    on CUDA (block-FP8 dequantized), one byte off CUDA (per-tensor FP8). GLM-5-FP8 (78 layers, 64 heads, qk_nope 192,
    v 256, kv_lora_rank 512) at TP 8."""
    from infer_advisor.estimate.weights_engine import split_kv_b_bytes

    model = resolve_model("zai-org/GLM-5-FP8", source="catalog")
    per_rank = 78 * 8 * (192 + 256) * 512
    assert split_kv_b_bytes(model, "fp8-block", "bfloat16", tp=8, pp=1, compute_capability=0.0) == pytest.approx(per_rank)
    assert split_kv_b_bytes(model, "fp8-block", "bfloat16", tp=8, pp=1, compute_capability=9.0) == pytest.approx(2 * per_rank)
    assert split_kv_b_bytes(resolve_model("Qwen/Qwen3-8B"), "none", "bfloat16", tp=1, pp=1, compute_capability=9.0) == 0.0
    assert memory_profile("sglang", "0.5.8").splits_mla_kv_b and not memory_profile("vllm", "0.19.0").splits_mla_kv_b
