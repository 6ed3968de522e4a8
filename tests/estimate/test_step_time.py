"""The step-time model, one operator term at a time, against arithmetic written out here by hand.

Each test builds the model for a real catalog model and GPU, then recomputes one term from the inputs the
model is documented to use (bytes from the memory model, efficiencies from data/speed/kernels.yaml and the
engine profile, ceilings from the GPU catalog) and compares. A change to the arithmetic fails here; a change to
a coefficient changes both sides (tests/estimate/test_speed_golden.py pins the numbers themselves).
"""

from __future__ import annotations

import math

import pytest

from infer_advisor.estimate.memory import kv_bytes_per_token_per_gpu, weight_bytes_by_group
from infer_advisor.estimate.speed_data import engine_speed, interp_log, kernels
from infer_advisor.estimate.step_time import MOE_BW_BY_ROWS_PER_EXPERT, MOE_TILE_ROWS, StepShape, build_step_model, decode_shape, prefill_shape
from infer_advisor.hardware import lookup_gpu
from infer_advisor.model_facts import resolve_model

H200 = lookup_gpu("H200")
A100 = lookup_gpu("A100-80GB")
LLAMA8B = resolve_model("meta-llama/Llama-3.1-8B", source="catalog")
MIXTRAL = resolve_model("mistralai/Mixtral-8x7B-v0.1", source="catalog")


def _sm(model=LLAMA8B, gpu=H200, engine="vllm", **kw):
    return build_step_model(model, gpu=gpu, engine=engine, **kw)


def test_dense_gemm_term_memory_bound_at_batch_1():
    sm = _sm()
    k, prof = kernels().gemm["bf16"], engine_speed("vllm")
    layer_bytes = weight_bytes_by_group(LLAMA8B, "none", "bfloat16")["linear"] / LLAMA8B.num_layers
    bw = k.bandwidth_efficiency * prof.gemm_scale.value * H200.memory_bandwidth_bytes_per_s
    expected = 4 * k.launch_s + layer_bytes / bw  # qkv, o, gate_up, down; one row is far from compute bound
    assert sm.layer_terms(1)["weights_gemm"] == pytest.approx(expected, rel=1e-12)


def test_dense_gemm_term_compute_bound_at_8192_rows():
    sm = _sm()
    k, prof = kernels().gemm["bf16"], engine_speed("vllm")
    params_layer = (LLAMA8B.params.linear - LLAMA8B.params.expert_linear) / LLAMA8B.num_layers
    eta = interp_log(k.compute_efficiency_by_tokens, 8192) * min(prof.gemm_scale.value, 1.0)
    expected = 4 * k.launch_s + 8192 * 2 * params_layer / (eta * H200.tflops["bf16"] * 1e12)
    assert sm.layer_terms(8192)["weights_gemm"] == pytest.approx(expected, rel=1e-12)


def test_fp8_weights_use_the_fp8_curve_on_hopper_and_bf16_compute_on_ampere():
    h = _sm(quantization="fp8")
    a = _sm(gpu=A100, quantization="fp8")
    rows = 4096
    params_layer = LLAMA8B.params.linear / LLAMA8B.num_layers
    k8 = kernels().gemm["fp8"]
    prof = engine_speed("vllm")
    eta8 = interp_log(k8.compute_efficiency_by_tokens, rows) * prof.gemm_scale.value
    compute8 = rows * 2 * params_layer / (eta8 * H200.tflops["fp8"] * 1e12)
    assert h.layer_terms(rows)["weights_gemm"] == pytest.approx(4 * k8.launch_s + compute8, rel=1e-9)
    assert a.gemm_peak == A100.tflops["bf16"] * 1e12  # Ampere: FP8 weights, 16-bit compute (FP8-Marlin)


def test_moe_expert_term_counts_distinct_experts():
    sm = _sm(model=MIXTRAL, tp=2)
    e, k = MIXTRAL.num_experts, MIXTRAL.num_experts_per_token
    g = kernels().grouped_gemm
    prof = engine_speed("vllm")
    expert_bytes_layer = weight_bytes_by_group(MIXTRAL, "none", "bfloat16", split_experts=True)["expert_linear"] / MIXTRAL.num_layers / 2
    for rows in (1, 3):
        touched = e * (1 - (1 - k / e) ** rows)
        bw = min(g.bandwidth_efficiency * prof.gemm_scale.value * prof.moe_scale.value, 0.98) * H200.memory_bandwidth_bytes_per_s
        bw *= interp_log(MOE_BW_BY_ROWS_PER_EXPERT, rows * k / touched)  # fewer rows per expert: lower bandwidth (measured)
        assert sm.experts_touched(rows) == pytest.approx(touched, rel=1e-12)
        assert sm.layer_terms(rows)["experts"] == pytest.approx(g.launch_s + expert_bytes_layer * touched / e / bw, rel=1e-9)


def test_moe_expert_flops_are_padded_to_the_kernel_tile():
    sm = _sm(model=MIXTRAL, tp=2)
    rows = 4096  # all 8 experts touched, 1024 rows each: compute bound, no padding beyond a whole tile
    touched = sm.experts_touched(rows)
    per_expert = rows * MIXTRAL.num_experts_per_token / touched
    eta = sm.grouped_scale * interp_log(sm.gemm_table, per_expert) * sm.expert_compute_scale
    padded = touched * max(MOE_TILE_ROWS, math.ceil(per_expert / MOE_TILE_ROWS) * MOE_TILE_ROWS)
    flops = max(rows * MIXTRAL.num_experts_per_token, padded) * sm.expert_flops_per_row / MIXTRAL.num_experts_per_token
    bound = max(sm.expert_bytes * touched / sm.experts / sm.grouped_bw, flops / (eta * sm.expert_peak))
    assert sm.layer_terms(rows)["experts"] == pytest.approx(sm.grouped_launch + bound, rel=1e-9)


def test_moe_routing_term_is_small_kernels_plus_permuted_activations():
    sm = _sm(model=MIXTRAL)
    rows = 64
    moved = 2 * 2 * rows * MIXTRAL.num_experts_per_token * MIXTRAL.hidden_size * 2  # permute + combine, read + write, bf16
    expected = engine_speed("vllm").moe_routing_kernels * kernels().small_kernel.seconds_per_kernel + moved / (0.9 * H200.memory_bandwidth_bytes_per_s)
    assert sm.layer_terms(rows)["moe_routing"] == pytest.approx(expected, rel=1e-12)
    assert _sm().layer_terms(rows)["moe_routing"] == 0.0  # dense model: no routing


def test_mxfp4_experts_dequantise_on_hopper_and_run_natively_on_blackwell():
    gptoss = resolve_model("openai/gpt-oss-120b", source="catalog")
    hopper = build_step_model(gptoss, gpu=H200, engine="vllm", quantization="mxfp4-experts")
    blackwell = build_step_model(gptoss, gpu=lookup_gpu("B200"), engine="vllm", quantization="mxfp4-experts")
    assert "experts: mxfp4-hopper" in hopper.sources["weights_gemm"] and "experts: mxfp4 " in blackwell.sources["weights_gemm"]
    groups = weight_bytes_by_group(gptoss, "mxfp4-experts", "bfloat16", split_experts=True)
    assert hopper.expert_bytes == pytest.approx(groups["expert_linear"] / gptoss.num_layers, rel=1e-12)  # 4.25-bit experts
    assert hopper.dense_bytes == pytest.approx(groups["linear"] / gptoss.num_layers, rel=1e-12)  # bf16 attention
    # a batch-1 decode step reads the 4 experts its token routes to, not all 128
    assert hopper.decode_bytes(1, 1024) < hopper.layers_per_stage * hopper.expert_bytes * 8 / 128 + hopper.head_bytes + \
        hopper.layers_per_stage * hopper.dense_bytes + 1024 * (hopper.kv_full_bytes_per_token + hopper.kv_window_bytes_per_token)


def test_host_terms_come_from_the_engine_version_range():
    v0 = build_step_model(LLAMA8B, gpu=H200, engine="vllm", engine_version="0.5.4")
    v1_async = build_step_model(LLAMA8B, gpu=H200, engine="vllm", engine_version="0.12.0")
    s = decode_shape(8, 1024)
    for sm, version in ((v0, "0.5.4"), (v1_async, "0.12.0")):
        prof = engine_speed("vllm", version)
        terms = sm.terms(s)
        assert terms["engine_step_overhead"] == prof.step_overhead_s.value > 0
        assert terms["engine_per_sequence"] == pytest.approx(8 * prof.per_sequence_s.value) and prof.per_sequence_s.value > 0
        assert sm.request_overhead_s == prof.request_overhead_s.value > 0
    assert v0.step_overhead_s > v1_async.step_overhead_s  # V0's synchronous loop against async scheduling
    assert set(v1_async.sources) >= set(v1_async.terms(s))  # every term has a source for --explain


def test_decode_attention_reads_every_sequence_kv():
    sm = _sm()
    a = kernels().attention.decode
    prof = engine_speed("vllm")
    full, _ = kv_bytes_per_token_per_gpu(LLAMA8B, 2, 1, 1)
    shape = decode_shape(16, 2000)
    bw = min(a.bandwidth_efficiency * prof.attention_scale.value, 0.98) * H200.memory_bandwidth_bytes_per_s
    expected = LLAMA8B.num_layers * a.launch_s + 16 * 2000 * full / bw
    assert sm.attention_terms(shape)["attention_decode"] == pytest.approx(expected, rel=1e-12)


def test_prefill_attention_flops_grow_with_the_square_of_the_prompt():
    sm = _sm()
    pre = kernels().attention.prefill
    prof = engine_speed("vllm")
    for n in (1024, 4096):
        shape = prefill_shape(1, n)
        pairs = n * (n + 1) / 2
        eta = interp_log(pre.compute_efficiency_by_tokens, n) * prof.prefill_attention_scale.value
        flops = 4 * LLAMA8B.num_attention_heads * LLAMA8B.head_dim * pairs * LLAMA8B.num_layers
        expected = LLAMA8B.num_layers * kernels().attention.decode.launch_s + flops / (eta * H200.tflops["bf16"] * 1e12)
        assert sm.attention_terms(shape)["attention_prefill"] == pytest.approx(expected, rel=1e-12)


def test_tensor_parallel_allreduce_is_the_faster_of_two_algorithms():
    sm = _sm(tp=4)
    rows = 64
    msg = rows * LLAMA8B.hidden_size * 2
    moved = 2 * 3 / 4 * msg
    one_shot = sm.allreduce_latency + moved / sm.small_message_bw
    ring = sm.nccl_latency + moved / sm.link_bw
    assert sm.layer_terms(rows)["tp_communication"] == pytest.approx(2 * min(one_shot, ring), rel=1e-12)
    assert _sm().layer_terms(rows)["tp_communication"] == 0.0


def test_tensor_parallel_over_nodes_adds_the_networks_allreduce():
    """TP16 over two 8-GPU nodes: each all-reduce is the in-node one over 8 ranks plus the network's, once."""
    from infer_advisor.estimate.speed_data import engine_speeds

    net = engine_speeds().links["network"]
    over = _sm(tp=16, nodes=2)
    within = _sm(tp=8)
    rows = 4
    msg = rows * LLAMA8B.hidden_size * 2
    network = net.allreduce_latency_s + 2 * (2 - 1) / 2 * msg / (net.bus_efficiency * 50e9)
    assert over.tp_nodes == 2 and within.tp_nodes == 1 and _sm(tp=8, pp=2, nodes=2).tp_nodes == 1
    assert over.layer_terms(rows)["tp_communication"] == pytest.approx(2 * (within._allreduce(msg, 8) + network), rel=1e-12)


def test_mxfp4_experts_run_marlin_below_sm90():
    """vLLM sends MXFP4 MoE to its Marlin (W4A16) kernel below compute capability 9 (get_mxfp4_backend)."""
    gptoss = resolve_model("openai/gpt-oss-120b", source="catalog")
    ampere = build_step_model(gptoss, gpu=A100, engine="vllm", quantization="mxfp4-experts")
    assert "experts: w4a16" in ampere.sources["weights_gemm"]


def test_small_kernels_cost_launch_plus_bytes():
    sm = _sm()
    n = engine_speed("vllm").small_kernels_per_layer
    t = kernels().small_kernel.seconds_per_kernel
    rows = 256
    expected = n * (t + 3 * rows * LLAMA8B.hidden_size * 2 / (0.9 * H200.memory_bandwidth_bytes_per_s))
    assert sm.layer_terms(rows)["small_kernels"] == pytest.approx(expected, rel=1e-12)


def test_pipeline_parallel_pass_is_every_stage_in_turn():
    one = _sm()
    two = _sm(pp=2)
    s = decode_shape(8, 512)
    assert two.layers_per_stage == math.ceil(LLAMA8B.num_layers / 2)
    assert two.seconds(s) == pytest.approx(2 * two.stage_seconds(s))
    assert two.terms(s)["pp_transfer"] > 0 and one.terms(s)["pp_transfer"] == 0


def test_engine_without_cuda_graphs_waits_for_host_launches():
    sm = _sm(engine="transformers")
    s = decode_shape(1, 100)
    launches = sm.kernel_count(1, 0) * engine_speed("transformers").host_launch_s
    assert sm.terms(s)["host_launch_wait"] == pytest.approx(max(0.0, launches - sum(
        v for k, v in sm.terms(s).items() if k not in ("host_launch_wait", "engine_step_overhead", "engine_per_sequence"))))
    assert sm.seconds(s) >= launches


@pytest.mark.parametrize("shape", [decode_shape(1, 10), decode_shape(64, 3000), prefill_shape(3, 700, prefix=100),
                                   StepShape(decode=40, decode_context=40_000, prefill_tokens=2000, prefill_pairs=2000 * 3000,
                                             prefill_chunks=1, completes=0)])
@pytest.mark.parametrize("engine", ["vllm", "llama.cpp", "transformers", "trtllm"])
def test_terms_add_up_to_seconds(shape, engine):
    sm = _sm(engine=engine, tp=2 if engine in ("vllm", "trtllm") else 1)
    assert sum(sm.terms(shape).values()) == pytest.approx(sm.seconds(shape), rel=1e-12)


def test_cpu_plan_uses_cpu_bandwidth_and_no_launches():
    sm = build_step_model(LLAMA8B, gpu=None, engine="llama.cpp", quantization="gguf-q4_k_m", cpu_cores=8)
    assert sm.gemm_launch == 0 and sm.small_kernels == 0
    assert sm.seconds(decode_shape(1, 100)) > 0.02  # 4.9 GB of weights over a DDR bus: tens of milliseconds


def test_llamacpp_f16_weights_switch_kernels_above_one_row():
    # ggml-cuda: f16 mat-vec for one row on Ampere and newer, tensor-core tiles (mmf / cuBLAS) for more
    from infer_advisor.estimate.speed_data import engine_speeds

    sm = _sm(engine="llama.cpp", quantization="gguf-f16")
    k, wk = kernels().gemm["bf16"], engine_speeds().weight_kernels["ggml-f16"]
    scale = engine_speed("llama.cpp", gpu="H200").gemm_scale.value
    layer_bytes = weight_bytes_by_group(LLAMA8B, "gguf-f16", "bfloat16")["linear"] / LLAMA8B.num_layers
    launch = 4 * k.launch_s * wk.launch_scale
    one = launch + layer_bytes / (k.bandwidth_efficiency * wk.bandwidth_scale * scale * H200.memory_bandwidth_bytes_per_s)
    two = launch + layer_bytes / (k.bandwidth_efficiency * wk.batched_bandwidth_scale * scale * H200.memory_bandwidth_bytes_per_s)
    assert sm.layer_terms(1)["weights_gemm"] == pytest.approx(one, rel=1e-12)
    assert sm.layer_terms(2)["weights_gemm"] == pytest.approx(two, rel=1e-12)
    assert two > 1.3 * one  # measured: 7.1 ms per step at two sequences against 4.9 ms at one (batched-bench, H200)


def test_llama_server_samples_each_slot_on_the_host_over_the_vocabulary():
    sm = _sm(engine="llama.cpp", quantization="gguf-f16")
    per_vocab = engine_speed("llama.cpp", gpu="H200").sampler_s_per_vocab.value
    terms = sm.terms(decode_shape(4, 1200))
    assert terms["engine_sampling"] == pytest.approx(4 * LLAMA8B.vocab_size * per_vocab, rel=1e-12)
    prompt = sm.terms(prefill_shape(1, 1000))  # a prompt samples its first token in its last chunk
    assert prompt["engine_sampling"] == pytest.approx(LLAMA8B.vocab_size * per_vocab, rel=1e-12)
    assert "engine_sampling" not in _sm().terms(decode_shape(4, 1200))  # vLLM samples on the GPU


def test_llama_server_prompt_batch_host_time_is_inside_the_step():
    # measured on the H200 (calls A-E, benchmarks/gpu/server_log_terms.py): the server's prompt eval exceeds the GPU
    # prompt time by a + b x tokens, inside its loop: it lengthens the step the other slots' decodes share
    prof = engine_speed("llama.cpp", gpu="H200")
    sm = _sm(engine="llama.cpp", quantization="gguf-f16")
    want = 2 * prof.prompt_host_s.value + 2 * 600 * prof.prompt_host_s_per_token.value
    assert sm.terms(prefill_shape(2, 600))["engine_prompt_host"] == pytest.approx(want, rel=1e-12)
    mixed = StepShape(decode=3, decode_context=3000, prefill_tokens=1137, prefill_pairs=1137 * 569, prefill_chunks=1, completes=1)
    assert sm.seconds(mixed) - sm.seconds(StepShape(**{**mixed.__dict__, "prefill_tokens": 0, "prefill_pairs": 0,
                                                         "prefill_chunks": 0, "completes": 0})) > 0.0045 + 1137 * 8e-6
    assert "engine_prompt_host" not in sm.terms(decode_shape(4, 1200))
    assert "engine_prompt_host" not in _sm(engine="llama.cpp", quantization="gguf-f16", gpu=A100).terms(prefill_shape(1, 600))
    assert 0.002 < prof.request_overhead_s.value < 0.006  # outside the slot only: HTTP, tokenisation, the first send


def test_llama_server_busy_slot_steps_match_the_servers_own_on_calls_a_to_f():
    # RETROSPECTIVE (fitted on calls A-F, benchmarks/gpu/refit_llamacpp_server.py): the server's own decode step at
    # 1-4 busy slots, regressed from its log, against the model's; the per-slot host term stays physical (0.2-1 ms)
    import json
    from pathlib import Path

    prof = engine_speed("llama.cpp", gpu="H200")
    per_slot = prof.per_sequence_s.value + LLAMA8B.vocab_size * prof.sampler_s_per_vocab.value
    assert 2e-4 < per_slot < 1e-3 and prof.sampler_s_per_vocab != engine_speed("llama.cpp").sampler_s_per_vocab
    root = Path(__file__).resolve().parents[2] / "benchmarks/results/h200/llamacpp-refit-a-f.json"
    runs = json.loads(root.read_text())["runs"]
    assert sorted(runs) == list("ABCDEF")
    for run in runs.values():
        sm = build_step_model(resolve_model(run["model"], source="catalog"), gpu=H200, engine="llama.cpp", quantization="gguf-f16")
        for busy, measured_ms in enumerate(run["server_decode_ms_1_4"], start=1):
            assert sm.seconds(decode_shape(busy, 1237)) * 1e3 == pytest.approx(measured_ms, rel=0.08)


def test_coefficients_measured_on_a_gpu_replace_the_fitted_ones_there_only():
    here, there, wide = engine_speed("llama.cpp", gpu="H200"), engine_speed("llama.cpp", gpu="A100-80GB"), engine_speed("llama.cpp")
    assert here.step_overhead_s.kind in ("measured", "assumed") and here.step_overhead_s != wide.step_overhead_s
    assert there.step_overhead_s == wide.step_overhead_s and there.gemm_scale == wide.gemm_scale
    assert any("measured on H200" in n for n in _sm(engine="llama.cpp", quantization="gguf-f16").notes)
    assert not any("measured on" in n for n in _sm(engine="llama.cpp", quantization="gguf-f16", gpu=A100).notes)
