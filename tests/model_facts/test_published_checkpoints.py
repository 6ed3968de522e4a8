"""Published quantized checkpoints: the data file (verified names, stated sizes), the memory model planning with a
checkpoint's real size, and the online path that asks the Hub for models tagged ``base_model:quantized:<id>``
(against the loopback fake Hub in tests/model_facts/hub_server.py)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from infer_advisor import advise
from infer_advisor.engines.profiles import engine_profile
from infer_advisor.estimate.memory import estimate_memory, weight_bytes_by_group, weights_bytes
from infer_advisor.model_facts import resolve_model
from infer_advisor.model_facts.catalog import find_entry
from infer_advisor.model_facts.published import PublishedCheckpoint, find_published, hub_quantized, published
from tests.model_facts.test_hub_source import single_repo

GIB = 2**30


def test_every_checkpoint_quantizes_a_catalog_model_and_sizes_have_sources():
    for model, ckpts in published().checkpoints.items():
        assert find_entry(model) is not None and find_entry(model).variant_for(model) == model, model
        for c in ckpts:
            assert c.source == f"https://huggingface.co/{c.repo}"
            assert (c.size_bytes is None) == (c.size_source is None)
            assert c.verified or (c.note and c.note.startswith("not verified")), c.repo


def test_a_size_needs_its_source():
    with pytest.raises(ValueError, match="size_source"):
        PublishedCheckpoint(repo="a/b", method="awq", size_bytes=10, source="https://huggingface.co/a/b")


def test_unverified_checkpoints_are_never_named():
    assert find_published("Qwen/Qwen3-32B", "awq") is None  # listed, but its name was not seen published
    assert find_published("Qwen/Qwen3-32B", "awq", verified_only=False).repo == "Qwen/Qwen3-32B-AWQ"
    plan = advise(model="Qwen/Qwen3-32B", gpu="H100-80GB", quantization="awq", model_source="catalog")
    assert plan.quantization.published_checkpoint is None and plan.quantization.needs_quantize_step


def test_a_stated_size_replaces_the_format_estimate_split_by_the_same_groups():
    m = resolve_model("meta-llama/Llama-2-70b-chat-hf", source="catalog")
    size = find_published(m.name, "gptq").size_bytes
    assert size == 35_330_000_000  # TheBloke's main branch: no group size, so smaller than group-128 GPTQ
    est = weight_bytes_by_group(m, "gptq", "float16")
    real = weight_bytes_by_group(m, "gptq", "float16", checkpoint_bytes=size)
    assert sum(real.values()) == pytest.approx(size)
    for group in est:  # the same split, scaled
        assert real[group] == pytest.approx(est[group] * size / sum(est.values()))
    vllm = engine_profile("vllm")
    a = estimate_memory(m, gpu_memory_bytes=80 * GIB, engine=vllm, quantization="gptq", dtype="float16", tp=2, context=4096)
    b = estimate_memory(m, gpu_memory_bytes=80 * GIB, engine=vllm, quantization="gptq", dtype="float16", tp=2, context=4096,
                        checkpoint_bytes=size)
    assert (a.weights_origin, b.weights_origin) == ("estimated", "published checkpoint")
    assert b.weights_bytes == int(size) and b.weights_bytes < a.weights_bytes
    # per GPU: the decoder blocks and the embedding/lm_head split over tp=2, as for the estimate; vLLM's rotary cos/sin
    # table (4096 positions x 128, fp16) whole on each GPU
    assert b.weights_bytes_per_gpu == pytest.approx(size / 2 + 4096 * 128 * 2, rel=1e-9)


def test_a_70b_plan_serves_the_published_checkpoint_at_its_stated_size():
    plan = advise(model="meta-llama/Llama-2-70b-chat-hf", gpu="A100-80GB", quantization="gptq", engine="vllm",
                  model_source="catalog")
    ckpt = plan.quantization.published_checkpoint
    assert ckpt.repo == "TheBloke/Llama-2-70B-Chat-GPTQ" and ckpt.size_bytes == 35_330_000_000 and ckpt.size_source
    assert plan.memory.weights_bytes == 35_330_000_000 and plan.memory.weights_origin == "published checkpoint"
    gguf = advise(model="meta-llama/Llama-3.1-70B-Instruct", gpu="A100-80GB", engine="llama.cpp",
                  quantization="gguf-q4_k_m", model_source="catalog")
    assert gguf.memory.weights_bytes == 42_520_000_000 and gguf.memory.weights_origin == "published checkpoint"


def test_without_a_stated_size_the_format_estimate_stays():
    plan = advise(model="meta-llama/Llama-3.3-70B-Instruct", gpu="L40S", quantization="awq", model_source="catalog")
    assert plan.quantization.published_checkpoint.repo == "casperhansen/llama-3.3-70b-instruct-awq"
    m = resolve_model("meta-llama/Llama-3.3-70B-Instruct", source="catalog")
    assert plan.memory.weights_origin == "estimated"
    assert plan.memory.weights_bytes == weights_bytes(m, "awq", plan.dtype)


# ---------------------------------------------------------------- online: the Hub's base_model:quantized tag


def _tagged(repo: str, base: str, downloads: int, *extra: str) -> dict:
    return {"id": repo, "tags": [f"base_model:quantized:{base}", *extra], "downloads": downloads}


def test_hub_quantized_asks_for_the_tag_and_takes_the_most_downloaded_match(fake_hub):
    base = "org/base-7b"
    fake_hub.models = [
        _tagged("small/base-7b-awq", base, 10, "awq"),
        _tagged("big/base-7b-AWQ", base, 5000),  # the name says AWQ, no tag does
        _tagged("big/base-7b-GPTQ-Int4", base, 9000, "gptq"),
        _tagged("big/base-7b-GGUF", base, 20000, "gguf"),
        _tagged("other/unrelated-awq", "org/other", 10**6, "awq"),
    ]
    found = hub_quantized(base, "awq")
    assert found.repo == "big/base-7b-AWQ" and found.method == "awq" and found.file is None
    assert found.source.endswith(f"/api/models?filter=base_model:quantized:{base}")
    query = parse_qs(urlsplit(next(r.path for r in fake_hub.requests if r.path.startswith("/api/models"))).query)
    assert query["filter"] == [f"base_model:quantized:{base}"] and query["sort"] == ["downloads"]
    assert hub_quantized(base, "gptq").repo == "big/base-7b-GPTQ-Int4"
    gguf = hub_quantized(base, "gguf-q4_k_m")
    assert (gguf.repo, gguf.file) == ("big/base-7b-GGUF", "Q4_K_M")
    assert hub_quantized(base, "fp8") is None  # nothing tagged for it says fp8


def test_hub_quantized_falls_back_quietly_when_the_hub_errs(fake_hub):
    fake_hub.models = [_tagged("big/base-7b-AWQ", "org/base-7b", 1)]
    fake_hub.models_status = 500
    assert hub_quantized("org/base-7b", "awq") is None


def test_a_hub_model_plan_names_the_hubs_quantized_checkpoint(fake_hub):
    fake_hub.repos["org/tiny"] = single_repo()
    fake_hub.models = [_tagged("someone/tiny-AWQ", "org/tiny", 42, "awq")]
    plan = advise(model="org/tiny", gpu="T4", quantization="awq", engine="vllm")
    ckpt = plan.quantization.published_checkpoint
    assert plan.model.source == "hub" and ckpt is not None and ckpt.repo == "someone/tiny-AWQ"
    assert ckpt.origin == "published checkpoint" and "base_model:quantized:org/tiny" in ckpt.source
    assert not plan.quantization.needs_quantize_step and plan.memory.weights_origin == "estimated"


def test_a_stated_size_is_the_weights_figure_source_unless_a_log_measured_the_weights():
    """Merge of the published-checkpoint term with main's figure sources: the plan's weights row reads
    figure_sources['weights'], so the stated size says "published checkpoint" there; a memory calibration that
    logged the weights per GPU still wins for the per-GPU figure ("calibrated (log)")."""
    from infer_advisor.estimate.calibration import MemoryCalibration

    m = resolve_model("meta-llama/Llama-2-70b-chat-hf", source="catalog")
    size = find_published(m.name, "gptq").size_bytes
    kw = dict(gpu_memory_bytes=80 * GIB, engine=engine_profile("vllm"), quantization="gptq", dtype="float16", tp=2, context=4096)
    plain = estimate_memory(m, **kw)
    assert "weights" not in plain.figure_sources and plain.weights_origin == "estimated"
    stated = estimate_memory(m, **kw, checkpoint_bytes=size)
    assert stated.figure_sources["weights"] == "published checkpoint" and stated.weights_origin == "published checkpoint"
    logged = 17 * GIB
    cal = MemoryCalibration(engine="vllm", gpu="A100-80GB", tp=2, created="2026-01-01", source="vllm.log", model=m.name,
                            weights_bytes=logged)
    both = estimate_memory(m, **kw, checkpoint_bytes=size, calibration=cal)
    assert both.figure_sources["weights"] == "calibrated (log)" and both.weights_bytes_per_gpu == logged
    assert both.weights_bytes == size and both.weights_origin == "published checkpoint"  # the total is still the stated size
    plan = advise(model="meta-llama/Llama-2-70b-chat-hf", gpu="A100-80GB", quantization="gptq", engine="vllm",
                  model_source="catalog")
    from infer_advisor.cli.render_plan import summary_rows

    assert dict((row[0], row[2]) for row in summary_rows(plan))["weights"] == "published checkpoint"
