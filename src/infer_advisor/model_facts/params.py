"""Analytic parameter and KV-cache counts from a config, equal to what transformers builds.

One function per layer kind; :func:`count_parameters` adds them up over the decoder layers. The ground
truth is transformers' own model classes on the meta device (``tests/model_facts/test_params_vs_transformers.py``
checks every catalog entry). Notes on what "what transformers builds" means:

- DeepSeek-V3's multi-token-prediction layers (``num_nextn_predict_layers``, 11.5B parameters in the
  checkpoint) are NOT built by transformers, so they are not counted (vLLM loads them only for speculative
  decoding). DeepSeek-V3's router ``e_score_correction_bias`` is a buffer in transformers, not a parameter.
- Tied embeddings (``tie_word_embeddings``) count once: ``lm_head`` is 0.
- Biases, norms and MoE routers go to ``other``; Linear weights in decoder blocks go to ``linear``
  (routed experts also to ``expert_linear``).

    counts = count_parameters(read_arch(config, where="config.json"))
    counts.breakdown.embedding + counts.breakdown.lm_head + counts.breakdown.linear + counts.breakdown.other
"""

from __future__ import annotations

from dataclasses import dataclass

from .arch import Arch
from .facts import ParamBreakdown

# Model types with a Gemma-style decoder layer: four RMSNorms per layer (input, post-attention,
# pre-feedforward, post-feedforward). Source: transformers models/gemma2, gemma3 modeling files.
_FOUR_NORM_TYPES = ("gemma2", "gemma3_text")
# Model types whose attention has RMSNorms on q and k (one weight of head_dim each).
# Source: transformers models/qwen3, qwen3_moe, gemma3 modeling files.
_QK_NORM_TYPES = ("qwen3", "qwen3_moe", "gemma3_text")
# Model types whose `attention_bias` puts a bias on all of q, k, v and o.
_ALL_BIAS_TYPES = ("llama", "gemma", "gemma2", "gemma3_text", "qwen3", "qwen3_moe")


@dataclass(frozen=True)
class Block:
    """Parameters of one piece of a decoder layer: Linear weights and everything else."""

    linear: int = 0
    other: int = 0

    def __add__(self, o: Block) -> Block:
        return Block(self.linear + o.linear, self.other + o.other)


@dataclass(frozen=True)
class Counts:
    breakdown: ParamBreakdown
    total: int
    active: int


def _gated_mlp(hidden: int, inter: int, bias: bool = False) -> Block:
    """gate, up (hidden -> inter) and down (inter -> hidden); Phi-3's fused gate_up has the same count."""
    return Block(linear=3 * hidden * inter, other=(2 * inter + hidden) if bias else 0)


def _attention(a: Arch) -> Block:
    if a.model_type == "falcon":
        return _falcon_attention(a)
    if a.is_mla:
        return _mla_attention(a)
    h, hd = a.hidden, a.head_dim
    q, kv = a.heads * hd, a.kv_heads * hd
    linear = h * q + 2 * h * kv + q * h  # q, k, v, o (Phi-3's fused qkv_proj has the same count)
    other = 0
    if a.model_type == "qwen2" or (a.model_type == "qwen2_moe" and a.get("qkv_bias", True)):
        other += q + 2 * kv  # q, k, v carry a bias; o does not (transformers Qwen2Attention, Qwen2MoeAttention)
    elif a.model_type in _ALL_BIAS_TYPES and a.get("attention_bias", False):
        other += q + 2 * kv + h
    if a.model_type in _QK_NORM_TYPES:
        other += 2 * hd
    return Block(linear, other)


def _mla_attention(a: Arch) -> Block:
    """DeepSeek-V2/V3 multi-head latent attention (q_lora_rank may be null: V2-Lite projects q directly)."""
    h, n = a.hidden, a.heads
    nope, rope, v = (int(a.raw[k]) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    kv_rank = int(a.raw["kv_lora_rank"])
    q_rank = a.raw.get("q_lora_rank")
    bias = bool(a.get("attention_bias", False))
    linear = other = 0
    if q_rank:
        linear += h * q_rank + q_rank * n * (nope + rope)  # q_a_proj, q_b_proj
        other += q_rank + (q_rank if bias else 0)  # q_a_layernorm (+ q_a_proj bias)
    else:
        linear += h * n * (nope + rope)  # q_proj
    linear += h * (kv_rank + rope) + kv_rank * n * (nope + v)  # kv_a_proj_with_mqa, kv_b_proj
    other += kv_rank + ((kv_rank + rope) if bias else 0)  # kv_a_layernorm (+ bias)
    linear += n * v * h  # o_proj
    other += h if bias else 0
    return Block(linear, other)


def _falcon_attention(a: Arch) -> Block:
    h, hd = a.hidden, a.head_dim
    if a.get("new_decoder_architecture", False):
        qkv = (2 * int(a.get("num_kv_heads", a.heads)) + a.heads) * hd
    elif a.get("multi_query", True):
        qkv = h + 2 * hd
    else:
        qkv = 3 * h
    bias = bool(a.get("bias", False))
    return Block(linear=h * qkv + h * h, other=(qkv + h) if bias else 0)


def _norms_per_layer(a: Arch) -> int:
    h = a.hidden
    if a.model_type == "falcon":  # LayerNorm: weight + bias
        new = a.get("new_decoder_architecture", False)
        n_ln = int(a.get("num_ln_in_parallel_attn", 2 if new else 1))
        count = 2 if not a.get("parallel_attn", True) else (2 if n_ln == 2 else 1)
        return count * 2 * h
    return (4 if a.model_type in _FOUR_NORM_TYPES else 2) * h


def _mlp(a: Arch, i: int) -> tuple[Block, int, int]:
    """(block, routed-expert linear params, routed-expert linear params active per token) of layer ``i``."""
    h = a.hidden
    if a.model_type == "falcon":
        bias = bool(a.get("bias", False))
        inter = a.intermediate
        return Block(linear=2 * h * inter, other=(inter + h) if bias else 0), 0, 0
    if not a.layer_is_moe(i):
        return _gated_mlp(h, a.intermediate, bias=bool(a.get("mlp_bias", False))), 0, 0
    e, k = a.num_experts, a.experts_per_token
    per_expert = 3 * h * a.expert_intermediate
    block = Block(linear=e * per_expert, other=e * h)  # experts + router (gate: hidden -> experts, no bias)
    if a.model_type == "qwen2_moe" and a.shared_experts:  # one shared MLP, scaled by a sigmoid gate (hidden -> 1)
        block = block + _gated_mlp(h, int(a.get("shared_expert_intermediate_size"))) + Block(other=h)
    elif a.shared_experts:  # DeepSeek: n_shared_experts fused into one MLP
        block = block + _gated_mlp(h, a.expert_intermediate * a.shared_experts)
    return block, e * per_expert, k * per_expert


def count_parameters(a: Arch) -> Counts:
    """Total, per-kind and active parameter counts of the model transformers builds from ``a``."""
    embedding = a.vocab * a.hidden
    lm_head = 0 if a.tied else a.vocab * a.hidden
    attn = _attention(a)
    norms = _norms_per_layer(a)
    linear = other = expert = expert_active = 0
    for i in range(a.layers):
        mlp, exp, exp_active = _mlp(a, i)
        linear += attn.linear + mlp.linear
        other += attn.other + mlp.other + norms
        expert += exp
        expert_active += exp_active
    other += (2 * a.hidden) if a.model_type == "falcon" else a.hidden  # final norm (Falcon: LayerNorm with bias)
    breakdown = ParamBreakdown(embedding=embedding, lm_head=lm_head, linear=linear, other=other, expert_linear=expert)
    total = embedding + lm_head + linear + other
    return Counts(breakdown=breakdown, total=total, active=total - expert + expert_active)


@dataclass(frozen=True)
class KVCounts:
    full: int  # elements per token over full-attention layers
    sliding: int  # elements per token over sliding-window layers
    window: int | None
    uniform_window: bool  # every layer uses the same window (counted in ``full``)


def kv_cache_elements(a: Arch) -> KVCounts:
    """KV-cache elements per token, as vLLM stores them.

    Standard attention: 2 (K and V) x kv_heads x head_dim per layer. MLA (DeepSeek): the compressed latent
    plus the shared rope key, ``kv_lora_rank + qk_rope_head_dim`` per layer, stored once (no factor 2).

    A model whose EVERY layer uses the same sliding window (Mistral-7B-v0.1: 4096, Phi-3-mini-4k: 2047) is
    counted as full attention, an upper bound: vLLM may free blocks outside the window, but llama.cpp,
    CTranslate2 and TGI keep the whole context, and a plan must fit on each engine it may pick. Mixed models
    (Gemma 2/3, Qwen with use_sliding_window) report their window layers in ``sliding``.
    """
    if a.is_mla:
        per_layer = int(a.raw["kv_lora_rank"]) + int(a.raw["qk_rope_head_dim"])
        return KVCounts(full=a.layers * per_layer, sliding=0, window=None, uniform_window=False)
    per_layer = 2 * a.kv_heads * a.head_dim
    sliding_layers = a.layer_is_sliding
    n_sliding = sum(sliding_layers)
    window = a.sliding_window if n_sliding else None
    if n_sliding == a.layers:
        return KVCounts(full=a.layers * per_layer, sliding=0, window=window, uniform_window=True)
    return KVCounts(
        full=(a.layers - n_sliding) * per_layer, sliding=n_sliding * per_layer, window=window, uniform_window=False
    )
