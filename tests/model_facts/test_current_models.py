"""Issue 14: the models people deploy now, their new memory terms (hand-computed), the catalog index,
'did you mean', `models add`, published checkpoints and GPUs the catalog lacks."""

from __future__ import annotations

import json

import pytest

from infer_advisor import advise
from infer_advisor.cli import main
from infer_advisor.engines.profiles import engine_profile
from infer_advisor.errors import ModelNotFoundError
from infer_advisor.estimate.memory import estimate_memory, weights_bytes
from infer_advisor.model_facts import resolve_model
from infer_advisor.model_facts import catalog as cat
from infer_advisor.model_facts.catalog import build_index, find_entry, load_catalog

GIB = 2**30


@pytest.mark.parametrize(
    "name,billions",
    [
        ("meta-llama/Llama-3.1-8B-Instruct", 8.03),
        ("Qwen/Qwen3-32B", 32.76),
        ("Qwen/Qwen3-235B-A22B", 235.09),
        ("openai/gpt-oss-120b", 116.83),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 107.77),
        ("Qwen/Qwen3.5-35B-A3B", 34.66),
        ("google/gemma-4-26B-A4B", 25.23),
        ("deepseek-ai/DeepSeek-V3.2", 671.88),
        ("deepseek-ai/DeepSeek-V4-Flash", 284.33),
        ("zai-org/GLM-5.1", 743.91),
        ("Qwen/Qwen3-VL-235B-A22B-Thinking", 235.09),
        ("mistralai/Magistral-Small-2509", 23.57),
        ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", 8.03),
        ("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4", 549.31),
    ],
)
def test_the_issue_models_resolve_offline(name, billions):
    facts = resolve_model(name, source="catalog")
    assert facts.name == name  # a variant resolves under its own id (the repo the engine must load)
    assert round(facts.num_parameters / 1e9, 2) == billions


def test_catalog_counts():
    entries = load_catalog()
    hub_ids = {e.name for e in entries} | {v.name for e in entries for v in e.variants}
    assert len(entries) >= 120 and len(hub_ids) >= 140  # the issue's "120 entries", counted either way
    assert all(e.family for e in entries)


def test_index_matches_the_entries():
    data = json.loads((cat.folder() / cat.INDEX_FILE).read_text())
    assert data["names"] == build_index(load_catalog()), "run `infer-advisor models add` (or rebuild the index)"


def test_an_exact_name_reads_one_catalog_file(monkeypatch):
    reads = []
    original = cat._read_one.__wrapped__
    cat._read_one.cache_clear()
    monkeypatch.setattr(cat, "_read_one", lambda path: reads.append(path.name) or original(path))
    assert find_entry("meta-llama/Llama-3.1-8B-Instruct").name == "meta-llama/Llama-3.1-8B"
    assert find_entry("gpt-oss-20b").name == "openai/gpt-oss-20b"
    assert reads == ["meta-llama--Llama-3.1-8B.json", "openai--gpt-oss-20b.json"]


def test_did_you_mean_ranks_family_and_size_first():
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model("meta-llama/Llama-3.1-8B-Chat", source="catalog")
    assert err.value.suggestions[0] in ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct")
    assert all("70B" not in s for s in err.value.suggestions[:2])
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model("Qwen/Qwen3-32B-Instruct", source="catalog")
    assert err.value.suggestions[0] == "Qwen/Qwen3-32B"


def test_mamba_hybrid_state_memory_by_hand():
    """Nemotron-H-56B: 54 Mamba-2 layers of 256 heads x 64 dims, 8 groups, state 256, kernel 4, bf16 state."""
    m = resolve_model("nvidia/Nemotron-H-56B-Base-8K", source="catalog")
    mamba = m.layer_counts["mamba"]
    assert mamba == m.config["hybrid_override_pattern"].count("M") == 54
    conv_channels = 256 * 64 + 2 * 8 * 256
    assert m.recurrent_state_conv_elements == mamba * (4 - 1) * conv_channels
    assert m.recurrent_state_ssm_elements == mamba * 256 * 64 * 256
    per_seq = (mamba * 3 * conv_channels + mamba * 256 * 64 * 256) * 2  # bytes, bf16
    vllm = engine_profile("vllm")
    one = estimate_memory(m, gpu_memory_bytes=141 * GIB, engine=vllm, tp=2, context=4096, concurrency=1)
    many = estimate_memory(m, gpu_memory_bytes=141 * GIB, engine=vllm, tp=2, context=4096, concurrency=9)
    assert one.recurrent_state_bytes_per_sequence_per_gpu == per_seq / 2  # heads split over tp=2
    kv_per_token = m.kv_cache_elements_per_token * 2 / 2
    # 8 more sequences of 4096 tokens: their KV plus their state, nothing per token for the Mamba layers
    assert many.needed_bytes_per_gpu - one.needed_bytes_per_gpu == pytest.approx(8 * (4096 * kv_per_token + per_seq / 2), rel=1e-9)


def test_gpt_oss_native_mxfp4_weights_and_sliding_kv_by_hand():
    m = resolve_model("openai/gpt-oss-20b", source="catalog")
    assert (m.pre_quantized, m.weight_format, m.attention_sinks) == ("mxfp4", "mxfp4-experts", True)
    p = m.params
    experts = p.expert_linear  # 24 layers x 32 experts x (2880 x 5760 + 2880 x 2880)
    assert experts == 24 * 32 * 3 * 2880 * 2880
    expected = experts * (4 + 8 / 32) / 8 + (p.linear - experts + p.other + p.embedding + p.lm_head) * 2
    assert weights_bytes(m, "mxfp4-experts", "bfloat16") == int(expected)
    # 12 sliding (window 128) and 12 full layers of 8 KV heads x 64 dims; sinks add no KV
    assert (m.sliding_window, m.local_attention) == (128, "sliding")
    assert m.kv_cache_elements_per_token == m.sliding_kv_elements_per_token == 12 * 2 * 8 * 64
    plan = advise(model="openai/gpt-oss-20b", gpu="H100-80GB", model_source="catalog")
    assert plan.feasible and plan.quantization.method == "mxfp4-experts" and plan.quantization.pre_quantized
    assert plan.memory.weights_bytes == int(expected)


def test_llama4_chunked_attention_is_windowed():
    m = resolve_model("meta-llama/Llama-4-Scout-17B-16E-Instruct", source="catalog")
    assert m.local_attention == "chunked" and m.sliding_window == 8192
    assert m.layer_counts == {"chunked": 36, "full": 12}


def test_models_add_writes_entry_and_index(tmp_path, capsys):
    folder = tmp_path / "catalog"
    folder.mkdir()
    config = tmp_path / "config.json"
    config.write_text(json.dumps(find_entry("Qwen/Qwen3-0.6B").config))
    rc = main(["models", "add", str(config), "--id", "acme/Tiny-0.6B", "--family", "Acme", "--alias", "tiny",
               "--variant", "acme/Tiny-0.6B-Instruct=instruct", "--catalog-dir", str(folder)])
    assert rc == 0 and "596,049,920 parameters" in capsys.readouterr().out
    entry = json.loads((folder / "acme--Tiny-0.6B.json").read_text())
    assert entry["family"] == "Acme" and entry["source"] == "https://huggingface.co/acme/Tiny-0.6B/blob/main/config.json"
    index = json.loads((folder / "_index.json").read_text())["names"]
    assert index["tiny"] == index["acme/tiny-0.6b-instruct"] == "acme--Tiny-0.6B.json"
    assert main(["models", "add", str(config), "--id", "acme/Tiny-0.6B", "--catalog-dir", str(folder)]) == 2
    assert "exists already" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**find_entry("Qwen/Qwen3-0.6B").config, "num_hidden_layers": 10**9}))
    assert main(["models", "add", str(bad), "--id", "acme/Bad", "--catalog-dir", str(folder)]) == 2
    assert "num_hidden_layers" in capsys.readouterr().err


def test_models_add_bad_catalog_folder_is_one_line(tmp_path, capsys):
    """A catalog folder holding a JSON that is not an entry, or one that cannot be created: exit 2, one line."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "notes.json").write_text('{"my": "notes"}')
    config = tmp_path / "config.json"
    config.write_text(json.dumps(find_entry("Qwen/Qwen3-0.6B").config))
    assert main(["models", "add", str(config), "--id", "acme/Tiny", "--catalog-dir", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "notes.json: not a catalog entry" in err and err.count("\n") == 1
    assert (folder / "notes.json").read_text() == '{"my": "notes"}' and sorted(p.name for p in folder.iterdir()) == ["notes.json"]
    (tmp_path / "file").write_text("x")
    assert main(["models", "add", str(config), "--id", "acme/Tiny", "--catalog-dir", str(tmp_path / "file" / "cat")]) == 2
    err = capsys.readouterr().err
    assert "cannot be written" in err and err.count("\n") == 1


def test_models_add_concurrent_adds_keep_every_name(tmp_path):
    """Adds into one catalog folder run their check, index and writes under the shared writer's folder lock."""
    import threading

    from infer_advisor.model_facts.add import add_model

    folder = tmp_path / "catalog"
    folder.mkdir()
    config = tmp_path / "config.json"
    config.write_text(json.dumps(find_entry("Qwen/Qwen3-0.6B").config))
    go = threading.Barrier(6)
    errors = []

    def add(i: int) -> None:
        go.wait()
        try:
            add_model(config, f"acme/Tiny-{i}", catalog_dir=folder)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    index = json.loads((folder / "_index.json").read_text())["names"]
    assert sorted(v for k, v in index.items() if k.startswith("acme/tiny-")) == [f"acme--Tiny-{i}.json" for i in range(6)]
    assert sorted(p.name for p in folder.iterdir()) == sorted(["_index.json", *(f"acme--Tiny-{i}.json" for i in range(6))])


def test_models_listing_groups_families(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "gpt-oss" in out and "+ meta-llama/Llama-3.1-8B-Instruct" in out


def test_70b_awq_plan_names_a_published_checkpoint():
    plan = advise(model="meta-llama/Llama-3.3-70B-Instruct", gpu="L40S", quantization="awq", model_source="catalog")
    ckpt = plan.quantization.published_checkpoint
    assert ckpt is not None and ckpt.origin == "published checkpoint" and ckpt.source.startswith("https://huggingface.co/")
    assert not plan.quantization.needs_quantize_step
    assert any(d.rule_id == "published-checkpoint" for d in plan.decisions)
    script = plan.render("script")["serve.sh"]
    assert ckpt.repo in script and "infer-advisor quantize" not in script


def test_llamacpp_uses_the_published_gguf():
    plan = advise(model="meta-llama/Llama-3.1-8B-Instruct", gpu="RTX-4090-Laptop", engine="llama.cpp",
                  quantization="gguf-q4_k_m", model_source="catalog")
    script = plan.render("script")["serve.sh"]
    assert "-hf bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M" in script


def test_quantize_stays_the_fallback_without_a_published_checkpoint():
    plan = advise(model="meta-llama/Llama-2-13b-hf", gpu="T4", quantization="awq", model_source="catalog")
    assert plan.quantization.published_checkpoint is None and plan.quantization.needs_quantize_step


def test_laptop_gpu_plans_for_16gb():
    plan = advise(model="meta-llama/Llama-3.1-8B-Instruct", gpu="RTX-4090-Laptop", model_source="catalog")
    assert plan.hardware.gpus[0].memory_bytes == 16 * GIB
    assert plan.memory.total_bytes_per_gpu <= 16 * GIB


def test_an_unlisted_gpu_inline_or_from_a_file(tmp_path):
    spec = "{name: Card-X, memory_gib: 12, memory_bandwidth_gb_s: 360, tflops: {fp16: 50}, compute_capability: 7.5, interconnect: pcie, interconnect_gb_s: 16}"
    plan = advise(model="Qwen/Qwen3-1.7B", gpu=spec + ":2", model_source="catalog")
    assert plan.hardware.source == "spec" and plan.hardware.gpus_per_node == 2
    assert plan.hardware.gpus[0].memory_bytes == 12 * GIB and plan.hardware.gpus[0].source == "spec"
    f = tmp_path / "card.yaml"
    f.write_text("name: Card-Y\nmemory_gib: 8\nmemory_bandwidth_gb_s: 256\ntflops: {fp16: 20}\ncompute_capability: 8.6\ninterconnect: pcie\ninterconnect_gb_s: 16\n")
    assert advise(model="Qwen/Qwen3-0.6B", gpu=str(f), model_source="catalog").hardware.gpus[0].name == "Card-Y"


@pytest.mark.parametrize(
    "spec",
    ["{name: X, memory_gib: -1}", "{name: X", "{a: &x 1, b: *x}", "/nonexistent/card.yaml", "{name: X, memory_gib: 8}:0"],
)
def test_bad_gpu_specs_are_one_line(spec, capsys):
    assert main(["plan", "--model", "Qwen/Qwen3-0.6B", "--model-source", "catalog", "--gpu", spec]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_every_gpu_has_an_fp16_rate_and_a_source():
    from infer_advisor.hardware.catalog import catalog

    names = {g.name for g in catalog().gpus}
    assert {"H20", "L20", "A800-80GB", "H800", "RTX-PRO-6000-Blackwell", "GB200", "B300", "DGX-Spark", "MI250X",
            "MI355X", "RTX-4090-Laptop", "RTX-5090-Laptop"} <= names
    for g in catalog().gpus:
        assert "fp16" in g.tflops and len(g.source) > 8
    assert next(g for g in catalog().gpus if g.name == "DGX-Spark").unified_memory


def test_an_unlisted_laptop_gpu_spec_plans_within_its_memory():
    """A laptop part the catalog lacks, described inline (the 8 GB card of a thin laptop; test input, not catalog data):
    the plan fits its 8 GiB, picks a smaller weight format than bf16 and names the spec as the hardware's source."""
    spec = ("{name: RTX-4060-Laptop-8GB, memory_gib: 8, memory_bandwidth_gb_s: 256, tflops: {fp16: 60, bf16: 60, fp8: 120}, "
            "compute_capability: 8.9, interconnect: pcie, interconnect_gb_s: 16}")
    plan = advise(model="meta-llama/Llama-3.1-8B-Instruct", gpu=spec, model_source="catalog")
    assert plan.feasible and plan.hardware.source == "spec" and plan.hardware.gpus[0].memory_bytes == 8 * GIB
    assert plan.memory.total_bytes_per_gpu <= 8 * GIB and plan.quantization.method != "none"
    assert plan.memory.weights_bytes < 8.03e9 * 2  # smaller than the bf16 weights that could not fit
