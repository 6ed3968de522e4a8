"""The published configs found for issue 14's missing families (benchmarks/configs_found/): what the catalog makes of
them, checked by hand arithmetic and against entries already in the catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infer_advisor.model_facts import facts_from_config, resolve_model
from infer_advisor.model_facts.catalog import load_catalog

FOUND = Path(__file__).resolve().parents[2] / "benchmarks" / "configs_found"


def _found(name: str) -> dict:
    return json.loads((FOUND / f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "name,billions",
    [
        ("HuggingFaceTB/SmolLM3-3B", 3.08),
        ("google/gemma-3-4b-it", 3.88),
        ("Qwen/Qwen2.5-VL-7B-Instruct", 7.62),
        ("mistralai/Devstral-Small-2-24B-Instruct-2512", 23.57),
        ("mistralai/Devstral-2-123B-Instruct-2512", 125.03),
    ],
)
def test_found_models_resolve_offline(name, billions):
    facts = resolve_model(name, source="catalog")
    assert round(facts.num_parameters / 1e9, 2) == billions


def test_every_found_config_is_the_catalogs_copy():
    by_name = {e.name.replace("/", "--"): e for e in load_catalog()}
    for path in sorted(FOUND.glob("*.json")):
        assert by_name[path.stem].config == json.loads(path.read_text(encoding="utf-8")), path.name


def test_smollm3_by_hand_ties_its_embeddings_by_default():
    """SmolLM3-3B's config.json has no tie_word_embeddings: transformers' SmolLM3Config ties by default."""
    cfg = _found("HuggingFaceTB--SmolLM3-3B")
    assert "tie_word_embeddings" not in cfg
    v, h, layers, inter, kv = 128256, 2048, 36, 11008, 4 * 128
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * inter + 2 * h  # q, o; k, v; gate/up/down; two RMSNorms
    tied = v * h + layers * per_layer + h
    facts = facts_from_config("smollm3", cfg, "local")
    assert facts.tie_word_embeddings and facts.params.lm_head == 0
    assert facts.num_parameters == tied == 3_075_098_624
    untied = facts_from_config("smollm3", {**cfg, "tie_word_embeddings": False}, "local")
    assert untied.num_parameters == tied + v * h
    biased = facts_from_config("smollm3", {**cfg, "attention_bias": True}, "local")
    assert biased.num_parameters == tied + layers * (h + kv + kv + h)  # q, k, v and o biases, as Llama's


def test_gemma3_text_config_without_heads_takes_transformers_default():
    """google/gemma-3-4b-it's text_config omits num_attention_heads (Gemma3TextConfig's default, 8, applies)."""
    cfg = _found("google--gemma-3-4b-it")
    assert "num_attention_heads" not in cfg["text_config"]
    facts = facts_from_config("gemma-3-4b", cfg, "local")
    assert (facts.num_attention_heads, facts.num_kv_heads, facts.head_dim, facts.vocab_size) == (8, 4, 256, 262208)
    # keras-hub's gemma3_4b_text preset states 3,880,099,328 parameters with a 262,144-row embedding: the same
    # model less the 64 rows of padding the Hub checkpoint's 262,208-row embedding carries.
    assert facts.num_parameters - 64 * 2560 == 3_880_099_328


def test_flat_qwen2_5_vl_config_is_the_qwen2_text_decoder():
    """The first Qwen2.5-VL config.json keeps the text fields at the top level; its language model has Qwen2.5-7B's
    modules and numbers, and the vision tower is not counted."""
    cfg = _found("Qwen--Qwen2.5-VL-7B-Instruct")
    assert "text_config" not in cfg
    facts = facts_from_config("qwen2.5-vl-7b", cfg, "local")
    assert facts.multimodal and facts.model_type == "qwen2"
    assert facts.num_parameters == resolve_model("Qwen/Qwen2.5-7B", source="catalog").num_parameters
    text = {**{k: v for k, v in cfg.items() if k != "vision_config"}, "model_type": "qwen2_5_vl_text"}
    nested = {"model_type": "qwen2_5_vl", "tie_word_embeddings": False, "text_config": text}  # the later layout
    assert facts_from_config("nested", nested, "local").num_parameters == facts.num_parameters


def test_devstral_2_checkpoints_are_fp8():
    for name in ("mistralai/Devstral-2-123B-Instruct-2512", "mistralai/Devstral-Small-2-24B-Instruct-2512"):
        facts = resolve_model(name, source="catalog")
        assert facts.pre_quantized is not None and facts.model_type == "mistral"
