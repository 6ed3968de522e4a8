"""docfix16 (retrospective, batch 13): the doctor on the real logs of benchmarks/published/startup_failures.yaml."""

from infer_advisor.engines.startup_log import parse_startup_log
from tests.support.doctor_entries import failures_by_id as _by_id, diagnose_entry as _diag


def test_free_memory_held_by_others_is_freed_first_sf260():
    d = _diag("sf260")
    assert d.edits[0].argv == [] and d.edits[0].change.startswith("free the GPU (20.52 GiB held by other processes): free the memory a previous process holds")
    util = [e for e in d.edits if e.argv[:1] == ["--gpu-memory-utilization"]]
    assert util and util[0].starts is None  # 1.32 GiB passes the start check only


def test_free_memory_check_is_not_touched_by_fp8_sf262():
    d = _diag("sf262")
    assert d.edits[0].argv == []
    for e in d.edits[1:]:
        if e.argv[:1] != ["--gpu-memory-utilization"]:
            assert e.starts is False
    util = [e for e in d.edits if e.argv[:1] == ["--gpu-memory-utilization"]]
    assert util and float(util[0].argv[1]) <= 4.51 / 22.05


def test_most_of_the_gpu_free_keeps_the_utilization_first_sf261():
    d = _diag("sf261")
    assert d.edits[0].change == "--gpu-memory-utilization 0.75"
    assert any(e.argv == [] for e in d.edits)


def test_no_tp_above_one_apu_sf267():
    d = _diag("sf267")
    assert d.gpu_count == 1
    assert not any(e.starts is not False and e.argv[:1] == ["--tensor-parallel-size"] for e in d.edits)


def test_v1_split_message_named_and_its_estimate_used_sf241_sf258():
    for i in ("sf241", "sf258"):
        d = _diag(i)
        assert d.error.kind == "kv_needed_exceeds_available"
    d = _diag("sf258")
    assert d.error.figures["estimated_max_model_len"] == 1968
    ctx = [e for e in d.edits if e.argv[:1] == ["--max-model-len"]]
    assert ctx and int(ctx[0].argv[1]) <= 1968 and int(ctx[0].argv[1]) > 1024


def test_commented_out_enforce_eager_is_not_set_sf264():
    log = parse_startup_log('INFO vllm serve\n  args:\n    # "--enforce-eager", # disable cuda graphs\n', engine="vllm", require_kv=False)
    assert not log.enforce_eager
    log = parse_startup_log("INFO vllm serve m --enforce-eager\n", engine="vllm", require_kv=False)
    assert log.enforce_eager


def test_tgi_shards_use_the_gpus_present_sf265_sf127():
    for i, n in (("sf265", 4), ("sf127", 4)):
        shards = [e for e in _diag(i).edits if e.argv[:1] == ["--num-shard"]]
        assert shards and all(int(e.argv[1]) >= n for e in shards)


def test_sglang_load_oom_gets_fewer_weights_not_a_smaller_pool_sf244_sf252():
    for i in ("sf244", "sf252"):
        d = _diag(i)
        assert not any(e.argv[:1] in (["--mem-fraction-static"], ["--chunked-prefill-size"]) for e in d.edits)
        assert any("quantized" in e.change for e in d.edits)
    assert not any(e.argv[:1] == ["--tp-size"] for e in _diag("sf244").edits)  # TP 2 is already both GPUs


def test_ollama_own_lines_are_read_sf248_sf250_sf257():
    d = _diag("sf250")  # llm/server.go's host-memory check on the run's own plan: 415.7 - 3.4 GiB vs 23.4 + 24.1 GiB
    assert d.engine == "llama.cpp" and "smaller model" in d.edits[0].change and "412.3 GiB" in d.edits[0].change
    assert not any("num_gpu" in e.change for e in d.edits)  # short of host memory: fewer GPU layers put more there
    assert _diag("sf257").edits[0].change.startswith("OLLAMA_NUM_PARALLEL=1")  # sched.go's parallel=4
    assert any("num_gpu" in e.change for e in _diag("sf248").edits)
    assert all(e.starts is None for i in ("sf248", "sf250", "sf257") for e in _diag(i).edits)


def test_llama_server_log_gets_no_ollama_knobs():
    from infer_advisor.doctor.diagnosis import diagnose

    d = diagnose("llama_model_loader: loaded meta data\nllama-server --parallel 4 -m m.gguf\nprint_info: model size = 4.00 GiB\n"
                 "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: cudaMalloc failed: out of memory\n")
    assert not any("OLLAMA" in e.change or "PARAMETER" in e.change for e in d.edits)


def test_scout_bf16_weights_and_commented_flags_sf264():
    d = _diag("sf264")
    weights = next(line for line in d.ledger if line.term == "weights")
    assert weights.bytes_per_gpu > 93.02 * 2**30  # 107.8 B parameters in bf16 over TP 2: about 100 GiB each, not 53.65
    assert "checkpoint" in d.edits[0].change and d.edits[0].starts is None
    assert not any("enforce-eager" in n for n in d.notes)  # '# "--enforce-eager",' is commented out
    log = parse_startup_log('vllm serve m\n  # "--quantization=fp8", # weights\n  "--kv-cache-dtype=fp8"\n', engine="vllm", require_kv=False)
    assert log.quantization is None
    assert parse_startup_log("vllm\n# GPU blocks: 1952, # CPU blocks: 2048\n", engine="vllm", require_kv=False).kv_blocks == 1952
