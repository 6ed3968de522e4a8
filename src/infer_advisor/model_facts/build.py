"""Turn a config.json dict into :class:`ModelFacts`: the single place that does so.

facts = facts_from_config("my-model", config, "local", safetensors=summary)
"""

from __future__ import annotations

import functools
from typing import Any

from ..errors import ModelConfigError
from .arch import read_arch
from .facts import ModelFacts, ModelSource, PreQuantization, SafetensorsSummary
from .kv_elements import kv_cache_elements, recurrent_state_elements
from .params import count_parameters, layer_linear
from .unconverted import fp8_mixer_linear, kept_linear, quantized_lm_head

# quantization_config.quant_method values -> ModelFacts.pre_quantized. Source: the quant_method strings
# transformers' quantizers register (transformers/utils/quantization_config.py, QuantizationMethod).
_QUANT_METHODS: dict[str, PreQuantization] = {
    "awq": "awq",
    "gptq": "gptq",
    "fp8": "fp8",
    "compressed-tensors": "compressed-tensors",
    "compressed_tensors": "compressed-tensors",
    "bitsandbytes": "bitsandbytes",
    "mxfp4": "mxfp4",
    "modelopt": "modelopt",
    "fbgemm_fp8": "fp8",  # Meta's Llama 3.1 FP8 releases: fp8 weights, one fp32 scale per output row
}
# safetensors dtype -> torch dtype name, for checkpoints whose config.json names no dtype.
_ST_DTYPES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}


def _pre_quantized(qc: Any) -> PreQuantization | None:
    if not isinstance(qc, dict) or not qc:
        return None
    method = str(qc.get("quant_method", "")).lower()
    if not method and (qc.get("load_in_4bit") or qc.get("load_in_8bit")):
        return "bitsandbytes"
    return _QUANT_METHODS.get(method, "other")


def weight_format_of(qc: Any) -> str | None:
    """The data/formats.yaml key a pre-quantized checkpoint's weights take, from its quantization_config.

    - ``fp8`` with ``weight_block_size`` (DeepSeek-V3/R1, Qwen3 FP8): fp8-block, one fp32 scale per 128x128 block;
      with ``expert_dtype`` fp4 (DeepSeek-V4): fp8-block-fp4-experts; with ``moe_quant_algo`` NVFP4
      (nvidia/DeepSeek-V4-*-NVFP4): fp8-block-nvfp4-experts.
    - ``fp8`` without: fp8 (per-tensor or per-channel scales).
    - ``mxfp4`` (gpt-oss): mxfp4-experts, only the routed experts are MXFP4 (modules_to_not_convert keeps
      attention, router, embeddings and lm_head in bf16).
    - ``modelopt`` with ``quant_algo`` NVFP4 (or MIXED_PRECISION, whose layers are mostly NVFP4): nvfp4; FP8: fp8.
    - awq, gptq, compressed-tensors: the group-quantized 4-bit formats.
    """
    if not isinstance(qc, dict) or not qc:
        return None
    method = str(qc.get("quant_method", "")).lower()
    if method == "fp8":
        if not qc.get("weight_block_size"):
            return "fp8"
        if str(qc.get("moe_quant_algo", "")).upper() == "NVFP4":
            return "fp8-block-nvfp4-experts"
        return "fp8-block-fp4-experts" if str(qc.get("expert_dtype", "")).lower() == "fp4" else "fp8-block"
    if method == "fbgemm_fp8":
        return "fp8"
    if method == "mxfp4":
        return "mxfp4-experts"
    if method == "modelopt":
        algo = str(qc.get("quant_algo", "")).upper()
        return "fp8" if algo == "FP8" else "nvfp4"
    return {"awq": "awq", "gptq": "gptq", "compressed-tensors": "compressed-tensors-w4a16",
            "compressed_tensors": "compressed-tensors-w4a16"}.get(method)


def _quantization_config(config: dict[str, Any]) -> dict[str, Any] | None:
    """config.json's quantization_config (a multimodal checkpoint's text_config's), None when absent or empty."""
    qc = config.get("quantization_config")
    if not isinstance(qc, dict) and isinstance(config.get("text_config"), dict):
        qc = config["text_config"].get("quantization_config")
    if isinstance(qc, dict) and config.get("expert_dtype") and "expert_dtype" not in qc:
        # DeepSeek-V4 names its experts' dtype beside quantization_config; transformers folds it in (configuration_deepseek_v4.py)
        qc = {**qc, "expert_dtype": config["expert_dtype"]}
    return qc if isinstance(qc, dict) and qc else None


def _dtype(config: dict[str, Any], safetensors: SafetensorsSummary | None) -> str:
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    for value in (config.get("torch_dtype"), config.get("dtype"), text.get("torch_dtype"), text.get("dtype")):
        if isinstance(value, str) and value:
            return value.removeprefix("torch.")
    if safetensors and safetensors.bytes_by_dtype:
        top = max(safetensors.bytes_by_dtype, key=lambda k: safetensors.bytes_by_dtype[k])
        if top in _ST_DTYPES:
            return _ST_DTYPES[top]
    return "bfloat16"


def facts_from_config(
    name: str,
    config: dict[str, Any],
    source: ModelSource,
    safetensors: SafetensorsSummary | None = None,
    *,
    where: str | None = None,
) -> ModelFacts:
    """Build the facts of model ``name`` from its config.json ``config`` (``where`` names the file in errors)."""
    where = where or f"{name}/config.json"
    arch = read_arch(config, where=where, name=name)
    try:
        counts = count_parameters(arch)
        kv = kv_cache_elements(arch)
        state = recurrent_state_elements(arch)
        head_dim, kv_heads = arch.head_dim, arch.kv_heads
        max_pos = arch.int("max_position_embeddings", 2048, minimum=1)
    except ModelConfigError:
        raise
    except (TypeError, ValueError, KeyError, ZeroDivisionError, OverflowError) as err:  # a field of the wrong type or missing
        detail = f"missing field {err}" if isinstance(err, KeyError) else str(err)
        raise ModelConfigError(where, f"cannot size this {arch.model_type} config: {detail}") from None
    if min(counts.total, head_dim, kv_heads, max_pos) <= 0 or min(counts.breakdown.linear, kv.full + kv.sliding) < 0:
        raise ModelConfigError(where, "config sizes must be positive (check heads, head_dim, layers and vocab_size)")
    if arch.is_mla:
        attention = "mla"
    elif kv_heads == 1:
        attention = "mqa"
    elif kv_heads == arch.heads:
        attention = "mha"
    else:
        attention = "gqa"
    qc = _quantization_config(config)
    params = counts.breakdown
    if qc:
        sizes = functools.cache(lambda: layer_linear(arch))
        params = params.model_copy(update={"kept_linear": kept_linear(arch, qc, sizes), "fp8_linear": fp8_mixer_linear(arch, qc, sizes),
                                           "quantized_lm_head": quantized_lm_head(qc) and params.lm_head > 0})
    return ModelFacts(
        name=name,
        source=source,
        architecture=arch.architecture,
        model_type=arch.model_type,
        family="moe" if arch.num_experts else "dense",
        attention=attention,
        num_parameters=counts.total,
        num_active_parameters=counts.active,
        num_active_parameters_without_embedding=counts.active_non_embedding,
        params=params,
        num_layers=arch.layers,
        hidden_size=arch.hidden,
        intermediate_size=arch.expert_intermediate if arch.num_experts else arch.intermediate,
        num_attention_heads=arch.heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=arch.vocab,
        max_position_embeddings=max_pos,
        tie_word_embeddings=arch.tied,
        num_experts=arch.num_experts,
        num_experts_per_token=arch.experts_per_token,
        num_shared_experts=arch.shared_experts,
        kv_cache_elements_per_token=kv.full,
        sliding_window=kv.window,
        sliding_kv_elements_per_token=kv.sliding,
        uniform_sliding_window=kv.uniform_window,
        multimodal=arch.multimodal,
        torch_dtype=_dtype(config, safetensors),
        pre_quantized=_pre_quantized(qc),
        quantization_config=qc,
        safetensors=safetensors,
        layer_counts=dict(arch.mixer_counts()),
        local_attention=kv.local_kind if kv.window else None,
        attention_sinks=arch.model_type == "gpt_oss",
        recurrent_state_conv_elements=state.conv,
        recurrent_state_ssm_elements=state.ssm,
        recurrent_state_dtype=state.ssm_dtype,
        weight_format=weight_format_of(qc),
        config=config,
    )
