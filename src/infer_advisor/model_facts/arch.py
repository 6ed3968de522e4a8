"""A config.json dict, checked and completed with its model type's defaults, as one typed view.

Real config.json files omit fields their transformers config class fills in (Gemma 3's text config has no
``vocab_size``; Mistral v0.1 has no ``head_dim``). Those defaults live in ``data/models/_defaults.json``
(one entry per ``model_type``, with the class file as ``source``); fields listed there as ``required`` must
be present, so a config missing ``hidden_size`` fails loudly instead of silently taking a default.

    arch = read_arch(config, where="llama/config.json")
    arch.layer_is_sliding   # one bool per decoder layer
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from .._paths import shipped
from ..errors import DataFileError, ModelConfigError, UnsupportedArchitectureError

# Multimodal wrappers whose language model is described by ``text_config``: wrapper model_type -> text model_type.
_TEXT_MODEL_TYPES = {"gemma3": "gemma3_text"}
# Qwen families whose windowed layers are those from max_window_layers on, when use_sliding_window is set.
_QWEN_TYPES = ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe")


@cache
def type_defaults() -> dict[str, dict[str, Any]]:
    """The per-model_type defaults table (``data/models/_defaults.json``), loaded once."""
    path = shipped("data") / "models" / "_defaults.json"
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise DataFileError(str(path), f"cannot read: {err}") from None
    return {k: v for k, v in table.items() if not k.startswith("_")}


def supported_model_types() -> list[str]:
    return sorted(type_defaults())


@dataclass(frozen=True)
class Arch:
    """The fields of one decoder-only config that parameter and KV arithmetic needs, defaults applied."""

    model_type: str
    architecture: str
    multimodal: bool
    raw: dict[str, Any]  # the (text) config with defaults applied

    def get(self, key: str, default: Any = None) -> Any:
        value = self.raw.get(key, default)
        return default if value is None else value

    @property
    def hidden(self) -> int:
        return int(self.raw["hidden_size"])

    @property
    def layers(self) -> int:
        return int(self.raw["num_hidden_layers"])

    @property
    def heads(self) -> int:
        return int(self.raw["num_attention_heads"])

    @property
    def kv_heads(self) -> int:
        """KV heads as the engine stores them (Falcon: 1 for multi-query, ``num_kv_heads`` for the new layout)."""
        if self.model_type == "falcon":
            if self.get("new_decoder_architecture", False) or not self.get("multi_query", True):
                return int(self.get("num_kv_heads", self.heads))
            return 1
        return int(self.get("num_key_value_heads", self.heads))

    @property
    def head_dim(self) -> int:
        if self.is_mla:
            return int(self.raw["qk_nope_head_dim"]) + int(self.raw["qk_rope_head_dim"])
        explicit = self.get("head_dim") if self.model_type != "falcon" else None
        return int(explicit) if explicit else self.hidden // self.heads

    @property
    def vocab(self) -> int:
        return int(self.raw["vocab_size"])

    @property
    def intermediate(self) -> int:
        if self.model_type == "falcon":
            return int(self.get("ffn_hidden_size", 4 * self.hidden))
        return int(self.raw["intermediate_size"])

    @property
    def tied(self) -> bool:
        return bool(self.get("tie_word_embeddings", False))

    @property
    def is_mla(self) -> bool:
        return self.model_type in ("deepseek_v2", "deepseek_v3")

    @property
    def num_experts(self) -> int:
        key = {"mixtral": "num_local_experts", "qwen2_moe": "num_experts", "qwen3_moe": "num_experts"}.get(
            self.model_type, "n_routed_experts"
        )
        if self.model_type not in ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3"):
            return 0
        return int(self.get(key, 0))

    @property
    def experts_per_token(self) -> int:
        return int(self.get("num_experts_per_tok", 0)) if self.num_experts else 0

    @property
    def shared_experts(self) -> int:
        """Always-active experts per MoE layer: DeepSeek's n_shared_experts, Qwen2-MoE's one shared expert."""
        if not self.num_experts:
            return 0
        if self.model_type == "qwen2_moe":
            return 1 if int(self.get("shared_expert_intermediate_size", 0)) else 0
        return int(self.get("n_shared_experts", 0)) if self.is_mla else 0

    @property
    def expert_intermediate(self) -> int:
        if self.model_type == "mixtral":
            return self.intermediate
        return int(self.get("moe_intermediate_size", 0))

    def layer_is_moe(self, i: int) -> bool:
        """Whether decoder layer ``i`` has a routed-expert MLP (transformers' own rule per family)."""
        if not self.num_experts:
            return False
        if self.model_type in ("qwen2_moe", "qwen3_moe"):
            step = int(self.get("decoder_sparse_step", 1))
            return i not in (self.get("mlp_only_layers", []) or []) and (i + 1) % step == 0
        if self.is_mla:
            return i >= int(self.get("first_k_dense_replace", 0))
        return True

    @property
    def sliding_window(self) -> int | None:
        window = self.get("sliding_window")
        if self.model_type in _QWEN_TYPES and not self.get("use_sliding_window", False):
            return None
        return int(window) if window else None

    @property
    def layer_is_sliding(self) -> list[bool]:
        """Per decoder layer: True where attention is limited to ``sliding_window`` (transformers' layer_types rule)."""
        n = self.layers
        explicit = self.raw.get("layer_types")
        if isinstance(explicit, list) and len(explicit) == n:
            return [t == "sliding_attention" for t in explicit]
        if self.sliding_window is None:
            return [False] * n
        if self.model_type == "gemma2":
            return [bool((i + 1) % 2) for i in range(n)]
        if self.model_type == "gemma3_text":
            pattern = int(self.get("sliding_window_pattern", 6))
            return [bool((i + 1) % pattern) for i in range(n)]
        if self.model_type in _QWEN_TYPES:
            first = int(self.get("max_window_layers", n))
            return [i >= first for i in range(n)]
        if self.model_type in ("mistral", "mixtral", "phi3"):
            return [True] * n
        return [False] * n


def read_arch(config: dict[str, Any], *, where: str, name: str = "") -> Arch:
    """Check ``config`` and apply its model type's defaults. ``where`` names the file in errors."""
    if not isinstance(config, dict):
        raise ModelConfigError(where, "config.json must be a JSON object")
    model_type = config.get("model_type")
    archs = config.get("architectures") or []
    architecture = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    if not isinstance(model_type, str) or not model_type:
        raise ModelConfigError(where, "missing required field 'model_type'")
    text = config
    multimodal = False
    if isinstance(config.get("text_config"), dict):
        text = dict(config["text_config"])
        text.setdefault("model_type", _TEXT_MODEL_TYPES.get(model_type, model_type))
        for key in ("quantization_config", "torch_dtype", "dtype"):
            if key in config and key not in text:
                text[key] = config[key]
        multimodal = True
        model_type = text["model_type"]
    table = type_defaults()
    if model_type not in table:
        raise UnsupportedArchitectureError(name or where, architecture or model_type, supported_model_types())
    entry = table[model_type]
    missing = [k for k in entry.get("required", []) if text.get(k) is None]
    if missing:
        raise ModelConfigError(
            where, f"missing required field(s) {', '.join(repr(m) for m in missing)} for model_type '{model_type}'"
        )
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size"):
        value = text.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise ModelConfigError(where, f"field '{key}' must be a positive integer, got {value!r}")
    merged = {**entry.get("defaults", {}), **text}  # an explicit null (Mistral v0.3's sliding_window) beats a default
    arch = Arch(model_type=model_type, architecture=architecture or model_type, multimodal=multimodal, raw=merged)
    if arch.heads <= 0 or arch.hidden % arch.heads and not arch.get("head_dim"):
        raise ModelConfigError(
            where, f"hidden_size {arch.hidden} is not a multiple of num_attention_heads {arch.heads}"
        )
    return arch
