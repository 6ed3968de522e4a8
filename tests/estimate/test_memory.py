"""The memory model against hand-computed figures (issue: core advisor, 'Done means')."""

import pytest

from infer_advisor.engines import engine_profile
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
    vllm = engine_profile("vllm")
    est = estimate_memory(llama2_7b, gpu_memory_bytes=80 * GiB, engine=vllm, dtype="bfloat16", context=4096, concurrency=8, request_tokens=4096)
    weights = 2 * llama2_7b.num_parameters
    tokens = vllm.max_num_batched_tokens
    # vLLM's profile run: max_num_batched_tokens through one layer, plus max_num_seqs rows of fp32 logits, twice
    activation = tokens * (6 * 4096 + 3 * 11008) * 2 + vllm.max_num_seqs * 32000 * 4 * 2
    overhead = vllm.non_torch_bytes + vllm.cuda_graph_bytes
    kv_space = 0.9 * 80 * GiB - weights - activation - overhead
    assert est.total_bytes_per_gpu == int(0.9 * 80 * GiB)
    assert est.activation_bytes_per_gpu == int(activation)
    assert est.kv_cache_bytes_per_gpu == int(kv_space)
    expected_tokens = int(kv_space // 524_288)
    assert est.kv_cache_tokens == expected_tokens - expected_tokens % 16
    assert est.max_concurrency == int(kv_space // (524_288 * 4096))
    assert est.fits


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
