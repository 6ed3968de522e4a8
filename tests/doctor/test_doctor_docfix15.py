"""docfix15 (retrospective on batches 8, 11 and 12, real logs from benchmarks/published/startup_failures.yaml): a host
kill printed without its pid, ollama's backend-buffer line, a Vulkan compute buffer at a raised micro-batch, a load-phase
out of memory (fewer weights per GPU, never eager mode), CUDA-graph room at a high utilization, SGLang's fraction where
the weights fill the GPU, and no engine's flag first where no line names the engine."""

from __future__ import annotations

import time

from benchmarks.doctor_grade import grade, run_doctor
from benchmarks.published.startup_failures import load_failures
from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.doctor.startup_errors import find_startup_error
from infer_advisor.doctor.startup_errors_llamacpp import llamacpp_extra
from infer_advisor.engines.startup_log_vllm import worker_ranks

FAILURES = {f.id: f for f in load_failures().failures}


def test_sf240_a_kernel_oom_kill_without_its_pid_is_a_host_kill_with_host_levers_only():
    d = run_doctor(FAILURES["sf240"])  # "Out of memory: Killed process (VLLM::Worker_TP)", anon-rss / shmem-rss fields
    assert d.error.kind == "host_oom_killed" and d.binding == "host memory" and d.engine == "vllm"
    assert all(not e.argv for e in d.edits) and all(e.starts is None for e in d.edits)  # no GPU flag, no other engine's
    assert "offloaded" in d.edits[0].change and "73.55 GiB" in d.edits[0].basis and "147.1 GiB over 2 rank(s)" in d.edits[0].basis
    assert not any("(SGLang)" in e.change or "(TGI)" in e.change for e in d.edits)
    assert find_startup_error("Out of memory: Killed process 4242 (python3) total-vm:1kB, anon-rss:1kB").kind == "host_oom_killed"


def test_the_swap_space_lever_stays_where_a_v0_engine_can_run():
    assert run_doctor(FAILURES["sf191"]).edits[0].argv == ["--swap-space", "0"]  # 0.8.2: VLLM_USE_V1=0 still selects V0
    d = diagnose("INFO vLLM API server version 0.12.0\nThe Python process exited with exit code 137 (SIGKILL). OOM")
    assert d.error.kind == "host_oom_killed" and not any(e.argv[:1] == ["--swap-space"] for e in d.edits)


def test_sf236_ollamas_prefixed_backend_buffer_line_is_the_weights_buffer():
    d = run_doctor(FAILURES["sf236"])
    assert d.error.kind == "llamacpp_alloc_failed" and d.error.figures["buffer"] == 2 and d.binding == "weights"
    # docfix18: ollama's run, so fewer layers in ollama's own knob (num_gpu)
    assert "PARAMETER num_gpu" in d.edits[0].change and not any("--cache-type" in " ".join(e.argv) for e in d.edits)


def test_sf226_a_vulkan_allocation_at_a_raised_micro_batch_gets_the_micro_batch_first():
    d = run_doctor(FAILURES["sf226"])  # "-ub 8192 -b 8192 -c 8192"; the thread: any of them at 4096 loads
    assert d.error.figures["n_ubatch"] == 8192
    assert d.edits[0].argv == ["--batch-size", "4096", "--ubatch-size", "4096"]
    assert any("fewer layers" in e.change for e in d.edits)


def test_sf228_an_unnamed_vulkan_buffer_offers_fewer_gpu_layers():
    d = run_doctor(FAILURES["sf228"])  # the reporter: "was using code that was setting a ton of gpu layers"
    assert any("fewer layers on the GPU" in e.change for e in d.edits)
    assert not any(e.argv[:1] == ["--batch-size"] for e in d.edits)  # the micro-batch is not raised: no reason to cut it


def test_the_micro_batch_read_from_flags_takes_llama_cpps_min_of_batch_and_micro_batch():
    assert llamacpp_extra("llama-server -ub 8192 -b 8192", None, host=False, vulkan=False)["n_ubatch"] == 8192
    assert llamacpp_extra("llama-server -ub 4096 -b 1024", None, host=False, vulkan=False)["n_ubatch"] == 1024
    assert llamacpp_extra("llama-server -b 8192", None, host=False, vulkan=False)["n_ubatch"] == 512
    assert llamacpp_extra("llama_context: n_ubatch      = 2048\n -ub 8192", None, host=False, vulkan=False)["n_ubatch"] == 2048


def test_graph_allocator_and_metal_buffer_lines_are_compute_buffers():
    e = find_startup_error("ggml_gallocr_reserve_n: failed to allocate Metal buffer of size 838447104")
    assert e.kind == "llamacpp_alloc_failed" and e.figures["buffer"] == 1 and e.figures["requested_bytes"] == 838447104
    assert run_doctor(FAILURES["sf62"]).error.figures["buffer"] == 1  # ollama's gallocr line: a compute buffer, no q8_0 KV
    assert not any("--cache-type" in " ".join(e.argv) for e in run_doctor(FAILURES["sf62"]).edits)


def test_sf229_unknown_phase_with_idle_gpus_gets_tp_up_to_the_gpus_present():
    d = run_doctor(FAILURES["sf229"])  # 4 T4s, TP 1; the reporter's run that worked: tensor_parallel_size=4
    assert d.edits[0].argv == ["--tensor-parallel-size", "4"] and d.edits[0].gpus_needed == 4
    assert grade(FAILURES["sf229"])["verdict"] == "starts"


def test_sf239_a_load_phase_oom_never_gets_eager_mode_and_reads_the_workers_ranks():
    d = run_doctor(FAILURES["sf239"])  # prepare_moe_mxfp4_layer_for_marlin -> _repack_marlin_experts -> torch.empty
    assert d.error.kind == "cuda_oom_load" and worker_ranks(FAILURES["sf239"].log) == (3, 2)
    assert not any(e.argv[:1] in (["--enforce-eager"], ["--gpu-memory-utilization"], ["--max-model-len"]) for e in d.edits)
    assert d.edits[0].argv == ["--cpu-offload-gb", "1"]  # the 8 GPUs are all in use (PP 2 x TP >= 3): no TP edit
    assert not any(e.argv[:1] == ["--tensor-parallel-size"] for e in d.edits)


def test_an_unstated_tp_is_not_taken_as_one_gpu_of_many():
    d = run_doctor(FAILURES["sf214"])  # 8 A100s, the run's TP not stated: it may already be 8
    assert d.edits[0].argv[:1] != ["--tensor-parallel-size"]


def test_sf237_at_utilization_098_the_kv_edit_goes_with_eager_mode():
    d = run_doctor(FAILURES["sf237"])  # its next run (128 tokens at 0.98) failed capturing CUDA graphs
    assert d.edits[0].argv == ["--max-model-len", "3584", "--enforce-eager"] and d.edits[0].starts
    assert any(e.argv[:1] == ["--gpu-memory-utilization"] and float(e.argv[1]) < 0.98 for e in d.edits)
    assert grade(FAILURES["sf237"])["verdict"] == "starts"


def test_sf138_sglangs_fraction_goes_up_where_the_weights_fill_the_gpu():
    d = run_doctor(FAILURES["sf138"])  # "60GB weights on 80GB GPU": the fix is the opposite of the FAQ's smaller fraction
    assert d.edits[0].argv[0] == "--mem-fraction-static" and float(d.edits[0].argv[1]) > 0.88
    assert run_doctor(FAILURES["sf111"]).edits[0].argv[:1] == ["--mem-fraction-static"]  # a raise already: unchanged


def test_sf221_no_engine_named_gets_no_engines_flag_first():
    d = run_doctor(FAILURES["sf221"])
    assert d.edits[0].argv == [] and "llama.cpp -c" in d.edits[0].change
    assert run_doctor(FAILURES["sf22"]).edits[0].argv[:1] == ["--enforce-eager"]  # the capture phase shown keeps its remedy


def test_the_doctor_stays_under_a_second_on_these_logs():
    for fid in ("sf226", "sf229", "sf237", "sf239", "sf240"):
        start = time.perf_counter()
        run_doctor(FAILURES[fid])
        assert time.perf_counter() - start < 1.0


def test_metals_own_failed_buffer_line_is_a_llama_cpp_allocation_with_its_size():
    e = find_startup_error("ggml_metal_buffer_init: error: failed to allocate buffer, size =  9093.12 MiB")
    assert e.kind == "llamacpp_alloc_failed" and abs(e.figures["requested_bytes"] - 9093.12 * 2**20) < 1
