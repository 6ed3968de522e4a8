"""GPUs present and edits that need more (docfix7, retrospective: prompted by batch 7's sf82 and sf97), the engine
named per edit where no line names it (sf90), and SGLang's negative profiled value (sf111)."""

from __future__ import annotations

from benchmarks.doctor_grade import grade, hardware_check, run_doctor
from benchmarks.published.startup_failures import load_failures
from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.doctor.hardware_rank import gpu_count_from_log
from infer_advisor.engines.startup_log import detect_engine

FAILURES = {f.id: f for f in load_failures().failures}
L4_COMMAND = "vllm serve meta-llama/Llama-3.1-8B --max-model-len 131072 --gpu-memory-utilization 0.9"


def test_the_gpu_count_is_read_from_the_log_lines():
    assert gpu_count_from_log("CUDA_VISIBLE_DEVICES=0,1,2,3 text-generation-launcher ...")[:2] == (4, None)
    assert gpu_count_from_log("ggml_cuda_init: found 2 CUDA devices:\n")[:2] == (2, None)
    smi = "|   0  NVIDIA GeForce RTX 3090   Off |\n|   1  NVIDIA GeForce RTX 3090   Off |\n"
    assert gpu_count_from_log(smi)[:2] == (2, None)
    assert gpu_count_from_log("on an aws ec2 'g4dn_xlarge' GPU machine")[:2] == (1, None)
    assert gpu_count_from_log("docker run --gpus 2 vllm/vllm-openai ...")[:2] == (2, None)
    assert gpu_count_from_log("limits:\n  nvidia.com/gpu: 4\n")[:2] == (4, None)
    assert gpu_count_from_log("docker run --gpus all vllm/vllm-openai ...") == (None, None, None)
    assert gpu_count_from_log("world_size=2 rank=0")[:2] == (None, 2)  # used, not present
    assert gpu_count_from_log("INFO nothing about GPUs") == (None, None, None)


def test_an_edit_needing_absent_gpus_is_never_first():
    """sf82: two RTX 3090s; TP 4 was first. With the count it does not start and says why; nothing else starts by the
    memory model, so the first line says so instead of a flag."""
    d = run_doctor(FAILURES["sf82"])
    assert d.gpu_count == 2 and d.gpu_count_source == "given"
    tp = next(e for e in d.edits if e.argv[:1] == ["--tensor-parallel-size"])
    assert tp.starts is False and tp.gpus_needed == 4 and tp.confidence == "hardware" and "needs 4 GPUs, 2 present" in tp.cost
    assert d.edits[0].argv == [] and "no flag starts on 2 GPUs" in d.edits[0].change
    assert grade(FAILURES["sf97"])["first_edit"].startswith("no flag starts on 1 GPU")


def test_unknown_gpu_count_ranks_tp_after_edits_on_the_gpus_in_use():
    d = diagnose(L4_COMMAND, gpu="L4", engine_version="0.19.0")
    assert d.gpu_count is None and d.edits[0].starts and d.edits[0].gpus_needed is None
    tp = next(e for e in d.edits if e.gpus_needed)
    assert "needs 2 GPUs" in tp.cost and d.edits.index(tp) > 0
    assert "--tensor-parallel-size" not in d.fixed_command
    two = diagnose(L4_COMMAND, gpu="L4", engine_version="0.19.0", gpus=2)  # present: ranked by cost as before
    assert two.edits[0].argv == ["--tensor-parallel-size", "2"] and two.edits[0].starts


def test_the_grade_fails_an_edit_needing_more_gpus_than_stated():
    d = diagnose(L4_COMMAND, gpu="L4", engine_version="0.19.0")
    tp = next(e for e in d.edits if e.gpus_needed)
    ok, why = hardware_check(FAILURES["sf97"], tp)  # sf97: one T4 (g4dn.xlarge)
    assert ok is False and "the thread states 1" in why
    assert FAILURES["sf97"].gpus_present.how and FAILURES["sf82"].gpus_present.quote == "两张3090"


def test_a_bare_torch_oom_names_the_engine_of_each_flag():
    """sf90: a TGI start-up whose only line is torch's OOM: no vLLM-only flag is offered as if the engine were known.
    (The log alone: since grade schema 6, docfix14, the grade also passes sf90's stated TGI command, which names it.)"""
    d = diagnose(FAILURES["sf90"].log, gpus=FAILURES["sf90"].gpus_present.count if FAILURES["sf90"].gpus_present else None)
    assert d.engine_source.startswith("not named")
    assert all(e.change.endswith(("(vLLM)", "(TGI)", "(SGLang)")) for e in d.edits)
    assert [e.change.rsplit(" ", 1)[-1] for e in d.edits[:3]] == ["(vLLM)", "(TGI)", "(SGLang)"]
    assert d.gpu_count is None or d.gpu_count == 4


def test_tgi_is_detected_by_its_launcher_lines():
    assert detect_engine("2024-06-01T10:00:00Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0") == "tgi"
    assert detect_engine("Shard 0 ready in 12.3s") == "tgi"
    assert detect_engine("Loading safetensors checkpoint shards: 100%") is None


def test_sglang_negative_profiled_value_is_read():
    """sf111: SGLang 0.4.8 printed a negative profile; the after-load lines give the minimum fraction 1 - 21.73 / 188.32,
    not decided because the run's fraction is not in the log."""
    d = run_doctor(FAILURES["sf111"])
    assert d.error.kind == "sglang_not_enough_memory" and d.error.figures["profiled_max_total_tokens"] == -561981
    first = d.edits[0]
    assert first.argv == ["--mem-fraction-static", "0.89"] and first.starts is None and "-561,981" in first.cost
    assert grade(FAILURES["sf111"])["verdict"] == "unverifiable"
