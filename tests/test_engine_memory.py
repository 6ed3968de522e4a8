"""Engine memory profiles (data/engine_memory.yaml): version ranges, per-GPU defaults, SGLang's fraction rule."""

from __future__ import annotations

import pytest

from infer_advisor import advise
from infer_advisor.engines.memory import (
    batch_defaults,
    default_memory_fraction,
    memory_profile,
    memory_profiles,
    version_key,
    version_note,
)
from infer_advisor.engines.profiles import engine_profiles
from infer_advisor.engines.settings import engine_settings
from infer_advisor.errors import RequestError
from infer_advisor.hardware import resolve_hardware

GIB = 2**30


def test_version_keys():
    assert version_key("0.6.3.post1") == (0, 6, 3)
    assert version_key("v0.5.9") == (0, 5, 9)
    assert version_key("b7200") == (7200,)
    assert version_key("0.10.2") > version_key("0.9.2")
    with pytest.raises(RequestError):
        version_key("latest")


def test_ranges_are_contiguous_and_cover_the_pinned_versions():
    for engine, ranges in memory_profiles().items():
        ordered = sorted(ranges, key=lambda p: version_key(p.first))
        for a, b in zip(ordered, ordered[1:]):
            assert a.below == b.first, (engine, a.label, b.label)
        pinned = engine_profiles()[engine].version
        assert any(p.covers(pinned) for p in ranges), (engine, pinned)


def test_every_figure_has_a_source():
    for ranges in memory_profiles().values():
        for p in ranges:
            for field in ("memory_fraction_source", "activation_source", "batch_source", "cuda_context_source", "non_torch_source",
                          "comm_source", "cuda_graph_source", "sliding_window_source", "source"):
                assert len(getattr(p, field)) >= 8, (p.label, field)


@pytest.mark.parametrize(
    "version,label,graphs,activation,sliding",
    [
        ("0.2.7", "vLLM 0.2 (V0)", False, "max_model_len", "full"),
        ("0.4.2", "vLLM 0.3-0.4 (V0)", False, "max_model_len", "full"),
        ("0.6.3.post1", "vLLM 0.5-0.6.3 (V0)", False, "max_model_len", "full"),
        ("0.7.3", "vLLM 0.6.4-0.7 (V0, memory_profiling)", False, "max_model_len", "full"),
        ("0.8.2", "vLLM 0.8.0-0.8.3 (V1, 1024 sequences by default)", False, "max_num_batched_tokens", "window"),
        ("0.8.5", "vLLM 0.8 (V1)", False, "max_num_batched_tokens", "window"),
        ("0.19.0", "vLLM 0.17-0.19 (V1)", False, "max_num_batched_tokens", "window"),
        ("0.21.0", "vLLM 0.20-0.27 (V1, CUDA graphs profiled)", True, "max_num_batched_tokens", "window"),
        ("0.33.0", "vLLM 0.33 (V1)", True, "max_num_batched_tokens", "window"),
    ],
)
def test_vllm_generations(version, label, graphs, activation, sliding):
    p = memory_profile("vllm", version)
    assert (p.label, p.cuda_graphs_in_budget, p.activation_tokens, p.sliding_window_kv) == (label, graphs, activation, sliding)


def test_versions_outside_the_ranges():
    with pytest.raises(RequestError, match="older than the memory profiles"):
        memory_profile("vllm", "0.1.7")
    newer = memory_profile("vllm", "0.40.0")  # newer than every range: the newest, with a warning in the plan
    assert newer.label == "vLLM 0.33 (V1)"
    assert "newer than the memory profiles" in version_note("vllm", "0.40.0")
    assert version_note("vllm", "0.33.0") is None


@pytest.mark.parametrize(
    "version,gpu,expected",
    [
        ("0.33.0", "A100-80GB", (2048, 256)),  # 'a100' in the name keeps the small tier (vLLM PR 17885)
        ("0.33.0", "H100-80GB", (8192, 1024)),
        ("0.33.0", "H200", (8192, 1024)),  # 139.8 GiB CUDA-visible: under 160
        ("0.33.0", "B200", (16384, 1024)),
        ("0.33.0", "L40S", (2048, 256)),
        ("0.27.0", "B200", (8192, 1024)),  # no 160 GiB tier before 0.28
        ("0.8.5", "A100-80GB", (8192, 1024)),  # 0.8 had no A100 exception
        ("0.8.4", "A100-40GB", (2048, 256)),  # vLLM PR 16158 (in 0.8.4): 256 sequences below 70 GiB
        ("0.8.2", "A100-40GB", (2048, 1024)),  # 0.8.0-0.8.3: 1024 sequences on every GPU, 8192 tokens only by name
        ("0.8.2", "A100-80GB", (2048, 1024)),
        ("0.8.3", "H100-80GB", (8192, 1024)),
        ("0.7.3", "H100-80GB", (2048, 256)),  # V0: the floor of max(max_model_len, 2048)
    ],
)
def test_batch_defaults_per_gpu(version, gpu, expected):
    g = resolve_hardware(gpu).gpu
    assert batch_defaults(memory_profile("vllm", version), usable_memory_bytes=g.budget_memory_bytes, device_name=g.name) == expected


def test_sglang_fraction_follows_its_server_args_rule():
    h100 = resolve_hardware("H100-80GB").gpu
    sgl = memory_profile("sglang")
    # reserved = max(512 + 8192 x 1.5 + 256 x 2 + 1 x 128, 10240) = 13440 MiB of 81559 MiB
    assert default_memory_fraction(sgl, driver_memory_bytes=h100.driver_memory_bytes) == round((81559 - 13440) / 81559, 3)
    l4 = resolve_hardware("L4").gpu
    # 23034 MiB: 512 + 2048 x 1.5 + 24 x 2 + 128 = 3760 MiB reserved
    assert default_memory_fraction(sgl, driver_memory_bytes=l4.driver_memory_bytes) == round((23034 - 3760) / 23034, 3)


def test_engine_settings_and_the_plan_agree():
    s = engine_settings("vllm", None, resolve_hardware("H100-80GB").gpu)
    assert (s.version, s.max_num_batched_tokens, s.max_num_seqs, s.memory_fraction) == ("0.33.0", 8192, 1024, 0.92)
    plan = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", engine="vllm", context=8192)
    assert plan.engine.defaults == {"max_num_seqs": 1024, "max_num_batched_tokens": 8192, "gpu_memory_utilization": 0.92, "kv_cache_dtype": "auto"}
    assert (plan.engine.max_num_seqs, plan.engine.max_num_batched_tokens, plan.engine.gpu_memory_utilization) == (1024, 8192, 0.92)
    assert plan.memory.activation_tokens == 8192 and plan.memory.sampled_rows == 1024
    old = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", engine="vllm", engine_version="0.6.3.post1", context=8192)
    assert old.engine.version == "0.6.3.post1" and old.engine.image == "vllm/vllm-openai:v0.6.3.post1"
    assert old.engine.max_num_batched_tokens == 8192 and old.memory.activation_tokens == 8192  # max(max_model_len, 2048)
    assert old.engine.gpu_memory_utilization == 0.9 and old.memory.memory_profile == "vLLM 0.5-0.6.3 (V0)"


def test_nvlink_and_pcie_communication_buffers():
    p = memory_profile("vllm", "0.19.0")
    assert p.comm_bytes(1, 1, "nvlink") == 0
    assert p.comm_bytes(2, 1, "nvlink") == p.comm.nvlink and p.comm_bytes(2, 1, "pcie") == p.comm.pcie
    assert p.comm_bytes(8, 1, "nvlink") == p.comm.nvlink + 6 * p.comm.per_extra_rank


def test_vllm_033_keeps_gb10_on_the_small_tier():
    """vLLM 0.33 get_batch_defaults: GB10 (DGX Spark, compute capability 12.1) has >= 70 GiB but stays at 2048 / 256."""
    spark = resolve_hardware("DGX-Spark").gpu
    assert spark.budget_memory_bytes > 70 * GIB and spark.compute_capability == 12.1
    prof = memory_profile("vllm", "0.33.0")
    assert batch_defaults(prof, usable_memory_bytes=spark.budget_memory_bytes, device_name=spark.name,
                          compute_capability=spark.compute_capability) == (2048, 256)
    assert engine_settings("vllm", None, spark).max_num_seqs == 256
    # an RTX PRO 6000 Blackwell (12.0, 95 GiB) is a large discrete GPU: the 8192 / 1024 tier
    pro = resolve_hardware("RTX-PRO-6000-Blackwell").gpu
    assert engine_settings("vllm", None, pro).max_num_batched_tokens == 8192


def test_infinity_fabric_takes_the_nvlink_communication_buffers():
    p = memory_profile("vllm", "0.19.0")
    assert p.comm_bytes(2, 1, "infinity-fabric") == p.comm_bytes(2, 1, "nvlink") > p.comm_bytes(2, 1, "pcie")


@pytest.mark.parametrize("engine", ["trtllm", "mlc", "exllamav2", "mistralrs", "tgi", "transformers", "ctranslate2"])
def test_engines_without_ranges_get_their_engines_yaml_profile(engine):
    """Engines with no range in engine_memory.yaml are planned with one profile built from engines.yaml: the
    pinned version, one batch tier for every GPU, every overhead in the budget."""
    base = engine_profiles()[engine]
    prof = memory_profile(engine)
    assert engine not in memory_profiles() and prof.label == f"{base.display} {base.version} (engines.yaml)"
    assert prof.memory_fraction == base.memory_fraction and prof.batch_tiers[0].max_num_seqs == base.max_num_seqs
    assert prof.cuda_graphs_in_budget == (base.memory_accounting != "peak" or base.cuda_graph_bytes > 0)
    assert version_note(engine, base.version) is None
    assert "no memory profiles by version" in version_note(engine, "9.9.9")  # the pinned version's figures, said so
    for gpu in ("RTX-4090", "H100-80GB", "B200"):
        s = engine_settings(engine, None, resolve_hardware(gpu).gpu)
        assert s.max_num_seqs == base.max_num_seqs and s.memory_fraction == base.memory_fraction


def test_planning_caps_are_not_reported_as_engine_defaults():
    """TensorRT-LLM's max_batch_size 256 is a planning cap the launch command passes (trtllm-serve's own default is
    2048): the plan's engine.defaults leaves it unknown, while mistral.rs's --max-seqs 32 is its own default."""
    trt = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", engine="trtllm", context=8192)
    assert trt.engine.defaults["max_num_seqs"] is None and trt.engine.defaults["max_num_batched_tokens"] == 8192
    assert trt.engine.defaults["gpu_memory_utilization"] == 0.9 and trt.memory.memory_profile.endswith("(engines.yaml)")
    mrs = advise(model="meta-llama/Llama-3.1-8B", gpu="L40S", engine="mistralrs", context=8192)
    assert mrs.engine.defaults["max_num_seqs"] == 32


def test_sglang_fraction_on_amd_uses_the_hip_total_without_a_cuda_reserve():
    """MI300X's catalog total is HIP's own (191.98 GiB, no driver reserve): SGLang's rule reads it as its GPU memory."""
    mi300x = resolve_hardware("MI300X").gpu
    assert mi300x.driver_memory_bytes is None and mi300x.budget_memory_bytes == int(191.98 * GIB)
    s = engine_settings("sglang", None, mi300x)
    assert s.memory_fraction == default_memory_fraction(memory_profile("sglang"), driver_memory_bytes=mi300x.budget_memory_bytes)


@pytest.mark.parametrize("tp,expected", [(1, 0.88), (2, 0.87), (4, 0.85), (8, 0.81), (16, 0.79)])
def test_sglang_04_default_fraction_is_by_tp_alone(tp, expected):
    """memfix15 (retrospective): SGLang 0.4.2-0.4.5 server_args.__post_init__ sets mem_fraction_static by tp_size only."""
    p = memory_profile("sglang", "0.4.4")
    assert p.label == "SGLang 0.3-0.4.5" and p.fraction_by_ranks_source
    for total in (24 * 2**30, 80 * 2**30, 141 * 2**30):
        assert default_memory_fraction(p, driver_memory_bytes=total, tp=tp) == expected
    assert memory_profile("sglang", "0.5.9").label == "SGLang 0.5"

