"""What an engine's start-up log printed, as one typed record (``StartupLog``); the readers that fill it are
``startup_log_vllm`` and ``startup_log_other_engines``, the entry point ``startup_log.parse_startup_log``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..units import GIB, MIB

Engine = Literal["vllm", "sglang", "llama.cpp", "tgi"]
# The figures whose log line is kept in a calibration file (settings such as the model name are not quoted).
FIGURES = {
    "total_gpu_memory_bytes", "gpu_memory_utilization", "weights_bytes", "non_torch_bytes", "activation_bytes", "cuda_graph_bytes",
    "kv_cache_bytes", "kv_cache_tokens", "kv_blocks", "max_concurrency", "free_at_start_bytes", "free_after_load_bytes",
}
LINE_CHARS = 300
# Figures a single start-up prints one value of: a second, different value means two runs were concatenated.
ONE_VALUE = {"engine_version", "kv_cache_tokens", "kv_blocks", "gpu_name", "max_model_len"}


class StartupLog(BaseModel):
    """What one start-up log printed (per GPU where the engine prints per-GPU figures); None: not printed."""

    engine: Engine
    engine_version: str | None = None
    generation: Literal["V0", "V1"] | None = Field(default=None, description="vLLM engine generation the log's format shows.")
    model: str | None = None
    gpu_name: str | None = None
    tp: int | None = None
    pp: int | None = None
    max_model_len: int | None = None
    dtype: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    total_gpu_memory_bytes: int | None = None
    weights_bytes: int | None = None
    non_torch_bytes: int | None = None
    activation_bytes: int | None = None
    cuda_graph_bytes: int | None = None
    kv_cache_bytes: int | None = None
    kv_cache_tokens: int | None = None
    kv_blocks: int | None = None
    max_concurrency: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    free_at_start_bytes: int | None = Field(default=None, description="Free device memory before the weights loaded (SGLang, llama.cpp).")
    free_after_load_bytes: int | None = Field(default=None, description="Free device memory after the weights loaded (SGLang).")
    gpu_layers: int | None = Field(default=None, description="Layers offloaded to the GPU (llama.cpp 'offloaded N/M layers to GPU').")
    total_layers: int | None = Field(default=None, description="Layers of the model (llama.cpp 'offloaded N/M layers to GPU').")
    command: str | None = Field(default=None, description="The engine's command line or argument summary, as printed.")
    speculative_config: str | None = Field(default=None, description="vLLM's speculative config as the log's args print it (dict or JSON text).")
    prefix_caching: bool | None = Field(default=None, description="Prefix caching as the log's args set it; None: the engine's default.")
    language_model_only: bool | None = Field(default=None, description="vLLM's --language-model-only: a multimodal checkpoint's encoder not loaded.")
    enforce_eager: bool | None = Field(default=None, description="vLLM's enforce_eager as the log prints it (no CUDA graphs); None: not printed.")
    sampler: Literal["flashinfer", "pytorch"] | None = Field(
        default=None, description="vLLM's top-k/top-p sampler as its log names it (v1/sample/ops/topk_topp_sampler.py); None: not printed.")
    linear_kernel: Literal["machete", "marlin"] | None = Field(
        default=None, description="vLLM's mixed-precision linear kernel as its log names it ('Using MacheteLinearKernel for "
        "AWQMarlinLinearMethod', model_executor/kernels/linear/mixed_precision); None: not printed.")
    quantization_group_size: int | None = Field(
        default=None, description="Weights per quantization group as vLLM prints it for int4/int8 MoE experts ('Using Marlin "
        "backend for WNA16 MoE (group_size=N, num_bits=B)', fused_moe/oracle wna16 backend selection); None: not printed.")
    lines: dict[str, str] = Field(default_factory=dict, description="The log line each figure was read from.")
