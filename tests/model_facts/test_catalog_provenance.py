"""Issue 23's catalog fixes: GLM-5.3 as published (FP8; a BF16 repository), labels that name the stored format, and
sources that say when an aiconfigurator commit is not on its main branch."""

from __future__ import annotations

import re

import pytest

from infer_advisor.cli import main
from infer_advisor.model_facts import resolve_model
from infer_advisor.model_facts.catalog import find_entry, load_catalog

# aiconfigurator commits this catalog cites, checked against a snapshot of github.com/ai-dynamo/aiconfigurator:
# 095f58a51c4ca8e61b66ec108d86f223f8d559ce is main's head; the others are on side branches or pull-request heads only.
AIC_MAIN = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"


def test_glm_5_3_is_the_fp8_release_and_a_bf16_repository():
    fp8 = resolve_model("zai-org/GLM-5.3", source="catalog")
    assert fp8.name == "zai-org/GLM-5.3" and fp8.weight_format == "fp8-block"  # natively FP8, never planned as bf16
    assert find_entry("zai-org/GLM-5.3").name == "zai-org/GLM-5.2-FP8"
    bf16 = resolve_model("zai-org/GLM-5.3-BF16", source="catalog")
    assert bf16.pre_quantized is None and find_entry("zai-org/GLM-5.3-BF16").name == "zai-org/GLM-5.2"
    assert fp8.num_parameters == bf16.num_parameters
    for gone in ("zai-org/GLM-5.3-FP8", "nvidia/GLM-5.3-NVFP4"):  # not published / no config of it found
        assert find_entry(gone) is None


def test_variants_without_a_config_of_their_own_say_where_the_architecture_is_stated():
    for entry in load_catalog():
        for variant in entry.variants:
            if variant.name.startswith(("zai-org/GLM-5.3", "mistralai/Mixtral-8x7B-Instruct", "google/gemma-4-26B-A4B-it")):
                assert variant.source and ("https://" in variant.source or "github.com/" in variant.source), variant.name


def test_aiconfigurator_commits_off_main_are_marked():
    for entry in load_catalog():
        where = entry.retrieved_from or ""
        match = re.search(r"aiconfigurator \S+ @ ([0-9a-f]{40})", where)
        if match and match.group(1) != AIC_MAIN:
            assert "NOT in aiconfigurator's main branch" in where, entry.name


@pytest.mark.parametrize("name", ["nvidia/DeepSeek-V4-Flash-NVFP4", "nvidia/DeepSeek-V4-Pro-NVFP4"])
def test_nvfp4_checkpoints_are_labelled_nvfp4(name, capsys):
    assert main(["models", name, "--source", "catalog"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "pre-quantized" in line)
    assert "nvfp4" in row.lower()
    assert main(["models", "--family", "DeepSeek-V4"]) == 0
    listing = next(line for line in capsys.readouterr().out.splitlines() if name in line)
    assert "nvfp4" in listing.lower()
