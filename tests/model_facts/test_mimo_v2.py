"""MiMo-V2-Flash sizing by hand (model_facts/mimo_v2.py) and against transformers' MiMoV2Flash classes."""

from __future__ import annotations

import pytest

from infer_advisor.errors import ModelConfigError
from infer_advisor.model_facts import facts_from_config
from infer_advisor.model_facts.catalog import find_entry

CONFIG = find_entry("XiaomiMiMo/MiMo-V2-Flash").config


def test_layer_kinds_and_kv_by_hand():
    f = facts_from_config("mimo", CONFIG, "catalog")
    assert f.layer_counts == {"full": 9, "sliding": 39}  # hybrid_layer_pattern: 0 on layers 0, 5, 11, ..., 47
    # full layers: 4 KV heads x (k 192 + v 128); sliding layers: 8 KV heads, held for 128 tokens
    assert f.kv_cache_elements_per_token == 9 * 4 * (192 + 128)
    assert f.sliding_kv_elements_per_token == 39 * 8 * (192 + 128) and f.sliding_window == 128
    assert f.num_experts == 256 and f.num_experts_per_token == 8 and f.num_shared_experts == 0
    assert f.weight_format == "fp8-block"


def test_parameters_by_hand():
    f = facts_from_config("mimo", CONFIG, "catalog")
    h, n, v = 4096, 64, 152576
    attn_full = h * n * 192 + h * 4 * 192 + h * 4 * 128 + n * 128 * h
    attn_swa = h * n * 192 + h * 8 * 192 + h * 8 * 128 + n * 128 * h + n  # + one sink per head
    dense = 3 * h * 16384
    moe = 256 * 3 * h * 2048 + 256 * h  # experts + router (its e_score_correction_bias is a buffer)
    norms = 48 * 2 * h + h
    assert f.num_parameters == 2 * v * h + 9 * attn_full + 39 * attn_swa + dense + 47 * moe + norms


def test_a_pattern_of_the_wrong_length_is_refused():
    with pytest.raises(ModelConfigError, match="hybrid_layer_pattern"):
        facts_from_config("mimo", {**CONFIG, "hybrid_layer_pattern": [0, 1]}, "local")


@pytest.mark.integration
@pytest.mark.parametrize(
    "overrides",
    [
        {"num_hidden_layers": 7, "hybrid_layer_pattern": None, "moe_layer_freq": None},  # transformers' default pattern
        {"num_hidden_layers": 3, "hybrid_layer_pattern": [0, 1, 1], "moe_layer_freq": [0, 1, 1], "attention_bias": True},
    ],
    ids=["default-pattern", "biases"],
)
def test_small_variants_equal_transformers(overrides):
    from tests.model_facts.test_params_vs_transformers import transformers_parameter_count

    config = {k: v for k, v in {**CONFIG, **overrides}.items() if v is not None}
    config.pop("quantization_config", None)
    assert facts_from_config("mimo", config, "local").num_parameters == transformers_parameter_count(config)
