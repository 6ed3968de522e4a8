"""llama.cpp's buffer lines are read in one module (engines/llamacpp_buffers.py) for every backend: each caller's figures
from it, and no other module with a pattern of its own for them."""

import re
from pathlib import Path

from infer_advisor.engines.llamacpp_buffers import KV_ALLOCATED, METAL_OVER_MAXIMUM, metal_buffers
from infer_advisor.engines.startup_log import parse_startup_log

ROOT = Path(__file__).resolve().parents[2]
MiB = 2**20
# the pieces of a buffer-line pattern (as written in a regex's source): any of them outside the reader is a second reader
_PATTERN_PIECES = ("buffer size =\\s", "buffer size\\s", "recommendedMaxWorkingSetSize\\s", "' buffer, size", "KV self size\\s",
                   "llama_kv_cache\\w", "llama_kv_cache(?:", "n_ctx\\s*=\\s*(", "n_ctx\\s+=\\s+(\\d+)\"", "is larger than buffer maximum")


def test_no_other_module_reads_the_buffer_lines():
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py"), *(ROOT / "benchmarks" / "gpu").glob("*.py")]
    found = [f"{p.relative_to(ROOT)}: {piece}" for p in files if p.name != "llamacpp_buffers.py"
             for piece in _PATTERN_PIECES if piece in p.read_text()]
    assert not found


def test_cuda_lines_fill_the_startup_log():
    log = parse_startup_log(
        "load_tensors:        CUDA0 model buffer size = 14315.02 MiB\nload_tensors:        CUDA1 model buffer size =  1000.00 MiB\n"
        "llama_context: n_ctx         = 8192\n"
        "llama_kv_cache:      CUDA0 KV buffer size =  1024.00 MiB\n"
        "llama_kv_cache: size = 1024.00 MiB (  8192 cells,  32 layers,  1/1 seqs), K (f16):  512.00 MiB, V (f16):  512.00 MiB\n"
        "sched_reserve:      CUDA0 compute buffer size =   116.01 MiB\nsched_reserve:      CUDA1 compute buffer size =   200.50 MiB\n")
    assert log.weights_bytes == round(15315.02 * MiB) and log.kv_cache_bytes == 1024 * MiB and log.kv_cache_tokens == 8192
    assert log.activation_bytes == round(200.50 * MiB) and log.kv_cache_dtype == "f16"


def test_metal_2023_and_2024_lines():
    old = ("ggml_metal_init: recommendedMaxWorkingSetSize  = 10922.67 MiB\n"  # sf330's lines (ollama of December 2023)
           "ggml_metal_add_buffer: allocated 'data            ' buffer, size =  3648.58 MiB, ( 3649.20 / 10922.67)\n"
           "ggml_metal_add_buffer: allocated 'kv              ' buffer, size =  8192.00 MiB, offs =            0\n"
           "ggml_metal_add_buffer: allocated 'kv              ' buffer, size =     0.03 MiB, offs =   8589918208\n"
           "ggml_metal_add_buffer: allocated 'alloc           ' buffer, size =  1080.02 MiB, (12921.25 / 10922.67)\n")
    p = metal_buffers(old)
    assert (p["weights"], p["kv"], p["compute"]) == (3648.58 * MiB, 8192.03 * MiB, 1080.02 * MiB) and "n_ctx" not in p
    new = ("ggml_metal_init: recommendedMaxWorkingSetSize  = 22906.50 MB\nllm_load_tensors:      Metal buffer size =  16384.00 MiB\n"
           "llama_new_context_with_model: n_ctx      = 4096\nllama_kv_cache_init:      Metal KV buffer size =   512.00 MiB\n"
           "llama_new_context_with_model:      Metal compute buffer size =   319.22 MiB\n")
    p = metal_buffers(new)
    assert p == {"working_set": 22906.5e6, "kv": 512 * MiB, "weights": 16384 * MiB, "compute": 319.22 * MiB, "n_ctx": 4096}
    assert metal_buffers("llm_load_tensors:      Metal buffer size =  16384.00 MiB") == {}  # no working set: nothing


def test_kv_allocated_on_any_backend_and_the_metal_refusal():
    assert all(KV_ALLOCATED.search(line) for line in ("llama_kv_cache:      ROCm0 KV buffer size =  1024.00 MiB",
                                                      "llama_new_context_with_model: KV self size  =  256.00 MiB, K (f16)",
                                                      "llama_kv_cache_unified: size = 6564.00 MiB ( 70016 cells"))
    assert not KV_ALLOCATED.search("load_tensors:        CUDA0 model buffer size = 14315.02 MiB")
    m = re.search(METAL_OVER_MAXIMUM, "ggml_metal_add_buffer: buffer 'data' size 39280181248 is larger than buffer maximum of 17179869184")
    assert m and m.group(1) == "39280181248"


def test_every_gpu_backends_buffers_and_no_host_buffer():
    """tidy10 (session 10): a GPU's buffers by ggml's own buffer-type names (CUDA0, ROCm0, MUSA0, Vulkan0, SYCL0, CANN0, MTL0,
    Metal), host buffers (CPU, CPU_Mapped, CUDA_Host, ROCm_Host, Vulkan_Host) never counted as the GPU's."""
    log = parse_startup_log(
        "load_tensors:   CPU_Mapped model buffer size =   292.36 MiB\nload_tensors:        ROCm0 model buffer size =  7000.00 MiB\n"
        "load_tensors:        ROCm1 model buffer size =  1000.00 MiB\nload_tensors:    ROCm_Host model buffer size =   500.00 MiB\n"
        "llama_kv_cache:  ROCm_Host KV buffer size =   152.00 MiB\nllama_kv_cache:      ROCm0 KV buffer size =   488.00 MiB\n"
        "sched_reserve:    ROCm_Host compute buffer size =  900.00 MiB\nsched_reserve:      ROCm0 compute buffer size =   300.00 MiB\n")
    assert log.weights_bytes == 8000 * MiB and log.kv_cache_bytes == 488 * MiB and log.activation_bytes == 300 * MiB
    for device in ("MUSA0", "Vulkan0", "SYCL0", "CANN0", "MTL0"):
        log = parse_startup_log(f"load_tensors: {device:>12} model buffer size =  4096.00 MiB\n"
                                f"llama_context: {device:>10} compute buffer size =   64.00 MiB\n", require_kv=False)
        assert (log.weights_bytes, log.activation_bytes) == (4096 * MiB, 64 * MiB), device


def test_recorded_vulkan_logs():
    """Recorded logs (benchmarks/published/startup_failures.yaml): sf161's Strix Halo prints its KV cache only as
    'Vulkan0 KV buffer size = 6564.00 MiB' (its size line's "1/ 1 seqs" is not KV_LINE's), beside 'Vulkan_Host output
    buffer'; sf340's working run prints 'Vulkan0 compute buffer size = 1174.00 MiB'."""
    from benchmarks.published.startup_failures import load_failures

    failures = {f.id: f for f in load_failures().failures}
    log = parse_startup_log(failures["sf161"].log, require_kv=False)
    assert log.engine == "llama.cpp" and log.kv_cache_bytes == 6564 * MiB and log.weights_bytes is None
    log = parse_startup_log(failures["sf340"].log, require_kv=False)
    assert log.kv_cache_bytes == 13800 * MiB and log.activation_bytes == 1174 * MiB
