"""The issue-23 models resolve OFFLINE under their own Hub id, with totals equal to transformers' own model classes
built on the meta device (ground truth from outside the code under test). Each architecture is built once."""

from __future__ import annotations

from functools import cache

import pytest

from infer_advisor.model_facts import resolve_model
from infer_advisor.model_facts.catalog import find_entry

# Hub id -> (catalog entry whose config sizes it, context the published config states)
REQUIRED = {
    "mistralai/Mixtral-8x7B-Instruct-v0.1": ("mistralai/Mixtral-8x7B-v0.1", 32_768),
    "Qwen/Qwen3-14B": ("Qwen/Qwen3-14B", 40_960),
    "Qwen/Qwen2-7B-Instruct": ("Qwen/Qwen2-7B-Instruct", 32_768),
    "google/gemma-4-26B-A4B-it": ("google/gemma-4-26B-A4B", 262_144),
    "Qwen/Qwen2.5-72B-Instruct": ("Qwen/Qwen2.5-72B-Instruct", 32_768),  # the base states 131,072
    "Qwen/Qwen3-235B-A22B-Instruct-2507": ("Qwen/Qwen3-235B-A22B-Instruct-2507", 262_144),  # the base states 40,960
}


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("INFER_ADVISOR_OFFLINE", "1")


@cache
def _transformers_total(entry_name: str) -> int:
    from tests.model_facts.test_params_vs_transformers import transformers_parameter_count

    return transformers_parameter_count(find_entry(entry_name).config)


@pytest.mark.parametrize("name", list(REQUIRED))
def test_resolves_offline_under_its_own_id(name):
    entry_name, context = REQUIRED[name]
    facts = resolve_model(name)  # source auto: no local folder, offline, so the catalog answers
    assert facts.source == "catalog" and facts.name == name
    assert find_entry(name).name == entry_name
    assert facts.max_position_embeddings == context


@pytest.mark.integration
@pytest.mark.parametrize("name", list(REQUIRED))
def test_total_equals_transformers_meta_build(name):
    facts = resolve_model(name)
    assert facts.num_parameters == _transformers_total(REQUIRED[name][0])
