"""The flat fact table rules are evaluated against (names documented in docs/rules.md)."""

from __future__ import annotations

from typing import Any

from ..hardware.facts import HardwareFacts
from ..model_facts.facts import ModelFacts
from ..units import GIB

# Candidate facts start unknown (None) so a rule that reads them before they are decided never matches.
CANDIDATE_FACTS = ("engine", "dtype", "kv_cache_dtype", "quantization", "tp", "pp", "nodes", "gpus_used", "ep", "quant.group_size", "quant.bits")


def base_facts(model: ModelFacts, hw: HardwareFacts, request: Any, concurrency: int, context: int) -> dict[str, Any]:
    gpu = hw.gpu
    facts: dict[str, Any] = {
        "model.name": model.name,
        "model.source": model.source,
        "model.architecture": model.architecture,
        "model.model_type": model.model_type,
        "model.family": model.family,
        "model.is_moe": model.family == "moe",
        "model.attention": model.attention,
        "model.params_b": model.num_parameters / 1e9,
        "model.active_params_b": model.num_active_parameters / 1e9,
        "model.num_layers": model.num_layers,
        "model.hidden_size": model.hidden_size,
        "model.intermediate_size": model.intermediate_size,
        "model.num_attention_heads": model.num_attention_heads,
        "model.num_kv_heads": model.num_kv_heads,
        "model.num_experts": model.num_experts,
        "model.max_position_embeddings": model.max_position_embeddings,
        "model.pre_quantized": model.pre_quantized,
        "model.weight_format": model.weight_format,
        "model.torch_dtype": model.torch_dtype,
        "hardware.kind": hw.kind,
        "hardware.gpus_per_node": hw.gpus_per_node,
        "hardware.nodes": hw.nodes,
        "hardware.total_gpus": hw.total_gpus,
        "gpu.name": gpu.name if gpu else None,
        "gpu.vendor": gpu.vendor if gpu else None,
        "gpu.compute_capability": gpu.compute_capability if gpu else 0.0,
        "gpu.memory_gib": gpu.memory_bytes / GIB if gpu else 0.0,
        "gpu.interconnect": gpu.interconnect if gpu else None,
        "gpu.has_fp8_compute": bool(gpu and gpu.tflops.get("fp8")),
        "request.goal": request.goal,
        "request.engine": request.engine,
        "request.quantization": request.quantization,
        "request.dtype": request.dtype,
        "request.kv_cache_dtype": request.kv_cache_dtype,
        "request.concurrency": concurrency,
        "request.context": context,
        "request.serving": request.serving,
        "request.stack": request.stack,
        "request.shared_prefix_tokens": request.shared_prefix_tokens,
        "request.engine_version_major": _major(getattr(request, "engine_version", None)),
    }
    facts.update(dict.fromkeys(CANDIDATE_FACTS))
    return facts


def _major(version: str | None) -> int | None:
    """The major number of a requested engine version ('0.12.0' -> 0), for rules that differ by release line."""
    if not version:
        return None
    digits = version.strip().lstrip("vV").split(".")[0]
    return int(digits) if digits.isdigit() else None
