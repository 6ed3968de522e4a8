"""docfix8 (retrospective: prompted by the H200 trial held128-weights and batch 8's gaps): which llama.cpp buffer failed
(weights, KV, compute; CUDA and SYCL), vLLM's Mamba-cache bound, SGLang's capture message and TGI's shard that dies
loading its weights. Log lines are the H200 server's own (benchmarks/results/h200/llamacpp-doctor-2026-12-04/
held128-weights-first.log.gz) or the threads' (benchmarks/published/startup_failures.yaml)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from benchmarks.published.startup_failures import load_failures
from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.doctor.llamacpp_failures import LLAMACPP_BUFFERS
from infer_advisor.doctor.startup_errors import find_startup_error

MIB = 2**20
FAILURES = {f.id: f for f in load_failures().failures}
H200_LOG = Path(__file__).parents[2] / "benchmarks/results/h200/llamacpp-doctor-2026-12-04/held128-weights-first.log.gz"
# the lines of that log the doctor reads, verbatim (the dry run of common_fit_params prints 0.00 MiB buffers first)
H200_LINES = """\
0.00.116.554 I cmn  common_param:   - CUDA0   : NVIDIA H200 (143155 MiB, 11033 MiB free)
0.00.216.780 I llama_prepare_model_devices: using device CUDA0 (NVIDIA H200) (0000:00:06.0) - 11033 MiB free
0.00.438.210 I load_tensors: offloaded 33/33 layers to GPU
0.00.438.218 I load_tensors:        CUDA0 model buffer size =     0.00 MiB
0.00.442.670 I llama_kv_cache:      CUDA0 KV buffer size =     0.00 MiB
0.00.442.680 I llama_kv_cache: size = 1024.00 MiB (  8192 cells,  32 layers,  1/1 seqs), K (f16):  512.00 MiB, V (f16):  512.00 MiB
0.00.447.129 I sched_reserve:      CUDA0 compute buffer size =   116.01 MiB
0.00.511.717 W common_fit_params: failed to fit params to free device memory: n_gpu_layers already set by user to 99, abort
0.00.865.840 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 14315.02 MiB on device 0: cudaMalloc failed: out of memory
0.00.865.845 E alloc_tensor_range: failed to allocate CUDA0 buffer of size 15010381824
0.00.931.015 E llama_model_load: error loading model: unable to allocate CUDA0 buffer
0.00.931.028 E llama_model_load_from_file_impl: failed to load model
"""


def _first_edit_for_weights(text: str):
    d = diagnose(text, gpu="H200", model="meta-llama/Llama-3.1-8B", gpus=1)
    assert d.error.kind == "llamacpp_alloc_failed" and LLAMACPP_BUFFERS[int(d.error.figures["buffer"])] == "weights"
    return d


@pytest.mark.parametrize("text", [H200_LINES, None], ids=["excerpt", "whole log"])
def test_weights_past_free_memory_get_fewer_layers_not_kv(text):
    """14,315 MiB of weights in 11,033 MiB free: no KV edit may start. -ngl N: (11,033 - 116 compute - 1,024 llama.cpp's
    fit margin) / ((14,315.02 + 1,024) / 33 a layer) = 9,893 / 464.8 = 21.28 -> 21."""
    d = _first_edit_for_weights(text if text is not None else gzip.decompress(H200_LOG.read_bytes()).decode())
    assert d.binding == "weights" and d.starts is False
    assert not any(e.argv[:1] in (["--cache-type-k"], ["--ctx-size"]) and e.starts for e in d.edits)
    first = d.edits[0]
    assert first.argv == ["--n-gpu-layers", "21"] and first.starts and first.confidence == "engine_figures"
    assert (11033 - 116.01 - 1024) // ((14315.02 + 1024) / 33) == 21
    weights = next(line for line in d.ledger if line.term.startswith("weights"))
    assert weights.bytes_per_gpu == pytest.approx(14315.02 * MIB, rel=1e-6)  # the failed request, not the dry run's 0.00
    assert any("n_gpu_layers already set by user" in n and "-ngl" in n for n in d.notes)
    assert any(e.argv == [] and "quantized GGUF" in e.change for e in d.edits)


@pytest.mark.parametrize("entry", ["sf129", "sf130", "sf131"])
def test_batch8_weights_buffers_are_read_as_weights(entry):
    """Model buffers failing at load (no free line, no layer count): an action naming fewer layers, never q8_0 KV."""
    d = diagnose(FAILURES[entry].log)
    assert LLAMACPP_BUFFERS[int(d.error.figures["buffer"])] == "weights" and d.binding == "weights"
    # docfix18: under ollama (sf130) the same lever in ollama's knob, num_gpu
    assert d.edits[0].argv == [] and ("-ngl" in d.edits[0].change or "PARAMETER num_gpu" in d.edits[0].change)
    assert not any(e.argv[:1] == ["--cache-type-k"] for e in d.edits)


def test_sycl_allocation_lines_are_an_allocation_failure():
    """sf133: ggml-sycl's "can't malloc N Bytes" and "failed to allocate SYCL0 buffer of size N", after the KV lines:
    a compute buffer; its first edit is a shorter context (the compute buffer scales with it)."""
    e = find_startup_error(FAILURES["sf133"].log)
    assert e.kind == "llamacpp_alloc_failed" and LLAMACPP_BUFFERS[int(e.figures["buffer"])] == "compute"
    assert e.figures["requested_bytes"] == 7573604352
    d = diagnose(FAILURES["sf133"].log)
    assert d.edits[0].argv[0] == "--ctx-size"


def test_sycl_line_cut_at_the_end_after_the_kv_cache():
    """sf134: the log's last line is cut at "ggml_backend_sycl_buffer_" after the KV lines (kv_size 23552): read as a
    compute-buffer failure; a shorter context first (not decided: halved), from the context the grade passes."""
    d = diagnose(FAILURES["sf134"].log, max_model_len=23552)
    assert d.error.kind == "llamacpp_alloc_failed" and LLAMACPP_BUFFERS[int(d.error.figures["buffer"])] == "compute"
    assert d.edits[0].argv == ["--ctx-size", "11776"] and d.edits[0].starts is None
    assert find_startup_error("ggml_backend_sycl_buffer_ is mentioned\nand the log goes on") is None


def test_mamba_cache_blocks_bound_from_the_message():
    """sf113: "max_num_seqs (1024) exceeds available Mamba cache blocks (856) ... lower max_num_seqs to at most 856"."""
    d = diagnose(FAILURES["sf113"].log)
    assert d.engine == "vllm" and d.error.kind == "mamba_cache_blocks"
    assert d.error.figures == {"max_num_seqs": 1024, "mamba_cache_blocks": 856}
    first = d.edits[0]
    assert first.argv == ["--max-num-seqs", "856"] and first.starts and first.confidence == "engine_figures"
    assert diagnose(FAILURES["sf114"].log).edits[0].argv == ["--max-num-seqs", "524"]


def test_sglang_capture_message_gets_sglang_flags():
    """sf122: only "Exception: Capture cuda graph failed: CUDA out of memory." -- SGLang's CudaGraphRunner words, so
    SGLang's flags (--disable-cuda-graph, --cuda-graph-max-bs), never vLLM's --enforce-eager."""
    d = diagnose(FAILURES["sf122"].log)
    assert d.engine == "sglang" and d.error.kind == "cuda_oom_graph_capture"
    flags = [e.argv[0] for e in d.edits if e.argv]
    assert "--disable-cuda-graph" in flags and "--cuda-graph-max-bs" in flags
    assert not any("enforce" in e.change for e in d.edits)


def test_tgi_shard_dying_at_load_needs_more_gpus():
    """sf127: a torch OOM then "Shard 0 failed to start" (before warm-up) on one of four V100s: the weights do not fit
    one GPU, so more shards first, naming the GPUs it needs (4 present: it may run)."""
    d = diagnose(FAILURES["sf127"].log, gpus=4)
    assert d.engine == "tgi" and d.error.kind == "cuda_oom_load"
    # docfix16: every GPU present (TGI's find_num_shards default where they are listed; the thread's confirmed fix)
    assert d.edits[0].argv == ["--num-shard", "4"] and d.edits[0].gpus_needed == 4
    one = diagnose(FAILURES["sf127"].log, gpus=1)
    assert one.edits[0].argv[:1] != ["--num-shard"] or one.edits[0].starts is False
