"""Start-up log parsing: each engine's memory lines, in the formats its source prints (tests/estimate/logs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from infer_advisor.errors import RequestError
from infer_advisor.engines.startup_log import GIB, MIB, detect_engine, parse_startup_log

LOGS = Path(__file__).parent / "logs"


def parse(name: str, engine: str | None = None):  # noqa: ANN201
    return parse_startup_log((LOGS / name).read_text(), engine=engine)


def test_vllm_02_blocks_only():
    log = parse("vllm_v0_0.2_a100_llama2_7b.log")
    assert (log.engine, log.generation, log.engine_version) == ("vllm", "V0", None)  # 0.2 printed no version
    assert log.model == "meta-llama/Llama-2-7b-hf" and log.tp == 1 and log.max_model_len == 4096 and log.dtype == "float16"
    assert log.kv_blocks == 7351 and log.kv_cache_tokens == 7351 * 16
    assert "# GPU blocks: 7351" in log.lines["kv_cache_tokens"]


def test_vllm_064_profiling_one_liner_gives_activation_from_the_torch_peak():
    log = parse("vllm_v0_0.6.4_rtx3090_llama31_8b.log")
    assert log.engine_version == "0.6.4.post1" and log.generation == "V0"
    assert log.total_gpu_memory_bytes == round(23.58 * GIB) and log.gpu_memory_utilization == 0.9
    assert log.weights_bytes == round(14.9888 * GIB)
    assert log.non_torch_bytes == round(0.35 * GIB) and log.kv_cache_bytes == round(3.81 * GIB)
    # peak_torch_memory (17.06 GiB) includes the weights
    assert log.activation_bytes == round(17.06 * GIB) - round(14.9888 * GIB)
    assert log.kv_cache_tokens == 1952 * 16 and log.max_concurrency == 1.56 and log.max_model_len == 20000
    assert log.cuda_graph_bytes == round(0.44 * GIB)
    assert log.command.startswith("Namespace(")


def test_vllm_07_profiling_block_and_cuda_blocks():
    log = parse("vllm_v0_0.7_rtx4090x2_r1_qwen14b.log")
    assert log.engine_version == "0.7.2" and log.generation == "V0" and log.tp == 2
    assert log.total_gpu_memory_bytes == round(23.55 * GIB) and log.gpu_memory_utilization == 0.98
    assert log.weights_bytes == round(13.95 * GIB)  # 'model weights take' wins over the per-worker load line
    assert (log.non_torch_bytes, log.activation_bytes) == (round(0.25 * GIB), round(0.19 * GIB))
    assert log.kv_cache_bytes == round(8.69 * GIB) and log.kv_cache_tokens == 5096 * 16


def test_vllm_v1_019():
    log = parse("vllm_v1_0.19_h100_llama31_8b.log")
    assert (log.engine_version, log.generation) == ("0.19.0", "V1")
    assert log.total_gpu_memory_bytes == round(79.19 * GIB)  # the debug 'worker init memory snapshot' line
    assert log.non_torch_bytes is None  # that snapshot's non_torch_memory is the baseline, not the profiled increase
    assert log.weights_bytes == round(14.99 * GIB) and log.kv_cache_bytes == round(58.11 * GIB)
    assert log.kv_cache_tokens == 476_016 and log.max_concurrency == 58.11
    assert (log.max_num_batched_tokens, log.max_num_seqs) == (8192, 1024)
    assert log.cuda_graph_bytes == round(0.55 * GIB)
    assert log.command.startswith("{'model_tag'")


def test_sglang():
    log = parse("sglang_0.5.9_h100_llama31_8b.log")
    assert log.engine == "sglang" and log.engine_version is None
    assert log.model == "meta-llama/Llama-3.1-8B-Instruct" and log.tp == 1 and log.gpu_memory_utilization == 0.835
    assert log.weights_bytes == round(15.08 * GIB) and log.kv_cache_tokens == 420_853
    assert log.kv_cache_bytes == round((25.69 + 25.69) * GIB) and log.cuda_graph_bytes == round(0.82 * GIB)
    assert log.max_num_batched_tokens == 8192 and log.max_model_len == 131072


def test_llamacpp():
    log = parse("llamacpp_b7200_rtx4090_mistral7b.log")
    assert (log.engine, log.engine_version, log.gpu_name) == ("llama.cpp", "b7200", "NVIDIA GeForce RTX 4090")
    assert log.kv_cache_tokens == 32768 and log.kv_cache_bytes == 4096 * MIB and log.kv_cache_dtype == "f16"
    assert log.max_num_seqs == 4 and log.max_model_len == 8192  # n_ctx_per_seq
    assert log.weights_bytes == round(4166.63 * MIB) and log.activation_bytes == round(296.01 * MIB)


def test_detection_and_refusals():
    assert detect_engine("INFO ... # GPU blocks: 10, # CPU blocks: 2") == "vllm"
    assert detect_engine("KV Cache is allocated. #tokens: 5, K size: 1 GB, V size: 1 GB") == "sglang"
    assert detect_engine("llama_kv_cache: size = 1.00 MiB") == "llama.cpp"
    with pytest.raises(RequestError, match="does not look like"):
        parse_startup_log("hello world")
    with pytest.raises(RequestError, match="No KV-cache size"):
        parse_startup_log("INFO 01-01 api_server.py:1] vLLM API server version 0.8.5\n")


def test_vllm_names_its_mixed_precision_kernel():
    """The kernel line decides AWQ's zero points over the version's rule (a Red Hat 0.18.0 build prints Machete, which
    upstream 0.18.0 does not take for AWQ)."""
    from infer_advisor.engines.memory import memory_profile

    text = ("INFO 09-29 12:00:00 [core.py:93] Initializing a V1 LLM engine (v0.18.0+rhaiv.14) with config: model='/mnt/models'\n"
            "INFO 09-29 12:00:01 [mixed_precision/__init__.py:60] Using MacheteLinearKernel for AWQMarlinLinearMethod\n"
            "INFO 09-29 12:00:11 [gpu_model_runner.py:2600] Model loading took 37.87 GiB memory and 10.203759 seconds\n"
            "INFO 09-29 12:01:02 [kv_cache_utils.py:1300] GPU KV cache size: 280,112 tokens\n")
    log = parse_startup_log(text, engine="vllm")
    assert log.linear_kernel == "machete"
    profile = memory_profile("vllm", "0.18.0")
    assert not profile.expands_zero_points("awq", "0.18.0", 9.0)  # upstream 0.18.0: Marlin repack, zeros packed
    assert profile.expands_zero_points("awq", "0.18.0", 9.0, "machete")
    assert not profile.expands_zero_points("awq", "0.19.0", 9.0, "marlin")
    assert not profile.expands_zero_points("gptq", "0.19.0", 9.0, "machete")  # no zero points to expand


def test_vllm_prints_the_moe_group_size_and_the_estimate_takes_it():
    """'Using Marlin backend for WNA16 MoE (group_size=32, num_bits=4)' (a vLLM 0.16.1rc1 log of a Qwen3.5-122B-A10B int4
    export, batch 8 of issue 23) is kept, and the weights of an int4-experts checkpoint then carry a bf16 scale per 32
    weights: 2/32 bytes more per routed-expert weight than at the format's group 128 (2/128)."""
    from infer_advisor.calibrate.memory import estimate_for_log

    lines = [
        "(EngineCore_DP0 pid=246) INFO 03-01 11:11:18 [core.py:101] Initializing a V1 LLM engine (v0.16.1rc1.dev111+gafd089f23) "
        "with config: model='/models', dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=2, quantization=compressed-tensors",
        "(Worker_TP0 pid=312) INFO 03-01 11:11:32 [compressed_tensors_moe.py:199] Using CompressedTensorsWNA16MarlinMoEMethod",
        "(Worker_TP0 pid=312) INFO 03-01 11:11:32 [compressed_tensors_moe.py:1266] Using Marlin backend for WNA16 MoE (group_size=32, num_bits=4)",
        "(Worker_TP0 pid=312) INFO 03-01 11:22:58 [gpu_model_runner.py:4285] Model loading took 36.73 GiB memory and 684.785983 seconds",
        "(EngineCore_DP0 pid=246) INFO 03-01 11:23:38 [kv_cache_utils.py:1314] GPU KV cache size: 75,168 tokens",
    ]
    log = parse_startup_log("\n".join(lines) + "\n", engine="vllm")
    assert log.quantization_group_size == 32
    log = log.model_copy(update={"quantization": "compressed-tensors-w4a16-experts"})
    kw = dict(model="Qwen/Qwen3.5-122B-A10B", gpu="L40S")
    g32 = estimate_for_log(log, **kw).weights_bytes_per_gpu
    g128 = estimate_for_log(log.model_copy(update={"quantization_group_size": None}), **kw).weights_bytes_per_gpu
    from infer_advisor.model_facts import resolve_model

    facts = resolve_model("Qwen/Qwen3.5-122B-A10B", source="auto")
    experts = facts.params.expert_linear
    assert g32 - g128 == pytest.approx(experts * (2 / 32 - 2 / 128) / 2, rel=0.02)  # per GPU at TP 2
