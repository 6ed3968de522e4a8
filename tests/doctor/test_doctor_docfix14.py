"""docfix14 (retrospective on batch 11 and H200 set h): engines told apart by their process prefixes and product names;
vllm-ascend's "Available memory: 0" read as no cache blocks; weights larger than one GPU put tensor parallelism first;
TGI's model-initialisation error is the load; set h's `-fa on` decided by the printed figures; the grade's stated command."""

from __future__ import annotations

import gzip
from pathlib import Path

from benchmarks.doctor_grade import GRADE_SCHEMA, doctor_input, grade, run_doctor
from benchmarks.published.startup_failures import load_failures
from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.doctor.startup_errors import find_startup_error
from infer_advisor.engines.startup_log import detect_engine

FAILURES = {f.id: f for f in load_failures().failures}
SET_H = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200" / "llamacpp-doctor-h-2026-12-04-call6"


def test_vllm_v1_process_prefixes_name_vllm():
    assert detect_engine("(Worker_TP0 pid=6528) ERROR 08-28 17:16:03 [multiproc_executor.py:1055] torch.OutOfMemoryError") == "vllm"
    assert detect_engine("(EngineCore_DP0 pid=7291) ERROR 10-23 08:05:13 [core.py:708] EngineCore failed to start.") == "vllm"
    for sid in ("sf209", "sf214"):
        d = run_doctor(FAILURES[sid])
        assert d.engine == "vllm" and d.engine_source == "log" and not any("(SGLang)" in e.change for e in d.edits)


def test_product_names_tell_the_engine():
    assert detect_engine("Error: llama runner process has terminated: signal: aborted") == "llama.cpp"
    assert detect_engine("[Version Information] lmsysorg/sglang:cann9.0.0\nNPU out of memory.") == "sglang"
    d = run_doctor(FAILURES["sf204"])  # ollama: llama.cpp's flags, and a note that ollama spells them otherwise
    assert d.engine == "llama.cpp" and not d.edits[0].change.startswith("--gpu-memory-utilization")
    assert any("num_ctx" in n for n in d.notes)
    assert run_doctor(FAILURES["sf222"]).edits[0].argv[0] == "--mem-fraction-static"


def test_vllm_ascend_zero_available_memory_is_no_cache_blocks():
    e = find_startup_error("(Worker_TP0 pid=552) INFO 10-28 21:14:49 [worker_v1.py:259] Available memory: 0, total memory: 65452113920")
    assert e.kind == "no_cache_blocks" and e.figures["kv_cache_bytes"] == 0
    d = run_doctor(FAILURES["sf215"])
    assert d.engine == "vllm" and d.edits and d.edits[0].argv[0] == "--gpu-memory-utilization" and d.edits[0].starts is None


def test_weights_over_one_gpu_put_tensor_parallel_first_not_decided():
    d = run_doctor(FAILURES["sf225"])  # Llama-2-70B fp16 (128.5 GiB) on one 79.35 GiB card
    assert d.edits[0].argv == ["--tensor-parallel-size", "2"] and d.edits[0].starts is None
    assert any("weights alone" in n for n in d.notes)
    d = run_doctor(FAILURES["sf224"])  # TGI, bitsandbytes FP4 (32 GiB) on A10G, eight stated
    assert d.error.kind.startswith("cuda_oom") and d.edits[0].argv == ["--num-shard", "8"] and d.edits[0].starts is None  # docfix16: the 8 GPUs present
    assert grade(FAILURES["sf225"])["verdict"] == "unverifiable"  # never counted as starting by our estimate


def test_tgi_model_initialisation_error_is_the_load():
    d = run_doctor(FAILURES["sf208"])
    assert d.error.kind == "cuda_oom_load" and d.edits[0].argv == ["--num-shard", "2"]


def test_a_setting_with_the_value_the_command_has_is_not_offered():
    d = run_doctor(FAILURES["sf123"])  # the command sets --cuda-graph-max-bs 8
    assert all(e.change != "--cuda-graph-max-bs 8" for e in d.edits)


def test_grade_passes_the_stated_command_only_where_the_log_names_no_engine():
    assert GRADE_SCHEMA >= 6  # 7 since docfix20 (TGI's --max-input-length in the knob map)
    assert FAILURES["sf223"].command in doctor_input(FAILURES["sf223"])  # the log names no engine
    assert run_doctor(FAILURES["sf223"]).engine == "sglang"
    assert "-c 22528" not in doctor_input(FAILURES["sf134"])  # sf134's stated command is the one that worked: never an input
    assert grade(FAILURES["sf134"])["verdict"] == "starts"


def test_set_h_held90_flash_attention_decided_by_the_printed_figures():
    text = gzip.decompress((SET_H / "h-held90-ctx-400k-fa-off-first.log.gz").read_bytes()).decode()
    d = diagnose(text, gpu="H200", model="meta-llama/Llama-3.2-3B", gpus=1)
    assert d.edits[0].change == "--ctx-size 212224" and d.edits[0].starts  # the recorded first edit, which started
    fa = next(e for e in d.edits if e.argv[:1] == ["--flash-attn"])
    # 49,945 MiB free - 6,128 model - 43,764 KV = 53 MiB, under the f16 mask's 400,128 x 512 x 2 B = 391 MiB
    assert fa.starts is False and fa.confidence == "engine_figures" and "391 MiB" in fa.cost
