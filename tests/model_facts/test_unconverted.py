"""Modules a quantized export keeps unquantized (quantization_config modules_to_not_convert / ignore) are counted in
the model dtype: Meta's Llama-3.1-405B FP8 layout (first and last layers, every self_attn, lm_head in bf16) and
NVIDIA's NVFP4 exports (self_attn* per layer). Expected counts are written out from the shapes, not from the code."""

from __future__ import annotations

from infer_advisor.estimate.weights import weights_bytes
from infer_advisor.model_facts import resolve_model
from infer_advisor.model_facts.build import facts_from_config
from infer_advisor.model_facts.catalog import find_entry

H, I, HEADS, KV, HD, L = 16384, 53248, 128, 8, 128, 126
ATTN = H * HEADS * HD * 2 + H * KV * HD * 2  # q, o and k, v of one Llama-3.1-405B layer
MLP = 3 * H * I


def _llama_405b_fp8() -> dict:
    config = dict(find_entry("meta-llama/Llama-3.1-405B").config)
    keep = ["model.layers.0", "model.layers.125", "lm_head"] + [f"model.layers.{i}.self_attn" for i in range(1, 125)]
    config["quantization_config"] = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": keep}
    return config


def test_llama_405b_fp8_keeps_every_attention_and_the_first_and_last_mlp():
    facts = facts_from_config("meta-llama/Llama-3.1-405B-Instruct-FP8", _llama_405b_fp8(), "local")
    assert facts.weight_format == "fp8" and facts.pre_quantized == "fp8"
    assert facts.params.kept_linear == L * ATTN + 2 * MLP
    quantized = (L - 2) * MLP
    embed_and_head = 2 * 128256 * H
    other = facts.params.other
    expected = quantized * 1 + (L * ATTN + 2 * MLP + embed_and_head + other) * 2
    assert weights_bytes(facts, "fp8", "bfloat16") == expected
    # vLLM 0.5.3 logged 57.752 GiB per GPU at TP 8 (vllm-project/vllm issue 6746): within 2%
    assert abs(expected / 8 / 2**30 / 57.752 - 1) < 0.02


def test_a_glob_per_layer_and_a_parent_name_cover_their_modules_only():
    config = dict(find_entry("meta-llama/Llama-3.1-405B").config)
    config["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["model.layers.1*", "lm_head"]}
    facts = facts_from_config("x/y", config, "local")
    # model.layers.1, 10-19 and 100-125: 1 + 10 + 26 whole layers (a glob, as ModelOpt writes it)
    assert facts.params.kept_linear == 37 * (ATTN + MLP)
    config["quantization_config"] = {"quant_method": "fp8", "modules_to_not_convert": ["model.layers.1", "model.layers.2.self_attn.q_proj"]}
    facts = facts_from_config("x/y", config, "local")
    assert facts.params.kept_linear == ATTN + MLP  # layers.1 is not a parent of layers.10; a single projection is not counted


def test_nvfp4_export_keeps_its_attention_in_bf16():
    facts = resolve_model("nvidia/MiniMax-M2.5-NVFP4", source="catalog")
    base = resolve_model("MiniMaxAI/MiniMax-M2.5", source="catalog")
    assert facts.params.kept_linear > 0 and facts.params.kept_linear < facts.params.linear - facts.params.expert_linear + 1
    assert base.params.kept_linear == 0  # 'gate' / 'lm_head' name no decoder Linear


def test_formats_that_leave_attention_alone_do_not_change():
    gpt = resolve_model("openai/gpt-oss-20b", source="catalog")  # mxfp4 quantizes only the experts
    assert gpt.params.kept_linear > 0
    plain = gpt.model_copy(update={"params": gpt.params.model_copy(update={"kept_linear": 0})})
    assert weights_bytes(gpt, "mxfp4-experts", "bfloat16") == weights_bytes(plain, "mxfp4-experts", "bfloat16")


def test_gemma4_nvfp4_keeps_both_attention_kinds_and_the_dense_mlp_beside_the_experts():
    # nvidia/Gemma-4-26B-A4B-NVFP4 ignores every layer's self_attn*, mlp* and router*: 25 sliding layers (q 16 x 256,
    # k and v 8 x 256), 5 full layers (q 16 x 512, k 2 x 512 shared as v: attention_k_eq_v) and 30 dense MLPs (2112 wide).
    facts = resolve_model("nvidia/Gemma-4-26B-A4B-NVFP4", source="catalog")
    h = 2816
    sliding = h * 16 * 256 * 2 + h * 8 * 256 * 2
    full = h * 16 * 512 * 2 + h * 2 * 512
    assert facts.params.kept_linear == 25 * sliding + 5 * full + 30 * 3 * h * 2112


def test_glm52_nvfp4_keeps_its_dense_layers_and_shared_experts():
    # nvidia/GLM-5.2-NVFP4 ignores model.layers.0*, model.layers.1.* / 2.* and every layer's self_attn* and
    # mlp.shared_experts*: the 3 dense MLPs (12288 wide) and 75 shared experts (2048 wide) are kept with the attention.
    facts = resolve_model("nvidia/GLM-5.2-NVFP4", source="catalog")
    h = 6144
    without_mlps = facts.params.kept_linear - 3 * 3 * h * 12288 - 75 * 3 * h * 2048
    assert without_mlps > 0 and without_mlps % 78 == 0  # what is left: one attention size per layer, all 78 layers


def test_mixed_precision_qwen36_counts_fp8_mixers_a_4bit_lm_head_and_a_bf16_mtp():
    # nvidia/Qwen3.6-27B-NVFP4 (quant_algo MIXED_PRECISION): quantized_layers lists every self_attn / linear_attn
    # projection as FP8, the MLPs and lm_head as NVFP4; ignore ['mtp*', ...] keeps the MTP layer in bf16.
    from infer_advisor.engines.draft_shape import draft_shape, parse_speculative_config

    facts = resolve_model("nvidia/Qwen3.6-27B-NVFP4", source="catalog")
    assert facts.params.quantized_lm_head
    assert 0 < facts.params.fp8_linear < facts.params.linear
    groups = {}
    from infer_advisor.estimate.weights import weight_bytes_by_group
    groups = weight_bytes_by_group(facts, "nvfp4", "bfloat16")
    assert groups["lm_head"] == facts.params.lm_head * 0.5625  # 4 bits + one e4m3 scale per 16
    expected_linear = facts.params.fp8_linear * 1 + (facts.params.linear - facts.params.fp8_linear) * 0.5625
    assert abs(groups["linear"] - expected_linear) < 1
    shape = draft_shape(parse_speculative_config({"method": "mtp", "num_speculative_tokens": 2}), facts)
    assert not shape.in_target_format and shape.dtype == "bfloat16"
    base = resolve_model("Qwen/Qwen3.6-35B-A3B", source="catalog")
    assert base.params.fp8_linear == 0 and not base.params.quantized_lm_head
