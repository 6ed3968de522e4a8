"""Weights in the engine's layout against vLLM's own 'Model loading took' lines."""

import pytest

from infer_advisor.engines.memory import memory_profile
from infer_advisor.engines.profiles import engine_profile
from infer_advisor.estimate.memory import estimate_memory
from infer_advisor.estimate.weights import expert_padding_ratio
from infer_advisor.model_facts import resolve_model

GiB = 2**30


@pytest.mark.parametrize(
    ("version", "logged_gib"),
    [("0.10.1", 65.9651), ("0.14.1", 64.38), ("0.25.1", 61.29)],  # vllm issues 23278 (Marlin) and 33155 (Triton), one H100
    # each; 0.25.1: batch 8's Korean gpt-oss-120b notes (Triton backend, 60.77 GiB checkpoint printed; retrospective, memfix9)
)
def test_gpt_oss_120b_mxfp4_layout_matches_model_loading_took(version, logged_gib):
    model = resolve_model("openai/gpt-oss-120b", source="catalog")
    est = estimate_memory(model, gpu_memory_bytes=80 * GiB, engine=engine_profile("vllm"), quantization="mxfp4-experts",
                          context=8192, memory=memory_profile("vllm", version), engine_version=version)
    assert est.weights_bytes_per_gpu / GiB == pytest.approx(logged_gib, rel=0.02)
    assert ("weights_layout" in est.figure_sources) == (version != "0.25.1")  # 0.25.1's layout pads nothing here


def test_marlin_padding_rounds_hidden_to_256_and_the_rank_intermediate_to_128():
    model = resolve_model("openai/gpt-oss-20b", source="catalog")  # hidden 2880, expert intermediate 2880
    pad = memory_profile("vllm", "0.10.1").expert_padding_for(("mxfp4-experts",), "0.10.1")
    assert (pad.hidden, pad.intermediate) == (256, 128)
    assert expert_padding_ratio(model, pad, tp=1) == pytest.approx(3072 * 2944 / (2880 * 2880))
    assert expert_padding_ratio(model, pad, tp=2) == pytest.approx(3072 * 1536 / (2880 * 1440))
    assert expert_padding_ratio(resolve_model("meta-llama/Llama-3.1-8B", source="catalog"), pad, tp=1) == 1.0  # no experts


def test_triton_layout_keeps_gpt_oss_hidden_unpadded_from_vllm_0_22():
    """The bundled triton_kernels Hopper swizzle stopped pre-padding to 64 bytes in 0.22 (hopper_value.py, wheels read)."""
    model = resolve_model("openai/gpt-oss-120b", source="catalog")
    old = memory_profile("vllm", "0.21.0").expert_padding_for(("mxfp4-experts",), "0.21.0")
    new = memory_profile("vllm", "0.22.0").expert_padding_for(("mxfp4-experts",), "0.22.0")
    assert (old.hidden, new.hidden, new.intermediate, new.bias_bytes) == (256, 64, 64, 4)
    assert expert_padding_ratio(model, new, tp=1) == 1.0  # 2880 is a multiple of 64
    assert memory_profile("vllm", "0.33.0").expert_padding_for(("mxfp4-experts",), "0.33.0").hidden == 64


def test_vllm_loads_the_vision_tower_of_a_multimodal_checkpoint():
    """gemma-3-27b-it on one H100, vLLM 0.19 (llm-d-planner log): 'weights memory: 51.45GiB'; the text model is 50.3 GiB
    and the SigLIP encoder (27 layers of 1152, 4304) with its projector about 0.79 GiB more."""
    from infer_advisor.estimate.weights import vision_tower_params

    model = resolve_model("google/gemma-3-27b-it", source="catalog")
    assert 0.40e9 < vision_tower_params(model) < 0.45e9
    est = estimate_memory(model, gpu_memory_bytes=80 * GiB, engine=engine_profile("vllm"), context=8192,
                          memory=memory_profile("vllm", "0.19.0"), engine_version="0.19.0")
    assert est.weights_bytes_per_gpu / GiB == pytest.approx(51.45, rel=0.02)
    assert vision_tower_params(resolve_model("meta-llama/Llama-3.1-8B", source="catalog")) == 0


def test_qwen3_vl_vision_tower_matches_transformers_meta_build():
    """Qwen3-VL's encoder as transformers builds it on the meta device (Qwen3VLVisionModel: blocks, patch embedding, the
    learned num_position_embeddings table, the merger and one DeepStack merger per deepstack_visual_indexes entry)."""
    torch = pytest.importorskip("torch")
    qwen3_vl = pytest.importorskip("transformers.models.qwen3_vl.modeling_qwen3_vl")
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLVisionConfig

    from infer_advisor.estimate.weights import vision_tower_params

    for name in ("Qwen/Qwen3-VL-4B-Instruct", "Qwen/Qwen3-VL-30B-A3B-Instruct"):
        model = resolve_model(name, source="catalog")
        config = Qwen3VLVisionConfig(**{k: v for k, v in model.config["vision_config"].items() if k != "model_type"})
        with torch.device("meta"):
            encoder = qwen3_vl.Qwen3VLVisionModel._from_config(config)
        built = sum(p.numel() for p in encoder.parameters())
        assert vision_tower_params(model) == pytest.approx(built, rel=1e-4)


def test_kimi_k25_moonvit_vision_config_by_hand():
    """memfix16: Kimi-K2.5's vision_config names its sizes vt_* (27 layers of 1152, MLP 4304, gelu), merges 2x2 into a
    4608-wide projector to the 7168 text width, and learns a 64 x 64 position table (SGLang 0.5.12 models/kimi_k25.py)."""
    from infer_advisor.estimate.weights import vision_tower_params
    from infer_advisor.model_facts import resolve_model

    h, inter, merged, out = 1152, 4304, 4 * 1152, 7168
    per_layer = 4 * h * h + 4 * h + 2 * h * inter + inter + 5 * h
    expected = 27 * per_layer + 3 * 14 * 14 * h + h + 64 * 64 * h + 2 * h + merged * merged + merged * out
    assert vision_tower_params(resolve_model("moonshotai/Kimi-K2.5", source="catalog")) == expected
