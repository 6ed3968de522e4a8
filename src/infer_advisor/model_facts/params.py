"""Analytic parameter counts from a config, equal to what transformers builds (KV-cache and recurrent-state
element counts: ``kv_elements.py``).

One function per piece of a decoder layer (token mixer: attention, MLA, gated DeltaNet, Mamba-2; MLP: dense
or routed experts); :func:`count_parameters` multiplies each by the number of layers of that TYPE
(:meth:`Arch.mixer_counts`, :meth:`Arch.mlp_counts`), never looping over layers. The ground truth is
transformers' own model classes on the meta device (``tests/model_facts/test_params_vs_transformers.py``
checks every catalog entry whose architecture the installed transformers has). Notes on what "what
transformers builds" means:

- Multi-token-prediction layers (DeepSeek-V3 ``num_nextn_predict_layers``, Qwen3.5 ``mtp_num_hidden_layers``)
  are NOT built by transformers, so they are not counted (vLLM loads them only for speculative decoding).
  DeepSeek-V3's router ``e_score_correction_bias`` is a buffer in transformers, not a parameter.
- Tied embeddings (``tie_word_embeddings``) count once: ``lm_head`` is 0.
- Biases, norms, routers, convolutions and SSM scalars go to ``other``; Linear weights in decoder blocks go
  to ``linear`` (routed experts also to ``expert_linear``).

    counts = count_parameters(read_arch(config, where="config.json"))
    counts.breakdown.embedding + counts.breakdown.lm_head + counts.breakdown.linear + counts.breakdown.other
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelConfigError
from . import mimo_v2
from .arch import Arch
from .facts import ParamBreakdown

# Model types with a Gemma-style decoder layer: four RMSNorms per layer (input, post-attention,
# pre-feedforward, post-feedforward). Source: transformers models/gemma2, gemma3, gemma4 modeling files.
_FOUR_NORM_TYPES = ("gemma2", "gemma3_text", "gemma4_text")
# Model types whose attention has RMSNorms on q and k of one head_dim each.
# Source: transformers models/qwen3, qwen3_moe, gemma3, qwen3_next, qwen3_5, gemma4 modeling files.
_QK_NORM_TYPES = ("qwen3", "qwen3_moe", "gemma3_text", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "gemma4_text")
# Model types whose `attention_bias` puts a bias on all of q, k, v and o.
_ALL_BIAS_TYPES = (
    "llama", "gemma", "gemma2", "gemma3_text", "qwen3", "qwen3_moe", "gpt_oss", "olmo2", "nemotron_h", "falcon_h1",
    "granitemoehybrid", "smollm3",
)
# Gated attention (Qwen3-Next, Qwen3.5): q_proj also emits a per-channel output gate, doubling its width.
_GATED_Q_TYPES = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")


@dataclass(frozen=True)
class Block:
    """Parameters of one piece of a decoder layer: Linear weights and everything else."""

    linear: int = 0
    other: int = 0

    def __add__(self, o: Block) -> Block:
        return Block(self.linear + o.linear, self.other + o.other)

    def __mul__(self, n: int) -> Block:
        return Block(self.linear * n, self.other * n)


@dataclass(frozen=True)
class Counts:
    breakdown: ParamBreakdown
    total: int
    active: int  # parameters a token touches, the input embedding included
    active_non_embedding: int  # the same without the input embedding (a row lookup), as model cards count


def _gated_mlp(hidden: int, inter: int, bias: bool = False) -> Block:
    """gate, up (hidden -> inter) and down (inter -> hidden); Phi-3's fused gate_up has the same count."""
    return Block(linear=3 * hidden * inter, other=(2 * inter + hidden) if bias else 0)


def _plain_mlp(hidden: int, inter: int) -> Block:
    """up and down only (Nemotron-H's relu^2 MLP, Falcon's GELU MLP without biases)."""
    return Block(linear=2 * hidden * inter)


# ---------------------------------------------------------------------- token mixers


def attention_geometry(a: Arch, mixer: str) -> tuple[int, int, bool]:
    """(kv heads, head_dim, k and v share one projection) of an attention layer of kind ``mixer``."""
    if a.model_type == "gemma4_text" and mixer == "full":
        return (
            a.int("num_global_key_value_heads", a.kv_heads, minimum=1),
            a.int("global_head_dim", a.head_dim, minimum=1),
            a.flag("attention_k_eq_v"),
        )
    return a.kv_heads, a.head_dim, False


def _attention(a: Arch, mixer: str) -> Block:
    if a.model_type == "falcon":
        return _falcon_attention(a)
    if a.is_mla:
        return _mla_attention(a)
    if a.model_type == "deepseek_v4":
        return _v4_attention(a, mixer)
    if a.model_type == mimo_v2.MODEL_TYPE:
        return _mimo_attention(a, mixer)
    h = a.hidden
    kv_heads, hd, k_eq_v = attention_geometry(a, mixer)
    q, kv = a.heads * hd, kv_heads * hd
    q_out = 2 * q if a.model_type in _GATED_Q_TYPES and a.flag("attn_output_gate", True) else q
    linear = h * q_out + (1 if k_eq_v else 2) * h * kv + q * h
    other = 0
    if a.model_type == "qwen2" or (a.model_type == "qwen2_moe" and a.flag("qkv_bias", True)):
        other += q + 2 * kv  # q, k, v carry a bias; o does not (transformers Qwen2Attention, Qwen2MoeAttention)
    elif a.model_type in _ALL_BIAS_TYPES and a.flag("attention_bias"):
        other += q_out + (1 if k_eq_v else 2) * kv + h
    if a.model_type in _QK_NORM_TYPES:
        other += 2 * hd
    elif a.model_type == "olmo2" or (a.model_type == "minimax_m2" and a.flag("use_qk_norm")):
        other += q + kv  # OLMo 2 and MiniMax-M2 normalise the whole q and k projections
    if a.model_type == "gpt_oss":  # one learned attention-sink logit per head
        other += a.heads
    return Block(linear, other)


def _mimo_attention(a: Arch, mixer: str) -> Block:
    """MiMo-V2-Flash: q/k of head_dim, v of v_head_dim, o from heads x v_head_dim; sinks on sliding layers."""
    h, n = a.hidden, a.heads
    kv_heads, hd, v_hd = mimo_v2.attention_geometry(a, mixer)
    linear = h * n * hd + h * kv_heads * hd + h * kv_heads * v_hd + n * v_hd * h
    bias = (n * hd + kv_heads * hd + kv_heads * v_hd) if a.flag("attention_bias") else 0  # o_proj has none
    return Block(linear, bias + (n if mimo_v2.has_sinks(a, mixer) else 0))


def _mla_attention(a: Arch) -> Block:
    """DeepSeek-V2/V3 multi-head latent attention (q_lora_rank may be null: V2-Lite projects q directly)."""
    h, n = a.hidden, a.heads
    nope, rope, v = a.int("qk_nope_head_dim"), a.int("qk_rope_head_dim"), a.int("v_head_dim")
    kv_rank = a.int("kv_lora_rank", minimum=1)
    q_rank = a.int("q_lora_rank", 0)
    bias = a.flag("attention_bias")
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


def _indexer(a: Arch) -> Block:
    """DeepSeek sparse attention's lightning indexer (DeepSeek-V3.2, GLM-5): wq_b, wk, weights_proj, k_norm (LayerNorm)."""
    h, q_rank = a.hidden, a.int("q_lora_rank", 0)
    ih, ihd = a.int("index_n_heads", minimum=1), a.int("index_head_dim", minimum=1)
    return Block(linear=q_rank * ih * ihd + h * ihd + h * ih, other=2 * ihd)


def _v4_attention(a: Arch, mixer: str) -> Block:
    """DeepSeek-V4 attention (transformers models/deepseek_v4): low-rank q (q_a_proj, q_a_norm, q_b_proj), one shared
    K=V head (kv_proj, kv_norm), grouped low-rank output (o_a_proj, o_b_proj), a sink logit per head; CSA layers add a
    compressor of two series (kv/gate to 2 x head_dim, position bias per window slot, norm) with its lightning indexer,
    HCA layers a single-series compressor."""
    h, n, hd = a.hidden, a.heads, a.head_dim
    q_rank, g, o_rank = a.int("q_lora_rank", minimum=1), a.int("o_groups", minimum=1), a.int("o_lora_rank", minimum=1)
    linear = h * q_rank + q_rank * n * hd + h * hd + o_rank * n * hd + g * o_rank * h
    other = q_rank + hd + n
    if mixer == "csa":
        rate, ih, ihd = a.compress_rate("csa"), a.int("index_n_heads", minimum=1), a.int("index_head_dim", minimum=1)
        linear += 2 * h * 2 * hd  # compressor kv_proj, gate_proj
        other += rate * 2 * hd + hd  # position_bias, kv_norm
        linear += 2 * h * 2 * ihd + q_rank * ih * ihd + h * ih  # indexer kv_proj, gate_proj, q_b_proj, scorer weights_proj
        other += rate * 2 * ihd + ihd  # indexer position_bias, kv_norm
    elif mixer == "hca":
        linear += 2 * h * hd
        other += a.compress_rate("hca") * hd + hd
    return Block(linear, other)


def _v4_hyper_connections(a: Arch) -> int:
    """Parameters of one manifold-constrained hyper-connection (DeepseekV4HyperConnection: fn, base, scale)."""
    m = a.int("hc_mult", minimum=1)
    return (2 + m) * m * (m * a.hidden) + (2 + m) * m + 3


def _falcon_attention(a: Arch) -> Block:
    h, hd = a.hidden, a.head_dim
    if a.flag("new_decoder_architecture"):
        qkv = (2 * a.int("num_kv_heads", a.heads) + a.heads) * hd
    elif a.flag("multi_query", True):
        qkv = h + 2 * hd
    else:
        qkv = 3 * h
    bias = a.flag("bias")
    return Block(linear=h * qkv + h * h, other=(qkv + h) if bias else 0)


@dataclass(frozen=True)
class LinearAttentionDims:
    """Gated DeltaNet (Qwen3-Next, Qwen3.5) dimensions: key/value heads and widths, convolution kernel."""

    key_heads: int
    value_heads: int
    key_dim: int
    value_dim: int
    kernel: int

    @property
    def conv_channels(self) -> int:  # q, k and v pass the short convolution
        return 2 * self.key_heads * self.key_dim + self.value_heads * self.value_dim


def linear_attention_dims(a: Arch) -> LinearAttentionDims:
    return LinearAttentionDims(
        key_heads=a.int("linear_num_key_heads", minimum=1),
        value_heads=a.int("linear_num_value_heads", minimum=1),
        key_dim=a.int("linear_key_head_dim", minimum=1),
        value_dim=a.int("linear_value_head_dim", minimum=1),
        kernel=a.int("linear_conv_kernel_dim", 4, minimum=1),
    )


def _linear_attention(a: Arch) -> Block:
    """Gated DeltaNet: in_proj_qkvz (or qkv + z), in_proj_ba (or b + a), conv1d, dt_bias, A_log, norm, out_proj."""
    d, h = linear_attention_dims(a), a.hidden
    k, v = d.key_heads * d.key_dim, d.value_heads * d.value_dim
    linear = h * (2 * k + 2 * v) + h * 2 * d.value_heads + v * h
    other = d.conv_channels * d.kernel + 2 * d.value_heads + d.value_dim
    return Block(linear, other)


@dataclass(frozen=True)
class MambaDims:
    """Mamba-2 mixer dimensions (Nemotron-H, Granite 4, Falcon-H1). ``inner`` is the SSM width (z, x and out_proj):
    heads x head_dim for Nemotron-H; ``mamba_expand x hidden`` for Granite 4; ``mamba_d_ssm`` for Falcon-H1."""

    heads: int
    head_dim: int
    groups: int
    state: int
    kernel: int
    inner: int

    @property
    def conv_channels(self) -> int:  # x, B and C pass the short convolution
        return self.inner + 2 * self.groups * self.state


def mamba_dims(a: Arch) -> MambaDims:
    if a.model_type in ("falcon_h1", "granitemoehybrid"):  # Granite 4 / Falcon-H1 spell these mamba_*
        heads = a.int("mamba_n_heads", minimum=1)
        if a.model_type == "falcon_h1" and a.raw.get("mamba_d_ssm") is not None:
            inner = a.int("mamba_d_ssm", minimum=1)
        else:
            inner = a.int("mamba_expand", 2, minimum=1) * a.hidden
        head_dim = inner // heads if a.raw.get("mamba_d_head") in (None, "auto") else a.int("mamba_d_head", minimum=1)
        if inner % heads or head_dim * heads != inner:  # transformers' validate_architecture refuses these too
            raise ModelConfigError(a.where, f"mamba heads x head dim must equal the Mamba width {inner} ({heads} heads)")
        return MambaDims(
            heads=heads,
            head_dim=head_dim,
            groups=a.int("mamba_n_groups", 1, minimum=1),
            state=a.int("mamba_d_state", minimum=1),
            kernel=a.int("mamba_d_conv", 4, minimum=1),
            inner=inner,
        )
    heads, head_dim = a.int("mamba_num_heads", minimum=1), a.int("mamba_head_dim", minimum=1)
    return MambaDims(
        heads=heads,
        head_dim=head_dim,
        groups=a.int("n_groups", 1, minimum=1),
        state=a.int("ssm_state_size", minimum=1),
        kernel=a.int("conv_kernel", 4, minimum=1),
        inner=heads * head_dim,
    )


def _mamba(a: Arch) -> Block:
    """Mamba-2: in_proj (z, x, B, C, dt), conv1d, dt_bias, A_log, D, gated RMSNorm, out_proj.

    Biases and the norm by model type (transformers' mixers): Nemotron-H ``mamba_proj_bias`` on in_proj and
    out_proj; Granite 4 ``mamba_proj_bias`` on both; Falcon-H1 ``mamba_proj_bias`` on in_proj, ``projectors_bias``
    on out_proj, and the gated norm only with ``mamba_rms_norm``."""
    d, h = mamba_dims(a), a.hidden
    in_width = 2 * d.inner + 2 * d.groups * d.state + d.heads
    linear = h * in_width + d.inner * h
    falcon = a.model_type == "falcon_h1"
    other = d.conv_channels * d.kernel + 3 * d.heads + (d.inner if (not falcon or a.flag("mamba_rms_norm")) else 0)
    conv_bias = a.flag("mamba_conv_bias", True) if a.model_type in ("falcon_h1", "granitemoehybrid") else a.flag("use_conv_bias", True)
    if conv_bias:
        other += d.conv_channels
    if a.flag("mamba_proj_bias"):
        other += in_width + (0 if falcon else h)
    if falcon and a.flag("projectors_bias"):
        other += h
    return Block(linear, other)


def _mixer(a: Arch, mixer: str) -> Block:
    if mixer in ("full", "sliding", "chunked"):
        return _attention(a, mixer)
    if mixer in ("csa", "hca"):
        return _v4_attention(a, mixer)
    if mixer == "linear":
        return _linear_attention(a)
    if mixer == "mamba":
        return _mamba(a)
    return Block()


# ---------------------------------------------------------------------- MLPs


def _dense_mlp(a: Arch) -> Block:
    h = a.hidden
    if a.model_type == "falcon":
        bias = a.flag("bias")
        inter = a.intermediate
        return Block(linear=2 * h * inter, other=(inter + h) if bias else 0)
    if a.model_type == "nemotron_h":
        return _plain_mlp(h, a.intermediate)
    return _gated_mlp(h, a.intermediate, bias=a.flag("mlp_bias"))  # Granite 4's shared MLP: input_linear 2I + output


def _routed_expert_other(a: Arch) -> int:
    """Non-Linear parameters that belong to ONE routed expert (gpt-oss: the gate_up and down biases); a token touches
    only those of its top-k experts."""
    return 2 * a.expert_intermediate + a.hidden if a.model_type == "gpt_oss" else 0


def _moe_mlp(a: Arch) -> tuple[Block, int, int]:
    """(block, routed-expert linear params, routed-expert linear params active per token) of one MoE layer."""
    h, e, k, inter = a.hidden, a.num_experts, a.experts_per_token, a.expert_intermediate
    latent = a.int("moe_latent_size", 0) if a.model_type == "nemotron_h" else 0
    width = latent or h  # Nemotron 3 Super's latent MoE: experts work in a narrower space, projected in and out
    per_expert = (2 if a.model_type == "nemotron_h" else 3) * width * inter
    block = Block(linear=e * per_expert + 2 * h * latent, other=e * h)  # experts (+ latent projections) + router
    t = a.model_type
    if t == "gpt_oss":  # biases on gate_up and down of every expert; the router has a bias
        block = block + Block(other=e * _routed_expert_other(a) + e)
    elif t in ("qwen2_moe", "qwen3_next", "qwen3_5_moe_text") and a.shared_experts:
        # one shared MLP, scaled by a sigmoid gate (hidden -> 1)
        block = block + _gated_mlp(h, a.int("shared_expert_intermediate_size")) + Block(other=h)
    elif t == "llama4_text":
        block = block + _gated_mlp(h, a.int("intermediate_size"))
    elif t == "nemotron_h" and a.shared_experts:
        block = block + _plain_mlp(h, a.int("moe_shared_expert_intermediate_size"))
    elif t == "gemma4_text":  # a dense MLP beside the experts, a router scale per channel and per expert, 3 norms
        block = block + _gated_mlp(h, a.int("intermediate_size")) + Block(other=h + e + 3 * h)
    elif t == "granitemoehybrid":  # the shared MLP beside the experts
        block = block + _gated_mlp(h, a.int("shared_intermediate_size"))
    elif t == "deepseek_v4":  # one shared expert of moe_intermediate_size (DeepseekV4MLP), whatever n_shared_experts says
        block = block + _gated_mlp(h, inter)
    elif a.shared_experts:  # DeepSeek: n_shared_experts fused into one MLP
        block = block + _gated_mlp(h, inter * a.shared_experts)
    return block, e * per_expert, k * per_expert


def _norms_per_layer(a: Arch) -> int:
    h = a.hidden
    if a.model_type == "falcon":  # LayerNorm: weight + bias
        new = a.flag("new_decoder_architecture")
        n_ln = a.int("num_ln_in_parallel_attn", 2 if new else 1)
        count = 2 if not a.flag("parallel_attn", True) else (2 if n_ln == 2 else 1)
        return count * 2 * h
    if a.model_type == "nemotron_h":  # one pre-norm per block: each layer is a mixer OR an MLP
        return h
    if a.model_type == "deepseek_v4":  # two norms plus the attention and MLP hyper-connections
        return 2 * h + 2 * _v4_hyper_connections(a)
    return (4 if a.model_type in _FOUR_NORM_TYPES else 2) * h


def layer_linear(a: Arch) -> tuple[dict[str, int], int, int]:
    """(Linear parameters of one layer of each token-mixer kind, of one dense layer's MLP (0 without dense layers), of the
    always-on MLP beside the routed experts in one MoE layer (shared experts, Gemma 4's dense MLP; 0 without experts)):
    what a quantized export may keep unquantized per layer (model_facts/unconverted.py)."""
    kinds = a.mlp_counts()
    dense = _dense_mlp(a).linear if "dense" in kinds else 0
    beside = 0
    if "moe" in kinds:
        block, experts, _ = _moe_mlp(a)
        beside = block.linear - experts
    return {m: _mixer(a, m).linear for m in a.mixer_counts()}, dense, beside


def count_parameters(a: Arch) -> Counts:
    """Total, per-kind and active parameter counts of the model transformers builds from ``a``."""
    embedding = a.vocab * a.hidden
    lm_head = 0 if a.tied else a.vocab * a.hidden
    body = Block(other=a.layers * _norms_per_layer(a))
    for mixer, n in a.mixer_counts().items():
        body = body + _mixer(a, mixer) * n
    body = body + _indexer(a) * a.indexer_layers() if a.indexer_layers() else body
    expert = expert_active = idle_other = expert_other = 0
    for mlp, n in a.mlp_counts().items():
        if mlp == "dense":
            body = body + _dense_mlp(a) * n
        elif mlp == "moe":
            block, exp, exp_active = _moe_mlp(a)
            body = body + block * n
            expert += exp * n
            expert_active += exp_active * n
            idle_other += (a.num_experts - a.experts_per_token) * _routed_expert_other(a) * n  # biases of experts not routed to
            expert_other += a.num_experts * _routed_expert_other(a) * n
    final_norm = (2 * a.hidden) if a.model_type == "falcon" else a.hidden  # Falcon: LayerNorm with bias
    if a.model_type == "deepseek_v4":  # the hyper-connection head that collapses the hc_mult streams (hc_fn, hc_base, hc_scale)
        m = a.int("hc_mult", minimum=1)
        final_norm += m * m * a.hidden + m + 1
    other = body.other + final_norm
    breakdown = ParamBreakdown(
        embedding=embedding, lm_head=lm_head, linear=body.linear, other=other, expert_linear=expert, expert_other=expert_other
    )
    total = embedding + lm_head + body.linear + other
    active = total - expert + expert_active - idle_other
    # Tied embeddings: the one matrix is still multiplied as lm_head, so nothing is left out.
    return Counts(breakdown=breakdown, total=total, active=active, active_non_embedding=active - (0 if a.tied else embedding))
