"""The embedded catalog and the facts computed from it (fast, offline)."""

from __future__ import annotations

import json
import re

import pytest

from infer_advisor.errors import ModelConfigError, ModelNotFoundError, UnsupportedArchitectureError
from infer_advisor.model_facts import ModelFacts, catalog_names, facts_from_config, resolve_model
from infer_advisor.model_facts.catalog import find_entry, load_catalog

CATALOG = load_catalog()
REQUIRED = [
    "meta-llama/Llama-2-7b-hf",
    "meta-llama/Llama-2-13b-hf",
    "meta-llama/Llama-2-70b-hf",
    "meta-llama/Meta-Llama-3-8B",
    "meta-llama/Meta-Llama-3-70B",
    "meta-llama/Llama-3.1-8B",
    "meta-llama/Llama-3.1-70B",
    "meta-llama/Llama-3.1-405B",
    "meta-llama/Llama-3.2-1B",
    "meta-llama/Llama-3.2-3B",
    "meta-llama/Llama-3.3-70B-Instruct",
    "mistralai/Mistral-7B-v0.1",
    "mistralai/Mixtral-8x7B-v0.1",
    "mistralai/Mixtral-8x22B-v0.1",
    "Qwen/Qwen2.5-0.5B",
    "Qwen/Qwen2.5-1.5B",
    "Qwen/Qwen2.5-3B",
    "Qwen/Qwen2.5-7B",
    "Qwen/Qwen2.5-14B",
    "Qwen/Qwen2.5-32B",
    "Qwen/Qwen2.5-72B",
    "Qwen/Qwen3-8B",
    "Qwen/Qwen3-30B-A3B",
    "google/gemma-2-9b",
    "google/gemma-2-27b",
    "google/gemma-3-1b-it",
    "microsoft/Phi-3-mini-4k-instruct",
    "microsoft/phi-4",
    "deepseek-ai/DeepSeek-V2-Lite",
    "deepseek-ai/DeepSeek-V3",
    "codellama/CodeLlama-34b-hf",
    "tiiuae/falcon-7b",
    "Qwen/Qwen2.5-7B-Instruct-AWQ",
]


def facts(name: str) -> ModelFacts:
    return resolve_model(name, source="catalog")


def test_catalog_has_the_required_models():
    names = catalog_names()
    assert len(names) >= 32
    assert not set(REQUIRED) - set(names)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("entry", CATALOG, ids=[e.name for e in CATALOG])
def test_every_entry_is_consistent(entry):
    f = facts_from_config(entry.name, entry.config, "catalog")
    p = f.params
    assert p.embedding + p.lm_head + p.linear + p.other == f.num_parameters
    assert 0 <= p.expert_linear <= p.linear
    assert (p.lm_head == 0) == f.tie_word_embeddings
    assert 0 < f.num_active_parameters <= f.num_parameters
    assert (f.num_active_parameters < f.num_parameters) == (f.family == "moe")
    assert f.kv_cache_elements_per_token > 0
    # the published config.json: on main, or at the Hub revision the copy was downloaded from
    assert re.fullmatch(rf"https://huggingface\.co/{re.escape(entry.name)}/blob/(main|[0-9a-f]{{40}})/config\.json", entry.source)
    assert entry.family, "every entry names its family (for `infer-advisor models`)"
    # the published JSON is the model's own dump, and it round-trips
    assert ModelFacts.model_validate_json(f.model_dump_json()).num_parameters == f.num_parameters


def test_must_hold_kv_figures():
    assert facts("meta-llama/Llama-2-7b-hf").kv_cache_bytes_per_token(2) == 524_288
    assert facts("meta-llama/Meta-Llama-3-8B").kv_cache_bytes_per_token(2) == 131_072


@pytest.mark.parametrize(
    "name,total",
    [  # published totals, as transformers counts them
        ("meta-llama/Llama-2-7b-hf", 6_738_415_616),
        ("meta-llama/Meta-Llama-3-8B", 8_030_261_248),
        ("mistralai/Mixtral-8x7B-v0.1", 46_702_792_704),
        ("microsoft/Phi-3-mini-4k-instruct", 3_821_079_552),
    ],
)
def test_known_totals(name, total):
    assert facts(name).num_parameters == total


def test_lookup_is_case_insensitive_and_takes_aliases():
    assert facts("META-LLAMA/llama-2-7B-HF").name == "meta-llama/Llama-2-7b-hf"
    assert facts("Llama-2-7b-hf").name == "meta-llama/Llama-2-7b-hf"
    assert facts("llama-2-7b").name == "meta-llama/Llama-2-7b-hf"
    assert facts("someone-else/Llama-2-7b-hf").name == "meta-llama/Llama-2-7b-hf"
    assert find_entry("no-such-model") is None


def test_unknown_model_offline_suggests_catalog_names():
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model("llama-2-7")
    assert "meta-llama/Llama-2-7b-hf" in err.value.suggestions
    assert "Did you mean" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ModelNotFoundError):
        resolve_model("no-such-model", source="catalog")


def test_moe_active_parameters():
    mixtral = facts("mistralai/Mixtral-8x7B-v0.1")
    assert (mixtral.num_experts, mixtral.num_experts_per_token, mixtral.family) == (8, 2, "moe")
    # active = total - 6 of 8 experts in each of 32 layers
    per_expert = 3 * 4096 * 14336
    assert mixtral.num_active_parameters == mixtral.num_parameters - 32 * 6 * per_expert
    v3 = facts("deepseek-ai/DeepSeek-V3")
    assert (v3.num_experts, v3.num_experts_per_token, v3.num_shared_experts) == (256, 8, 1)
    # 58 MoE layers (first_k_dense_replace=3), 248 idle routed experts each
    assert v3.num_active_parameters == v3.num_parameters - 58 * 248 * 3 * 7168 * 2048
    qwen = facts("Qwen/Qwen3-30B-A3B")
    assert qwen.num_active_parameters == qwen.num_parameters - 48 * 120 * 3 * 2048 * 768


def test_mla_kv_cache_stores_the_latent_once():
    v3 = facts("deepseek-ai/DeepSeek-V3")
    assert v3.attention == "mla"
    assert v3.kv_cache_elements_per_token == 61 * (512 + 64)
    lite = facts("deepseek-ai/DeepSeek-V2-Lite")  # q_lora_rank is null: q_proj instead of q_a/q_b
    assert lite.config["q_lora_rank"] is None
    assert lite.kv_cache_elements_per_token == 27 * (512 + 64)


def test_sliding_window_layers():
    g2 = facts("google/gemma-2-9b")  # alternate: 21 sliding, 21 full
    assert g2.sliding_window == 4096
    assert g2.kv_cache_elements_per_token == g2.sliding_kv_elements_per_token == 21 * 2 * 8 * 256
    g3 = facts("google/gemma-3-1b-it")  # every 6th layer full: 4 of 26
    assert g3.attention == "mqa"
    assert g3.kv_cache_elements_per_token == 4 * 2 * 1 * 256
    assert g3.sliding_kv_elements_per_token == 22 * 2 * 1 * 256
    # every layer windowed: counted as full attention (upper bound), flagged
    m = facts("mistralai/Mistral-7B-v0.1")
    assert (m.sliding_window, m.uniform_sliding_window, m.sliding_kv_elements_per_token) == (4096, True, 0)
    assert m.kv_cache_elements_per_token == 32 * 2 * 8 * 128
    assert facts("mistralai/Mistral-7B-v0.3").sliding_window is None  # explicit null beats the class default
    assert facts("Qwen/Qwen2.5-7B").sliding_window is None  # use_sliding_window: false


def test_qwen_sliding_from_max_window_layers_and_explicit_layer_types():
    base = find_entry("Qwen/Qwen2.5-0.5B").config
    f = facts_from_config(
        "q", {**base, "use_sliding_window": True, "max_window_layers": 20, "sliding_window": 1024}, "local"
    )
    assert f.sliding_window == 1024 and f.sliding_kv_elements_per_token == 4 * 2 * 2 * 64
    types = ["full_attention", "sliding_attention"] * 12
    f = facts_from_config("q", {**base, "use_sliding_window": True, "layer_types": types}, "local")
    assert f.sliding_kv_elements_per_token == f.kv_cache_elements_per_token == 12 * 2 * 2 * 64


def test_pre_quantized_detection():
    awq = facts("Qwen/Qwen2.5-7B-Instruct-AWQ")
    assert awq.pre_quantized == "awq" and awq.quantization_config["bits"] == 4
    assert awq.num_parameters == facts("Qwen/Qwen2.5-7B").num_parameters
    assert facts("deepseek-ai/DeepSeek-V3").pre_quantized == "fp8"
    assert facts("meta-llama/Llama-2-7b-hf").pre_quantized is None
    base = find_entry("meta-llama/Llama-3.2-1B").config
    for qc, expected in [
        ({"quant_method": "gptq", "bits": 4}, "gptq"),
        ({"quant_method": "compressed-tensors"}, "compressed-tensors"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "bitsandbytes"),
        ({"quant_method": "mxfp4"}, "mxfp4"),
        ({"quant_method": "hqq"}, "other"),
    ]:
        assert facts_from_config("q", {**base, "quantization_config": qc}, "local").pre_quantized == expected


def test_multimodal_counts_the_text_decoder():
    g = facts("google/gemma-3-27b-it")
    assert g.multimodal and g.model_type == "gemma3_text"
    assert g.vocab_size == 262_208  # omitted in text_config: Gemma3TextConfig's default
    assert g.architecture == "Gemma3ForConditionalGeneration"


def test_config_errors_name_the_problem():
    base = dict(find_entry("meta-llama/Llama-3.2-1B").config)
    missing = {k: v for k, v in base.items() if k != "hidden_size"}
    with pytest.raises(ModelConfigError, match="hidden_size"):
        facts_from_config("m", missing, "local", where="m/config.json")
    with pytest.raises(ModelConfigError, match="model_type"):
        facts_from_config("m", {k: v for k, v in base.items() if k != "model_type"}, "local")
    with pytest.raises(ModelConfigError, match="num_hidden_layers.*must be an integer"):
        facts_from_config("m", {**base, "num_hidden_layers": "16"}, "local")
    with pytest.raises(UnsupportedArchitectureError) as err:
        facts_from_config("m", {**base, "model_type": "mamba", "architectures": ["MambaForCausalLM"]}, "local")
    assert "MambaForCausalLM" in str(err.value) and "llama" in str(err.value)


def test_catalog_files_are_plain_config_copies():
    from infer_advisor._paths import shipped

    for path in (shipped("data") / "models").glob("*.json"):
        data = json.loads(path.read_text())
        if path.name == "_defaults.json":
            assert all(
                v["source"].startswith("https://github.com/huggingface/transformers/")
                for k, v in data.items()
                if not k.startswith("_")
            )
            continue
        if path.name in ("_limits.json", "_index.json"):
            continue
        assert set(data) == {"name", "family", "aliases", "variants", "source", "retrieved_from", "config"}
        assert path.name == data["name"].replace("/", "--") + ".json"


@pytest.mark.parametrize(
    "bad",
    [
        {"head_dim": "wide"},
        {"num_key_value_heads": 0},
        {"max_position_embeddings": None, "rope_scaling": 3} | {"max_position_embeddings": -1},
        {"tie_word_embeddings": True, "head_dim": -64},
    ],
)
def test_wrong_types_become_config_errors(bad):
    base = dict(find_entry("meta-llama/Llama-3.2-1B").config)
    with pytest.raises(ModelConfigError):
        facts_from_config("m", {**base, **bad}, "local", where="m/config.json")


def test_moe_and_mla_fields_of_the_wrong_type():
    base = dict(find_entry("deepseek-ai/DeepSeek-V2-Lite").config)
    with pytest.raises(ModelConfigError, match="kv_lora_rank.*integer"):
        facts_from_config("m", {**base, "kv_lora_rank": "big"}, "local")
    with pytest.raises(ModelConfigError, match="kv_lora_rank"):
        facts_from_config("m", {k: v for k, v in base.items() if k != "kv_lora_rank"}, "local")
