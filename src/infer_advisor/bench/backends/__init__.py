"""Benchmark backends: how `bench` drives each engine (in process, or an OpenAI-compatible server). Engine facts
(images, flags, memory) live in `infer_advisor.engines`; these only run and time it. Each is imported only when
chosen (torch, ctranslate2, vllm, httpx are heavy)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..request import BenchRequest
    from .base import Engine


def load_engine(req: BenchRequest) -> Engine:
    """The engine for ``req.engine``, with its model loaded (or its server checked)."""
    if req.engine == "transformers":
        from .transformers_engine import TransformersEngine

        return TransformersEngine(req)
    if req.engine == "ctranslate2":
        from .ctranslate2_engine import CTranslate2Engine

        return CTranslate2Engine(req)
    if req.engine == "vllm":
        from .vllm_engine import VLLMEngine

        return VLLMEngine(req)
    if req.engine == "triton":
        from .triton_engine import TritonEngine

        return TritonEngine(req)
    from .openai_engine import OpenAIEngine

    return OpenAIEngine(req)
