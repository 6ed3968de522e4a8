"""Ground truth for the analytic counts: transformers' own model classes, built on the meta device.

Parametrized over the catalog, so a new catalog file is checked automatically. transformers, torch and
accelerate come from the dev extra; building on the meta device allocates no weights. Every catalog
architecture is one the installed transformers (5.24) builds; a config it cannot build fails the test.
"""

from __future__ import annotations

import warnings

import pytest

from infer_advisor.model_facts import facts_from_config
from infer_advisor.model_facts.arch_tables import SAME_AS
from infer_advisor.model_facts.catalog import load_catalog
from tests.model_facts.test_new_architectures import FALCON_H1, GRANITE

CATALOG = load_catalog()


# Parameter-name parts of a multimodal model's vision tower and projector: not part of the language model counted here.
_VISION_PARTS = ("visual", "vision_tower", "multi_modal_projector")


def transformers_parameter_count(config: dict) -> int:
    """Unique parameters of the language model transformers builds from ``config`` on the meta device:
    AutoModelForCausalLM, or for a multimodal wrapper whose text model has no causal-LM class of its own (Qwen3-VL)
    or whose text fields sit at the top level (Qwen2.5-VL) the whole AutoModelForImageTextToText minus its vision
    tower."""
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
    )

    cfg = dict(config)
    # The count is of the unquantized architecture: FP8/AWQ loaders would swap Linear layers for packed ones.
    cfg.pop("quantization_config", None)
    skip: tuple[str, ...] = ()
    build = AutoModelForCausalLM
    text = cfg.get("text_config")
    if (
        isinstance(text, dict)
        and text.get("model_type") not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
        and text.get("model_type") != "kimi_k2"  # built as deepseek_v3 below (its `architectures`), not as a wrapper
        and cfg.get("model_type") in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    ):  # e.g. Qwen3-VL (its text model has no causal-LM class; it ties by the top-level config)
        build, skip = AutoModelForImageTextToText, _VISION_PARTS
    elif (
        not isinstance(text, dict)
        and isinstance(cfg.get("vision_config"), dict)
        and cfg.get("model_type") in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    ):  # text fields at the top level beside a vision tower (Qwen2.5-VL's first config.json files)
        build, skip = AutoModelForImageTextToText, _VISION_PARTS
    elif isinstance(text, dict):  # multimodal wrapper: count its language model (Gemma 3, Qwen3.5)
        cfg = dict(text)
        cfg.pop("quantization_config", None)
    # Kimi K2 names its model_type 'kimi_k2' but ships DeepseekV3ForCausalLM (config.json `architectures`,
    # modeling_deepseek.py): transformers builds it as deepseek_v3.
    if build is AutoModelForCausalLM:
        cfg["model_type"] = SAME_AS.get(cfg.get("model_type"), cfg.get("model_type"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf_config = AutoConfig.for_model(**cfg)
        with init_empty_weights(include_buffers=True):  # buffers too: Llama 4 builds large ones on the CPU otherwise (minutes)
            model = build.from_config(hf_config)
    # init_empty_weights may leave lm_head untied; tie as from_pretrained would, then count each tensor once.
    model.tie_weights()
    seen: set[int] = set()
    total = 0
    for name, param in model.named_parameters(remove_duplicate=False):
        if id(param) not in seen and not any(part in name for part in skip):
            seen.add(id(param))
            total += param.numel()
    return total


@pytest.mark.integration
@pytest.mark.parametrize("entry", CATALOG, ids=[e.name for e in CATALOG])
def test_analytic_count_equals_transformers(entry):
    facts = facts_from_config(entry.name, entry.config, "catalog")
    assert facts.num_parameters == transformers_parameter_count(entry.config)


@pytest.mark.integration
@pytest.mark.parametrize(
    "overrides",
    [
        {"attention_bias": True, "mlp_bias": True},  # Llama with every bias on
        {"tie_word_embeddings": True, "num_key_value_heads": 1},  # tied + MQA
    ],
    ids=["llama-biases", "llama-tied-mqa"],
)
def test_variants_equal_transformers(overrides):
    base = next(e for e in CATALOG if e.name == "meta-llama/Llama-3.2-1B").config
    config = {**base, **overrides, "num_hidden_layers": 2}
    assert facts_from_config("variant", config, "local").num_parameters == transformers_parameter_count(config)


@pytest.mark.integration
def test_falcon_sequential_layout_equals_transformers():
    base = next(e for e in CATALOG if e.name == "tiiuae/falcon-7b").config
    config = {**base, "parallel_attn": False, "multi_query": False, "bias": True, "num_hidden_layers": 2}
    assert facts_from_config("falcon-seq", config, "local").num_parameters == transformers_parameter_count(config)


@pytest.mark.integration
def test_qwen3_moe_with_dense_layers_equals_transformers():
    base = next(e for e in CATALOG if e.name == "Qwen/Qwen3-30B-A3B").config
    config = {**base, "num_hidden_layers": 4, "mlp_only_layers": [0], "decoder_sparse_step": 2}
    facts = facts_from_config("qwen3-moe-mixed", config, "local")
    assert facts.num_parameters == transformers_parameter_count(config)


@pytest.mark.integration
def test_qwen2_moe_without_qkv_bias_and_with_dense_layers_equals_transformers():
    base = next(e for e in CATALOG if e.name == "Qwen/Qwen1.5-MoE-A2.7B").config
    config = {**base, "num_hidden_layers": 3, "mlp_only_layers": [1], "qkv_bias": False}
    assert facts_from_config("qwen2-moe", config, "local").num_parameters == transformers_parameter_count(config)


@pytest.mark.integration
@pytest.mark.parametrize(
    "name,overrides",
    [
        ("openai/gpt-oss-20b", {"num_hidden_layers": 3, "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]}),
        ("nvidia/Nemotron-H-56B-Base-8K", {"num_hidden_layers": 4, "hybrid_override_pattern": "M-*-"}),
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", {"num_hidden_layers": 5, "mlp_only_layers": [1], "decoder_sparse_step": 1}),
        ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", {"num_hidden_layers": 4}),
        ("google/gemma-4-26B-A4B", {}),
    ],
)
def test_new_layer_types_in_small_variants_equal_transformers(name, overrides):
    """Odd layer counts and mixes (dense layers among MoE, MLP-only blocks) of the new architectures."""
    entry = next(e for e in CATALOG if e.name == name)
    config = dict(entry.config)
    if isinstance(config.get("text_config"), dict):
        text = {**config["text_config"], **overrides}
        if "layer_types" in text and "layer_types" not in overrides:
            text["layer_types"] = text["layer_types"][: text["num_hidden_layers"]] if overrides else text["layer_types"]
        config = {**config, "text_config": text}
    else:
        config = {**config, **overrides}
    assert facts_from_config(name, config, "local").num_parameters == transformers_parameter_count(config)


@pytest.mark.integration
@pytest.mark.parametrize(
    "config",
    [
        GRANITE,
        {**GRANITE, "num_local_experts": 0, "num_experts_per_tok": 0, "mamba_proj_bias": True, "attention_bias": True,
         "mamba_n_groups": 2, "tie_word_embeddings": False},
        FALCON_H1,
        {**FALCON_H1, "mamba_rms_norm": True, "mamba_proj_bias": True, "projectors_bias": True, "mamba_conv_bias": False,
         "attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True},
        {**FALCON_H1, "mamba_d_ssm": None, "mamba_expand": 2, "mamba_d_head": "auto", "mamba_n_heads": 32},
    ],
    ids=["granite4-moe", "granite4-dense-biases", "falcon-h1", "falcon-h1-norm-biases", "falcon-h1-expand"],
)
def test_mamba_hybrids_without_catalog_configs_equal_transformers(config):
    """Granite 4 and Falcon-H1 have no published config in the catalog yet; their sizing is checked on the synthetic
    shapes of test_new_architectures.py, with every bias and norm switch transformers reads."""
    assert facts_from_config("hybrid", config, "local").num_parameters == transformers_parameter_count(config)
