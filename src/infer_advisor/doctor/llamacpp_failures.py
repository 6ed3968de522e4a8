"""llama.cpp's (ggml's) allocation failures in a start-up text: the backend's own message, the bytes it asked for and
which buffer failed (moved out of :mod:`.startup_errors` by tidy10, session 10; no rule changed).

    >>> m, figures = llamacpp_failure("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9216.00 MiB on device 0: "
    ...                               "cudaMalloc failed: out of memory | llama_kv_cache_init: failed to allocate buffer for kv cache")
    >>> figures["requested_bytes"] / 2**20, figures["device"], LLAMACPP_BUFFERS[int(figures["buffer"])]
    (9216.0, 0, 'kv')

- ggml-cuda ``ggml_backend_cuda_buffer_type_alloc_buffer``: "allocating {n} MiB on device {d}: cudaMalloc failed: out of
  memory", then llama.cpp's "failed to allocate buffer for kv cache" or "failed to allocate compute buffers";
- ggml-alloc's "failed to allocate {buffer type} buffer of size {bytes}" (CUDA0, ROCm0, Vulkan0, SYCL0, MUSA0, CANN0,
  Metal/MTL0), and the SYCL, Vulkan, Metal and CPU backends' own messages (below, each with its source);
- which buffer (0 the KV cache, 1 compute buffers, 2 the weights: ``LLAMACPP_BUFFERS``): the nearest line after the
  failure that names one, else llama.cpp's own order (weights, then KV cache, then compute buffers).

Every pattern is one ``re.search`` without nested repetition.
"""

from __future__ import annotations

import re

from .log_line import matched_line
from .startup_errors_llamacpp import llamacpp_extra
from ..engines.llamacpp_buffers import COMPUTE_RESERVING, KV_ALLOCATED, METAL_OVER_MAXIMUM
from ..units import MIB

# ggml-cuda ggml_backend_cuda_buffer_type_alloc_buffer, "... cudaMalloc failed: %s" (cudaGetErrorString); docfix23: cut inside it
_LLAMACPP = re.compile(r"allocating ([\d.]+) MiB on device (\d+): cudaMalloc failed: (?:out of memory|ou?t?[ \t]*$)", re.M)
# ggml's words without the "allocating N MiB" part (sf109: quoted in the thread's title, "CudaMalloc failed: out of memory")
_LLAMACPP_BARE = re.compile(r"cudaMalloc failed: out of memory", re.I)
# ggml-alloc.c's "failed to allocate %s buffer of size %zu" with the buffer type's name: CUDA0, ROCm0 (sf198), Vulkan0, SYCL0,
# MUSA0, CANN0, and Metal's "Metal"/"MTL0" (no device number in the older builds; docfix15)
_LLAMACPP_BUFFER = re.compile(r"failed to allocate (?:CUDA|SYCL|Vulkan|ROCm|MUSA|CANN|Metal|MTL)(\d*) buffer of size (\d+)")
# docfix13 (retrospective, batch 11's sf207, sf210-sf212, sf218): a failed allocation named without its size; the buffer
# by the message (2 the weights: llama_model_load's, or Metal's per-buffer maximum for the weights' 'data'; 1 compute)
# docfix15 (retrospective, batch 12's sf236): the builds of 2024 (llama.cpp llm_load_tensors: "if (buf == nullptr) { ...
# throw std::runtime_error("unable to allocate backend buffer"); }") name no backend; ollama prefixes "llama runner process
# has terminated: error loading model: " to it. Thrown while allocating the model's tensors: the weights' buffer
_LLAMACPP_NAMED = ((re.compile(r"unable to allocate (?:CUDA|ROCm|Metal|Vulkan|SYCL|MUSA|CANN|backend)\d{0,2} buffer|error loading model: failed to "
                               r"allocate buffer|" + METAL_OVER_MAXIMUM), 2),
                   (re.compile(r"failed to allocate compute (?:pp |tg )?buffers"), 1))
# ggml's CPU backend (ggml-backend.cpp ggml_backend_cpu_buffer_type_alloc_buffer): host RAM, not a GPU (sf159, sf160; docfix9)
_LLAMACPP_CPU = re.compile(r"ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size (\d+)")
# ggml's Vulkan backend (ggml-vulkan.cpp): "ggml_vulkan: Device memory allocation of size N failed." and, where one buffer
# passes the device's maxMemoryAllocationSize, "Requested buffer size exceeds device memory allocation limit" (sf161)
_LLAMACPP_VULKAN = re.compile(r"ggml_vulkan: Device memory allocation of size (\d+) failed")
# ggml-metal (ggml_metal_buffer_init / ggml_backend_metal_buffer_type_alloc_buffer / ggml_metal_buffer_map): GGML_LOG_ERROR(
# "%s: error: failed to allocate buffer, size = %8.2f MiB\n", __func__, size_aligned / 1024.0 / 1024.0) (docfix15)
_LLAMACPP_METAL = re.compile(r"ggml_(?:backend_)?metal_\w{0,40}: error: failed to allocate buffer, size =\s*(\d+(?:\.\d+)?) MiB")
# ggml-alloc.c's graph allocator (ggml_gallocr_reserve_n) allocates only a compute graph's buffers: its failure line is a
# compute buffer's, whatever backend printed it (docfix15)
_GALLOCR_LINE = re.compile(r"ggml_gallocr_reserve_n|ggml_gallocr_alloc_graph|compute buffer")
# ggml's SYCL backend (ggml-sycl.cpp ggml_backend_sycl_buffer_type_alloc_buffer): "can't malloc N Bytes memory on device";
# a paste cut inside that function's name is read only where it is the log's last line (sf134, docfix8: retrospective)
_LLAMACPP_SYCL = re.compile(r"ggml_backend_sycl_buffer_type_alloc_buffer: can't malloc (\d+) Bytes memory on device")
_LLAMACPP_SYCL_CUT = re.compile(r"ggml_backend_sycl_buffer_\w{0,40}\s*\Z")
_LLAMACPP_WHICH = (("kv", re.compile(r"failed to allocate buffer for kv cache|llama_kv_cache_init\(\) failed")),
                   ("compute", re.compile(r"failed to allocate compute buffers|compute buffer|ggml_gallocr_reserve_n: failed")),
                   ("weights", re.compile(r"failed to load model|error loading model|load_tensors|model buffer")))
LLAMACPP_BUFFERS = tuple(name for name, _ in _LLAMACPP_WHICH)

# llama.cpp allocates the weights, then the KV cache, then the output and compute buffers (llama_init_from_model): a failure
# after a KV line (llamacpp_buffers.KV_ALLOCATED, any backend) is a compute buffer's (sf133, sf134)


def _llamacpp_buffer(text: str, m: re.Match) -> dict[str, float]:
    """Which buffer failed: the nearest line after the failure that names one (a paste of several runs goes on; docfix8,
    sf131), else a compute buffer where the KV cache was already allocated before it; ``{}`` when neither says."""
    if _GALLOCR_LINE.search(matched_line(text, m)):
        return {"buffer": 1}
    after = text[m.end():]
    found = [(hit.start(), code) for code, (_, pattern) in enumerate(_LLAMACPP_WHICH) if (hit := pattern.search(after))]
    if found:
        return {"buffer": min(found)[1]}  # 0 KV cache, 1 compute buffers, 2 weights (LLAMACPP_BUFFERS)
    return {"buffer": 1} if KV_ALLOCATED.search(text, 0, m.start()) or COMPUTE_RESERVING.search(text, 0, m.start()) else {}


def llamacpp_failure(text: str) -> tuple[re.Match, dict[str, float]] | None:
    """(the match of the failure's line, its figures) for the first llama.cpp allocation failure in ``text``, else None:
    a sized failure (bytes, device, buffer, and what :func:`.startup_errors_llamacpp.llamacpp_extra` reads), a bare one
    (its buffer), or one named without its size (the weights' or compute buffers)."""
    m = (_LLAMACPP.search(text) or _LLAMACPP_SYCL.search(text) or _LLAMACPP_VULKAN.search(text) or _LLAMACPP_METAL.search(text)
         or _LLAMACPP_CPU.search(text))
    buf = _LLAMACPP_BUFFER.search(text)
    if m or buf:
        figures = ({"requested_bytes": float(m.group(1)) * MIB, "device": int(m.group(2))} if (m and m.re is _LLAMACPP)
                   else {"requested_bytes": float(buf.group(2)), "device": int(buf.group(1) or 0)} if buf
                   else {"requested_bytes": float(m.group(1)) * (MIB if m.re is _LLAMACPP_METAL else 1)})
        extra = llamacpp_extra(text, m, host=bool(m and m.re is _LLAMACPP_CPU), vulkan=bool(m and m.re is _LLAMACPP_VULKAN))
        return m or buf, figures | _llamacpp_buffer(text, m or buf) | extra
    m = _LLAMACPP_BARE.search(text) or _LLAMACPP_SYCL_CUT.search(text)
    if m:
        return m, _llamacpp_buffer(text, m)
    for pattern, code in _LLAMACPP_NAMED:
        if m := pattern.search(text):
            return m, {"buffer": code}
    return None


# docfix12 (retrospective, batch 10's sf172 and sf185): a bare out of memory in a llama.cpp text still shows which buffer
# ran out by llama.cpp's own order (weights, then KV cache, then compute): llama_model_load's failure is the weights'
# buffer (no KV is allocated yet); an out of memory after the KV lines is a compute buffer's. Neither is a KV shortfall.
_LLAMACPP_LOAD_FAILED = re.compile(r"llama_model_load: error loading model|unable to allocate backend buffer")


def llamacpp_phase(text: str) -> dict[str, float]:
    if _LLAMACPP_LOAD_FAILED.search(text):
        return {"buffer": 2}
    return {"buffer": 1} if KV_ALLOCATED.search(text) else {}
