"""llama.cpp on Metal: buffers over the GPU's recommended working set (docfix20, retrospective: batch 17's sf329, sf330,
which the doctor did not read).

Read at llama.cpp's ggml-metal.m: ``ggml_metal_init`` logs ``recommendedMaxWorkingSetSize = %8.2f MB`` (MiB in the 2023
builds: ``device.recommendedMaxWorkingSetSize / 1024.0 / 1024.0``; decimal MB in the 2024 builds' ``/ 1e6``);
``ggml_metal_add_buffer`` (2023) logs each buffer with ``(allocated / working set)`` and warns "current allocated size is
greater than the recommended max working set size" but allocates it anyway; the first ``ggml_metal_graph_compute`` then
finds its command buffer in ``MTLCommandBufferStatusError`` (status 5) and logs "command buffer %d failed with status %d"
with the error's description ("Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)"). Nothing is
refused at allocation; the buffers together must stay under the working set. Of the three the log prints (weights 'data'
/ "Metal buffer size", KV 'kv' / "Metal KV buffer size", compute 'alloc' / "Metal compute buffer size"), the KV cache is
the one a setting shrinks in proportion (n_ctx cells), so the edit is the context that leaves weights + compute + KV
under the working set (the compute buffer is kept at its printed size, which only shrinks with the context).

    >>> round(metal_plan("recommendedMaxWorkingSetSize  = 10922.67 MiB")["working_set"] / 2**20, 2)
    10922.67
"""

from __future__ import annotations

import re

from .edits import Edit, undecided_edit
from ..units import GB, GIB, MIB

_WORKING_SET = re.compile(r"recommendedMaxWorkingSetSize\s*=\s*([\d.]+) (MB|MiB)")
_FAILED = re.compile(r"command buffer \d+ failed with status 5|kIOGPUCommandBufferCallbackErrorOutOfMemory|error: Insufficient Memory")
_KV = re.compile(r"Metal KV buffer size\s*=\s*([\d.]+) MiB|allocated 'kv\s*' buffer, size =\s*([\d.]+) MiB")
_WEIGHTS = re.compile(r"Metal buffer size\s*=\s*([\d.]+) MiB|allocated 'data\s*' buffer, size =\s*([\d.]+) MiB")
_COMPUTE = re.compile(r"Metal compute buffer size\s*=\s*([\d.]+) MiB|allocated 'alloc\s*' buffer, size =\s*([\d.]+) MiB")
_N_CTX = re.compile(r"\bn_ctx\s*=\s*(\d{3,8})\b")
_CTX_STEP = 1024
# llama.cpp of May-June 2023 (llama.cpp llama_init_from_file, under GGML_USE_METAL): ``if (params.n_gpu_layers > 0)`` the
# whole mmap'd file (``model.mapping->addr``, ``mapping->size``) is added as ONE Metal buffer "data", and
# ggml-metal.m ggml_metal_add_buffer refuses a buffer over device.maxBufferLength with this message; any -ngl >= 1 maps
# the same whole file, so only -ngl 0 (or a smaller file) avoids it (later builds split the mapping into views)
_WHOLE_FILE = re.compile(r"buffer 'data' size (\d+) is larger than buffer maximum of (\d+)")


def _sum(pattern: re.Pattern, text: str) -> float:
    return sum(float(a or b) for a, b in pattern.findall(text)) * MIB


def metal_plan(text: str) -> dict:
    """The working set and the Metal buffers the log prints (bytes; empty: no working-set line)."""
    text = text[:2_000_000]
    m = _WORKING_SET.search(text)
    if not m:
        return {}
    out = {"working_set": float(m.group(1)) * (GB / 1000 if m.group(2) == "MB" else MIB),
           "kv": _sum(_KV, text), "weights": _sum(_WEIGHTS, text), "compute": _sum(_COMPUTE, text)}
    if ctx := _N_CTX.findall(text):
        out["n_ctx"] = int(ctx[-1])
    return out


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
    if diag.engine != "llama.cpp" or any(e.starts for e in diag.edits):
        return
    if (whole := _whole_file_edit(text)) is not None:
        diag.edits = [whole] + [e for e in diag.edits if not e.change.startswith("fewer layers on the GPU")]
        return
    edit = metal_context_edit(text, diag.max_model_len)
    if edit is not None:
        diag.edits = [edit] + [e for e in diag.edits if e.change != edit.change]
        diag.notes.append("Metal's command buffer failed out of memory after buffers over the recommended working set: "
                          + edit.basis.split(": ", 1)[-1])
