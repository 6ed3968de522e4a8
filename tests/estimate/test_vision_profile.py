"""The vision encoder's part of vLLM V1's start-up profile (estimate/vision_profile.py, data/vision_profile.yaml)."""

from __future__ import annotations

import pytest

from infer_advisor.engines.profiles import engine_profile
from infer_advisor.estimate.memory import estimate_memory
from infer_advisor.estimate.vision_profile import vision_profile
from infer_advisor.model_facts import resolve_model

GIB = 2**30


@pytest.fixture(scope="module")
def qwen25_vl():
    return resolve_model("Qwen/Qwen2.5-VL-7B-Instruct")


def test_one_largest_image_per_profile_below_its_token_count(qwen25_vl):
    vp = vision_profile(qwen25_vl, tp=1, act_b=2, mnbt=2048, max_num_seqs=256, context=8192)
    assert vp.items == 1  # budget max(2048, 16384) // 16384
    patches = 12845056 // (14 * 14)  # 65,536 patches of the 3,584 x 3,584 image, 16,384 merged tokens
    assert vp.encoder_peak == patches * (2 * 1280 + 3 * 3420 + 3 * 2 * 14 * 14) * 2
    assert vp.outputs == 16384 * 3584 * 2
    half = vision_profile(qwen25_vl, tp=2, act_b=2, mnbt=2048, max_num_seqs=256, context=8192)
    assert half.encoder_peak == patches * (2 * 1280 + 3 * 3420 / 2 + 1176) * 2  # the MLP is split over TP, the hidden is not


def test_the_printed_item_count_of_a_large_batch():
    # vLLM 0.20.0, Qwen3.6-35B-A3B, max_num_batched_tokens 65536, max_num_seqs 8, 262,144 context: 'profiled with 4 image items'
    vp = vision_profile(resolve_model("Qwen/Qwen3.6-35B-A3B"), tp=1, act_b=2, mnbt=65536, max_num_seqs=8, context=262144)
    assert vp.items == 4


def test_text_models_and_unlisted_towers_have_none():
    assert vision_profile(resolve_model("Qwen/Qwen3-8B"), tp=1, act_b=2, mnbt=2048, max_num_seqs=256, context=8192) is None
    assert vision_profile(resolve_model("google/gemma-3-27b-it"), tp=1, act_b=2, mnbt=2048, max_num_seqs=256, context=8192) is None


def test_the_profile_peak_is_the_larger_stage_and_language_model_only_drops_it(qwen25_vl):
    common = dict(gpu_memory_bytes=24 * GIB, engine=engine_profile("vllm"), context=8192, engine_version="0.27.1",
                  max_num_batched_tokens=2048, max_num_seqs=256)
    full = estimate_memory(qwen25_vl, **common)
    text_only = estimate_memory(qwen25_vl, **common, language_model_only=True)
    vp = vision_profile(qwen25_vl, tp=1, act_b=2, mnbt=2048, max_num_seqs=256, context=8192)
    assert full.activation_bytes_per_gpu == int(max(vp.encoder_peak, text_only.activation_bytes_per_gpu + vp.outputs))
    assert "activation_vision" in full.figure_sources and "activation_vision" not in text_only.figure_sources
