"""The memory model against hand-computed figures (issue: core advisor, 'Done means')."""

import pytest

from infer_advisor.engines.memory import memory_profile
from infer_advisor.engines.profiles import engine_profile
from infer_advisor.estimate.memory import estimate_memory, kv_bytes_per_token_per_gpu, weights_bytes
from infer_advisor.model_facts import resolve_model

GiB = 2**30


@pytest.fixture(scope="module")
def llama2_7b():
    return resolve_model("meta-llama/Llama-2-7b-hf", source="catalog")


def test_fp16_weights_are_two_bytes_per_parameter(llama2_7b):
    assert weights_bytes(llama2_7b, "none", "float16") == 2 * llama2_7b.num_parameters
    assert weights_bytes(llama2_7b, "none", "float32") == 4 * llama2_7b.num_parameters


def test_kv_bytes_per_token_match_the_issue():
    assert resolve_model("meta-llama/Llama-2-7b-hf", source="catalog").kv_cache_bytes_per_token(2) == 524_288
    assert resolve_model("meta-llama/Meta-Llama-3-8B", source="catalog").kv_cache_bytes_per_token(2) == 131_072


def test_awq_keeps_embeddings_and_lm_head_in_16_bit(llama2_7b):
    p = llama2_7b.params
    expected = p.linear * (0.5 + (2 + 0.5) / 128) + (p.embedding + p.lm_head + p.other) * 2
    assert weights_bytes(llama2_7b, "awq", "float16") == int(expected)


def test_tensor_parallel_splits_kv_heads_and_replicates_below_one_head():
    llama3 = resolve_model("meta-llama/Meta-Llama-3-8B", source="catalog")  # 8 KV heads
    full, _ = kv_bytes_per_token_per_gpu(llama3, 2, tp=1, pp=1)
    assert full == 131_072
    assert kv_bytes_per_token_per_gpu(llama3, 2, tp=4, pp=1)[0] == 131_072 / 4
    # TP 16 > 8 KV heads: each rank still holds one whole KV head (replication).
    assert kv_bytes_per_token_per_gpu(llama3, 2, tp=16, pp=1)[0] == 131_072 / 8


def test_vllm_reserve_accounting_by_hand(llama2_7b):
    """vLLM 0.33 (the pinned version): 0.92 x total; weights, the transient activation peak, non-torch memory and the
    profiled CUDA-graph pool come out of it; NCCL and the CUDA context do not (taken before the baseline)."""
    vllm = engine_profile("vllm")
    mp = memory_profile("vllm")
    est = estimate_memory(llama2_7b, gpu_memory_bytes=80 * GiB, engine=vllm, dtype="bfloat16", context=4096, concurrency=8,
                          request_tokens=4096, max_num_batched_tokens=2048, max_num_seqs=256)
    weights = 2 * llama2_7b.num_parameters + 4096 * 128 * 2  # + the rotary cos/sin table (4096 positions x 128, bf16)
    # vLLM's profile run: max_num_batched_tokens through one layer (4 hidden + 3 intermediate copies at its peak); the
    # sampler runs after it on max_num_seqs rows (3.72 fp32 copies of the logits, beside the hidden states): the larger
    assert (mp.activation_hidden_copies, mp.activation_intermediate_copies, mp.activation_scale) == (4, 3, 1.0)
    assert mp.sampler_peak(None).logits_copies == 3.72 and mp.sampler_peak(None).after_forward
    activation = max(2048 * (4 * 4096 + 3 * 11008) * 2, 2048 * 4096 * 2 + 256 * 32000 * 4 * 3.72)
    # the graph pool: the first capture + one increment per layer for each of the 50 further sizes ([1, 2, 4, 8, ..., 512]:
    # 256 sequences x 2 reach the 512 ceiling)
    graphs = mp.cuda_graph_scaling.first_capture_bytes + mp.cuda_graph_scaling.per_layer_per_size_bytes * 32 * 50
    overhead = mp.non_torch_bytes + graphs
    kv_space = 0.92 * 80 * GiB - weights - activation - overhead
    assert mp.memory_fraction == 0.92 and mp.cuda_graphs_in_budget and not mp.comm_in_budget and not mp.context_in_budget
    assert est.total_bytes_per_gpu == int(0.92 * 80 * GiB)
    assert est.activation_bytes_per_gpu == int(activation)
    assert est.kv_cache_bytes_per_gpu == int(kv_space)
    expected_tokens = int(kv_space // 524_288)
    assert est.kv_cache_tokens == expected_tokens - expected_tokens % 16
    assert est.max_concurrency == int(kv_space // (524_288 * 4096))
    assert est.outside_budget_bytes_per_gpu == {"cuda_context": mp.cuda_context_bytes}
    assert est.fits


def test_vllm_v0_profiles_max_model_len_and_keeps_graphs_outside(llama2_7b):
    """vLLM 0.6.4-0.7 (V0): the profile batch is max(max_model_len, 2048) tokens (2048 with chunked prefill above
    32K), CUDA graphs are captured after the KV cache (outside the budget), NCCL counts under TP."""
    vllm = engine_profile("vllm")
    v0 = memory_profile("vllm", "0.7.3")
    est = estimate_memory(llama2_7b, gpu_memory_bytes=80 * GiB, engine=vllm, memory=v0, dtype="float16", context=4096, max_num_seqs=256)
    assert est.activation_tokens == 4096 and est.sampled_rows == 256
    # the forward's peak or, after it, the hidden states + the PyTorch top-k/top-p sampler's 9.6 fp32 copies, whichever is larger
    forward, sampler = 4096 * (4 * 4096 + 3 * 11008) * 2, 4096 * 4096 * 2 + 256 * 32000 * 4 * 9.6
    assert est.activation_bytes_per_gpu == int(max(forward, sampler))
    tp2 = estimate_memory(llama2_7b, gpu_memory_bytes=80 * GiB, engine=vllm, memory=v0, dtype="float16", context=4096, max_num_seqs=256, tp=2)
    assert tp2.activation_bytes_per_gpu == int(max(4096 * (4 * 4096 + 3 * 11008 / 2) * 2, sampler))  # the MLP is sharded, the sampler not
    assert est.overhead_bytes_per_gpu["cuda_graphs"] == 0 and est.outside_budget_bytes_per_gpu["cuda_graphs"] == v0.cuda_graph_bytes
    long = estimate_memory(resolve_model("meta-llama/Llama-3.1-8B", source="catalog"), gpu_memory_bytes=80 * GiB, engine=vllm, memory=v0,
                           context=65536, max_num_seqs=256)
    assert long.activation_tokens == 2048  # chunked prefill switched on by default above 32K
    tp2 = estimate_memory(llama2_7b, gpu_memory_bytes=80 * GiB, engine=vllm, memory=v0, dtype="float16", context=4096, tp=2, interconnect="nvlink")
    pcie = estimate_memory(llama2_7b, gpu_memory_bytes=80 * GiB, engine=vllm, memory=v0, dtype="float16", context=4096, tp=2, interconnect="pcie")
    assert tp2.overhead_bytes_per_gpu["nccl"] == v0.comm.nvlink and pcie.overhead_bytes_per_gpu["nccl"] == v0.comm.pcie
    # at TP 2 the sharded forward falls below the sampler's full-vocab term (PR 10511: 1.26 GiB at TP 1 and 2, the sampler's peak)
    assert tp2.activation_bytes_per_gpu == int(sampler)


def test_v0_gives_sliding_window_layers_full_length_kv():
    gemma = resolve_model("google/gemma-2-9b", source="catalog")
    assert gemma.sliding_window and gemma.sliding_kv_elements_per_token
    vllm = engine_profile("vllm")
    v0 = estimate_memory(gemma, gpu_memory_bytes=80 * GiB, engine=vllm, memory=memory_profile("vllm", "0.6.3"), context=8192)
    v1 = estimate_memory(gemma, gpu_memory_bytes=80 * GiB, engine=vllm, memory=memory_profile("vllm", "0.19.0"), context=8192)
    # per-token cost at 8192 tokens: V0 counts every layer for all 8192, V1 caps the sliding half at the 4096 window
    full_and_sliding = gemma.kv_cache_bytes_per_token(2) + gemma.sliding_kv_elements_per_token * 2
    assert v0.kv_cache_bytes_per_gpu / v0.kv_cache_tokens == pytest.approx(full_and_sliding, rel=1e-3)
    assert v1.kv_cache_tokens > v0.kv_cache_tokens


def test_llamacpp_caches_f16_and_counts_its_slots():
    """llama.cpp keeps the KV cache in f16 by default whatever the weights dtype (float32 on CPU), and its cache is
    the n_ctx cells of its slots: tokens, slots and concurrency are one figure."""
    mistral = resolve_model("mistralai/Mistral-7B-v0.3", source="catalog")
    cpp = engine_profile("llama.cpp")
    est = estimate_memory(mistral, gpu_memory_bytes=80 * GiB, engine=cpp, quantization="gguf-f16", dtype="float32", context=32768, concurrency=16)
    assert est.kv_cache_bytes_per_token == mistral.kv_cache_bytes_per_token(2)
    assert est.max_concurrency == 4 and est.kv_cache_tokens == 4 * 32768
    assert est.kv_cache_bytes_per_gpu == 4 * 32768 * mistral.kv_cache_bytes_per_token(2)
    # --kv-cache-dtype fp8 is llama.cpp's 8-bit cache, q8_0: 34 bytes per 32 values
    q8 = estimate_memory(mistral, gpu_memory_bytes=80 * GiB, engine=cpp, quantization="gguf-f16", context=32768, kv_cache_dtype="fp8")
    assert q8.kv_cache_bytes_per_token == mistral.kv_cache_elements_per_token * 34 / 32


def test_peak_accounting_grows_with_concurrency(llama2_7b):
    hf = engine_profile("transformers")
    one = estimate_memory(llama2_7b, gpu_memory_bytes=141 * GiB, engine=hf, dtype="float16", context=712, concurrency=1, input_tokens=512)
    many = estimate_memory(llama2_7b, gpu_memory_bytes=141 * GiB, engine=hf, dtype="float16", context=712, concurrency=32, input_tokens=512)
    assert many.kv_cache_bytes_per_gpu == 32 * one.kv_cache_bytes_per_gpu == 32 * 712 * 524_288
    assert many.total_bytes_per_gpu > one.total_bytes_per_gpu


def test_does_not_fit_reports_shortfall(llama2_7b):
    est = estimate_memory(llama2_7b, gpu_memory_bytes=8 * GiB, engine=engine_profile("vllm"), dtype="float16", context=4096, concurrency=1)
    assert not est.fits
    assert est.shortfall_bytes_per_gpu > 0
    assert est.kv_cache_tokens == 0


def test_tensorrt_llm_reserve_free_accounting_with_its_engines_yaml_profile(llama2_7b):
    """TensorRT-LLM (no version ranges: its engines.yaml profile) sizes weights, activations and overheads first, then
    its KV cache takes free_gpu_memory_fraction (0.9) of what is still free (merge of issue 12's reserve-free
    accounting with issue 11's memory profiles)."""
    trt = engine_profile("trtllm")
    mp = memory_profile("trtllm")
    est = estimate_memory(llama2_7b, gpu_memory_bytes=80 * GiB, engine=trt, dtype="bfloat16", context=4096, concurrency=8)
    assert est.memory_profile == mp.label and est.accounting == "reserve-free"
    weights = 2 * llama2_7b.num_parameters
    fixed = weights + est.activation_bytes_per_gpu + trt.non_torch_bytes + trt.cuda_graph_bytes  # one GPU: no NCCL
    assert sum(est.overhead_bytes_per_gpu.values()) == trt.non_torch_bytes + trt.cuda_graph_bytes
    assert est.budget_bytes_per_gpu == int(fixed + (80 * GiB - fixed) * 0.9)
    assert est.kv_cache_bytes_per_gpu == int((80 * GiB - fixed) * 0.9)
    assert est.outside_budget_bytes_per_gpu == {}


def test_draft_head_is_added_to_calibrated_target_weights(llama2_7b):
    """A start-up log's weights figure replaces the target model's weights; a speculative draft head is on top of it."""
    from infer_advisor.estimate.calibration import MemoryCalibration

    vllm = engine_profile("vllm")
    cal = MemoryCalibration(engine="vllm", engine_version="0.33.0", gpu="H100-80GB", created="-", source="test.log",
                            model=llama2_7b.name, weights_bytes=13 * GiB)
    kw = dict(gpu_memory_bytes=80 * GiB, engine=vllm, dtype="bfloat16", context=4096, calibration=cal)
    plain = estimate_memory(llama2_7b, **kw)
    with_draft = estimate_memory(llama2_7b, draft_params=500_000_000, **kw)
    assert plain.weights_bytes_per_gpu == 13 * GiB and plain.figure_sources["weights"] == "calibrated (log)"
    assert with_draft.weights_bytes_per_gpu == 13 * GiB + 2 * 500_000_000 == 13 * GiB + with_draft.draft_weights_bytes_per_gpu
