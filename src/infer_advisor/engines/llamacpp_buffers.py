"""llama.cpp's buffer lines, every backend: the one reader of the memory its log says it allocated (the weights, the KV
cache, the compute buffers, and Metal's working set). Every pattern is llama.cpp's own format string, read from its source:

- the buffer of one buffer type (``CUDA0``, ``ROCm0``, ``Metal``, ``CPU``, ...): ``"%s: %10s model buffer size = %8.2f
  MiB"`` (load_tensors, 2024-10+; the older llm_load_tensors: ``"%s: %10s buffer size = %8.2f MiB"``), ``"%s: %10s KV
  buffer size = %8.2f MiB"`` (llama_kv_cache, the KV buffer per device), ``"%s: %10s compute buffer size = %8.2f MiB"``
  (llama_context); :func:`size_line` spells them for a buffer type.
- the KV cache as a whole: llama_kv_cache's ``"%s: size = %7.2f MiB (%6u cells, %3d layers, %2u/%u seqs), K (%s): %7.2f
  MiB, V (%s): %7.2f MiB"`` (:data:`KV_LINE`) and the older llama_new_context_with_model's ``"KV self size = %7.2f MiB, K
  (%s): ..."`` (:data:`KV_SELF_LINE`); the context, ``n_ctx = %u``, is the cells the KV buffer holds.
- ggml-metal.m: ``ggml_metal_init`` logs ``recommendedMaxWorkingSetSize = %8.2f MB`` (MiB in the 2023 builds:
  ``device.recommendedMaxWorkingSetSize / 1024.0 / 1024.0``; decimal MB in the 2024 builds' ``/ 1e6``);
  ``ggml_metal_add_buffer`` (2023) logs ``allocated '%-16s' buffer, size = %8.2f MiB`` for the weights ('data'), the KV
  cache ('kv') and the compute graph ('alloc'), and refuses a buffer over ``device.maxBufferLength`` with ``buffer '%s' size
  %zu is larger than buffer maximum of %zu`` (:data:`METAL_OVER_MAXIMUM`); the 2024 builds print ``Metal buffer size``,
  ``Metal KV buffer size`` and ``Metal compute buffer size``.

A buffer of "0.00 MiB" on a CUDA device is the fitting dry run's (common_fit_params, no_alloc), not the weights.

The buffer type's name is ggml's (``ggml_backend_buffer_name`` / ``ggml_backend_buft_name``, printed with ``%10s`` or
``%12s``): a GPU's own memory is ``CUDA0``, ``ROCm0`` or ``MUSA0`` (ggml-org/llama.cpp ggml/include/ggml-cuda.h:
``#ifdef GGML_USE_HIP #define GGML_CUDA_NAME "ROCm" ... #elif defined(GGML_USE_MUSA) #define GGML_CUDA_NAME "MUSA" ...
#else #define GGML_CUDA_NAME "CUDA"``; ggml-cuda.cu's buffer type ``GGML_CUDA_NAME + std::to_string(i)``), ``Vulkan0``
(ggml-vulkan.cpp ``GGML_VK_NAME + std::to_string(idx)``), ``SYCL0``, ``CANN0``, and Metal's ``MTL0`` (``Metal`` in the
older builds); host memory is ``CPU``, ``CPU_Mapped``, ``CPU_REPACK`` and each GPU backend's pinned host buffers
(ggml-cuda.cu ``ggml_backend_cuda_host_buffer_type_name``: ``return GGML_CUDA_NAME "_Host";``, so ``CUDA_Host``,
``ROCm_Host``; ``Vulkan_Host``), which are not a GPU's memory and are not counted (:data:`DEVICE`).

    >>> round(metal_buffers("recommendedMaxWorkingSetSize  = 10922.67 MiB")["working_set"] / 2**20, 2)
    10922.67
"""

from __future__ import annotations

import re

from .startup_log_record import LINE_CHARS
from ..units import GB, MIB

_FIGURE = r"\s*=\s*([\d.]+) MiB"
# a GPU device's buffer type (above); "_Host", "CPU", "CPU_Mapped" and "CPU_REPACK" are host memory and do not match
DEVICE = r"(?:CUDA|ROCm|MUSA|Vulkan|SYCL|CANN|MTL)\d+|Metal"
DEVICE_0 = r"(?:CUDA|ROCm|MUSA|Vulkan|SYCL|CANN|MTL)0|Metal"  # the first device (Metal has one)
_KV_HEAD = r"llama_kv_cache\w{0,40}: size ="
_KV_SELF_HEAD = "KV self size"
# llama_kv_cache's line with n_seq_max/n_stream: the H200 build prints each stream's cells without --kv-unified
# (d-ctx-1.05M-4streams: "262656 cells, 4/4 seqs", 131,328 MiB, n_ctx 1050624; its -fixed log "63488 cells, 4/4 seqs" at
# -c 253696), so cells below the log's n_ctx are per stream.
KV_LINE = _KV_HEAD + r"\s+([\d.]+) MiB \(\s*(\d+) cells,\s+(\d+) layers,\s+(\d+)(?:/(\d+))? seqs\), K \((\w+)\)"
KV_SELF_LINE = _KV_SELF_HEAD + r"\s+=\s+([\d.]+) MiB, K \((\w+)\)"  # llama_new_context_with_model (older builds)
CONTEXT_LINE = r"n_ctx\s+=\s+(\d+)"  # llama_context / llama_new_context_with_model: the cells of the KV cache
N_CTX = re.compile(r"\bn_ctx\s*=\s*(\d{3,8})\b")  # the same line searched in a whole pasted text (any runner)
# llama.cpp allocates the weights, then the KV cache, then the output and compute buffers (llama_init_from_model): any of
# these lines, on any backend, says the KV cache was allocated
KV_ALLOCATED = re.compile(f"KV buffer size =|{_KV_SELF_HEAD}|{_KV_HEAD}")
# docfix23 (sf347): llama_context::sched_reserve prints "reserving ..." before it sizes the compute buffers (then
# "sched_reserve: CUDA0 compute buffer size = ..."), after the KV cache: a failure after it is a compute buffer's
COMPUTE_RESERVING = re.compile(r"\bsched_reserve: reserving\b")
# llama.cpp of May-June 2023 adds the whole mmap'd file as ONE Metal buffer "data" (llama_init_from_file, under
# GGML_USE_METAL); ggml_metal_add_buffer refuses it over device.maxBufferLength with this line (size, then the maximum)
METAL_OVER_MAXIMUM = r"buffer 'data' size (\d+) is larger than buffer maximum"
_WORKING_SET = re.compile(r"recommendedMaxWorkingSetSize\s*=\s*([\d.]+) (MB|MiB)")
_METAL_2023 = {"weights": "data", "kv": "kv", "compute": "alloc"}  # ggml_metal_add_buffer's names
_METAL_2024 = {"weights": "", "kv": "KV ", "compute": "compute "}  # the words before "buffer size"


def size_line(device: str, words: str = "") -> str:
    """The pattern of ``"%s: %10s <words>buffer size = %8.2f MiB"`` for buffer type ``device`` (a regex: :data:`DEVICE`,
    ``Metal``), its figure in MiB the one group."""
    return rf"(?<![\w])(?:{device}) {words}buffer size{_FIGURE}"


def mib_bytes(figures) -> float:
    """Bytes of the MiB figures (strings or numbers) the lines printed, together."""
    return sum(float(f) for f in figures) * MIB


def kv_line_figures(m, find) -> tuple[int, int, int, str]:
    """(bytes, cells of all streams, sequences, K type) from a match of KV_LINE; ``find`` searches the same log's lines."""
    cells, streams = int(m.group(2)), int(m.group(5) or 1)
    n_ctx, _ = find.first(CONTEXT_LINE)
    if streams > 1 and n_ctx is not None and cells < int(n_ctx.group(1)) <= cells * streams:
        cells *= streams
    return int(round(mib_bytes([m.group(1)]))), cells, int(m.group(4)), m.group(6)


def read_device_buffers(r) -> None:
    """Fill the weights, KV cache and compute figures of ``r.log`` (a ``LogReader``) from the GPU buffer lines (any
    backend's device, :data:`DEVICE`; host buffers left out) and the KV cache's own line: the weights summed over
    devices, the largest compute buffer, device 0's KV buffer (over the older builds' "KV self size", which it replaces)."""
    log, lines = r.log, r.log.lines
    found = [(m, line) for m, line in r.find.matches(size_line(DEVICE, "(?:model )?"), anchor=" buffer size =")
             if float(m.group(1)) > 0]  # 0.00 MiB: the dry run of common_fit_params (no_alloc), not the weights
    if found:
        log.weights_bytes = int(round(mib_bytes(m.group(1) for m, _ in found)))
        lines["weights_bytes"] = found[0][1][:LINE_CHARS]
    m, line = r.find.first(KV_LINE)
    if m:
        log.kv_cache_bytes, log.kv_cache_tokens, log.max_num_seqs, log.kv_cache_dtype = kv_line_figures(m, r.find)
        lines["kv_cache_bytes"] = lines["kv_cache_tokens"] = line[:LINE_CHARS]
    m, line = r.find.first(KV_SELF_LINE)
    if m and log.kv_cache_bytes is None:
        log.kv_cache_bytes, log.kv_cache_dtype = int(round(mib_bytes([m.group(1)]))), m.group(2)
        lines["kv_cache_bytes"] = line[:LINE_CHARS]
    found = list(r.find.matches(size_line(DEVICE, "compute "), anchor=" compute buffer size ="))
    if found:
        log.activation_bytes = int(round(max(mib_bytes([m.group(1)]) for m, _ in found)))
        lines["activation_bytes"] = found[0][1][:LINE_CHARS]
    found = list(r.find.matches(size_line(DEVICE_0, "KV "), anchor=" KV buffer size"))
    if found and (log.kv_cache_bytes is None or _KV_SELF_HEAD in lines.get("kv_cache_bytes", "")):  # device 0's share wins
        log.kv_cache_bytes = int(round(mib_bytes([found[0][0].group(1)])))
        lines["kv_cache_bytes"] = found[0][1][:LINE_CHARS]


def metal_buffers(text: str) -> dict:
    """The Metal working set and the Metal buffers the log prints, each summed (bytes), and its last n_ctx; empty: no
    working-set line."""
    text = text[:2_000_000]
    m = _WORKING_SET.search(text)
    if not m:
        return {}
    out = {"working_set": float(m.group(1)) * (GB / 1000 if m.group(2) == "MB" else MIB)}
    for kind in ("kv", "weights", "compute"):
        pattern = f"{size_line('Metal', _METAL_2024[kind])}|allocated '{_METAL_2023[kind]}\\s*' buffer, size{_FIGURE}"
        out[kind] = mib_bytes(a or b for a, b in re.findall(pattern, text))
    if ctx := N_CTX.findall(text):
        out["n_ctx"] = int(ctx[-1])
    return out
