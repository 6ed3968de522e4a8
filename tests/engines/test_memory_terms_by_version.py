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
    assert not memory_profile("vllm", "0.11.0").activation_sampler_after_forward
    assert memory_profile("vllm", "0.11.1").activation_sampler_after_forward
    assert memory_profile("vllm", "0.16.0").activation_sampler_after_forward
    assert not memory_profile("vllm", "0.17.0").activation_sampler_after_forward


def _estimate(model, version, tp=1, cc=9.0, util=0.9):
    return estimate_memory(
        model, gpu_memory_bytes=int(79.18 * GIB), engine=engine_profile("vllm"), tp=tp, context=16000,
        max_num_batched_tokens=8192, max_num_seqs=1024, memory_fraction=util, memory=memory_profile("vllm", version),
        engine_version=version, compute_capability=cc,
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
