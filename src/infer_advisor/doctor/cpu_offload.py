"""A CUDA runtime OOM with weight offload to the CPU on (docfix20, retrospective: batch 17's sf321, where the first edit
lowered --mem-fraction-static and kept the --cpu-offload-gb 1 whose removal the reporter confirmed).

Read at SGLang 0.4.6 (python/sglang/srt/utils.py ``maybe_offload_to_cpu``, called by ``make_layers`` for every layer while
``--cpu-offload-gb`` bytes remain): each offloaded parameter is copied into a new ``torch.empty_strided(..., device="cpu",
pin_memory=is_pin_memory_available())``, i.e. page-locked host memory from the CUDA runtime (cudaHostAlloc), and every
forward copies the layer's state back with ``v.to(device, non_blocking=True)``. vLLM's ``--cpu-offload-gb``
(model_executor/models/utils.py, same function) does the same. A failure of those CUDA runtime calls is "CUDA error: out of
memory", not the caching allocator's "CUDA out of memory. Tried to allocate ..."; it is outside the static memory pool
that --mem-fraction-static sizes, so a smaller fraction does not reach it. The edit is the offload off (the weights then
must fit the GPU: a model small enough for it, as the logged setting's fraction leaves room for).
"""

from __future__ import annotations

import re

from .edits import Edit, undecided_edit

_OFFLOAD = re.compile(r"(?:--)?cpu[-_]offload[-_]gb[ =]+(\d+(?:\.\d+)?)")  # the flag, or a user's "cpu-offload-gb 1"
_RUNTIME_OOM = re.compile(r"CUDA error: out of memory")
_ALLOCATOR_OOM = re.compile(r"CUDA out of memory\. Tried to allocate")


def offload_edit(text: str) -> Edit | None:
    text = text[:2_000_000]
    on = [v for v in _OFFLOAD.findall(text) if float(v) > 0]  # a run with offload on (a quoted working run may show 0)
    if not on or not _RUNTIME_OOM.search(text) or _ALLOCATOR_OOM.search(text):
        return None
    return undecided_edit("--cpu-offload-gb 0", ["--cpu-offload-gb", "0"], "the weights all on the GPU (they must fit it)", 0.05,
                          f"--cpu-offload-gb {on[0]} pins the offloaded weights in page-locked host memory and copies them "
                          "back every forward (SGLang/vLLM maybe_offload_to_cpu); the CUDA runtime's 'out of memory' is outside "
                          "the pool --mem-fraction-static sizes")


def offload_first(diag, text: str) -> None:
    """Put --cpu-offload-gb 0 first for SGLang or vLLM where a CUDA runtime OOM came with weight offload on."""
    if diag.engine not in ("sglang", "vllm") or any(e.starts for e in diag.edits):
        return
    if (edit := offload_edit(text)) is not None:
        diag.edits = [edit] + [e for e in diag.edits if e.argv[:1] != ["--cpu-offload-gb"]]
