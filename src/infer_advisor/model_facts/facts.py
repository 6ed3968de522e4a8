"""The typed result of the model-facts stage: what the rest of the pipeline may know about a model."""


from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ModelSource = Literal["local", "hub", "catalog"]
PreQuantization = Literal["awq", "gptq", "fp8", "compressed-tensors", "bitsandbytes", "mxfp4", "modelopt", "other"]


class ParamBreakdown(BaseModel):
    """Parameters by how quantizers treat them. ``embedding + lm_head + linear + other == total``."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    embedding: int = Field(description="Input token embedding parameters.")
    lm_head: int = Field(description="Output projection parameters; 0 when tied to the embedding.")
    linear: int = Field(
        description="Weights of the Linear layers inside the decoder blocks (attention, MLP, experts): "
        "what AWQ/GPTQ/int8/FP8 quantize."
    )
    other: int = Field(description="Norms, biases, routers and anything else kept in the original dtype.")
    expert_linear: int = Field(
        default=0, description="Part of `linear` in routed MoE experts (all experts, counted once)."
    )
    kept_linear: int = Field(
        default=0, description="Part of `linear` a pre-quantized checkpoint stores unquantized, in the model dtype (the "
        "decoder modules its quantization_config's modules_to_not_convert / ignore list names; model_facts/unconverted.py).",
    )
    fp8_linear: int = Field(
        default=0, description="Part of `linear` a ModelOpt MIXED_PRECISION checkpoint stores in FP8 (the token mixers its "
        "quantization_config quantized_layers marks quant_algo FP8; model_facts/unconverted.py).",
    )
    quantized_lm_head: bool = Field(
        default=False, description="The checkpoint stores lm_head in its own 4-bit format (MIXED_PRECISION quantized_layers "
        "lists lm_head as NVFP4 / W4A16_NVFP4; vLLM's ModelOptMixedPrecisionConfig quantizes ParallelLMHead).",
    )
    expert_other: int = Field(
        default=0, description="Part of `other` in routed MoE experts (gpt-oss: every expert's gate_up and down biases)."
    )


class SafetensorsSummary(BaseModel):
    """What the checkpoint's safetensors headers say, read without loading any tensor."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    num_tensors: int = Field(description="Tensors listed in the headers (all shards).")
    num_parameters: int = Field(
        description="Sum of tensor element counts in the headers (packed quantized tensors count as stored)."
    )
    bytes_by_dtype: dict[str, int] = Field(description="Bytes on disk per safetensors dtype (e.g. BF16, I32).")
    total_bytes: int = Field(description="Bytes of tensor data on disk, all shards (headers excluded).")
    num_files: int = Field(default=1, description="Safetensors files read.")


class ModelFacts(BaseModel):
    """Everything the estimate, rules and emit stages may use about a model.

    Built by :func:`infer_advisor.model_facts.resolve_model` from a local folder,
    the Hub, or the embedded catalog (``source`` says which).
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(
        description="The Hub id or local path as asked for; a catalog hit gives the canonical Hub id "
        "(alias 'llama-2-7b' -> 'meta-llama/Llama-2-7b-hf')."
    )
    source: ModelSource = Field(description="Which source answered: local, hub or catalog.")
    architecture: str = Field(description="config.json `architectures[0]`, e.g. LlamaForCausalLM.")
    model_type: str = Field(description="config.json `model_type`, e.g. llama.")
    family: Literal["dense", "moe"] = Field(default="dense", description="moe when the MLPs have routed experts.")
    attention: Literal["mha", "gqa", "mqa", "mla"] = Field(description="Attention layout.")
    num_parameters: int = Field(description="Total parameters, computed analytically from config.json.")
    num_active_parameters: int = Field(
        description="Parameters touched per token (MoE: only the routed experts), the input embedding included; "
        "see `num_active_parameters_without_embedding` for the count model cards give."
    )
    params: ParamBreakdown = Field(description="num_parameters split by how quantizers treat them.")
    num_layers: int = Field(description="Decoder layers (config num_hidden_layers; MTP layers not included).")
    hidden_size: int = Field(description="Model width (config hidden_size).")
    intermediate_size: int = Field(description="Dense MLP width (MoE: per-expert width).")
    num_attention_heads: int = Field(description="Query heads per layer.")
    num_kv_heads: int = Field(description="Key/value heads per layer as engines store them (Falcon-7B multi-query: 1).")
    head_dim: int = Field(description="Per-head dimension of q and k (MLA: qk_nope_head_dim + qk_rope_head_dim).")
    vocab_size: int = Field(description="Rows of the embedding matrix.")
    max_position_embeddings: int = Field(description="Longest context the model supports.")
    tie_word_embeddings: bool = Field(default=False, description="lm_head shares the embedding matrix.")
    num_experts: int = Field(default=0, description="Routed experts per MoE layer (0 for dense models).")
    num_experts_per_token: int = Field(default=0, description="Routed experts each token uses (top-k).")
    num_shared_experts: int = Field(default=0, description="Always-active shared experts per MoE layer (DeepSeek).")
    kv_cache_elements_per_token: int = Field(
        description="KV elements stored per token over the full-attention layers "
        "(2 x layers x kv_heads x head_dim; MLA: layers x (kv_lora_rank + rope dim)). Multiply by the KV dtype's bytes."
    )
    sliding_window: int | None = Field(default=None, description="Window of the sliding-attention layers.")
    sliding_kv_elements_per_token: int = Field(
        default=0, description="KV elements per token over sliding-window layers, held for at most `sliding_window` tokens."
    )
    uniform_sliding_window: bool = Field(
        default=False,
        description="Every layer uses the same `sliding_window` (Mistral-7B-v0.1, Phi-3-mini-4k). Those layers are "
        "counted in `kv_cache_elements_per_token` as full attention: an upper bound, since not every engine frees "
        "KV outside the window.",
    )
    multimodal: bool = Field(
        default=False,
        description="config.json wraps a language model in `text_config` (e.g. Gemma 3 27B); the counts describe "
        "the text decoder only, not the vision tower.",
    )
    torch_dtype: str = Field(default="bfloat16", description="The checkpoint's dtype from config.json.")
    pre_quantized: PreQuantization | None = Field(
        default=None, description="Quantization already applied to the checkpoint (config.json quantization_config)."
    )
    quantization_config: dict[str, Any] | None = Field(
        default=None, description="config.json quantization_config, verbatim, when the checkpoint is pre-quantized."
    )
    safetensors: SafetensorsSummary | None = Field(
        default=None, description="Header summary when a checkpoint was read (local or hub)."
    )
    # Added fields (append-only): hybrid and local-attention layers, recurrent state, native checkpoint format.
    layer_counts: dict[str, int] = Field(
        default_factory=dict,
        description="Decoder layers per token-mixer kind: full, sliding, chunked (attention), linear (gated DeltaNet), "
        "mamba (Mamba-2), none (MLP-only blocks of Nemotron-H).",
    )
    local_attention: Literal["sliding", "chunked"] | None = Field(
        default=None,
        description="How the local layers of `sliding_window` tokens attend: a sliding window, or Llama 4's chunked "
        "attention (each token sees its own chunk of `sliding_window` tokens).",
    )
    attention_sinks: bool = Field(
        default=False,
        description="Attention has a learned sink logit per head (gpt-oss): parameters only, no KV-cache entries.",
    )
    recurrent_state_conv_elements: int = Field(
        default=0,
        description="Per SEQUENCE (not per token): convolution state of the Mamba / linear-attention layers, "
        "(kernel - 1) x channels per layer, held in the model dtype.",
    )
    recurrent_state_ssm_elements: int = Field(
        default=0,
        description="Per SEQUENCE: SSM state (Mamba-2: heads x head_dim x state) or delta-rule state (gated DeltaNet: "
        "value heads x key dim x value dim) of those layers, held in `recurrent_state_dtype`.",
    )
    recurrent_state_dtype: str | None = Field(
        default=None, description="dtype of the SSM state when the config fixes it (e.g. float32); None: the model dtype."
    )
    weight_format: str | None = Field(
        default=None,
        description="The weight format (data/formats.yaml key) of a pre-quantized checkpoint, from quantization_config: "
        "e.g. fp8-block (DeepSeek FP8 with 128x128 block scales), mxfp4-experts (gpt-oss), nvfp4.",
    )
    num_active_parameters_without_embedding: int = Field(
        default=0,
        description="Parameters touched per token without the input embedding (a row lookup, no arithmetic), as model "
        "cards count them: gpt-oss-120b 5.13 B, gpt-oss-20b 3.61 B. lm_head counts (tied or not: it is a matmul).",
    )
    config: dict[str, Any] = Field(
        default_factory=dict,
        exclude=True,
        repr=False,
        description="The config.json the facts came from (not in the JSON dump).",
    )

    @property
    def params_billions(self) -> float:
        return self.num_parameters / 1e9

    def kv_cache_bytes_per_token(self, dtype_bytes: float) -> float:
        """KV-cache bytes per token over the full-attention layers for a KV dtype of ``dtype_bytes``."""
        return self.kv_cache_elements_per_token * dtype_bytes
