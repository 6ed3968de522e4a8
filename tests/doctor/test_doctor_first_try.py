"""The doctor's first tries where no figure decides an edit, and every edit's confidence (Diagnosis schema 2).

Logs are the lines quoted from public issues (benchmarks/published/startup_failures.yaml); what is expected follows from
the failure's kind and the log's own settings, written out here by hand.
"""

from __future__ import annotations

from benchmarks.doctor_grade import grade, run_doctor, thread_value
from benchmarks.published.startup_failures import load_failures
from infer_advisor.doctor.diagnosis import SCHEMA_VERSION, Diagnosis
from infer_advisor.doctor.first_try import first_try_edits
from infer_advisor.doctor.startup_errors import StartupError, find_startup_error

FAILURES = {f.id: f for f in load_failures().failures}


def test_a_small_allocation_on_a_full_gpu_tries_eager_mode_first():
    """vllm#15598: 2 MiB asked, 448 KiB of 44.53 GiB free: the budget was taken, so what failed came after the KV cache."""
    d = run_doctor(FAILURES["sf18"])
    first = d.edits[0]
    # no line names the engine (docfix7): the edit names the engine whose flag it is
    assert first.change == "--enforce-eager (vLLM)" and first.argv == ["--enforce-eager"] and first.starts is None and first.confidence == "first_try"
    assert "not decided" in first.basis
    assert [e.argv[0] for e in d.edits if e.change.endswith("(vLLM)")] == ["--enforce-eager", "--gpu-memory-utilization"]  # no context: none stated
    assert {e.change.rsplit(" ", 1)[-1] for e in d.edits} == {"(vLLM)", "(TGI)", "(SGLang)"}


def test_an_oom_after_the_weights_loaded_is_the_profile_run_and_halves_the_stated_context():
    f = FAILURES["sf23"]  # V0 "Loading model weights took 17.9828 GB", then "OOM when loading" at --max-model-len 32768
    assert find_startup_error(f.log + "\n" + f.error_line).kind == "cuda_oom_profile"
    assert run_doctor(f).edits[0].argv == ["--max-model-len", "16384"]


def test_a_traceback_cut_in_the_kv_check_is_named_and_gets_the_engines_advice():
    for fid, util in (("sf05", "0.95"), ("sf72", "0.45")):  # V0 raise_if_cache_size_invalid; V1 get_kv_cache_config
        d = run_doctor(FAILURES[fid])
        assert d.error.kind == "kv_cache_check" and d.edits[0].argv == ["--gpu-memory-utilization", util]


def test_no_number_the_log_does_not_support():
    """sf06: no cache blocks already at 0.95, no context stated: TP doubled, never an invented --max-model-len."""
    d = run_doctor(FAILURES["sf06"])
    assert d.edits[0].argv == ["--tensor-parallel-size", "2"] and not any(e.argv[0] == "--max-model-len" for e in d.edits)
    assert first_try_edits(StartupError(kind="no_cache_blocks", line="x"), "vllm", None, 0.90, 1)[0].argv == [
        "--gpu-memory-utilization", "0.95"]


def test_a_gpu_held_by_others_gets_an_action_not_a_flag():
    d = run_doctor(FAILURES["sf65"])  # 0.49 of 79.32 GiB free
    assert d.edits[0].argv == [] and d.edits[0].change.startswith("free the GPU (78.83 GiB")


def test_a_traceback_without_its_message_gets_no_guess():
    """sf27: SGLang's scheduler traceback stops before its message; its two memory failures need opposite edits."""
    d = run_doctor(FAILURES["sf27"])
    assert d.edits == [] and any("paste the lines after" in n for n in d.notes)


def test_every_edit_says_how_sure_and_why():
    assert Diagnosis.model_json_schema()["properties"]["schema_version"]["default"] == SCHEMA_VERSION == 5  # 5: docfix13
    for f in FAILURES.values():
        if grade(f)["verdict"] == "not read":  # no engine line or error line: exit 2, no edits (the grade's own verdict,
            continue  # so that a new batch's unread entry is skipped without a hand-kept list)
        for e in run_doctor(f).edits:
            assert e.confidence in ("engine_figures", "memory_model", "engine_advice", "first_try", "hardware") and e.basis, (f.id, e)
            assert e.starts is None or e.confidence != "first_try"


def test_the_thread_fix_counts_only_at_its_knob_direction_and_value():
    assert (thread_value("0.8 (from 0.75)"), thread_value("65k (max input)"), thread_value("lower --max-model-len")) == (0.8, 65000, None)
    sf64 = grade(FAILURES["sf64"])  # 0.25 where the thread's second instance started at 0.3: not as far
    assert sf64["fix_match"] is False and sf64["verdict"] == "unverifiable"
    sf18 = grade(FAILURES["sf18"])  # the thread's --enforce-eager: a flag without a value
    assert sf18["fix_match"] is True and sf18["decided_by"] == "thread_fix" and "direction only" in sf18["fix_match_why"]


def test_the_memory_models_verdict_counts_only_outside_its_error_band():
    from benchmarks.doctor_grade import model_check

    f = FAILURES["sf71"]  # 11,216 KV tokens for 8,192: a 37% surplus, inside the 35.4% band's reach
    diag = run_doctor(f)  # docfix12: the first edit is now the printed capacity's context; the model's utilization is next
    util = next(e for e in diag.edits if e.argv[0] == "--gpu-memory-utilization")
    ok, why = model_check(f, diag, util)
    assert ok is None and "inside the memory model's error band" in why
    assert grade(f)["decided_by"] == "log_figures"


def test_other_engines_get_their_own_first_tries():
    from infer_advisor.doctor.diagnosis import diagnose

    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.00 GiB is free."
    sglang = diagnose('  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1999\n' + oom)
    assert sglang.engine == "sglang" and [e.argv for e in sglang.edits] == [["--mem-fraction-static", "0.80"], ["--chunked-prefill-size", "2048"]]
    tgi = diagnose("INFO text_generation_launcher: Args { model_id: \"x\" }\n" + oom)
    assert tgi.edits[0].argv == ["--max-batch-prefill-tokens", "2048"] and tgi.edits[1].argv == ["--num-shard", "2"]
    nccl = diagnose('  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py"\nRuntimeError: NCCL error: unhandled cuda error')
    assert nccl.edits[0].argv == ["NCCL_P2P_DISABLE=1"] and nccl.edits[0].confidence == "first_try"
    llama = diagnose("llama_model_load: loaded meta data\nggml_cuda_init: found 1 CUDA devices\nCUDA error: out of memory")
    assert llama.engine == "llama.cpp" and not any(e.argv[:1] and e.argv[0].startswith("--enforce") for e in llama.edits)  # docfix15: action edits have no argv


def test_held_aside_totals_cover_batch1s_held_out_third_and_every_later_batch():
    from benchmarks.doctor_grade import summary

    rows = [{"batch": 1, "held_out": True, "verdict": "starts", "decided_by": "log_figures"},
            {"batch": 1, "held_out": False, "verdict": "starts", "decided_by": "log_figures"},
            {"batch": 7, "held_out": False, "verdict": "unverifiable"}]
    held = summary(rows, True, batch=None)
    assert (held["entries"], held["first_edit_starts"], held["starts_by_log_figures"], held["starts_of_all_pct"]) == (2, 1, 1, 50.0)
    assert summary(rows, None, batch=None)["entries"] == 3 and summary(rows, None, batch=7)["unverifiable"] == 1


def test_vllms_sampler_warmup_message_gives_its_own_advice():
    text = ("INFO [gpu_model_runner.py] Model loading took 14.99 GiB\nRuntimeError: CUDA out of memory occurred when warming up "
            "sampler with 256 dummy requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.")
    err = find_startup_error(text)
    assert err.kind == "cuda_oom_profile" and err.figures == {"max_num_seqs": 256}
    from infer_advisor.doctor.diagnosis import diagnose

    d = diagnose(text)
    assert [e.argv for e in d.edits] == [["--max-num-seqs", "128"], ["--gpu-memory-utilization", "0.85"]]
    assert d.edits[0].confidence == "engine_advice"
