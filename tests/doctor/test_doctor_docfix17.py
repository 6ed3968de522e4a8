"""docfix17 (retrospective, batch 14): the doctor on the real logs of benchmarks/published/startup_failures.yaml."""

from infer_advisor.doctor.version import is_release
from infer_advisor.engines.startup_log import detect_engine
from tests.support.doctor_entries import failures_by_id as _by_id, diagnose_entry as _diag


def test_reported_oom_after_v0_profile_lines_is_the_profile_sf270():
    d = _diag("sf270")  # "OOM error" in words, determine_num_available_blocks in the traceback
    assert d.error.kind == "cuda_oom_profile"
    assert d.edits[0].argv[0] == "--max-num-seqs"
    assert not any(e.argv[:1] == ["--gpu-memory-utilization"] for e in d.edits)


def test_reported_oom_after_weights_loaded_shortens_the_profile_batch_sf277():
    d = _diag("sf277")  # V0 0.4.0, max_seq_len=1048576, "Loading model weights took" then a traceback
    assert d.error.kind == "cuda_oom_profile"
    assert d.edits[0].argv[0] == "--max-model-len"
    assert not any(e.argv[:1] == ["--gpu-memory-utilization"] for e in d.edits)


def test_two_v0_engines_on_one_gpu_start_one_after_the_other_sf272():
    d = _diag("sf272")
    assert d.edits[0].argv == [] and d.edits[0].change.startswith("start the engines one after the other")


def test_two_old_v1_engines_size_the_later_one_to_both_shares_sf273():
    d = _diag("sf273")  # V1 0.8.5, two containers at 0.3 on one A100-80GB; the thread's fix is V0
    assert d.edits[0].change == "--gpu-memory-utilization 0.60" and d.edits[0].starts is None
    assert any(e.change.startswith("VLLM_USE_V1=0") for e in d.edits[:3])


def test_two_engine_cores_printing_memory_are_two_engines_sf276_not_tp_workers_sf215():
    assert _diag("sf276").edits[0].change.startswith("start the engines one after the other")
    assert not _diag("sf215").edits[0].change.startswith("start the engines")  # eight TP workers of one engine


def test_llamacpp_context_goes_to_the_engines_default_not_half_sf281_sf282():
    for i, cells in (("sf281", 10_240_000), ("sf282", 163_840)):
        d = _diag(i)
        assert d.edits[0].argv == ["--ctx-size", "4096"], i
        assert f"{cells:,}" in d.edits[0].cost


def test_engine_lines_and_identifiers_decide_the_engine_sf275_sf287():
    assert _diag("sf275").engine == "vllm" and not _diag("sf275").engine_source.startswith("not named")
    d = _diag("sf287")
    assert d.engine == "sglang" and d.edits[0].argv[0] == "--mem-fraction-static"
    assert detect_engine("(VllmWorkerProcess pid=67) ERROR 11-05 03:21:52 multiproc_worker_utils.py:233] boom") == "vllm"
    assert detect_engine("[2025-01-02 10:11:12 TP0] Scheduler hit an exception: sglang words vllm") == "sglang"
    assert detect_engine("INFO 04-29 01:34:48 [core.py:58] Initializing; the thread says sglang serve") == "vllm"


def test_tensor_parallel_without_a_stated_gpu_count_goes_after_one_gpu_edits_sf271():
    d = _diag("sf271")
    assert d.edits[0].argv[0] == "--cpu-offload-gb"
    tp = [e for e in d.edits if e.argv[:1] == ["--tensor-parallel-size"]]
    assert tp and tp[0] is d.edits[-1] and "needs 2 GPUs" in tp[0].cost


def test_commit_hash_version_is_read_as_unknown_sf283():
    assert not is_release("c8a0090922bad576623de4aae227717085249262") and is_release("b4500")
    d = _diag("sf283")
    assert d.engine == "llama.cpp" and d.engine_version is None
    assert any("not a release number" in n for n in d.notes)
    assert d.edits[0].argv == ["--ctx-size", "4096"]
