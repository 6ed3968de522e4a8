"""The probe seam: recorded NVML results -> HardwareFacts (matching, bandwidth arithmetic, NVLink, MIG)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infer_advisor.errors import UnknownGPUError
from infer_advisor.hardware import ProbeResult, lookup_gpu, resolve_hardware
from infer_advisor.hardware.resolve import DDR_FACTOR, facts_from_probe, probed_bandwidth

FIXTURES = Path(__file__).parent / "fixtures"


def recorded(name: str) -> ProbeResult:
    return ProbeResult.model_validate(json.loads((FIXTURES / name).read_text()))


def resolve_recorded(name: str):  # noqa: ANN201
    return resolve_hardware("auto", probe=lambda: recorded(name))


def test_all_fixtures_validate():
    files = sorted(FIXTURES.glob("*.json"))
    assert len(files) >= 5
    for f in files:
        assert recorded(f.name).ok


def test_h200_recorded_on_the_lent_machine():
    hw = resolve_recorded("h200_1x_lent.json")
    assert hw.kind == "gpu" and hw.source == "probe" and hw.spec == "auto"
    assert hw.driver_version == "580.159.04" and hw.total_gpus == 1
    g = hw.gpu
    assert g.name == "H200" and g.probed_name == "NVIDIA H200" and g.source == "probe"
    assert g.memory_bytes == 143771 * 2**20  # what nvidia-smi printed there: 143771 MiB
    # 6016-bit bus x 3201 MHz x 2 (DDR) / 8 = 4.814 TB/s, against the datasheet's 4.8 TB/s
    assert g.memory_bandwidth_bytes_per_s == pytest.approx(6016 * 3201e6 * 2 / 8)
    assert g.memory_bandwidth_bytes_per_s == pytest.approx(lookup_gpu("H200").memory_bandwidth_bytes_per_s, rel=0.01)
    assert g.compute_capability == 9.0 and g.sm_clock_mhz == 1980
    # No NVLink on that single-GPU VM: the link is PCIe 5.0 x16 = 16 x 3.938 GB/s
    assert g.interconnect == "pcie"
    assert g.interconnect_bandwidth_bytes_per_s == pytest.approx(16 * 3.938e9)
    assert g.tflops == lookup_gpu("H200").tflops
    assert g.figure_sources["memory_bytes"] == "probe"
    assert g.figure_sources["memory_bandwidth_bytes_per_s"] == "probe"
    assert g.figure_sources["interconnect_bandwidth_bytes_per_s"] == "probe"
    assert g.figure_sources["tflops"] == "catalog"
    assert g.mig_enabled is False
    assert hw.notes == []


def test_h100_sxm_8x_with_nvlink():
    hw = resolve_recorded("h100_sxm_8x_nvlink.json")
    assert hw.gpus_per_node == 8 and hw.nodes == 1
    for g in hw.gpus:
        assert g.name == "H100-80GB" and g.interconnect == "nvlink" and g.nvlink_active_links == 18
        # 18 links x 26,562 MB/s (the driver's per-link rate), one direction
        assert g.interconnect_bandwidth_bytes_per_s == pytest.approx(18 * 26562e6)
        assert g.memory_bandwidth_bytes_per_s == pytest.approx(5120 * 2619e6 * DDR_FACTOR / 8)
        assert g.memory_bandwidth_bytes_per_s == pytest.approx(3.35e12, rel=0.01)
        assert g.tflops["fp8"] == 1978.9 and g.figure_sources["tflops"] == "catalog"
    assert hw.notes == []


def test_t4_without_nvlink_support():
    hw = resolve_recorded("t4_1x.json")
    g = hw.gpu
    assert g.name == "T4" and g.probed_name == "Tesla T4"
    assert g.memory_bandwidth_bytes_per_s == pytest.approx(320.064e9)  # 256 bit x 5001 MHz x 2 / 8
    assert g.interconnect == "pcie" and g.interconnect_bandwidth_bytes_per_s == pytest.approx(16 * 0.985e9)
    assert g.nvlink_active_links is None and g.mig_enabled is None
    assert "bf16" not in g.tflops and g.compute_capability == 7.5


def test_unknown_gpu_keeps_probed_figures_and_says_tflops_are_unknown():
    hw = resolve_recorded("unknown_gpu_1x.json")
    g = hw.gpu
    assert g.name == "NVIDIA GH100 Engineering Sample" and g.catalog_source is None
    assert g.tflops == {} and "tflops" not in g.figure_sources
    assert g.memory_bandwidth_bytes_per_s == pytest.approx(6144 * 2619e6 * 2 / 8)
    assert g.compute_capability == 9.0
    # NVLink supported but no active link: PCIe
    assert g.interconnect == "pcie" and g.nvlink_active_links == 0
    assert len(hw.notes) == 1 and "No catalog entry matches 'NVIDIA GH100 Engineering Sample'" in hw.notes[0]


def test_mig_enabled_is_reported_and_noted():
    hw = resolve_recorded("a100_40gb_2x_mig.json")
    assert [g.mig_enabled for g in hw.gpus] == [True, True]
    assert hw.gpu.name == "A100-40GB"
    assert hw.gpu.memory_bandwidth_bytes_per_s == pytest.approx(1.5552e12)
    assert hw.gpu.interconnect_bandwidth_bytes_per_s == pytest.approx(12 * 25781e6)
    assert any(n.startswith("MIG is enabled on GPU 0, 1") for n in hw.notes)


def test_mixed_models_use_the_first_and_say_so():
    hw = resolve_recorded("mixed_4090_3090.json")
    assert [g.name for g in hw.gpus] == ["RTX-4090"]
    assert len(hw.notes) == 1 and "Mixed GPU models" in hw.notes[0] and "NVIDIA GeForce RTX 3090" in hw.notes[0]


def test_nvlink_speed_falls_back_to_the_version_table():
    raw = recorded("h100_sxm_8x_nvlink.json")
    for d in raw.devices:
        d.nvlink_speed_mbps = None  # an older driver without the field
    g = facts_from_probe(raw).gpu
    assert g.interconnect_bandwidth_bytes_per_s == pytest.approx(18 * 25e9)  # version code 6 = NVLink 4.0
    assert g.interconnect_bandwidth_bytes_per_s == lookup_gpu("H100-80GB").interconnect_bandwidth_bytes_per_s


def test_catalog_fills_in_what_nvml_did_not_say():
    raw = recorded("h100_sxm_8x_nvlink.json")
    d = raw.devices[0]
    d.memory_bus_width_bits = None
    d.cuda_compute_capability = None
    d.nvlink_active_links, d.nvlink_version, d.nvlink_speed_mbps = None, None, None
    d.pcie_max_generation = d.pcie_max_width = None
    g = facts_from_probe(raw).gpu
    catalog_h100 = lookup_gpu("H100-80GB")
    assert g.memory_bandwidth_bytes_per_s == catalog_h100.memory_bandwidth_bytes_per_s
    assert g.figure_sources["memory_bandwidth_bytes_per_s"] == "catalog"
    assert g.compute_capability == 9.0 and g.figure_sources["compute_capability"] == "catalog"
    assert g.interconnect == "nvlink" and g.figure_sources["interconnect_bandwidth_bytes_per_s"] == "catalog"


def test_unknown_gpu_without_bandwidth_cannot_be_planned():
    raw = recorded("unknown_gpu_1x.json")
    raw.devices[0].max_memory_clock_mhz = None
    with pytest.raises(UnknownGPUError, match="NVIDIA GH100 Engineering Sample"):
        facts_from_probe(raw)


def test_bandwidth_arithmetic_needs_both_figures():
    d = recorded("t4_1x.json").devices[0]
    assert probed_bandwidth(d) == pytest.approx(256 * 5001e6 * 2 / 8)
    assert probed_bandwidth(d.model_copy(update={"memory_bus_width_bits": None})) is None


@pytest.mark.parametrize(
    "result",
    [
        ProbeResult(ok=False, error="NVML library not found: no NVIDIA driver on this machine"),
        ProbeResult(ok=True, driver_version="550.54.15", devices=[]),
    ],
)
def test_no_gpu_falls_back_to_cpu_with_one_note(result):
    hw = resolve_hardware("auto", probe=lambda: result)
    assert hw.kind == "cpu" and hw.gpus == [] and hw.cpu is not None and hw.cpu.cores >= 1
    assert len(hw.notes) == 1 and hw.notes[0].startswith("No GPU found")
    if result.error:
        assert result.error in hw.notes[0]


def test_facts_round_trip_through_json():
    hw = resolve_recorded("h100_sxm_8x_nvlink.json")
    again = type(hw).model_validate_json(hw.model_dump_json())
    assert again == hw
