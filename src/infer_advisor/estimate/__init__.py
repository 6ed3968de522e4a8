"""The estimate stage: memory (and, from the performance model, speed) for one candidate layout.

Entry point: :func:`estimate_memory`. The rules and plan stages ask it; nothing else adds up bytes.
"""

from .memory import MemoryEstimate, estimate_memory, kv_bytes_per_token_per_gpu, weights_bytes

__all__ = ["MemoryEstimate", "estimate_memory", "kv_bytes_per_token_per_gpu", "weights_bytes"]
