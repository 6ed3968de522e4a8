"""Usable GPU memory: plans budget on what CUDA gives a process, the same for a named GPU and for its probe.

Issue 11, 'Done means': "A plan for a named GPU and one from the real probe of the same GPU budget the same memory
to within 1%". The probes are the recorded NVML fixtures (h200_1x_lent.json was recorded on the lent H200).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infer_advisor import advise
from infer_advisor.errors import DataFileError
from infer_advisor.hardware import ProbeResult, resolve_hardware
from infer_advisor.hardware.catalog import GIB, MIB, catalog, find_entry, load_catalog

FIXTURES = Path(__file__).parent / "fixtures"

# (fixture, the catalog name the same GPU has with --gpu)
PAIRS = [
    ("h200_1x_lent.json", "H200"),
    ("h100_sxm_8x_nvlink.json", "H100-80GB"),
    ("t4_1x.json", "T4"),
    ("a100_40gb_2x_mig.json", "A100-40GB"),
    ("mixed_4090_3090.json", "RTX-4090"),
]


def probed(name: str):  # noqa: ANN201
    result = ProbeResult.model_validate(json.loads((FIXTURES / name).read_text()))
    return resolve_hardware("auto", probe=lambda: result)


@pytest.mark.parametrize("fixture,name", PAIRS)
def test_named_and_probed_gpu_budget_the_same_memory(fixture, name):
    hw_probe, hw_named = probed(fixture), resolve_hardware(name)
    assert hw_probe.gpu.name == name
    a, b = hw_probe.gpu.budget_memory_bytes, hw_named.gpu.budget_memory_bytes
    assert abs(a - b) / b < 0.01, (a / GIB, b / GIB)
    # and a whole plan on each budgets the same bytes (the plan's memory figure, not just the hardware facts)
    kw = dict(model="meta-llama/Llama-3.1-8B", engine="vllm", context=8192)
    p_probe = advise(hardware=hw_probe, **kw)
    p_named = advise(hardware=hw_named, gpu=name, **kw)
    assert p_probe.memory.gpu_memory_bytes == pytest.approx(p_named.memory.gpu_memory_bytes, rel=0.01)
    assert p_probe.memory.budget_bytes_per_gpu == pytest.approx(p_named.memory.budget_bytes_per_gpu, rel=0.01)


def test_plans_budget_on_the_cuda_total_not_the_datasheet():
    h100 = resolve_hardware("H100-80GB").gpu
    assert h100.memory_bytes == 80 * GIB  # the datasheet figure stays as it is
    assert h100.driver_memory_bytes == 81559 * MIB
    assert h100.usable_memory_bytes == int(79.19 * GIB)
    plan = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", engine="vllm", context=8192)
    assert plan.memory.gpu_memory_bytes == h100.usable_memory_bytes
    assert plan.hardware.gpus[0].usable_memory_bytes == h100.usable_memory_bytes
    assert "CUDA-visible" in plan.memory.figure_sources["gpu_memory_bytes"]


def test_lent_h200_probe_matches_the_torch_total_measured_there():
    # torch.cuda.get_device_properties(0).total_memory on the lent H200 (benchmarks/results/h200/measure_transformers.json)
    assert probed("h200_1x_lent.json").gpu.usable_memory_bytes == pytest.approx(150_109_880_320, rel=1e-4)


def test_gpu_without_published_totals_is_marked_estimated():
    gpu = resolve_hardware("RTX-5090").gpu
    assert gpu.usable_memory_bytes == 32 * GIB - catalog().cuda_reserve_mib * MIB
    assert gpu.usable_memory_source.startswith("estimated")


def test_every_published_total_has_a_source():
    for entry in catalog().gpus:
        if entry.driver_memory_mib:
            assert entry.driver_memory_source and entry.driver_memory_mib <= entry.memory_gib * 1.1 * 1024
        if entry.cuda_memory_gib:
            assert entry.cuda_memory_source and entry.cuda_memory_gib < (entry.driver_memory_mib or 1e12) / 1024
    assert find_entry("H200").cuda_reserve_bytes() == pytest.approx(143771 * MIB - 139.80 * GIB, abs=2)


def test_a_total_without_a_source_is_refused(tmp_path):
    import yaml

    raw = yaml.safe_load((Path(__file__).parents[2] / "src/infer_advisor/data/gpus.yaml").read_text())
    raw["gpus"][0]["cuda_memory_gib"] = 39.0
    raw["gpus"][0].pop("cuda_memory_source", None)
    bad = tmp_path / "gpus.yaml"
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(DataFileError, match="cuda_memory_gib needs cuda_memory_source"):
        load_catalog(bad)


# GPUs the issue-14 catalog added while issue 11 gave every GPU its driver and CUDA-visible totals (merge of both).
ISSUE14_GPUS = ["H20", "L20", "A800-80GB", "H800", "RTX-PRO-6000-Blackwell", "GB200", "B300", "DGX-Spark", "MI250X", "MI355X",
                "RTX-4090-Laptop", "RTX-5090-Laptop"]


@pytest.mark.parametrize("name", ISSUE14_GPUS)
def test_issue14_gpus_budget_on_a_published_total(name):
    entry = find_entry(name)
    assert entry.driver_memory_mib or entry.cuda_memory_gib
    assert entry.driver_memory_source  # where the driver total was read, or why there is none (GB10: 'Not Supported')
    gpu = resolve_hardware(name).gpu
    assert gpu.usable_memory_source.startswith("catalog") and gpu.usable_memory_bytes < entry.memory_gib * GIB


def test_amd_totals_are_hips_own_without_a_cuda_reserve():
    """PyTorch on ROCm reports the whole VRAM (MI250X: rocm-smi 68702699520 B = 'total capacity of 63.98 GiB'): the
    450 MiB CUDA reserve is not taken off an AMD GPU."""
    for entry in catalog().gpus:
        if entry.vendor == "amd":
            assert entry.cuda_memory_gib, entry.name
            assert resolve_hardware(entry.name).gpu.budget_memory_bytes == int(entry.cuda_memory_gib * GIB)
    mi250x = find_entry("MI250X")
    assert mi250x.driver_memory_mib * MIB == 68702699520 and mi250x.cuda_memory_gib == pytest.approx(68702699520 / GIB, abs=0.01)


def test_dgx_spark_budgets_on_what_cuda_sees_of_its_unified_memory():
    spark = resolve_hardware("DGX-Spark")
    assert spark.gpu.driver_memory_bytes is None  # nvidia-smi: 'Not Supported'
    assert spark.gpu.budget_memory_bytes == int(119.7 * GIB) and any("shares its 128 GiB" in n for n in spark.notes)
