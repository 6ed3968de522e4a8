"""Decoder Linear weights a pre-quantized checkpoint keeps in the model dtype, from its quantization_config.

    >>> unconverted_patterns({"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["model.layers.0", "lm_head"]})
    ['model.layers.0', 'lm_head']

:func:`kept_linear` turns the decoder-layer patterns into bytes for an architecture ``arch`` (tests/model_facts/test_unconverted.py
has real configs)::

    kept_linear(arch, {"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["model.layers.0", "lm_head"]}, layer_sizes)

Quantized exports name the modules they leave unquantized: ``modules_to_not_convert`` (transformers' quantizers,
fbgemm_fp8, fp8, mxfp4), ``ignore`` (compressed-tensors, ModelOpt's hf_quant_config ``exclude_modules``) or
``exclude_modules``. Meta's Llama-3.1-405B FP8 release keeps the first and last decoder layers and every
``self_attn`` in bf16 (transformers' conversion script for it: "As defined by Meta, we don't quantize the first and
last layers as well as the lm_head. Also, we don't quantize the self_attn layers."; stored-index file 19343473031);
NVIDIA's NVFP4 exports keep ``model.layers.N.self_attn*`` of MiniMax / Kimi / Gemma 4 in bf16. Engines load those
modules unquantized (vLLM's fbgemm_fp8 / modelopt configs hand them ``UnquantizedLinearMethod``).

Matching, as the exporters write the names: a pattern names a module or any of its parents (``model.layers.0``
covers the whole layer; ``model.layers.1`` does not cover ``model.layers.10``), ``*`` is a glob, ``re:`` a regular
expression (compressed-tensors). Counted: a whole decoder layer, and its attention (``self_attn``, ``attn``,
``linear_attn``, ``mixer``), each layer at its own kind's size (``layer_types``, e.g. Gemma 4's sliding and full
layers); a dense layer's ``mlp``; a MoE layer's always-on MLP beside the experts (shared experts, Gemma 4's dense
``mlp``: NVIDIA's GLM-5.2 and Gemma-4-26B-A4B NVFP4 exports list them in ``ignore``). Not counted (left quantized, so
the estimate stays the format's): single projections (``self_attn.q_proj``), the routed experts, and layers whose
token-mixer kind the config does not list where the kinds differ in size.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from collections.abc import Callable
from typing import Any

from .arch import Arch

_ATTENTION_NAMES = ("self_attn", "attn", "linear_attn", "mixer")
_MLP_NAMES = ("mlp", "ffn", "feed_forward")
# The always-on MLP beside a MoE layer's routed experts, by module name: shared experts (DeepSeek / GLM
# ``mlp.shared_experts``, Qwen ``mlp.shared_expert``, Llama 4 ``feed_forward.shared_expert``); Gemma 4's dense ``mlp``
# (its experts and router are the layer's own ``experts`` / ``router``: transformers modeling_gemma4.py, vLLM gemma4.py).
_SHARED_EXPERT_NAMES = ("mlp.shared_experts", "mlp.shared_expert", "feed_forward.shared_expert")
_BESIDE_EXPERTS = {"gemma4_text": ("mlp",)}
# Prefixes of multimodal and Nemotron-H checkpoints folded onto the text decoder's ``model.layers``.
_PREFIXES = (("language_model.model.", "model."), ("model.language_model.", "model."), ("backbone.", "model."))


def unconverted_patterns(qc: dict[str, Any] | None) -> list[str]:
    """The module names a quantization_config leaves unquantized (any of the keys exporters use), prefixes folded."""
    if not isinstance(qc, dict):
        return []
    names: list[str] = []
    for key in ("modules_to_not_convert", "ignore", "exclude_modules"):
        value = qc.get(key)
        if isinstance(value, list):
            names += [v for v in value if isinstance(v, str)]
    out = []
    for name in names:
        for old, new in _PREFIXES:
            if name.startswith(old):
                name = new + name[len(old):]
        out.append(name)
    return out


def _covers(pattern: str, module: str) -> bool:
    """``pattern`` names ``module`` or one of its parents (glob; ``re:`` a regular expression on the module name)."""
    if pattern.startswith("re:"):
        try:
            return re.fullmatch(pattern[3:], module) is not None or re.fullmatch(pattern[3:], module + ".weight") is not None
        except re.error:
            return False
    parts = module.split(".")
    return any(fnmatchcase(".".join(parts[:i]), pattern) for i in range(1, len(parts) + 1))


def covered_share(qc: dict[str, Any] | None, modules: list[str]) -> float:
    """The share of ``modules`` (full module names) that ``qc`` leaves unquantized (0.0 without patterns or modules)."""
    patterns = unconverted_patterns(qc)
    if not patterns or not modules:
        return 0.0
    return sum(any(_covers(p, m) for p in patterns) for m in modules) / len(modules)


def _mlp_kinds(a: Arch) -> list[str] | None:
    """Each layer's MLP kind (dense / moe) where the config says which: one kind throughout, GLM's ``mlp_layer_types``,
    or DeepSeek-style ``first_k_dense_replace`` dense layers first; None otherwise."""
    counts = a.mlp_counts()
    if len(counts) == 1:
        return [next(iter(counts))] * a.layers
    listed = a.raw.get("mlp_layer_types")
    if isinstance(listed, list) and len(listed) == a.layers:
        return ["dense" if k == "dense" else "moe" for k in listed]
    if a.is_mla and set(counts) == {"dense", "moe"}:
        return ["dense"] * counts["dense"] + ["moe"] * counts["moe"]
    return None


def _layer_mixer_sizes(a: Arch, attention_linear: dict[str, int]) -> list[int] | None:
    """Each layer's token-mixer Linear parameters: one size throughout, or per layer from ``layer_types``."""
    sizes = set(attention_linear.values())
    if len(sizes) == 1:
        return [sizes.pop()] * a.layers
    kinds = a.layer_mixers()
    if kinds is None or any(k not in attention_linear for k in kinds):
        return None
    return [attention_linear[k] for k in kinds]


def kept_linear(a: Arch, qc: dict[str, Any] | None, layer_sizes: Callable[[], tuple[dict[str, int], int, int]]) -> int:
    """Decoder Linear parameters the checkpoint stores unquantized. ``layer_sizes()``: (Linear parameters of one layer
    of each token-mixer kind, of one dense layer's MLP, of the MLP beside the experts of one MoE layer), asked only when
    a pattern names layers."""
    patterns = [p for p in unconverted_patterns(qc) if "layers" in p or p.startswith("re:")]
    if not patterns:
        return 0
    attention_linear, dense, beside = layer_sizes()
    mixers = _layer_mixer_sizes(a, attention_linear)
    if mixers is None:
        return 0
    mlps = _mlp_kinds(a) or [None] * a.layers
    beside_names = _BESIDE_EXPERTS.get(a.model_type, _SHARED_EXPERT_NAMES)
    kept = 0
    for i, (attention, mlp) in enumerate(zip(mixers, mlps)):
        layer = f"model.layers.{i}"
        own = dense if mlp == "dense" else beside if mlp == "moe" else 0
        if any(_covers(p, layer) for p in patterns):
            kept += attention + own
            continue
        if any(_covers(p, f"{layer}.{n}") for p in patterns for n in _ATTENTION_NAMES):
            kept += attention
        names = _MLP_NAMES if mlp == "dense" else beside_names if mlp == "moe" else ()
        if own and any(_covers(p, f"{layer}.{n}") for p in patterns for n in names):
            kept += own
    return kept


def _mixed_precision_layers(qc: dict[str, Any] | None) -> dict[str, str]:
    """A ModelOpt MIXED_PRECISION checkpoint's module -> quant_algo (upper case, prefixes folded); {} for any other."""
    if not isinstance(qc, dict) or str(qc.get("quant_algo", "")).upper() != "MIXED_PRECISION":
        return {}
    layers = qc.get("quantized_layers")
    if not isinstance(layers, dict):
        return {}
    out = {}
    for name, info in layers.items():
        if isinstance(name, str) and isinstance(info, dict):
            for old, new in _PREFIXES:
                name = new + name[len(old):] if name.startswith(old) else name
            out[name] = str(info.get("quant_algo", "")).upper()
    return out


def fp8_mixer_linear(a: Arch, qc: dict[str, Any] | None, layer_sizes: Callable[[], tuple[dict[str, int], int, int]]) -> int:
    """Token-mixer Linear parameters a ModelOpt MIXED_PRECISION checkpoint stores in FP8: each layer whose attention
    (``self_attn``, ``linear_attn`` ...) projections ``quantized_layers`` lists as FP8 (nvidia/Qwen3.6-*-NVFP4: FP8
    attention and gated DeltaNet, NVFP4 MLPs). vLLM gives each listed layer its algo's method
    (``ModelOptMixedPrecisionConfig.get_quant_method``)."""
    layers = _mixed_precision_layers(qc)
    if not any(algo == "FP8" for algo in layers.values()):
        return 0
    mixers = _layer_mixer_sizes(a, layer_sizes()[0])
    if mixers is None:
        return 0
    fp8 = [name for name, algo in layers.items() if algo == "FP8"]
    return sum(size for i, size in enumerate(mixers)
               if any(name.startswith(f"model.layers.{i}.{n}.") for name in fp8 for n in _ATTENTION_NAMES))


def quantized_lm_head(qc: dict[str, Any] | None) -> bool:
    """lm_head is stored 4-bit: a MIXED_PRECISION ``quantized_layers`` lists it as NVFP4 or W4A16_NVFP4."""
    return _mixed_precision_layers(qc).get("lm_head") in ("NVFP4", "W4A16_NVFP4")


def unquantized_mtp(qc: dict[str, Any] | None, num_layers: int) -> bool:
    """The checkpoint keeps its MTP layers in the model dtype: its ignore list names ``mtp*`` (Qwen3.5/3.6 exports) or
    the layer after the last decoder layer (``model.layers.78*`` of GLM-5.2, whose MTP layer is layer num_hidden_layers)."""
    patterns = unconverted_patterns(qc)
    return any(_covers(p, "mtp") or _covers(p, "model.mtp") or _covers(p, f"model.layers.{num_layers}") for p in patterns)
