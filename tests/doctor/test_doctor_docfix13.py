"""docfix13 (retrospective on H200 set g and batch 10): llama.cpp's refusals of its settings read as named non-memory
errors with the edit that meets the engine's own condition; a host kill gets host levers only; a setting the run already
has is never offered; several servers on one device are said to count."""

from __future__ import annotations

import gzip
import shlex
from pathlib import Path

import pytest

from benchmarks.doctor_grade import grade, run_doctor
from benchmarks.published.startup_failures import load_failures
from infer_advisor.doctor.diagnosis import SCHEMA_VERSION, diagnose
from infer_advisor.doctor.input_text import apply_edit
from infer_advisor.doctor.startup_errors import find_startup_error

FAILURES = {f.id: f for f in load_failures().failures}
SET_G = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200" / "llamacpp-doctor-g-2026-12-04-call4"
G_COMMAND = ("llama-server -m /tmp/lc/model-f16.gguf -ngl 99 --port 8091 --host 127.0.0.1 -v -c 200000 -np 1 -ctk q8_0 -ctv q8_0 "
             "-fa off")


def test_set_gs_miss_quantized_v_without_flash_attention_gets_fa_on_first():
    text = gzip.decompress((SET_G / "g-ctx-200k-q8kv-fa-off-first.log.gz").read_bytes()).decode()
    d = diagnose(text, gpu="H200", model="meta-llama/Llama-3.2-1B", gpus=1)
    assert d.engine == "llama.cpp" and d.error.kind == "llamacpp_refused" and d.error_logged and d.starts is False
    assert "quantized V cache requires flash_attn to be enabled" in d.error.line
    first, second = d.edits[0], d.edits[1]
    assert first.argv == ["--flash-attn", "on"] and first.starts and first.confidence == "engine_figures"
    assert second.argv == ["--cache-type-v", "f16"] and second.starts
    fixed = shlex.split(apply_edit(G_COMMAND, first.argv))
    assert "-fa" not in fixed and fixed[-2:] == ["--flash-attn", "on"] and fixed.count("-ctv") == 1
    assert SCHEMA_VERSION == 5 and d.schema_version == 5


@pytest.mark.parametrize(("line", "argv"), [
    ("llama_init_from_model: V cache quantization requires flash_attn", ["--flash-attn"]),  # the builds whose -fa took no value
    ("llama_init_from_model: failed to initialize the context: quantized V cache was requested, but this requires Flash Attention",
     ["--cache-type-v", "f16"]),  # auto turned it off: f16 V first
    ("llama_init_from_model: K cache type q4_K with block size 256 does not divide n_embd_head_k=128", ["--cache-type-k", "f16"]),
    ("llama_init_from_model: V cache type q4_K with block size 256 does not divide n_embd_head_v=128", ["--cache-type-v", "f16"]),
    ("llama_init_from_model: model does not support different K (q8_0) and V (f16) cache types", ["--cache-type-v", "q8_0"]),
    ("llama_init_from_model: failed to initialize the context: n_seq_max must be <= 256", ["--parallel", "256"]),
    ("llama_init_from_model: n_batch and n_ubatch cannot both be zero", ["--batch-size", "2048", "--ubatch-size", "512"]),
    ("llama_init_from_model: SPLIT_MODE_TENSOR requires flash_attn to be enabled", ["--flash-attn", "on"]),
    ('error while handling argument "-np": error: invalid value for n_parallel', ["--parallel", "1"]),
    ('error while handling argument "-ctv": Unsupported cache type: q3_0', ["-ctv", "f16"]),
    ("error while handling argument \"-fa\": error: unknown value for --flash-attn: '2'", ["--flash-attn", "auto"]),
])
def test_each_llamacpp_refusal_gets_the_edit_that_meets_its_condition(line, argv):
    text = f"llama_model_loader: loaded meta data\nload_tensors: offloaded 29/29 layers to GPU\n{line}\nsrv load_model: failed"
    d = diagnose(text)
    assert d.engine == "llama.cpp" and d.error.kind == "llamacpp_refused" and d.edits[0].argv == argv and d.edits[0].starts


def test_a_command_the_engine_will_refuse_is_predicted_and_fixed():
    d = diagnose("llama-server -m /m/Llama-3.2-1B-f16.gguf -ngl 99 -c 200000 -ctk q8_0 -ctv q8_0 -fa off", gpu="H200",
                 model="meta-llama/Llama-3.2-1B")
    assert d.error.kind == "llamacpp_refused" and not d.error_logged and "predicted from the command" in d.error.line
    assert d.fixed_command.endswith("-ctv q8_0 --flash-attn on") and "-fa off" not in d.fixed_command
    slots = diagnose("llama-server -m /m/x.gguf -c 200000 -np 300", gpu="H200", model="meta-llama/Llama-3.2-1B")
    assert slots.edits[0].argv == ["--parallel", "256"] and "--parallel 256" in slots.fixed_command
    fine = diagnose("llama-server -m /m/x.gguf -c 8192 -ctk q8_0 -ctv q8_0 -fa on", gpu="H200", model="meta-llama/Llama-3.2-1B")
    assert fine.error is None or fine.error.kind != "llamacpp_refused"


def test_a_host_kill_gets_host_levers_not_a_lower_gpu_share():
    d = run_doctor(FAILURES["sf191"])  # exit code 137; the reporter tried utilization 0.5-0.96
    assert d.error.kind == "host_oom_killed" and d.binding == "host memory"
    assert d.edits[0].argv == ["--swap-space", "0"] and all(e.starts is None for e in d.edits)
    assert not any(e.argv[:1] == ["--gpu-memory-utilization"] for e in d.edits)
    assert any("host RAM" in n for n in d.notes)
    assert find_startup_error("worker exited with code 137 after a restart") is None  # no out-of-memory words: not read as one


def test_a_setting_the_run_already_has_is_not_offered():
    d = run_doctor(FAILURES["sf174"])  # "I have added --eager-mode"
    assert not any(e.argv == ["--enforce-eager"] for e in d.edits)
    assert any("already had it" in n for n in d.notes)
    advice = diagnose("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
                      "79.19 GiB of which 1.00 GiB is free.\nvLLM API server version 0.8.4\nyou could try --enforce-eager")
    assert any(e.argv == ["--enforce-eager"] for e in advice.edits)  # advice in the text is not the run's setting


def test_several_servers_on_one_device_are_said_to_count():
    d = run_doctor(FAILURES["sf171"])  # "two 7b models on 80B A100", --gpu-memory-utilization 0.4
    note = next(n for n in d.notes if n.startswith("Several servers share this device"))
    assert "0.40 (its own)" in note
    two = diagnose("vllm serve a --port 5001 --gpu-memory-utilization 0.4\nvllm serve b --port 5002 --gpu-memory-utilization 0.4\n"
                   "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.")
    assert any("at least 0.80 (their sum)" in n for n in two.notes)
    one = run_doctor(FAILURES["sf119"])  # one server's retries (0.850, then 0.847): not several servers
    assert not any(n.startswith("Several servers") for n in one.notes)


def test_the_grade_of_batch_ten_is_unchanged_by_these_notes():
    assert grade(FAILURES["sf191"])["first_edit"] == "--swap-space 0"
    assert grade(FAILURES["sf174"])["first_edit"] == "--tensor-parallel-size 8"


def test_llamacpp_allocations_named_without_a_size_are_read():
    # batch 11 (merged after its first run; retrospective): ROCm's sized buffer, and buffers named without a size
    assert grade(FAILURES["sf198"])["doctor_error"] == "llamacpp_alloc_failed"  # "failed to allocate ROCm0 buffer of size ..."
    for fid, binding in (("sf207", "weights"), ("sf218", "weights"), ("sf210", "activation peak")):
        d = run_doctor(FAILURES[fid])
        assert d.error.kind == "llamacpp_alloc_failed" and d.binding == binding, fid
        assert all(e.starts is None for e in d.edits), fid  # nothing printed decides how far
