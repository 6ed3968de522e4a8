"""Decoder Linear weights a pre-quantized checkpoint keeps in the model dtype, from its quantization_config.

    >>> kept_linear(arch, {"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["model.layers.0", "lm_head"]})

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
``linear_attn``, ``mixer``) where all attention layers have one size; a dense layer's ``mlp``. Not counted (left
quantized, so the estimate stays the format's): single projections (``self_attn.q_proj``), parts of a MoE block, and
layers of models whose token mixers differ in size.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from collections.abc import Callable
from typing import Any

from .arch import Arch

_ATTENTION_NAMES = ("self_attn", "attn", "linear_attn", "mixer")
_MLP_NAMES = ("mlp", "ffn", "feed_forward")
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


def kept_linear(a: Arch, qc: dict[str, Any] | None, layer_sizes: Callable[[], tuple[dict[str, int], int]]) -> int:
    """Decoder Linear parameters the checkpoint stores unquantized. ``layer_sizes()``: (Linear parameters of one layer
    of each token-mixer kind, of one dense MLP or 0 for a model with MoE layers), asked only when a pattern names layers."""
    patterns = [p for p in unconverted_patterns(qc) if "layers" in p or p.startswith("re:")]
    if not patterns:
        return 0
    attention_linear, dense = layer_sizes()
    sizes = set(attention_linear.values())
    if len(sizes) != 1:
        return 0
    attention = sizes.pop()
    kept = 0
    for i in range(a.layers):
        layer = f"model.layers.{i}"
        if any(_covers(p, layer) for p in patterns):
            kept += attention + dense
            continue
        if any(_covers(p, f"{layer}.{n}") for p in patterns for n in _ATTENTION_NAMES):
            kept += attention
        if dense and any(_covers(p, f"{layer}.{n}") for p in patterns for n in _MLP_NAMES):
            kept += dense
    return kept
