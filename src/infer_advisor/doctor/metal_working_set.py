"""llama.cpp on Metal: buffers over the GPU's recommended working set (docfix20, retrospective: batch 17's sf329, sf330,
which the doctor did not read).

The lines are read by :mod:`..engines.llamacpp_buffers` (ggml-metal.m's ``recommendedMaxWorkingSetSize``, the 2023
``ggml_metal_add_buffer`` lines and the 2024 "Metal ... buffer size" lines). ``ggml_metal_add_buffer`` (2023) logs each
buffer with ``(allocated / working set)`` and warns "current allocated size is greater than the recommended max working
set size" but allocates it anyway; the first ``ggml_metal_graph_compute`` then finds its command buffer in
``MTLCommandBufferStatusError`` (status 5) and logs "command buffer %d failed with status %d" with the error's
description ("Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)"). Nothing is refused at
allocation; the buffers together must stay under the working set. Of the three the log prints (weights 'data' / "Metal
buffer size", KV 'kv' / "Metal KV buffer size", compute 'alloc' / "Metal compute buffer size"), the KV cache is the one a
setting shrinks in proportion (n_ctx cells), so the edit is the context that leaves weights + compute + KV under the
working set (the compute buffer is kept at its printed size, which only shrinks with the context).

    >>> round(metal_plan("recommendedMaxWorkingSetSize  = 10922.67 MiB")["working_set"] / 2**20, 2)
    10922.67
"""

from __future__ import annotations

import re

from .edits import Edit, undecided_edit
from ..engines.llamacpp_buffers import METAL_OVER_MAXIMUM, metal_buffers
from ..units import GIB, MIB

_FAILED = re.compile(r"command buffer \d+ failed with status 5|kIOGPUCommandBufferCallbackErrorOutOfMemory|error: Insufficient Memory")
_CTX_STEP = 1024
# llama.cpp of May-June 2023 (llama.cpp llama_init_from_file, under GGML_USE_METAL): ``if (params.n_gpu_layers > 0)`` the
# whole mmap'd file (``model.mapping->addr``, ``mapping->size``) is added as ONE Metal buffer "data", and
# ggml-metal.m ggml_metal_add_buffer refuses a buffer over device.maxBufferLength with this message; any -ngl >= 1 maps
# the same whole file, so only -ngl 0 (or a smaller file) avoids it (later builds split the mapping into views)
_WHOLE_FILE = re.compile(METAL_OVER_MAXIMUM + r" of (\d+)")
metal_plan = metal_buffers  # the working set and the Metal buffers the log prints (bytes; empty: no working-set line)


def metal_context_edit(text: str, n_ctx: int | None) -> Edit | None:
    """The context whose KV cache leaves the printed buffers under the working set (None: not this failure, or figures short)."""
    p = metal_plan(text)
    if not p or not _FAILED.search(text[:2_000_000]) or not p["kv"]:
        return None
    total = p["kv"] + p["weights"] + p["compute"]
    if total <= p["working_set"]:
        return None
    room = p["working_set"] - p["weights"] - p["compute"]
    shown = (f"weights {p['weights'] / MIB:,.0f} + KV {p['kv'] / MIB:,.0f} + compute {p['compute'] / MIB:,.0f} MiB = "
             f"{total / MIB:,.0f} MiB over the Metal working set {p['working_set'] / MIB:,.0f} MiB (ggml-metal.m "
             "recommendedMaxWorkingSetSize; status 5 is MTLCommandBufferStatusError)")
    if room <= 0:
        return undecided_edit("a smaller quantized GGUF, or fewer layers on the GPU (-ngl)", [], "another file or slower decode", 0.1,
                              f"{shown}: weights and compute alone fill it, no context helps")
    n_ctx = p.get("n_ctx") or n_ctx
    if n_ctx:
        bound = int(n_ctx * room / p["kv"])
        ctx = bound // _CTX_STEP * _CTX_STEP if p["weights"] else 1 << (bound.bit_length() - 1)
        unprinted = "" if p["weights"] else (f"; the weights' Metal buffer is not printed, so {bound:,} is only an upper bound "
                                             "and the power of two under it is taken")
        if ctx >= _CTX_STEP:
            return undecided_edit(f"--ctx-size {ctx}", ["--ctx-size", str(ctx)], "shorter context", 0.05,
                                  f"{shown}; the KV cache scales with n_ctx ({n_ctx:,} -> {ctx:,}){unprinted}", max_model_len=ctx)
    return undecided_edit(f"a smaller context (--ctx-size, or PARAMETER num_ctx under ollama): at most {room / p['kv']:.0%} of the "
                          "current one", [], "shorter context", 0.05, f"{shown}; the KV cache scales with the context, whose "
                          f"length the log does not print")


def _whole_file_edit(text: str) -> Edit | None:
    m = _WHOLE_FILE.search(text[:2_000_000])
    if not m:
        return None
    return undecided_edit("--n-gpu-layers 0", ["--n-gpu-layers", "0"],
                          "no Metal offload: CPU decode (slower); or a smaller GGUF under the buffer maximum", 0.05,
                          f"the 2023 Metal build maps the whole file as one buffer 'data' at any -ngl >= 1 (llama.cpp "
                          f"llama_init_from_file: n_gpu_layers > 0 adds model.mapping as one buffer): {int(m.group(1)) / GIB:,.2f} GiB "
                          f"over the Metal buffer maximum {int(m.group(2)) / GIB:,.2f} GiB, so fewer layers change nothing")


def metal_first(diag, text: str) -> None:
    """Put the working-set context edit first for a llama.cpp run whose Metal command buffer failed out of memory; for the
    2023 whole-file Metal buffer over its maximum, -ngl 0 replaces 'fewer layers' (docfix20, sf328)."""
    if any(e.starts for e in diag.edits):  # llama.cpp only (its passes, engine_passes)
        return
    if (whole := _whole_file_edit(text)) is not None:
        diag.edits = [whole] + [e for e in diag.edits if not e.change.startswith("fewer layers on the GPU")]
        return
    edit = metal_context_edit(text, diag.max_model_len)
    if edit is not None:
        diag.edits = [edit] + [e for e in diag.edits if e.change != edit.change]
        diag.notes.append("Metal's command buffer failed out of memory after buffers over the recommended working set: "
                          + edit.basis.split(": ", 1)[-1])
