"""Speculative decoding in vLLM's KV pool: the arithmetic of vLLM 0.20.1/0.24.0 (engines/draft_shape.py,
estimate/draft.py, estimate/engine_kv.py) against the figures four club-3090 logs printed. Each test gives the
engine the KV memory its log printed (within the print's rounding) and checks the token count it printed, to the token.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from infer_advisor.engines.draft_shape import draft_shape, parse_speculative_config
from infer_advisor.engines.kv_report import kv_report
from infer_advisor.errors import RequestError
from infer_advisor.estimate.draft import draft_kv_bytes_per_token_per_layer, draft_weight_bytes, state_with_speculation
from infer_advisor.estimate.engine_kv import DraftLayers, engine_kv_figures
from infer_advisor.estimate.memory import kv_bytes_per_token_per_gpu, recurrent_state_bytes_per_sequence
from infer_advisor.engines.draft_shape import conv_kernel
from infer_advisor.model_facts import resolve_model

GIB = 2**30
LOGS = Path(__file__).parents[2] / "benchmarks" / "published" / "startup_logs.yaml"


@pytest.fixture(scope="module")
def qwen36(tmp_path_factory):
    """Qwen3.6-27B's config as the batch-2 log entries transcribe it (16 full-attention + 48 gated-DeltaNet layers, 1 MTP layer)."""
    logs = yaml.safe_load(LOGS.read_text(encoding="utf-8"))["logs"]
    cfg = next(e for e in logs if e["id"] == "club3090-91-qwen36-27b-int4-2x3090")["config"]["fields"]
    folder = tmp_path_factory.mktemp("qwen36")
    (folder / "config.json").write_text(json.dumps(cfg))
    return resolve_model(str(folder), source="auto")


def _printed(model, spec_text, *, version, kv_bytes, dtype, tp, context, free_gib, prefix_caching=True):
    spec = draft_shape(parse_speculative_config(spec_text), model) if spec_text else None
    full, slide = kv_bytes_per_token_per_gpu(model, kv_bytes, tp, 1)
    state = recurrent_state_bytes_per_sequence(model, dtype, tp, 1)
    conv = model.recurrent_state_conv_elements * 2 / tp
    state = state_with_speculation(state, conv, conv_kernel(model), spec)
    layer = draft_kv_bytes_per_token_per_layer(spec, kv_bytes, tp)
    draft = DraftLayers(spec.kv_layers, layer, spec.same_spec_as_target) if spec else None
    report = kv_report("vllm", version)
    return engine_kv_figures(
        model, report, free_bytes=free_gib * GIB, full_tok=full, slide_tok=slide, state=state, pp=1, context=context,
        mnbt=8192, block=16, capacity_tokens=0, draft=draft,
        state_pages=report.state_pages(prefix_caching, spec.num_speculative_tokens if spec else 0),
    )


def test_mtp_layer_joins_the_full_attention_group(qwen36):
    # club-3090 issue 142 (v0.20.2 dev): 'Available KV cache memory: 11.08 GiB / GPU KV cache size: 623,873 tokens / 2.38x'.
    # 17 full-attention layers (16 + MTP), 1600-token blocks (conv state grows by 3 rows), 3 DeltaNet groups x (2 + 3) pages.
    figs = _printed(qwen36, "{'method': 'mtp', 'num_speculative_tokens': 3}", version="0.20.2", kv_bytes=1, dtype="float16",
                    tp=2, context=262144, free_gib=11.076)
    assert figs.tokens == 623873
    assert round(figs.max_concurrency, 2) == 2.38


def test_without_speculation_two_state_pages_with_prefix_caching(qwen36):
    # club-3090 issue 104 (0.20.2, util 0.88): 9.84 GiB -> 619,202 tokens, 2.36x: 411 blocks / (168 + 3 x 2).
    figs = _printed(qwen36, None, version="0.20.2", kv_bytes=1, dtype="float16", tp=2, context=262144, free_gib=9.84)
    assert figs.tokens == 619202


def test_dflash_draft_is_a_group_of_its_own(qwen36):
    # club-3090 issue 95 (0.20.2rc1): 10.16 GiB -> 200,769 tokens at 200,000 (1.00x): groups of 5 layers, 4 target
    # full + 1 draft + 10 DeltaNet; 1305 blocks / (5 x 246 + 10 x 7) per request.
    spec = "{'method': 'dflash', 'model': '~/.cache/huggingface/qwen3.6-27b-dflash', 'num_speculative_tokens': 5}"
    figs = _printed(qwen36, spec, version="0.20.2", kv_bytes=2, dtype="bfloat16", tp=2, context=200000, free_gib=10.16)
    assert figs.tokens == 200769
    # issue 46, a 0.20.1rc1 nightly that still prints layer slots: 9.74 GiB -> 1251 blocks // 15 groups x 816 = 67,728.
    figs = _printed(qwen36, spec, version="0.20.0", kv_bytes=2, dtype="bfloat16", tp=2, context=180000, free_gib=9.74)
    assert figs.tokens == 67728
    assert round(figs.max_concurrency, 2) == 1.06


def test_draft_weights(qwen36):
    mtp = draft_shape(parse_speculative_config('{"method": "mtp", "num_speculative_tokens": 3}'), qwen36)
    # one MTP block: gated attention (5120 x 12288 + 2 x 5120 x 1024 + 6144 x 5120), MLP 3 x 5120 x 17408, fc 10240 x 5120
    assert mtp.params_split == 5120 * 12288 + 2 * 5120 * 1024 + 6144 * 5120 + 3 * 5120 * 17408 + 2 * 5120 * 5120
    assert draft_weight_bytes(mtp, quantization="none", dtype="bfloat16", group_size=None, tp=2) == mtp.params_split
    dflash = draft_shape(parse_speculative_config({"method": "dflash", "model": "z-lab/Qwen3.6-27B-DFlash"}), qwen36)
    per_gpu = draft_weight_bytes(dflash, quantization="gptq", dtype="bfloat16", group_size=128, tp=2)
    assert per_gpu == pytest.approx(dflash.params_split * 2 / 2 + 5 * 5120 * 5120 * 2)  # the fc is whole on each rank


@pytest.mark.parametrize("bad", ["{method: mtp", "[1, 2]", '{"num_speculative_tokens": 0}'])
def test_bad_speculative_config_is_one_clear_error(bad):
    with pytest.raises(RequestError):
        parse_speculative_config(bad)


def test_unknown_draft_and_missing_mtp_layers_are_refused(qwen36):
    with pytest.raises(RequestError, match="draft_models"):
        draft_shape(parse_speculative_config({"method": "dflash", "model": "someone/unknown-draft"}), qwen36)
    llama = resolve_model("meta-llama/Llama-3.1-8B")
    with pytest.raises(RequestError, match="no MTP layers"):
        draft_shape(parse_speculative_config({"method": "mtp"}), llama)


def test_log_args_give_the_speculative_config_and_prefix_caching():
    from infer_advisor.engines.startup_log import parse_startup_log

    text = (
        "INFO 05-06 [utils.py:233] non-default args: {'model': 'x', 'tensor_parallel_size': 2, 'enable_prefix_caching': True, "
        "'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 3}}\n"
        "INFO 05-06 Initializing a V1 LLM engine (v0.20.1)\n"
        "INFO 05-06 [kv_cache_utils.py:1708] GPU KV cache size: 619,479 tokens\n"
    )
    log = parse_startup_log(text, "vllm")
    assert parse_speculative_config(log.speculative_config).num_speculative_tokens == 3
    assert log.prefix_caching is True


def test_language_model_only_leaves_the_vision_encoder_out(qwen36):
    from infer_advisor.engines.startup_log import parse_startup_log
    from infer_advisor.engines.profiles import engine_profile
    from infer_advisor.estimate.memory import estimate_memory

    log = parse_startup_log("non-default args: {'model': 'x', 'language_model_only': True}\nGPU KV cache size: 1,000 tokens\n", "vllm")
    assert log.language_model_only is True
    common = dict(gpu_memory_bytes=24 * GIB, engine=engine_profile("vllm"), tp=2, context=8192, engine_version="0.24.0")
    full = estimate_memory(qwen36, **common)
    text_only = estimate_memory(qwen36, **common, language_model_only=True)
    vision = full.weights_bytes_per_gpu - text_only.weights_bytes_per_gpu
    assert 0.3 * GIB < vision < 0.6 * GIB  # SigLIP-style encoder of 27 layers x 1152 wide, in bf16, over 2 GPUs


def test_speculative_config_leaves_as_one_ascii_json_word():
    from infer_advisor.engines.draft_shape import speculative_config_json

    word = speculative_config_json({"method": "mtp", "num_speculative_tokens": 2, "note": "a\nb\u2028c'$(x)"})
    assert json.loads(word)["note"] == "a\nb\u2028c'$(x)"
    assert word.isascii() and "\n" not in word and " " not in word
