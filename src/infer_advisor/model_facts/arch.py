"""A config.json dict, checked and completed with its model type's defaults, as one typed view.

Real config.json files omit fields their transformers config class fills in (Gemma 3's text config has no
``vocab_size``; Mistral v0.1 has no ``head_dim``). Those defaults live in ``data/models/_defaults.json``
(one entry per ``model_type``, with the class file as ``source``); fields listed there as ``required`` must
be present, so a config missing ``hidden_size`` fails loudly instead of silently taking a default. Every
integer read goes through :meth:`Arch.int`, which refuses values outside ``data/models/_limits.json``.

Layers are described by their TYPE, never one by one: :meth:`Arch.mixer_counts` says how many layers mix
tokens with full, sliding-window, chunked, linear (gated DeltaNet) or Mamba-2 attention, and
:meth:`Arch.mlp_counts` how many have a dense MLP, a routed-expert MLP or none. Explicit per-layer lists
(``layer_types``, Nemotron-H's ``hybrid_override_pattern``) are tallied; rule-based patterns are counted
arithmetically, so a config claiming 10^9 layers costs nothing before it is refused.

    arch = read_arch(config, where="llama/config.json")
    arch.mixer_counts()   # {'full': 32}
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..errors import ModelConfigError, UnsupportedArchitectureError
from . import mimo_v2
from .arch_tables import (
    EXPERT_KEYS,
    INDEXER_TYPES,
    LAYER_TYPE_NAMES,
    MAMBA_LINEAR_TYPES,
    MLA_TYPES,
    MOE_TYPES,
    NEMOTRON_PATTERN,
    QWEN_TYPES,
    SAME_AS,
    TEXT_MODEL_TYPES,
    V4_LAYER_TYPES,
    V4_RATIOS,
    limits,
    supported_model_types,
    type_defaults,
)


@dataclass(frozen=True)
class Arch:
    """The fields of one decoder-only config that parameter and KV arithmetic needs, defaults applied."""

    model_type: str  # the sizing family (kimi_k2 -> deepseek_v3)
    architecture: str
    multimodal: bool
    raw: dict[str, Any]  # the (text) config with defaults applied
    where: str = ""
    _memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def get(self, key: str, default: Any = None) -> Any:
        value = self.raw.get(key, default)
        return default if value is None else value

    def int(self, key: str, default: int | None = None, *, minimum: int = 0) -> int:
        """``raw[key]`` as a bounded integer; a missing key without default, a non-integer or a value out of
        bounds raises :class:`ModelConfigError` naming the field."""
        value = self.raw.get(key)
        if value is None:
            if default is None:
                raise ModelConfigError(self.where, f"missing required field '{key}' for model_type '{self.model_type}'")
            return default
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ModelConfigError(self.where, f"field '{key}' must be an integer, got {_short(value)}")
        bound = limits()["fields"].get(key, limits()["default_max"])
        if value < minimum or value > bound:
            raise ModelConfigError(self.where, f"field '{key}' = {_short(value)} is outside {minimum}..{bound}")
        return value

    def flag(self, key: str, default: bool = False) -> bool:
        return bool(self.get(key, default))

    # ------------------------------------------------------------------ sizes
    @property
    def hidden(self) -> int:
        return self.int("hidden_size", minimum=1)

    @property
    def layers(self) -> int:
        return self.int("num_hidden_layers", minimum=1)

    @property
    def heads(self) -> int:
        return self.int("num_attention_heads", minimum=1)

    @property
    def kv_heads(self) -> int:
        """KV heads as the engine stores them (Falcon: 1 for multi-query, ``num_kv_heads`` for the new layout)."""
        if self.model_type == "falcon":
            if self.flag("new_decoder_architecture") or not self.flag("multi_query", True):
                return self.int("num_kv_heads", self.heads, minimum=1)
            return 1
        return self.int("num_key_value_heads", self.heads, minimum=1)

    @property
    def head_dim(self) -> int:
        if self.is_mla:
            return self.int("qk_nope_head_dim") + self.int("qk_rope_head_dim")
        for key in ("head_dim", "attention_head_dim"):
            if self.model_type != "falcon" and self.raw.get(key):
                return self.int(key, minimum=1)
        return self.hidden // self.heads

    @property
    def vocab(self) -> int:
        return self.int("vocab_size", minimum=1)

    @property
    def intermediate(self) -> int:
        if self.model_type == "falcon":
            return self.int("ffn_hidden_size", 4 * self.hidden)
        if self.model_type == "llama4_text":  # the dense MLP of non-MoE layers (Maverick)
            return self.int("intermediate_size_mlp", self.int("intermediate_size"))
        if self.model_type == "granitemoehybrid":  # the shared MLP every layer has beside (or instead of) the experts
            return self.int("shared_intermediate_size")
        if self.model_type == "deepseek_v4":  # no dense layers: the shared expert is moe_intermediate_size wide
            return self.int("moe_intermediate_size")
        return self.int("intermediate_size")

    @property
    def tied(self) -> bool:
        return self.flag("tie_word_embeddings")

    @property
    def is_mla(self) -> bool:
        return self.model_type in MLA_TYPES

    @property
    def num_experts(self) -> int:
        if self.model_type not in MOE_TYPES:
            return 0
        if self.model_type == "gemma4_text" and not self.flag("enable_moe_block"):
            return 0
        if self.model_type == "nemotron_h" and not self.mlp_counts().get("moe"):
            return 0
        return self.int(EXPERT_KEYS.get(self.model_type, "n_routed_experts"), 0)

    @property
    def experts_per_token(self) -> int:
        if not self.num_experts:
            return 0
        key = "top_k_experts" if self.model_type == "gemma4_text" else "num_experts_per_tok"
        return self.int(key, 0)

    @property
    def shared_experts(self) -> int:
        """Always-active expert MLPs per MoE layer (DeepSeek's n_shared_experts, Qwen's one shared expert)."""
        if not self.num_experts:
            return 0
        if self.model_type in ("qwen2_moe", "qwen3_next", "qwen3_5_moe_text"):
            return 1 if self.int("shared_expert_intermediate_size", 0) else 0
        if self.model_type in ("llama4_text", "deepseek_v4"):  # V4: one shared MLP per MoE layer, always
            return 1
        if self.model_type == "granitemoehybrid":  # the shared MLP (shared_intermediate_size) beside the experts
            return 1
        if self.model_type == "nemotron_h":
            return self.int("n_shared_experts", 1) if self.int("moe_shared_expert_intermediate_size", 0) else 0
        return self.int("n_shared_experts", 0) if self.is_mla else 0

    @property
    def expert_intermediate(self) -> int:
        if self.model_type in ("mixtral", "gpt_oss", "minimax_m2", "granitemoehybrid"):
            return self.int("intermediate_size")
        if self.model_type == "llama4_text":
            return self.int("intermediate_size")
        return self.int("moe_intermediate_size", 0)

    # ------------------------------------------------------------------ layer types
    def _explicit_layer_types(self) -> list[str] | None:
        types = self.raw.get("layer_types")
        if types is None and self.model_type in MAMBA_LINEAR_TYPES:  # Granite's older spelling
            types = self.raw.get("layers_block_type")
        if types is None:
            return None
        if not isinstance(types, list) or len(types) != self.layers:
            raise ModelConfigError(self.where, f"'layer_types' must list one type per layer ({self.layers})")
        out = []
        for t in types:
            if t not in LAYER_TYPE_NAMES:
                raise ModelConfigError(self.where, f"unknown layer type {_short(t)} in 'layer_types'")
            kind = LAYER_TYPE_NAMES[t]
            out.append("mamba" if kind == "linear" and self.model_type in MAMBA_LINEAR_TYPES else kind)
        return out

    def layer_mixers(self) -> list[str] | None:
        """Each layer's token-mixer kind where ``layer_types`` lists them (sliding folded into full without a window)."""
        explicit = self._explicit_layer_types() if self.model_type not in ("deepseek_v4", "nemotron_h") else None
        if explicit is None:
            return None
        return ["full" if k == "sliding" and self.sliding_window is None else k for k in explicit]

    def _nemotron_pattern(self) -> list[tuple[str, str]]:
        pattern = self.raw.get("hybrid_override_pattern")
        blocks = self.raw.get("layers_block_type")
        if pattern is None and isinstance(blocks, list):  # the newer spelling of the same pattern
            names = {"mamba": "M", "attention": "*", "full_attention": "*", "mlp": "-", "moe": "E"}
            pattern = "".join(names.get(b, "?") if isinstance(b, str) else "?" for b in blocks)
        if not isinstance(pattern, str) or len(pattern) != self.layers or set(pattern) - set(NEMOTRON_PATTERN):
            raise ModelConfigError(
                self.where, f"'hybrid_override_pattern' must have one of M, *, -, E per layer ({self.layers})"
            )
        return [NEMOTRON_PATTERN[c] for c in pattern]

    def mixer_counts(self) -> dict[str, int]:
        """Layers per token-mixer kind: full, sliding, chunked (attention), linear (gated DeltaNet), mamba, none."""
        if "mixers" not in self._memo:
            self._memo["mixers"] = {k: v for k, v in self._mixer_counts().items() if v}
        return self._memo["mixers"]

    def _mixer_counts(self) -> dict[str, int]:
        n = self.layers
        if self.model_type == "nemotron_h":
            return dict(Counter(m for m, _ in self._nemotron_pattern()))
        if self.model_type == "deepseek_v4":
            return self._v4_mixers()
        if self.model_type == mimo_v2.MODEL_TYPE:
            return mimo_v2.mixer_counts(self)
        if self.model_type == "falcon_h1":  # every layer runs attention and a Mamba-2 mixer side by side
            return {"full": n, "mamba": n}
        if self.model_type == "granitemoehybrid" and self._explicit_layer_types() is None:
            return {"mamba": n}  # transformers' default: every layer a Mamba layer
        explicit = self._explicit_layer_types()
        if explicit is not None:
            counts = Counter(explicit)
            if self.sliding_window is None and counts.get("sliding"):
                counts["full"] += counts.pop("sliding")
            return dict(counts)
        if self.model_type in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"):
            interval = self.int("full_attention_interval", 4, minimum=1)
            return {"full": n // interval, "linear": n - n // interval}
        if self.model_type == "llama4_text":
            no_rope = self.raw.get("no_rope_layers")
            if isinstance(no_rope, list) and no_rope:
                if len(no_rope) != n:
                    raise ModelConfigError(self.where, f"'no_rope_layers' must list one flag per layer ({n})")
                chunked = sum(1 for v in no_rope if v)  # 1 = uses RoPE = chunked local attention
            else:
                step = self.int("no_rope_layer_interval", 4, minimum=1)
                chunked = n - n // step
            if not self.raw.get("attention_chunk_size"):
                return {"full": n}
            return {"chunked": chunked, "full": n - chunked}
        window = self.sliding_window
        if window is None:
            return {"full": n}
        if self.model_type == "gemma2":
            sliding = (n + 1) // 2
        elif self.model_type == "gemma3_text":
            pattern = self.int("sliding_window_pattern", 6, minimum=1)
            sliding = n - n // pattern
        elif self.model_type in QWEN_TYPES:
            sliding = max(n - self.int("max_window_layers", n), 0)
        elif self.model_type in ("mistral", "mixtral", "phi3"):
            sliding = n
        else:
            sliding = 0
        return {"sliding": sliding, "full": n - sliding}

    def _v4_mixers(self) -> dict[str, int]:
        """DeepSeek-V4 layer kinds from ``layer_types`` or the legacy per-layer ``compress_ratios`` (0/4/128), first
        ``num_hidden_layers`` entries (the list also covers the MTP layer); transformers' V4-Pro default otherwise."""
        n = self.layers
        names = self.raw.get("layer_types")
        if names is None and self.raw.get("compress_ratios") is not None:
            ratios = self.raw["compress_ratios"]
            if not isinstance(ratios, list) or len(ratios) < n or any(r not in V4_RATIOS for r in ratios[:n]):
                raise ModelConfigError(self.where, f"'compress_ratios' must give 0, 4 or 128 for each of the {n} layers")
            names = [V4_RATIOS[r] for r in ratios[:n]]
        if names is None:  # configuration_deepseek_v4.py: 2 HCA layers, then CSA and HCA alternating
            csa = max(n - 2, 0) // 2
            return {k: v for k, v in {"hca": n - csa, "csa": csa}.items() if v}
        if not isinstance(names, list) or len(names) < n or any(t not in V4_LAYER_TYPES for t in names[:n]):
            raise ModelConfigError(self.where, f"'layer_types' must name a DeepSeek-V4 attention kind for each of the {n} layers")
        return dict(Counter(V4_LAYER_TYPES[t] for t in names[:n]))

    def compress_rate(self, kind: str) -> int:
        """Source tokens per compressed KV entry of a DeepSeek-V4 ``csa`` or ``hca`` layer."""
        rates = self.raw.get("compress_rates")
        key = {"csa": "compressed_sparse_attention", "hca": "heavily_compressed_attention"}[kind]
        if isinstance(rates, dict) and rates.get(key) is not None:
            value = rates[key]
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 1 << 20:
                raise ModelConfigError(self.where, f"'compress_rates.{key}' must be a positive integer")
            return value
        return self.int(f"compress_rate_{kind}", minimum=1)

    def indexer_layers(self) -> int:
        """Layers that run their own DSA lightning indexer: every layer of DeepSeek-V3.2; GLM-5's ``indexer_types``
        'full' layers (the 'shared' ones reuse the previous top-k), from the list or from transformers' schedule
        (``index_topk_pattern``, else ``index_topk_freq`` / ``index_skip_topk_offset``), counted arithmetically."""
        if self.model_type not in INDEXER_TYPES:
            return 0
        n = self.layers
        if self.model_type == "deepseek_v32":
            return n
        kinds = self.raw.get("indexer_types")
        if kinds is None:
            pattern = self.raw.get("index_topk_pattern")
            if isinstance(pattern, str):
                kinds = [{"F": "full", "S": "shared"}.get(c, c) for c in pattern]
            elif pattern is not None:
                kinds = pattern
        if kinds is not None:
            if not isinstance(kinds, list) or len(kinds) != n or any(k not in ("full", "shared") for k in kinds):
                raise ModelConfigError(self.where, f"'indexer_types' must be 'full' or 'shared' for each of the {n} layers")
            return sum(1 for k in kinds if k == "full")
        freq = max(self.int("index_topk_freq", 1), 1)
        offset = self.int("index_skip_topk_offset", 2)
        # configuration_glm_moe_dsa.py: layer i is 'full' when max(i - offset + 1, 0) % freq == 0
        return min(offset, n) + max(n - offset, 0) // freq

    def mlp_counts(self) -> dict[str, int]:
        """Layers per MLP kind: dense, moe (routed experts) or none."""
        if "mlps" not in self._memo:
            self._memo["mlps"] = {k: v for k, v in self._mlp_counts().items() if v}
        return self._memo["mlps"]

    def _mlp_counts(self) -> dict[str, int]:
        n = self.layers
        if self.model_type == "nemotron_h":
            return dict(Counter(m for _, m in self._nemotron_pattern()))
        if not self.num_experts:
            return {"dense": n}
        if self.model_type == mimo_v2.MODEL_TYPE:
            return mimo_v2.mlp_counts(self)
        if self.model_type in ("qwen2_moe", "qwen3_moe", "qwen3_next", "qwen3_5_moe_text"):
            step = self.int("decoder_sparse_step", 1, minimum=1)
            only = self.get("mlp_only_layers", []) or []
            if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only):
                raise ModelConfigError(self.where, "'mlp_only_layers' must be a list of layer indices")
            dense_listed = {i for i in only if 0 <= i < n and (i + 1) % step == 0}
            moe = n // step - len(dense_listed)
            return {"moe": moe, "dense": n - moe}
        if self.model_type == "glm_moe_dsa" and self.raw.get("mlp_layer_types") is not None:
            kinds = self.raw["mlp_layer_types"]
            if not isinstance(kinds, list) or len(kinds) != n or any(k not in ("dense", "sparse") for k in kinds):
                raise ModelConfigError(self.where, f"'mlp_layer_types' must be 'dense' or 'sparse' for each of the {n} layers")
            moe = sum(1 for k in kinds if k == "sparse")
            return {"dense": n - moe, "moe": moe}
        if self.is_mla:
            first = min(self.int("first_k_dense_replace", 0), n)
            return {"dense": first, "moe": n - first}
        if self.model_type == "llama4_text":
            step = self.int("interleave_moe_layer_step", 1, minimum=1)
            return {"moe": n // step, "dense": n - n // step}
        return {"moe": n}

    @property
    def sliding_window(self) -> int | None:
        if self.model_type in QWEN_TYPES and not self.flag("use_sliding_window"):
            return None
        if self.model_type in ("falcon_h1", "granitemoehybrid"):  # no sliding-window attention in these models
            return None
        window = self.int("sliding_window", 0)
        return window or None

    @property
    def local_window(self) -> int | None:
        """Tokens a local-attention layer holds: the sliding window, or Llama 4's attention chunk."""
        if self.mixer_counts().get("chunked"):
            return self.int("attention_chunk_size", minimum=1)
        return self.sliding_window if self.mixer_counts().get("sliding") else None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


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
        text.setdefault("model_type", TEXT_MODEL_TYPES.get(model_type, model_type))
        # Qwen3-VL keeps tie_word_embeddings at the top level; its ForConditionalGeneration ties by that value.
        for key in ("quantization_config", "torch_dtype", "dtype", "tie_word_embeddings"):
            if key in config and key not in text:
                text[key] = config[key]
        multimodal = True
        model_type = text["model_type"] if isinstance(text["model_type"], str) else ""
    elif isinstance(config.get("vision_config"), dict):  # a vision tower beside top-level text fields (Qwen2.5-VL's first configs)
        multimodal = True
    model_type = SAME_AS.get(model_type, model_type)
    table = type_defaults()
    if model_type not in table:
        raise UnsupportedArchitectureError(name or where, architecture or model_type, supported_model_types())
    entry = table[model_type]
    if model_type == "nemotron_h" and text.get("num_hidden_layers") is None and isinstance(text.get("layers_block_type"), list):
        # transformers' NemotronHConfig takes the layer count from layers_block_type (num_hidden_layers is deprecated
        # there; Nemotron 3 Ultra's config.json has none)
        text = {**text, "num_hidden_layers": len(text["layers_block_type"])}
    missing = [k for k in entry.get("required", []) if text.get(k) is None]
    if missing:
        raise ModelConfigError(
            where, f"missing required field(s) {', '.join(repr(m) for m in missing)} for model_type '{model_type}'"
        )
    merged = {**entry.get("defaults", {}), **text}  # an explicit null (Mistral v0.3's sliding_window) beats a default
    arch = Arch(model_type=model_type, architecture=architecture or model_type, multimodal=multimodal, raw=merged, where=where)
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"):
        arch.int(key, minimum=1)
    if model_type != "falcon":
        arch.int("intermediate_size", 1, minimum=1)
    heads, kv_heads = arch.heads, arch.kv_heads
    if kv_heads > heads:
        raise ModelConfigError(where, f"num_key_value_heads {kv_heads} is more than num_attention_heads {heads}")
    if heads % kv_heads:
        raise ModelConfigError(where, f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
    if arch.hidden % heads and not (arch.raw.get("head_dim") or arch.raw.get("attention_head_dim") or arch.is_mla):
        raise ModelConfigError(where, f"hidden_size {arch.hidden} is not a multiple of num_attention_heads {heads}")
    if model_type == "gemma4_text" and (arch.int("hidden_size_per_layer_input", 0) or arch.int("num_kv_shared_layers", 0)):
        raise UnsupportedArchitectureError(
            name or where, f"{architecture or model_type} with per-layer inputs or shared KV layers (Gemma 4 E-series)"
        )
    arch.mixer_counts()  # validate per-layer lists now, with the file named
    arch.mlp_counts()
    return arch
