"""docfix9 (retrospective: written after the H200 set b trials and batch 9's first run): the lines of those logs."""

from __future__ import annotations

import gzip
from pathlib import Path

from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.doctor.llamacpp import LLAMACPP_FIT_MARGIN
from infer_advisor.doctor.startup_errors import find_startup_error
from infer_advisor.engines.startup_log import detect_engine

H200_B = Path(__file__).resolve().parents[2] / "benchmarks/results/h200/llamacpp-doctor-b-2026-12-04-call2"
MIB = 2**20


def _h200(trial: str) -> str:
    return gzip.decompress((H200_B / f"{trial}-first.log.gz").read_bytes()).decode()


def test_q8_kv_never_offered_where_the_run_had_it():
    text = _h200("b-held90-ctx-900k-q8kv")
    assert "K (q8_0): 26150.25 MiB, V (q8_0): 26150.25 MiB" in text
    diag = diagnose(text, gpu="H200")
    assert diag.edits and all("q8_0" not in e.change for e in diag.edits)
    assert diag.edits[0].change.startswith("--ctx-size")


def test_context_edit_keeps_llamacpp_fit_margin():
    """b-ctx-1.3M-8slots: --ctx-size 1235712 left ~100 MiB after KV and compute and failed at its first MUL_MAT."""
    text = _h200("b-ctx-1.3M-8slots")
    diag = diagnose(text, gpu="H200")
    first = diag.edits[0]
    assert first.change.startswith("--ctx-size") and first.starts
    cells = int(first.argv[1])
    # the log's own figures: 142,629 MiB free, 6,128.17 MiB model buffer, 1,272.76 MiB compute, 112 KiB of f16 KV a cell
    left = (142629 - 6128.17 - 1272.76) * MIB - cells * 135156.00 * MIB / 1235712
    assert left >= LLAMACPP_FIT_MARGIN
    assert cells < 1235712


def test_cpu_backend_kv_failure_read_sf159():
    text = ("llama_new_context_with_model: n_ctx      = 1048576\nllama_new_context_with_model: n_ubatch   = 512\n"
            "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 137438953504\n"
            "llama_kv_cache_init: failed to allocate buffer for kv cache\n"
            "llama_new_context_with_model: llama_kv_cache_init() failed for self-attention cache\n")
    error = find_startup_error(text)
    assert error.kind == "llamacpp_alloc_failed"
    assert error.figures["requested_bytes"] == 137438953504 and error.figures["host"] == 1.0 and error.figures["buffer"] == 0
    diag = diagnose(text, gpu="H200")  # a GPU named by mistake must not size a host buffer
    # docfix17 (retrospective): llama.cpp's own default context (PR #10136), no longer half of the 1,048,576 that failed
    assert diag.edits[0].argv == ["--ctx-size", "4096"] and diag.edits[0].starts is None


def test_vulkan_compute_failure_read_sf161():
    text = ("llama_kv_cache_unified: size = 6564.00 MiB ( 70016 cells,  48 layers,  1/ 1 seqs), K (f16): 3282.00 MiB, V (f16): 3282.00 MiB\n"
            "ggml_vulkan: Device memory allocation of size 4757131264 failed.\n"
            "ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory\n"
            "ggml_gallocr_reserve_n: failed to allocate Vulkan0 buffer of size 4757131264\n"
            "graph_reserve: failed to allocate compute buffers\n"
            "llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers\n")
    error = find_startup_error(text)
    assert error.kind == "llamacpp_alloc_failed" and error.figures["requested_bytes"] == 4757131264
    assert error.figures["buffer"] == 1 and error.figures["allocation_limit"] == 1.0
    changes = [e.change for e in diagnose(text).edits]
    assert "--batch-size 256 --ubatch-size 256" in changes
    assert not any("q8_0" in c for c in changes)


def test_compute_buffer_failure_gets_no_q8_kv_sf162():
    text = ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9220.57 MiB on device 0: cudaMalloc failed: out of memory\n"
            "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 9668469760\n")
    error = find_startup_error(text)
    assert error.figures["buffer"] == 1
    changes = [e.change for e in diagnose(text).edits]
    assert changes and not any("q8_0" in c for c in changes)
    assert any(c.startswith("--batch-size") for c in changes)


def test_sglang_nccl_line_names_the_engine_sf154():
    text = ("sglang-1  | [2025-11-01 16:50:36 TP0] sglang is using nccl==2.27.3\n"
            "sglang-1  | [2025-11-01 16:50:36 TP1] Setup Custom allreduce failed with CUDART error: peer access is not supported "
            "between these two devices.\n")
    assert detect_engine(text) == "sglang"
    assert detect_engine(text + "torch.OutOfMemoryError: CUDA out of memory.\n") == "sglang"


def test_q8_kv_inside_the_margin_is_not_decided():
    """b-held128-ctx-64k: q8_0 KV (3.72 GiB) fits the 4.66 GiB of room but not with the 1,024 MiB margin kept: not decided
    (it started on the H200, with 963 MiB left), never 'does not start'; the context edit keeps the margin."""
    diag = diagnose(_h200("b-held128-ctx-64k"), gpu="H200")
    q8 = next(e for e in diag.edits if e.argv[:1] == ["--cache-type-k"])
    assert q8.starts is None
    assert diag.edits[0].change.startswith("--ctx-size") and diag.edits[0].starts
