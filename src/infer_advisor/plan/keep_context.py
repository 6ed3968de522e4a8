"""An explicit --context is kept or refused, never cut (issue 22): the one-line refusal naming the smallest change.

Where the layout search found no layout for the asked context (tests/plan/test_context_kept.py runs such requests)::

    raise DoesNotFitError(context_refusal(model, hw, request, result, research))

The layout search (:mod:`infer_advisor.plan.layouts`) already tried every weight format and layout the rules allow and
the FP8 KV cache for one request of the asked context; when none holds it, the changes below are tried in order with the
search itself (``research(changed_request, hardware)``), and the first that keeps the context is named.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from ..errors import InferAdvisorError
from ..hardware.facts import HardwareFacts
from ..model_facts.facts import ModelFacts
from ..request import PlanRequest
from .decisions import hw_words


def context_is_the_limit(result) -> bool:
    """The best plan passed every rule and loads: only the KV cache for the asked context is missing."""
    best = result.best_effort
    return result.best_effort_allowed and best is not None and best.memory.kv_cache_tokens > 0


def context_refusal(model: ModelFacts, hw: HardwareFacts, request: PlanRequest, result, research: Callable) -> str:
    """One line: the smallest change that keeps ``request.context`` (FP8 weights, FP8 KV cache, twice the GPUs for
    tensor parallelism, in that order), else the longest context that fits as asked."""
    where = hw_words(hw)
    best = result.best_effort.memory if result.best_effort is not None else None
    longest = min(best.kv_cache_tokens, model.max_position_embeddings) if best is not None else 0
    changes: list[tuple[str, PlanRequest, HardwareFacts]] = []
    if request.quantization not in ("auto", "fp8") and not model.pre_quantized:
        changes.append(("--quantization fp8", request.model_copy(update={"quantization": "fp8"}), hw))
    if not request.kv_cache_dtype.startswith("fp8"):
        changes.append(("--kv-cache-dtype fp8", request.model_copy(update={"kv_cache_dtype": "fp8"}), hw))
    if hw.kind == "gpu" and not request.tensor_parallel_size:
        from ..hardware import resolve_hardware

        spec = f"{hw.gpu.name}:{hw.gpus_per_node * 2}" + (f"x{hw.nodes}" if hw.nodes > 1 else "")
        with contextlib.suppress(InferAdvisorError):
            changes.append((f"--gpu {spec} (tensor parallel over twice the GPUs)", request, resolve_hardware(spec)))
    for flag, changed, where_to in changes:
        with contextlib.suppress(InferAdvisorError):
            if research(changed, where_to).choice is not None:
                tail = f", or --context {longest:,} or less as asked" if longest else ""
                return f"--context {request.context:,} does not fit on {where} as asked; the smallest change that keeps it: {flag}{tail}."
    lower = f"--context {longest:,} or less" if longest else "a GPU with more memory"
    return f"--context {request.context:,} does not fit on {where} with FP8 weights, an FP8 KV cache or twice the GPUs; use {lower}."
