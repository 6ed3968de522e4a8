"""The AMD seam (hardware/probe_amd.py): amd-smi / rocm-smi output -> the same ProbeResult NVML gives, so
`--gpu auto` on an MI300X host plans for MI300X (issue 22 finding 1: it planned for the CPU).

The recorded outputs under fixtures/amd/ are reconstructed from the tools' documented formats (fixtures/amd/README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from infer_advisor.hardware.probe import ProbeResult
from infer_advisor.hardware.probe_amd import AMD_SMI, ROCM_SMI, parse_amd_smi, parse_rocm_smi, probe_amd
from infer_advisor.hardware.resolve import facts_from_probe

FIXTURES = Path(__file__).parent / "fixtures" / "amd"
GIB = 2**30


def _text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name, parse", [
    ("amd-smi-static-mi300x-x8.json", parse_amd_smi),
    ("amd-smi-static-rocm60-mi300x.json", parse_amd_smi),
    ("rocm-smi-mi300x-x8.json", parse_rocm_smi),
])
def test_recorded_mi300x_output_resolves_to_mi300x(name, parse):
    result = parse(_text(name))
    assert result.ok and all(d.vendor == "amd" and d.gfx_arch == "gfx942" for d in result.devices)
    hw = facts_from_probe(result)
    assert hw.kind == "gpu" and hw.gpu.name == "MI300X" and hw.gpu.vendor == "amd" and hw.gpu.gfx_arch == "gfx942"
    assert abs(hw.gpu.memory_bytes / GIB - 192) < 0.1  # amd-smi's "MB" are MiB: 196592 MiB = 191.98 GiB
    assert hw.gpu.usable_memory_bytes == hw.gpu.memory_bytes  # HIP keeps no reserve out of the total
    assert hw.gpus_per_node == (1 if "rocm60" in name else 8)


def test_probe_falls_back_from_amd_smi_to_rocm_smi_and_never_raises():
    calls = []

    def run(argv):
        calls.append(argv[0])
        return None if argv == AMD_SMI else _text("rocm-smi-mi300x-x8.json")

    assert probe_amd(run).ok and calls == ["amd-smi", "rocm-smi"]
    assert not probe_amd(lambda argv: None).ok
    broken = probe_amd(lambda argv: "not json" if argv == AMD_SMI else None)
    assert not broken.ok and "amd-smi" in broken.error
    assert ROCM_SMI[0] == "rocm-smi"


def test_auto_on_an_mi300x_host_plans_for_mi300x(monkeypatch):
    """`--gpu auto` with no NVIDIA driver and amd-smi answering: the plan is for MI300X with the ROCm image."""
    import infer_advisor.hardware.probe_amd as amd
    from infer_advisor.hardware.resolve import resolve_hardware
    from infer_advisor.plan.advise import _plan
    from infer_advisor.request import PlanRequest
    from tests.emit.plans import catalog_facts

    monkeypatch.setenv("INFER_ADVISOR_NO_NVML", "1")
    monkeypatch.setattr(amd, "probe_amd", lambda run=None: parse_amd_smi(_text("amd-smi-static-mi300x-x8.json")))
    monkeypatch.setattr("infer_advisor.hardware.probe.probe_nvml", lambda: ProbeResult(ok=False, error="no NVIDIA driver"))
    hw = resolve_hardware("auto")
    assert hw.kind == "gpu" and hw.gpu.name == "MI300X" and hw.gpus_per_node == 8
    plan = _plan(PlanRequest(model="meta-llama/Llama-3.1-8B", gpu="auto"), catalog_facts("meta-llama/Llama-3.1-8B"), hw, False)
    assert plan.hardware.gpus[0].vendor == "amd" and "rocm" in plan.engine.image
