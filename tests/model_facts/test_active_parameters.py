"""Active parameters per token as model cards count them: without the input embedding (a row lookup), with lm_head,
and with only the routed experts' own biases (gpt-oss). Tied embeddings stay (the matrix is multiplied as lm_head). Totals are unchanged (test_params_vs_transformers.py)."""

from __future__ import annotations

import pytest

from infer_advisor.model_facts import facts_from_config
from infer_advisor.model_facts.catalog import find_entry


def _facts(name: str):
    entry = find_entry(name)
    assert entry is not None, name
    return facts_from_config(entry.name, entry.config, "catalog")


@pytest.mark.parametrize(
    "name,card_billions,total",
    [
        # OpenAI's gpt-oss model card / paper table: 5.13 B and 3.61 B active, 116.83 B and 20.91 B total
        ("openai/gpt-oss-120b", 5.13, 116_829_156_672),
        ("openai/gpt-oss-20b", 3.61, 20_914_757_184),
        # DeepSeek-V2-Lite's card: 15.7 B total, 2.4 B activated
        ("deepseek-ai/DeepSeek-V2-Lite", 2.45, 15_706_484_224),
    ],
)
def test_active_without_embedding_matches_the_model_card(name, card_billions, total):
    facts = _facts(name)
    assert facts.num_parameters == total  # unchanged
    assert round(facts.num_active_parameters_without_embedding / 1e9, 2) == card_billions
    assert facts.num_active_parameters - facts.num_active_parameters_without_embedding == facts.params.embedding


def test_gpt_oss_active_by_hand():
    """gpt-oss-120b by hand from its config: every non-expert parameter, lm_head, and 4 of 128 experts per layer
    (gate_up 2 x 2880 x 2880 + down 2880 x 2880, and their biases 2 x 2880 + 2880); the router (weight and bias) is
    touched by every token."""
    f = _facts("openai/gpt-oss-120b")
    c = f.config
    h, inter, e, k, layers = c["hidden_size"], c["intermediate_size"], c["num_local_experts"], c["num_experts_per_tok"], c["num_hidden_layers"]
    per_expert = 3 * h * inter + (2 * inter + h)
    expected = f.num_parameters - f.params.embedding - layers * (e - k) * per_expert
    assert f.num_active_parameters_without_embedding == expected


@pytest.mark.parametrize("name", ["meta-llama/Llama-2-7b-hf", "Qwen/Qwen3-14B"])
def test_dense_models_touch_everything_but_the_embedding(name):
    f = _facts(name)
    assert f.num_active_parameters == f.num_parameters
    assert f.num_active_parameters_without_embedding == f.num_parameters - f.params.embedding


def test_tied_embeddings_stay_counted_as_lm_head():
    f = _facts("google/gemma-3-1b-it")  # tie_word_embeddings: the matrix is the output projection too
    assert f.tie_word_embeddings and f.params.lm_head == 0
    assert f.num_active_parameters_without_embedding == f.num_parameters


def test_catalog_listing_and_facts_print_the_card_count():
    from infer_advisor.cli.models_cmd import catalog_report

    rows = {r.name: r for r in catalog_report().models}
    row = rows["openai/gpt-oss-120b"]
    assert row.active_params_billions_without_embedding == 5.13
    assert row.active_params_billions == 5.71  # the embedding included: the field keeps its meaning
    assert row.params_billions == 116.83
