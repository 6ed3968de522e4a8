"""An out-of-memory from ggml's CUDA/HIP runtime while it creates a stream (docfix21, retrospective: batch 18's sf337,
whose first edit was a vLLM flag on an ollama log).

ggml's CUDA backend (also built for HIP, where it prints "ROCm error") checks every runtime call with CUDA_CHECK, which
prints "<backend> error: <the runtime's string>" then "current device: N, in function F at FILE" (ggml-cuda.cu
``ggml_cuda_error``). F = ``stream`` is ``ggml_backend_cuda_context::stream`` (ggml-cuda/common.cuh), which lazily
creates a stream with ``cudaStreamCreateWithFlags(..., cudaStreamNonBlocking)``: no model, KV or compute buffer is
allocated there. Such a failure means the runtime had no memory for its own stream, either because the buffers
placed before it filled the card (fewer GPU layers or a smaller context leave room) or because the runtime/driver
fails on a card with room (another runtime build or another ggml backend, such as Vulkan, is the lever). Where the
text prints both the card's memory (the amdgpu kernel line "NM of VRAM memory ready") and the model's size (the
ollama CLI's list/ps row "NAME ID SIZE"), and the model is under half the card (data/doctor_flags.yaml
``rules_of_thumb.stream_room_share``, a rule of thumb), the runtime goes first; otherwise it
is added after the engine's own memory edits. Neither is decided by the log's figures.
"""

from __future__ import annotations

import re

from .edits import undecided_edit
from .engine_flags import rule_of_thumb

_STREAM_OOM = re.compile(r"(?:CUDA|ROCm|MUSA) error: out of memory\s*\n[^\n]{0,80}current device: \d+, in function stream\b")
_VRAM = re.compile(r"amdgpu: (\d+)M of VRAM memory ready")  # the amdgpu kernel driver's line (MiB)
_MODEL_ROW = re.compile(r"(?m)^\s*\S+:\S+\s+[0-9a-f]{12}\s+(\d+(?:\.\d+)?) GB\b")  # ollama list / ps: NAME ID SIZE (decimal GB)


def _room(text: str) -> tuple[float, float] | None:
    """(the model's bytes, the card's bytes) where the text prints both, else None."""
    vram, row = _VRAM.search(text), _MODEL_ROW.search(text)
    if not (vram and row):
        return None
    return float(row.group(1)) * 1e9, float(vram.group(1)) * 2**20


def runtime_stream_first(diag, text: str) -> None:
    """Add the runtime edit for a stream-creation OOM: first where the model is well under the card, else after the rest."""
    text = text[:2_000_000]
    if any(e.starts for e in diag.edits) or not _STREAM_OOM.search(text):
        return
    room = _room(text)
    sized = (f" (the model {room[0] / 1e9:,.1f} GB on a card of {room[1] / 2**30:,.1f} GiB, as the text prints them)" if room else "")
    edit = undecided_edit(
        "another GPU runtime or driver build, or another ggml backend (e.g. Vulkan)", [], "a different runtime or backend", 0.05,
        "ggml-cuda's CUDA_CHECK failed in ggml_backend_cuda_context::stream (ggml-cuda/common.cuh: cudaStreamCreateWithFlags), "
        f"which allocates no model, KV or compute buffer{sized}; a runtime that cannot create a stream on a card with room is "
        "the runtime, not a memory setting")
    first = room is not None and room[0] < rule_of_thumb("stream_room_share") * room[1]
    diag.edits = [edit, *diag.edits] if first else [*diag.edits, edit]
    diag.notes.append("The out-of-memory is ggml's runtime creating a stream (in function stream), not a buffer of the model: "
                      + ("the model is well under the card, so the runtime or backend goes first." if first else
                         "fewer GPU layers or a smaller context leave the runtime room where the card is full."))
