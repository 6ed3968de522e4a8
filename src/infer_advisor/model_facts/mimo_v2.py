"""MiMo-V2-Flash (``mimo_v2_flash``, XiaomiMiMo/MiMo-V2-Flash): layer kinds and attention geometry.

Source: transformers models/mimo_v2_flash (configuration and modeling, 5.25). Per layer:

- token mixer: full attention or sliding-window attention (``sliding_window`` tokens); the published config.json
  spells the pattern ``hybrid_layer_pattern`` (1 = sliding) where transformers' config has ``layer_types``, whose
  default is full attention on layer 0 and every 6th layer (the same 9 of 48 the published pattern gives);
- q and k have ``head_dim`` (192) per head, v has ``v_head_dim`` (128); o_proj maps heads x v_head_dim back;
  sliding layers have twice the KV heads (transformers: ``num_key_value_heads * 2``; the config's
  ``swa_num_key_value_heads`` says the same, 8 vs 4) and one attention-sink logit per query head
  (``add_swa_attention_sink_bias``; the full layers have none: ``add_full_attention_sink_bias`` false);
- MLP: dense on layer 0, routed experts (``n_routed_experts``, no shared expert) on the rest; the published config
  spells this ``moe_layer_freq`` (1 = MoE), transformers' ``mlp_layer_types``.

    mixer_counts(arch)          # {'full': 9, 'sliding': 39}
    attention_geometry(arch, "sliding")   # (8, 192, 128): KV heads, k head dim, v head dim
"""

from __future__ import annotations

from typing import Any

from ..errors import ModelConfigError

# `a` is a model_facts.arch.Arch; not imported (arch imports this module: no circle, even for type checking).
Arch = Any

MODEL_TYPE = "mimo_v2_flash"


def _pattern(a: Arch, key: str, names: dict[int, str]) -> list[str] | None:
    """A per-layer 0/1 list (``hybrid_layer_pattern``, ``moe_layer_freq``) as kind names, or None when absent."""
    values = a.raw.get(key)
    if values is None:
        return None
    if not isinstance(values, list) or len(values) != a.layers or any(v not in names for v in values):
        raise ModelConfigError(a.where, f"'{key}' must give 0 or 1 for each of the {a.layers} layers")
    return [names[v] for v in values]


def _kinds(a: Arch, key: str, legacy: str, names: dict[int, str], allowed: dict[str, str]) -> list[str] | None:
    listed = a.raw.get(key)
    if listed is not None:
        if not isinstance(listed, list) or len(listed) != a.layers or any(t not in allowed for t in listed):
            raise ModelConfigError(a.where, f"'{key}' must name one of {sorted(allowed)} for each of the {a.layers} layers")
        return [allowed[t] for t in listed]
    return _pattern(a, legacy, names)


def mixer_counts(a: Arch) -> dict[str, int]:
    """Full and sliding attention layers (``layer_types``, else ``hybrid_layer_pattern``, else transformers' default)."""
    kinds = _kinds(a, "layer_types", "hybrid_layer_pattern", {0: "full", 1: "sliding"},
                   {"full_attention": "full", "sliding_attention": "sliding"})
    n = a.layers
    if kinds is None:  # configuration_mimo_v2_flash.py: full on layer 0 and every 6th layer
        full = 1 + sum(1 for i in range(1, n) if (i + 1) % 6 == 0)
        return {"full": full, "sliding": n - full}
    if a.sliding_window is None:
        return {"full": n}
    return {"full": kinds.count("full"), "sliding": kinds.count("sliding")}


def mlp_counts(a: Arch) -> dict[str, int]:
    """Dense and routed-expert MLP layers (``mlp_layer_types``, else ``moe_layer_freq``, else layer 0 dense)."""
    kinds = _kinds(a, "mlp_layer_types", "moe_layer_freq", {0: "dense", 1: "moe"}, {"dense": "dense", "sparse": "moe"})
    if kinds is None:
        return {"dense": 1, "moe": a.layers - 1}
    return {"dense": kinds.count("dense"), "moe": kinds.count("moe")}


def attention_geometry(a: Arch, mixer: str) -> tuple[int, int, int]:
    """(KV heads, q/k head dim, v head dim) of a ``full`` or ``sliding`` layer."""
    kv_heads, head_dim = a.kv_heads, a.head_dim
    v_dim = a.int("v_head_dim", 128, minimum=1)
    if mixer == "sliding":
        return (
            a.int("swa_num_key_value_heads", 2 * kv_heads, minimum=1),
            a.int("swa_head_dim", head_dim, minimum=1),
            a.int("swa_v_head_dim", v_dim, minimum=1),
        )
    return kv_heads, head_dim, v_dim


def has_sinks(a: Arch, mixer: str) -> bool:
    """One learned sink logit per query head on the sliding layers (and on full layers only if the config says so)."""
    if mixer == "sliding":
        return a.flag("add_swa_attention_sink_bias", True)
    return a.flag("add_full_attention_sink_bias", False)
