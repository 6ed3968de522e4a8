"""infer-advisor doctor on SGLang, TGI and llama.cpp: each engine's own start-up arithmetic, worked by hand here.

Logs are either quoted from public threads (benchmarks/published/startup_failures.yaml) or built from the engines'
own format strings (named in engines/startup_log.py and doctor/startup_errors.py) with figures chosen so the
arithmetic can be done by hand.
"""

from __future__ import annotations

import time

import pytest

from benchmarks.published.startup_failures import load_failures
from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.doctor.gpu import infer_gpu
from infer_advisor.cli import main

GIB = 2**30
MIB = 2**20
FAILURES = {f.id: f for f in load_failures().failures}
SGLANG_FAILED = (
    "[2025-01-01 10:00:00 TP0] Load weight begin. avail mem=78.50 GB\n"
    "[2025-01-01 10:00:30 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=10.20 GB, mem usage=68.30 GB.\n"
    "[2025-01-01 10:00:30 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    "server_args=ServerArgs(model_path='/models/llama-70b', tp_size=1, mem_fraction_static=0.85, context_length=8192)"
)


def test_sglang_not_enough_memory_by_its_own_arithmetic():
    """rest = after - before x (1 - f) = 10.20 - 78.50 x 0.15 = -1.575 GB; the smallest fraction with rest > 0 is
    1 - 10.20 / 78.50 = 0.8701 -> 0.88, where rest = 10.20 - 78.50 x 0.12 = 0.78 GB. Its headroom, 78.50 x 0.12 = 9.42 GiB,
    is under SGLang's reserve at its defaults on this GPU (the planner's sglang_reserved_mib: 512 + 8,192 x 1.5 + 256 x 2
    + 128 MiB = 13.1 GiB) and above it with a 2,048-token chunk and graph batch 8 (3.6 GiB), so those come with it
    (tidy10, session 10: the doctor's own copy of the sum took a 2,048-token chunk and graph batch 24 as the defaults)."""
    d = diagnose(SGLANG_FAILED)
    assert d.engine == "sglang" and d.error.kind == "sglang_not_enough_memory" and d.starts is False and d.binding == "weights"
    kv = next(line for line in d.ledger if line.term.startswith("KV cache"))
    assert kv.bytes_per_gpu == pytest.approx((10.20 - 78.50 * 0.15) * GIB, rel=1e-6)
    first = d.edits[0]
    assert first.argv == ["--mem-fraction-static", "0.88", "--chunked-prefill-size", "2048", "--cuda-graph-max-bs", "8"] and first.starts
    assert 10.20 - 78.50 * (1 - 0.88) > 0 > 10.20 - 78.50 * (1 - 0.87)
    assert all(e.argv[0].startswith("--") and "gpu-memory-utilization" not in e.change for e in d.edits)  # SGLang's own flags


def test_sglang_with_the_model_keeps_room_for_one_full_request():
    """With the model, the fraction must also leave one request of context_length (8,192 x 320 KiB for Llama-3-70B's
    80 layers x 8 KV heads x 128 x 2 x 2 bytes = 2.5 GiB): 1 - (10.20 - 2.5) / 78.50 = 0.9019 -> 0.91."""
    d = diagnose(SGLANG_FAILED, gpu="H100-80GB", model="meta-llama/Meta-Llama-3-70B")
    first = next(e for e in d.edits if e.argv[0] == "--mem-fraction-static")
    assert first.argv[1] == "0.91" and d.memory_model


def test_sglang_successful_log_ledger_matches_its_kv_line():
    """after - before x (1 - 0.88) = 62.00 - 78.50 x 0.12 = 52.58 GB; the log allocated 2 x 26.29 = 52.58 GB."""
    log = ("Load weight begin. avail mem=78.50 GB\nLoad weight end. type=X, dtype=torch.bfloat16, avail mem=62.00 GB, mem usage=16.50 GB.\n"
           "KV Cache is allocated. #tokens: 430000, K size: 26.29 GB, V size: 26.29 GB\nmem_fraction_static=0.88")
    d = diagnose(log)
    kv = next(line for line in d.ledger if line.term.startswith("KV cache"))
    assert d.starts is True and d.error is None and abs(kv.bytes_per_gpu - kv.logged_bytes) <= 0.03 * kv.logged_bytes
    assert d.kv_cache_tokens == pytest.approx(430000, rel=0.01)


def test_sglang_minimum_from_its_message():
    """sf40: 'avail mem=12.25 GB, mem usage=125.65 GB' -> before 137.90; 1 - 12.25 / 137.90 = 0.9112 (the thread: 0.9113).
    0.92's 11.03 GiB of headroom is under SGLang's reserve at its defaults for a 137.9 GiB GPU (8,192-token chunk, graph
    batch 256: 13.1 GiB) but above it with a 2,048-token chunk and graph batch 8 (tidy10, session 10)."""
    d = diagnose(FAILURES["sf40"].log)
    assert d.edits[0].argv[:2] == ["--mem-fraction-static", "0.92"] and d.edits[0].starts
    assert d.edits[0].argv[2:] == ["--chunked-prefill-size", "2048", "--cuda-graph-max-bs", "8"]
    d = diagnose(FAILURES["sf43"].log)
    assert d.error.figures["minimum_mem_fraction_static"] == 0.523 and d.edits[0].argv == ["--mem-fraction-static", "0.53"]


def test_sglang_graph_capture_oom_gives_the_engines_remedies():
    d = diagnose(FAILURES["sf41"].log)
    assert d.engine == "sglang" and d.binding == "CUDA graphs"
    assert {e.argv[0] for e in d.edits} >= {"--disable-cuda-graph", "--cuda-graph-max-bs"}


def test_sglang_command_line_through_the_memory_model():
    """An L4 (22.1 GiB free at start) at mem_fraction_static 0.70 budgets 15.1 GiB: Llama-3.1-8B's 15.0 GiB of weights and
    0.25 GiB of non-torch memory leave no pool, so SGLang will raise "Not enough memory"; 0.71 leaves a pool (SGLang
    starts with any pool), TP 2 halves the weights. Edits in SGLang's flags; the fixed command keeps the rest."""
    import shlex

    cmd = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --mem-fraction-static 0.7 --context-length 131072"
    d = diagnose(cmd, gpu="L4")
    assert d.engine == "sglang" and d.starts is False and d.error.kind == "sglang_not_enough_memory" and not d.error_logged
    assert d.edits[0].argv == ["--mem-fraction-static", "0.71"] and d.edits[0].starts and "longer prompts are refused" in d.edits[0].cost
    assert all(not e.argv[0].startswith(("--gpu-memory", "--max-model-len", "--tensor-parallel", "--enforce")) for e in d.edits)
    fixed = shlex.split(d.fixed_command)
    assert fixed[-2:] == ["--mem-fraction-static", "0.71"] and fixed.count("--mem-fraction-static") == 1
    assert diagnose("sglang serve --model-path meta-llama/Llama-3.1-8B --context-length 8192", gpu="L4").starts is True


def test_tgi_max_total_tokens_against_its_kv_blocks():
    """TGI v3: 2,000 blocks x 16 = 32,000 tokens of KV; a max_total_tokens of 65,536 is refused; 32,000 (125 x 256) starts."""
    log = ("INFO text_generation_launcher: Args { model_id: \"meta-llama/Llama-3.1-8B\", num_shard: Some(1), max_total_tokens: Some(65536), "
           "cuda_memory_fraction: 1.0 }\nINFO text_generation_launcher: KV-cache blocks: 2000, size: 16\n"
           "Error: Backend(NotEnoughMemory(65536))\nNot enough memory to handle `max_total_tokens=65536`")
    d = diagnose(log)
    assert d.engine == "tgi" and d.error.kind == "tgi_total_tokens" and d.kv_cache_tokens == 32000
    assert d.edits[0].argv == ["--max-total-tokens", "32000"] and d.edits[0].starts


def test_tgi_prefill_oom_halves_the_warmup_batch():
    d = diagnose(FAILURES["sf28"].log)
    assert d.engine == "tgi" and d.edits[0].argv[:2] == ["--max-batch-prefill-tokens", "2048"] and d.edits[0].starts is None


def test_llamacpp_kv_buffer_that_does_not_fit():
    """23,008 MiB free - 15,000 MiB of weights - 384 MiB of compute buffers (engine profile) = 7,624 MiB for KV at
    16,384 MiB / 131,072 cells = 0.125 MiB a cell, less llama.cpp's 1,024 MiB fit margin (docfix9, retrospective: the H200
    trial b-ctx-1.3M-8slots): 6,600 MiB = 52,800 cells -> 52,736 (whole 256s). q8_0 KV: 16 GiB x 34/64 = 8.5 GiB > 6.45."""
    log = ("llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 4090) - 23008 MiB free\n"
           "load_tensors:        CUDA0 model buffer size = 15000.00 MiB\nllama_context: n_ctx         = 131072\n"
           "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 16384.00 MiB on device 0: cudaMalloc failed: out of memory\n"
           "llama_kv_cache_unified: failed to allocate buffer for kv cache")
    d = diagnose(log)
    assert d.engine == "llama.cpp" and d.gpu == "RTX-4090" and d.binding == "KV cache"
    assert d.edits[0].argv == ["--ctx-size", "52736"] and d.edits[0].starts
    q8 = next(e for e in d.edits if e.argv[0] == "--cache-type-k")
    assert q8.starts is False
    # with 'offloaded 33/33 layers': (15,000 + 16,384) MiB / 33 = 951 MiB a layer; (23,008 - 384 - 1,024 llama.cpp's fit
    # margin, docfix8) MiB hold 22 layers
    d = diagnose(log.replace("load_tensors:        CUDA0", "load_tensors: offloaded 33/33 layers to GPU\nload_tensors:        CUDA0"))
    ngl = next(e for e in d.edits if e.argv[0] == "--n-gpu-layers")
    assert ngl.argv[1] == str(int((23008 - 384 - 1024) // ((15000 + 16384) / 33))) == "22" and ngl.starts


def test_gpu_inferred_from_the_logs_own_lines():
    assert infer_gpu("  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes", None)[0] == "RTX-4090"
    assert infer_gpu("|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |", None)[0] == "A100-80GB"
    name, how = infer_gpu("Memory profiling results: total_gpu_memory=79.19GiB initial", None)
    assert name == "H100-80GB" and "inferred" in how
    assert infer_gpu("nothing here", None) == (None, None)


@pytest.mark.parametrize("argv, words", [
    (["doctor", "-"], "Nothing in this input looks like"),
    (["doctor", "vllm serve"], "names no model"),
    (["doctor", "vllm serve m --max-model-len lots"], "is not an integer"),
    (["doctor", "vllm serve meta-llama/Llama-3.1-8B", "--gpu", "H10"], "H10"),
    (["doctor", "vllm serve meta-llama/Llama-3.1-8B", "--tp", "0"], "tp"),
    (["doctor", "vllm serve x", "--model", "nonexistent-org/no-model"], "not found"),
    (["doctor", "python -m sglang.launch_server --model-path m --tp abc"], "is not an integer"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("hello\nworld\n"))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1


def test_answers_offline_in_under_a_second_of_cpu():
    diagnose(FAILURES["sf01"].log, gpu="RTX-3090", model="meta-llama/Llama-3.1-8B", engine_version="0.6.4")  # warm caches
    for fid in ("sf01", "sf40", "sf44"):
        f = FAILURES[fid]
        start = time.process_time()
        diagnose(f.log, gpu=f.gpu, model=f.catalog_model, engine_version=f.engine_version, tp=f.tp)
        assert time.process_time() - start < 1.0, fid
