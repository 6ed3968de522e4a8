"""The model_type tables the architecture reader uses: multimodal wrappers and their text configs, sizing
families (``kimi_k2`` sizes as ``deepseek_v3``), per-layer type names, expert-count keys, MLA and indexer types, and
the per-type defaults and field limits (``data/models/_defaults.json``, ``_limits.json``)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from .._paths import shipped
from ..errors import DataFileError

# Multimodal wrappers whose language model is described by ``text_config``: wrapper model_type -> text model_type.
TEXT_MODEL_TYPES = {
    "gemma3": "gemma3_text",
    "gemma4": "gemma4_text",
    "llama4": "llama4_text",
    "qwen3_5": "qwen3_5_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
    "mistral3": "mistral",
    "kimi_k25": "deepseek_v3",
    "qwen3_vl": "qwen3_vl_text",
    "qwen3_vl_moe": "qwen3_vl_moe_text",
    "qwen2_5_vl": "qwen2_5_vl_text",
}
# Model types sized exactly as another one (same modules in transformers / the original modeling code).
# kimi_k2: Kimi K2 ships DeepseekV3ForCausalLM with model_type 'kimi_k2' (its config.json `architectures`).
# qwen3_vl_text / qwen3_vl_moe_text: Qwen3-VL's language model has Qwen3's / Qwen3-MoE's modules (q/k norms, the same MLP and
# experts; transformers models/qwen3_vl, qwen3_vl_moe modeling files): only the rotary embedding (M-RoPE) differs.
# qwen2_5_vl (its first config.json files keep the text fields at the top level, later ones in text_config) and
# qwen2_5_vl_text: Qwen2.5-VL's language model has Qwen2's modules (q/k/v bias, no o bias; transformers
# models/qwen2_5_vl modeling file), M-RoPE aside.
SAME_AS = {
    "kimi_k2": "deepseek_v3",
    "ministral3": "mistral",
    "qwen3_vl_text": "qwen3",
    "qwen3_vl_moe_text": "qwen3_moe",
    "qwen2_5_vl": "qwen2",
    "qwen2_5_vl_text": "qwen2",
}
# Qwen families whose windowed layers are those from max_window_layers on, when use_sliding_window is set.
QWEN_TYPES = ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe")
# Names used in `layer_types` lists -> mixer kind. "indexed_attention" / "deepseek_sparse_attention": full attention with a
# DSA indexer (GLM-5, transformers' remap of the legacy name); the indexer is counted per layer by Arch.indexer_layers.
LAYER_TYPE_NAMES = {
    "full_attention": "full",
    "attention": "full",
    "sliding_attention": "sliding",
    "chunked_attention": "chunked",
    "linear_attention": "linear",
    "mamba": "mamba",
    "indexed_attention": "full",
    "deepseek_sparse_attention": "full",
}
# Model types whose "linear_attention" layers are Mamba-2 mixers (transformers remaps the legacy "mamba" to
# "linear_attention": configuration_utils._LEGACY_LAYER_TYPE_REMAP; GraniteMoeHybridDecoderLayer builds a Mamba layer).
MAMBA_LINEAR_TYPES = ("granitemoehybrid",)
# DeepSeek-V4 layer kinds (configuration_deepseek_v4.py _COMPRESS_RATIO_TO_LAYER_TYPE: compress ratio 0, 4, 128) -> mixer kind:
# sliding window only, compressed sparse attention (CSA, with a lightning indexer), heavily compressed attention (HCA).
V4_LAYER_TYPES = {"sliding_attention": "sliding", "compressed_sparse_attention": "csa", "heavily_compressed_attention": "hca"}
V4_RATIOS = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}
# Nemotron-H hybrid_override_pattern characters -> (mixer, mlp) of that layer (transformers NemotronHConfig).
NEMOTRON_PATTERN = {"M": ("mamba", "none"), "*": ("full", "none"), "-": ("none", "dense"), "E": ("none", "moe")}
# routed-expert count key per model type (the rest use n_routed_experts, as DeepSeek does).
EXPERT_KEYS = {
    "mixtral": "num_local_experts",
    "gpt_oss": "num_local_experts",
    "llama4_text": "num_local_experts",
    "minimax_m2": "num_local_experts",
    "qwen2_moe": "num_experts",
    "qwen3_moe": "num_experts",
    "qwen3_next": "num_experts",
    "qwen3_5_moe_text": "num_experts",
    "gemma4_text": "num_experts",
    "granitemoehybrid": "num_local_experts",
}
MOE_TYPES = (*EXPERT_KEYS, "deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "deepseek_v4", "nemotron_h", "mimo_v2_flash")
# Model types with multi-head latent attention (DeepSeek-V2's q/kv low-rank projections and compressed KV latent).
MLA_TYPES = ("deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa")
# Model types with DeepSeek sparse attention's lightning indexer on (some of) their MLA layers.
INDEXER_TYPES = ("deepseek_v32", "glm_moe_dsa")
MIXERS = ("full", "sliding", "chunked", "linear", "mamba", "csa", "hca", "none")


@cache
def type_defaults() -> dict[str, dict[str, Any]]:
    """The per-model_type defaults table (``data/models/_defaults.json``), loaded once."""
    return {k: v for k, v in read_table("_defaults.json").items() if not k.startswith("_")}


@cache
def limits() -> dict[str, Any]:
    """Sane upper bounds of sizing fields (``data/models/_limits.json``)."""
    return read_table("_limits.json")


def tables_bytes() -> bytes:
    """The bytes of the data tables read here (part of the key of facts kept between runs, :mod:`..resolve`)."""
    try:
        return b"\0".join((shipped("data") / "models" / name).read_bytes() for name in ("_defaults.json", "_limits.json"))
    except OSError as err:
        raise DataFileError(str(shipped("data") / "models"), f"cannot read: {err}") from None


def read_table(name: str) -> dict[str, Any]:
    path = shipped("data") / "models" / name
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise DataFileError(str(path), f"cannot read: {err}") from None


def supported_model_types() -> list[str]:
    return sorted({*type_defaults(), *SAME_AS})
