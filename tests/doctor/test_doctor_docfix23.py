"""docfix23 (retrospective, batch 19's first run, four first edits an operator would see fail): on the real texts of
benchmarks/published/startup_failures.yaml (sf343, sf346, sf347) and on small inputs: SGLang's "Not enough memory"
quoted up to "memory" is SGLang's pool-sizing failure (a larger fraction); ggml's allocator and llama.cpp's --fit lines
name llama.cpp, so no vLLM/SGLang flag and no TP is offered on a llama.cpp run; an ollama plan with no layer on the GPU
gets no num_gpu edit."""

import json
from pathlib import Path

from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.engines.startup_log import detect_engine
from tests.support.doctor_entries import diagnose_entry

_FRACTION = "--mem-fraction-static"
_NOT_LLAMACPP = ("--tensor-parallel-size", "--tp-size", "--num-shard", "--gpu-memory-utilization", _FRACTION, "--max-num-seqs")


def test_sf343_cut_sglang_message_gets_a_larger_fraction():
    d = diagnose_entry("sf343")  # the thread's table: 0.8 "RuntimeError: Not enough memory", 0.85 boots
    assert d.error.kind == "sglang_not_enough_memory"
    assert d.edits[0].argv == [_FRACTION, "0.85"]
    assert not any(e.argv[:1] == [_FRACTION] and float(e.argv[1]) <= 0.8 for e in d.edits)


def test_tgi_not_enough_memory_is_not_sglang():
    d = diagnose("RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease `--max-batch-prefill-tokens`")
    assert d.error.kind == "tgi_prefill_tokens"


def test_sf347_llamacpp_run_gets_llamacpp_flags_only():
    d = diagnose_entry("sf347")  # --fit with --cpu-moe on one RTX 3090; a 14,656 MiB compute buffer fails
    assert d.engine == "llama.cpp" and d.error.kind == "llamacpp_alloc_failed"
    assert d.error.figures.get("buffer") == 1  # after "sched_reserve: reserving ...": a compute buffer
    assert not any(e.argv[:1] and e.argv[0] in _NOT_LLAMACPP for e in d.edits)
    assert not any(e.gpus_needed for e in d.edits)


def test_ggml_and_fit_lines_name_llamacpp():
    assert detect_engine("E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 10.00 MiB on device 0: cudaMalloc failed: ou") == "llama.cpp"
    assert detect_engine("common_params_fit_impl: projected to use 24840 MiB of device memory vs. 22341 MiB") == "llama.cpp"


def test_sf346_no_num_gpu_when_no_layer_is_on_the_gpu():
    d = diagnose_entry("sf346")  # layers.offload=0, memory.required.kv 31.2 GiB on a host with 17.1 GiB free
    assert not any("num_gpu" in e.change for e in d.edits)
    assert "num_ctx" in d.edits[0].change and "OLLAMA_NUM_PARALLEL=1" in d.edits[0].change


def test_no_graded_first_edit_needs_more_gpus_than_stated_or_a_foreign_flag():
    rows = json.loads(Path("benchmarks/results/doctor_grade.json").read_text())["rows"]
    for r in rows:
        if r.get("gpus_present") and r.get("first_gpus_needed"):
            assert r["first_gpus_needed"] <= r["gpus_present"] or r["verdict"] == "fails", r["id"]
        if r.get("engine") == "llama.cpp" and r.get("first_edit"):
            assert not r["first_edit"].split()[0] in _NOT_LLAMACPP, r["id"]


_ENC_DEC = ("INFO 11-05 03:21:41 enc_dec_model_runner.py:297] Starting profile run for multi-modal models.\n"
            "(VllmWorkerProcess pid=214) ERROR 09-27 05:20:38 multiproc_worker_utils.py:233] Exception in worker VllmWorkerProcess "
            "while processing method determine_num_available_blocks: CUDA out of memory. Tried to allocate 19.63 GiB. GPU 3 has a "
            "total capacity of 79.15 GiB of which 17.73 GiB is free.\n")


def test_v0_encoder_decoder_profile_gets_fewer_sequences_first():
    d = diagnose(_ENC_DEC, max_model_len=4096, tp=4)  # enc_dec_model_runner.profile_run: max_num_seqs sequences, one image set each
    assert d.error.kind == "cuda_oom_profile"
    assert d.edits[0].argv[:1] == ["--max-num-seqs"] and "enc_dec_model_runner" in d.edits[0].basis


def test_sf338_text_shows_no_multimodal_profile():
    d = diagnose_entry("sf338")  # the excerpt names neither the model nor the multimodal profile: left as it was (reported)
    assert d.edits[0].argv[:1] == ["--max-model-len"]
