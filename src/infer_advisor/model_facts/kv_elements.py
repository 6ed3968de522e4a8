"""Per-token KV-cache elements and per-sequence recurrent state of an architecture, counted by layer type
(the parameter counts are in ``params.py``; the memory model turns both into bytes)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from . import mimo_v2
from .arch import Arch
from .params import attention_geometry, linear_attention_dims, mamba_dims


@dataclass(frozen=True)
class KVCounts:
    full: int  # elements per token over full-attention layers
    sliding: int  # elements per token over local (sliding-window or chunked) layers
    window: int | None
    uniform_window: bool  # every layer uses the same window (counted in ``full``)
    local_kind: str | None = None  # 'sliding' or 'chunked'


def _kv_per_layer(a: Arch, mixer: str) -> int:
    if a.is_mla:  # the compressed latent plus the shared rope key, stored once
        return a.int("kv_lora_rank") + a.int("qk_rope_head_dim")
    if a.model_type == mimo_v2.MODEL_TYPE:  # k and v of different widths
        kv_heads, hd, v_hd = mimo_v2.attention_geometry(a, mixer)
        return kv_heads * (hd + v_hd)
    kv_heads, hd, _ = attention_geometry(a, mixer)
    return 2 * kv_heads * hd


def _v4_kv(a: Arch) -> KVCounts:
    """DeepSeek-V4 (transformers DeepseekV4HCACache / CSACache): every layer keeps its last ``sliding_window`` tokens of
    the one shared K=V head (head_dim, stored once); CSA layers add one compressed entry of head_dim plus one indexer
    key of index_head_dim per ``compress_rate_csa`` tokens, HCA layers one entry of head_dim per ``compress_rate_hca``
    tokens. The compressed entries grow with the context: per token that is a fraction, rounded up to whole elements."""
    counts, hd = a.mixer_counts(), a.head_dim
    grow = Fraction(0)
    if counts.get("csa"):
        grow += Fraction(counts["csa"] * (hd + a.int("index_head_dim", minimum=1)), a.compress_rate("csa"))
    if counts.get("hca"):
        grow += Fraction(counts["hca"] * hd, a.compress_rate("hca"))
    return KVCounts(
        full=math.ceil(grow), sliding=a.layers * hd, window=a.sliding_window, uniform_window=False, local_kind="sliding"
    )


def kv_cache_elements(a: Arch) -> KVCounts:
    """KV-cache elements per token, as vLLM stores them.

    Standard attention: 2 (K and V) x kv_heads x head_dim per layer. MLA (DeepSeek): the compressed latent
    plus the shared rope key, ``kv_lora_rank + qk_rope_head_dim`` per layer, stored once (no factor 2).
    Linear-attention and Mamba layers hold no per-token KV (see :func:`recurrent_state_elements`).

    A model whose EVERY layer uses the same sliding window (Mistral-7B-v0.1: 4096, Phi-3-mini-4k: 2047) is
    counted as full attention, an upper bound: vLLM may free blocks outside the window, but llama.cpp,
    CTranslate2 and TGI keep the whole context, and a plan must fit on each engine it may pick. Mixed models
    (Gemma 2/3/4, gpt-oss, Qwen with use_sliding_window) report their window layers in ``sliding``; Llama 4's
    chunked-attention layers (each token attends within its chunk of ``attention_chunk_size``) likewise.
    """
    if a.model_type == "deepseek_v4":
        return _v4_kv(a)
    counts = a.mixer_counts()
    full_layers = counts.get("full", 0)
    local = "chunked" if counts.get("chunked") else ("sliding" if counts.get("sliding") else None)
    local_layers = counts.get(local, 0) if local else 0
    attention_layers = full_layers + local_layers
    window = a.local_window
    full = full_layers * _kv_per_layer(a, "full") if full_layers else 0
    full += a.indexer_layers() * (a.int("index_head_dim", minimum=1) if a.indexer_layers() else 0)  # DSA indexer keys
    sliding = local_layers * _kv_per_layer(a, local) if local_layers else 0
    if local == "sliding" and local_layers == attention_layers and local_layers == a.layers:
        return KVCounts(full=sliding, sliding=0, window=window, uniform_window=True, local_kind=local)
    return KVCounts(full=full, sliding=sliding, window=window, uniform_window=False, local_kind=local)


@dataclass(frozen=True)
class StateCounts:
    """Recurrent state per SEQUENCE (not per token) over the Mamba and linear-attention layers."""

    conv: int  # convolution window elements, held in the model dtype
    ssm: int  # SSM / delta-rule state elements, held in ``ssm_dtype``
    ssm_dtype: str | None  # config's mamba_ssm_cache_dtype / mamba_ssm_dtype (None: the model dtype)
    layers: int


def recurrent_state_elements(a: Arch) -> StateCounts:
    """Per-sequence state as vLLM's MambaSpec allocates it: conv state ``(kernel - 1) x channels`` and SSM state
    ``heads x head_dim x state`` (Mamba-2) or ``value_heads x key_dim x value_dim`` (gated DeltaNet), per layer."""
    counts = a.mixer_counts()
    conv = ssm = 0
    if counts.get("mamba"):
        d = mamba_dims(a)
        conv += counts["mamba"] * (d.kernel - 1) * d.conv_channels
        ssm += counts["mamba"] * d.heads * d.head_dim * d.state
    if counts.get("linear"):
        d2 = linear_attention_dims(a)
        conv += counts["linear"] * (d2.kernel - 1) * d2.conv_channels
        ssm += counts["linear"] * d2.value_heads * d2.key_dim * d2.value_dim
    dtype = a.get("mamba_ssm_cache_dtype") or a.get("mamba_ssm_dtype")
    return StateCounts(
        conv=conv,
        ssm=ssm,
        ssm_dtype=dtype if isinstance(dtype, str) else None,
        layers=counts.get("mamba", 0) + counts.get("linear", 0),
    )
