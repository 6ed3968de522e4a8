"""How large vLLM's CUDA-graph pool is: the batch sizes it captures and the bytes that grow with them.

    >>> from infer_advisor.engines.memory import memory_profile
    >>> scaling = memory_profile("vllm", "0.19.0").cuda_graph_scaling
    >>> len(capture_sizes(1024, 0, 8192, scaling.max_capture_size)), capture_sizes(1024, 0, 8192, 512)[-3:]
    (51, [480, 496, 512])
    >>> scaling.pool_bytes(layers_per_stage=32, max_num_seqs=1024, num_speculative_tokens=0, max_num_batched_tokens=8192)
    948528187

vLLM V1 (read in 0.19.0, 0.20.1 and 0.24.0: ``VllmConfig._set_cudagraph_sizes``) captures ``[1, 2, 4]``, multiples of 8
below 256 and multiples of 16 from 256, up to ``min(max_num_seqs x (1 + num_speculative_tokens) x 2, 512,
max_num_batched_tokens)``; 0.20's ``profile_cudagraph_memory`` prices the pool as the first (largest) capture plus one
increment per further size and mode, and with piecewise graphs each size captures a graph per layer. So the pool is
``first_capture_bytes + per_layer_per_size_bytes x layers on the GPU x (sizes - 1)``; the two figures and their fit
are in ``data/engine_memory.yaml`` (``cuda_graph_scaling``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


def capture_sizes(max_num_seqs: int, num_speculative_tokens: int, max_num_batched_tokens: int, limit: int) -> list[int]:
    """The batch sizes vLLM captures by default (``_set_cudagraph_sizes``, 0.19-0.24)."""
    top = min(max_num_seqs * (1 + num_speculative_tokens) * 2, limit, max_num_batched_tokens)
    sizes = [s for s in [1, 2, 4, *range(8, 256, 8), *range(256, limit + 1, 16)] if s <= top]
    if max_num_batched_tokens <= top and max_num_batched_tokens not in sizes:  # appended when it fits (0.20)
        sizes.append(max_num_batched_tokens)
    return sizes


class CudaGraphScaling(BaseModel):
    """The CUDA-graph pool as a function of the captured sizes and the layers on one GPU."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    first_capture_bytes: int = Field(ge=0, description="The first (largest) capture: buffers and graph memory independent of the size count.")
    per_layer_per_size_bytes: int = Field(ge=0, description="Each further captured size adds this much per decoder layer (FULL and PIECEWISE together).")
    max_capture_size: int = Field(gt=0, description="vLLM's default ceiling of the captured sizes.")
    source: str = Field(min_length=8)

    def pool_bytes(self, *, layers_per_stage: int, max_num_seqs: int, num_speculative_tokens: int, max_num_batched_tokens: int) -> int:
        n = len(capture_sizes(max_num_seqs, num_speculative_tokens, max_num_batched_tokens, self.max_capture_size))
        if n == 0:
            return 0
        return int(self.first_capture_bytes + self.per_layer_per_size_bytes * layers_per_stage * (n - 1))
