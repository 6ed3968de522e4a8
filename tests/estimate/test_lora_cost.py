"""The batched-LoRA step term (estimate/lora_cost.py) counted by hand, the adapter mix, and its place in the step model."""

from __future__ import annotations

import json

import pytest

from infer_advisor.engines.lora import lora_kernels
from infer_advisor.errors import RequestError
from infer_advisor.estimate.lora_cost import AdapterMix, adapter_mix, lora_step_cost
from infer_advisor.estimate.step_time import build_step_model, decode_shape
from infer_advisor.hardware import lookup_gpu
from infer_advisor.model_facts import resolve_model
from infer_advisor.simulate.workload import adapter_counts


@pytest.fixture(scope="module")
def llama8b():
    return resolve_model("meta-llama/Llama-3.1-8B")


@pytest.fixture(scope="module")
def h200():
    return lookup_gpu("H200")


def test_expected_distinct_adapters():
    mix = AdapterMix.uniform(4)
    assert mix.expected_distinct(1) == pytest.approx(1.0)
    assert mix.expected_distinct(2) == pytest.approx(4 * (1 - 0.75**2))  # 1.75
    assert mix.expected_distinct(1000) == pytest.approx(4.0)
    skewed = AdapterMix.from_counts({"a": 90, "b": 10, None: 100})  # half the requests run the base model
    assert skewed.lora_share == pytest.approx(0.5)
    assert skewed.expected_distinct(1) == pytest.approx(0.5)
    assert adapter_mix(8, None) == AdapterMix.uniform(8)
    assert adapter_mix(8, {None: 5}) == AdapterMix.uniform(8)  # a column naming no adapter leaves the default


def test_v1_decode_term_by_hand(llama8b, h200):
    k = lora_kernels()
    cost = lora_step_cost(llama8b, gpu=h200, engine="vllm", engine_version="0.19.0", slots=4, rank=16, tp=1, pp=1,
                          mix=AdapterMix.uniform(4))
    assert cost.kernels_per_layer == 12  # V1: zeroing, shrink, expand for each of qkv, o, gate_up, down
    eps = 81_920  # per layer: 3h + (q + 2kv) + q + h + 2h + 2i + i + h
    act = (4096 + 4096 + 4096 + 14336) + 2 * (6144 + 4096 + 28672 + 4096)  # inputs read, outputs read and written
    assert cost.elements_per_rank == eps and cost.activation_elements == act
    d = 4 * (1 - 0.75**64)
    slot = 16 * eps * 2
    reads = max(d, 64 / 32)  # one read of an adapter's weights per 32-row tile
    memory = (d * slot + 64 * act * 2) / (k.bandwidth_efficiency.value * h200.memory_bandwidth_bytes_per_s) + (reads - d) * slot / (
        k.cache_bandwidth_ratio.value * h200.memory_bandwidth_bytes_per_s)
    flops = 2 * 64 * 16 * eps / (k.compute_efficiency.value * h200.tflops["bf16"] * 1e12)
    per_layer = 12 * k.kernel_s.value + d * k.adapter_s.value + max(memory, flops)
    assert cost.seconds(64, 0, 64) == pytest.approx(32 * per_layer)
    assert cost.seconds(0, 0, 0) == 0.0
    half = lora_step_cost(llama8b, gpu=h200, engine="vllm", engine_version="0.19.0", slots=1, rank=16, tp=1, pp=1,
                          mix=AdapterMix.from_counts({"a": 1, None: 1}))
    full = lora_step_cost(llama8b, gpu=h200, engine="vllm", engine_version="0.19.0", slots=1, rank=16, tp=1, pp=1,
                          mix=AdapterMix.uniform(1))
    assert half.seconds(1, 0, 1) < 0.6 * full.seconds(1, 0, 1)  # half the single requests run the base model: no kernels


def test_term_grows_with_rank_adapters_and_tokens(llama8b, h200):
    def term(rank, adapters, rows, version="0.19.0"):
        c = lora_step_cost(llama8b, gpu=h200, engine="vllm", engine_version=version, slots=min(adapters, 16), rank=rank, tp=1, pp=1,
                           mix=AdapterMix.uniform(adapters))
        return c.seconds(rows, 0, rows)

    assert term(8, 1, 64) < term(128, 1, 64)
    assert term(16, 1, 256) < term(16, 16, 256)
    assert term(16, 4, 16) < term(16, 4, 256)
    assert term(16, 4, 256, "0.6.5") > term(16, 4, 256)  # V0 decode re-reads the weights per token, 21 kernels a layer


def test_step_model_adds_the_term_and_counts_it(llama8b, h200):
    cost = lora_step_cost(llama8b, gpu=h200, engine="vllm", engine_version="0.19.0", slots=1, rank=16, tp=1, pp=1,
                          mix=AdapterMix.uniform(1))
    base = build_step_model(llama8b, gpu=h200, engine="vllm")
    with_lora = build_step_model(llama8b, gpu=h200, engine="vllm", lora=cost)
    shape = decode_shape(32, 2048)
    assert with_lora.seconds(shape) == pytest.approx(base.seconds(shape) + cost.seconds(32, 0, 32))
    assert with_lora.terms(shape)["lora"] == pytest.approx(cost.seconds(32, 0, 32))
    assert with_lora.kernel_count(32, 0) == base.kernel_count(32, 0) + 32 * 12
    assert "lora" in with_lora.sources
    assert lora_step_cost(llama8b, gpu=h200, engine="llama.cpp", engine_version="b5000", slots=1, rank=16, tp=1, pp=1,
                          mix=AdapterMix.uniform(1)) is None  # no LoRA facts for the engine
    sglang = lora_step_cost(llama8b, gpu=h200, engine="sglang", engine_version="0.5.9", slots=2, rank=16, tp=1, pp=1,
                            mix=AdapterMix.uniform(1))
    assert sglang.kernels_per_layer == 8  # csgmv: one shrink and one expand per module, no zeroing


def test_trace_adapter_column(tmp_path):
    trace = tmp_path / "t.jsonl"
    lines = [{"input_tokens": 10, "output_tokens": 5, "adapter": name} for name in ("a", "a", "b", None)]
    lines.append({"input_tokens": 10, "output_tokens": 5})
    trace.write_text("\n".join(json.dumps(x) for x in lines))
    assert adapter_counts(trace) == {"a": 2, "b": 1, None: 2}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"input_tokens": 10, "output_tokens": 5, "adapter": "x\u202ey"}))
    with pytest.raises(RequestError, match="line 1: adapter"):
        adapter_counts(bad)
    bad.write_text(json.dumps({"input_tokens": 10, "output_tokens": 5, "adapter": 7}))
    with pytest.raises(RequestError, match="adapter must be a name"):
        adapter_counts(bad)


def test_v0_decode_prices_each_token_as_the_h200_bgmv_run(llama8b, h200):
    """vLLM V0 decodes with per-token BGMV programs: each token costs a fixed part plus its adapter's weights re-read
    (data/lora.yaml bgmv_*, fitted to lora_bgmv.json). On the H200 the per-token slope of the term stays near the run's
    2.40 us (rank 8) and 4.42 us (rank 64) per token and layer; the activation reads add about 0.24 us."""
    k = lora_kernels()
    bw = h200.memory_bandwidth_bytes_per_s

    def per_token(rank):
        c = lora_step_cost(llama8b, gpu=h200, engine="vllm", engine_version="0.6.5", slots=1, rank=rank, tp=1, pp=1,
                           mix=AdapterMix.uniform(1))
        assert c.decode_tile_rows == 1 and c.token_s == pytest.approx(k.bgmv_token_equivalent_bytes.value / bw)
        return (c.seconds(256, 0, 256) - c.seconds(16, 0, 16)) / 240 / c.layers

    for rank, measured in ((8, 2.40e-6), (64, 4.42e-6)):
        assert per_token(rank) == pytest.approx(measured, rel=0.12)
    assert per_token(64) / per_token(8) < 2.0  # mostly per-token work, not the rank-proportional re-read (8x)
