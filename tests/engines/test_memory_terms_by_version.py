"""Memory terms read from vLLM's code by version (issue 23, batch 3): the sampler's profile peak, NCCL on pre-Hopper
GPUs, and the Mistral-format vision encoder kept whole on every rank."""

from infer_advisor.engines.memory import memory_profile
from infer_advisor.engines.profiles import engine_profile
from infer_advisor.estimate.memory import estimate_memory
from infer_advisor.estimate.weights import mistral_format_vision, vision_tower_params
from infer_advisor.model_facts import resolve_model

GIB = 2**30


def test_sampler_path_by_version():
    # 0.10.1 / 0.11.0: FlashInfer sampler by default (summed 2-copy term); 0.11.1-0.16: PyTorch sort, peak after the forward
    assert memory_profile("vllm", "0.11.0").sampler_default == "flashinfer"
    assert memory_profile("vllm", "0.11.0").sampler_peak(None).logits_copies == 3.72
    assert memory_profile("vllm", "0.11.0").sampler_peak("pytorch").logits_copies == 9.6
    assert memory_profile("vllm", "0.11.1").sampler_peak(None).logits_copies == 9.6
    assert memory_profile("vllm", "0.16.0").sampler_peak("flashinfer").logits_copies == 3.72  # opt-in
    for version in ("0.17.0", "0.19.0", "0.24.0", "0.33.0"):  # Triton top-k/top-p; an unknown name falls back to it
        assert memory_profile("vllm", version).sampler_peak("flashinfer").logits_copies == 3.72
    assert memory_profile("vllm", "0.8.5").sampler_peak(None) is None  # one summed term


def test_sampler_read_from_the_log():
    from infer_advisor.engines.startup_log import parse_startup_log

    head = "INFO 09-13 [gpu_model_runner.py] Model loading took 14.2488 GiB and 4.42 seconds\n"
    tail = "INFO [kv_cache_utils.py] GPU KV cache size: 93,872 tokens\n"
    fi = parse_startup_log(head + "INFO [topk_topp_sampler.py] Using FlashInfer for top-p & top-k sampling.\n" + tail, "vllm")
    pt = parse_startup_log(head + "WARNING [topk_topp_sampler.py] FlashInfer is not available. Falling back to the PyTorch-native "
                           "implementation of top-p & top-k sampling. For the best performance, please install FlashInfer.\n" + tail, "vllm")
    assert (fi.sampler, pt.sampler) == ("flashinfer", "pytorch")
    assert parse_startup_log(head + tail, "vllm").sampler is None


def _estimate(model, version, tp=1, cc=9.0, util=0.9, sampler=None):
    return estimate_memory(
        model, gpu_memory_bytes=int(79.18 * GIB), engine=engine_profile("vllm"), tp=tp, context=16000,
        max_num_batched_tokens=8192, max_num_seqs=1024, memory_fraction=util, memory=memory_profile("vllm", version),
        engine_version=version, compute_capability=cc, sampler=sampler,
    )


def test_sampler_peak_is_the_larger_of_forward_and_sampler():
    qwen = resolve_model("Qwen/Qwen3-32B")
    est = _estimate(qwen, "0.13.0")
    # hidden states kept (8192 x 5120 x 2 B) + 9.6 fp32 copies of 1024 x 151,936 logits: 5.64 GiB in llm-d-benchmark's table
    expected = 8192 * qwen.hidden_size * 2 + 1024 * qwen.vocab_size * 4 * 9.6
    assert abs(est.activation_bytes_per_gpu - expected) < 2**20
    forward = 8192 * (4 * qwen.hidden_size + 3 * qwen.intermediate_size) * 2
    assert est.activation_bytes_per_gpu > forward  # here the sampler sets the peak, not the sum of both
    assert est.activation_bytes_per_gpu < forward + 1024 * qwen.vocab_size * 4 * 9.6
    # the same peak on 0.11.0 when its log says the PyTorch sampler ran (pip install without FlashInfer)
    assert _estimate(qwen, "0.11.0", sampler="pytorch").activation_bytes_per_gpu == est.activation_bytes_per_gpu
    flashinfer = _estimate(qwen, "0.11.0").activation_bytes_per_gpu
    assert abs(flashinfer - max(forward, 8192 * qwen.hidden_size * 2 + 1024 * qwen.vocab_size * 4 * 3.72)) < 2**20


def test_sampler_logits_not_divided_by_tp():
    # the sampler sees the whole vocabulary on every rank: Qwen2.5-72B's peak at TP 2 and 4 is the same (2.29 GiB logged)
    qwen = resolve_model("Qwen/Qwen2.5-72B-Instruct")
    a2, a4 = (_estimate(qwen, "0.19.0", tp=t).activation_bytes_per_gpu for t in (2, 4))
    assert a2 == a4 and abs(a2 / GIB - 2.29) < 0.1


def test_nccl_figure_on_pre_hopper_gpus():
    prof = memory_profile("vllm", "0.10.1")
    assert prof.comm_bytes(2, 1, "nvlink", 8.0) == prof.comm.pre_hopper == 128 * 2**20
    assert prof.comm_bytes(2, 1, "nvlink", 9.0) == prof.comm.nvlink
    assert prof.comm_bytes(2, 1, "nvlink", 0.0) == prof.comm.nvlink  # AMD (no CUDA capability) keeps the NVLink figure
    assert prof.comm_bytes(1, 1, "nvlink", 8.0) == 0
    assert memory_profile("vllm", "0.19.0").comm_bytes(2, 1, "nvlink", 8.0) == memory_profile("vllm", "0.19.0").comm.nvlink


def test_mistral_format_vision_encoder_whole_on_every_rank_in_019_only():
    model = resolve_model("mistralai/Magistral-Small-2509")
    assert mistral_format_vision(model, "none") and not mistral_format_vision(model, "int8")
    vision = vision_tower_params(model) * 2
    w1 = _estimate(model, "0.19.0", tp=1).weights_bytes_per_gpu
    w4 = _estimate(model, "0.19.0", tp=4).weights_bytes_per_gpu
    w4_sharded = _estimate(model, "0.20.0", tp=4).weights_bytes_per_gpu
    assert abs((w4 - w4_sharded) - vision * 3 / 4) < 2**20  # 0.19 keeps the encoder whole; 0.20.1 made it TP layers
    assert w4 < w1 / 2


def test_mla_down_projections_and_router_whole_on_every_rank():
    from infer_advisor.estimate.weights import replicated_bytes

    model = resolve_model("deepseek-ai/DeepSeek-V2-Lite")
    cfg = model.config
    whole = replicated_bytes(model, "none", "bfloat16", None)
    down = model.hidden_size * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * model.num_layers * 2  # q_lora_rank is null
    router = model.hidden_size * model.num_experts * (model.num_layers - cfg["first_k_dense_replace"]) * 2
    assert whole == down + router
    w1 = _estimate(model, "0.19.0", tp=1).weights_bytes_per_gpu
    w4 = _estimate(model, "0.19.0", tp=4).weights_bytes_per_gpu
    assert w4 > w1 / 4 + whole * 3 / 4 - 64 * 2**20  # the replicated part is not divided (rotary tables aside)
    assert resolve_model("Qwen/Qwen3-8B").num_experts == 0
    assert replicated_bytes(resolve_model("Qwen/Qwen3-8B"), "none", "bfloat16", None) == 0


def test_fused_moe_workspace_kept_beside_the_sampler():
    from infer_advisor.estimate.engine_terms import moe_workspace_bytes

    qwen = resolve_model("Qwen/Qwen3-30B-A3B")  # H 2048, I 768, top-8
    assert moe_workspace_bytes(qwen, 8192, 1, 2) == 8192 * 8 * (2048 + 2048) * 2  # max(I, H) + max(2I, H)
    gpt = resolve_model("openai/gpt-oss-20b")  # MXFP4 experts: OAITritonExperts' shapes
    assert moe_workspace_bytes(gpt, 8192, 2, 2) == 8192 * (2880 + 4 * 1440) * 2
    assert moe_workspace_bytes(resolve_model("Qwen/Qwen3-8B"), 8192, 1, 2) == 0
    est = _estimate(qwen, "0.19.0")
    sampler = 8192 * 2048 * 2 + 1024 * qwen.vocab_size * 4 * 3.72
    assert abs(est.activation_bytes_per_gpu - (sampler + 8192 * 8 * 4096 * 2)) < 2**20  # 2.68 GiB logged (llm-d-planner)
    assert _estimate(qwen, "0.11.0").activation_bytes_per_gpu < est.activation_bytes_per_gpu  # 0.10-0.11.0 range: not kept
