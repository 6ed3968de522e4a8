"""Bytes of a speculative decoder on one GPU, from its shape (:mod:`infer_advisor.engines.draft_shape`): its weights,
its KV bytes per token, and the recurrent state speculative tokens add. Called by :mod:`.memory` only.

    >>> from infer_advisor import resolve_model
    >>> model = resolve_model("deepseek-ai/DeepSeek-V3", source="catalog")
    >>> from infer_advisor.engines.draft_shape import draft_shape, parse_speculative_config
    >>> shape = draft_shape(parse_speculative_config('{"method": "mtp", "num_speculative_tokens": 1}'), model)
    >>> draft_weight_bytes(shape, quantization="gptq", dtype="float16", group_size=128, tp=2) / 2**30   # GiB per GPU
    2.93...
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .formats import dtype_bytes
from .weights import linear_bytes_per_param

if TYPE_CHECKING:  # a shape is passed in only when the plan uses speculative decoding
    from ..engines.draft_shape import DraftShape


def draft_weight_bytes(shape: DraftShape | None, *, quantization: str, dtype: str, group_size: int | None, tp: int) -> float:
    """The draft's weights per GPU: MTP layers in the target's format, a separate draft in its own dtype; sharded
    weights split over ``tp``, replicated ones (DFlash's fc) whole on every rank."""
    if shape is None:
        return 0.0
    per_param = linear_bytes_per_param(quantization, dtype, group_size) if shape.in_target_format else dtype_bytes(shape.dtype)
    return shape.params_split * per_param / tp + shape.params_replicated * dtype_bytes(shape.dtype)


def draft_kv_bytes_per_token_per_layer(shape: DraftShape | None, kv_bytes: float, tp: int) -> float:
    """KV bytes one draft layer holds per token on one GPU (KV heads split over ``tp``, at least one per rank)."""
    if shape is None or not shape.kv_layers:
        return 0.0
    share = max(shape.kv_heads // tp, 1) / shape.kv_heads
    return shape.kv_elements_per_token_per_layer * kv_bytes * share


def state_with_speculation(state: float, conv_share: float, kernel: int, shape: DraftShape | None) -> float:
    """One sequence's recurrent state with speculative decoding: the convolution state keeps ``kernel - 1 +
    num_speculative_tokens`` rows instead of ``kernel - 1`` (``conv_share``: the conv part of ``state``)."""
    if shape is None or not state or kernel <= 1:
        return state
    return state + conv_share * shape.num_speculative_tokens / (kernel - 1)
