"""The real NVML probe on this machine (no exception ever escapes), and import hygiene."""

from __future__ import annotations

import subprocess
import sys

from infer_advisor.hardware import probe_nvml, resolve_hardware


def test_real_probe_reports_what_this_machine_has():
    """Runs for real everywhere: without a driver (CI) the reason comes back; with one, the devices."""
    result = probe_nvml()
    if result.ok:  # a machine with an NVIDIA driver (the lent H200)
        assert result.driver_version and result.error is None
        for dev in result.devices:
            assert dev.name and dev.memory_total_bytes > 2**30
    else:
        assert result.devices == []
        assert result.error and "\n" not in result.error
        # this project's CI/dev machines have no driver: NVML's library is missing
        assert "NVML" in result.error or "INFER_ADVISOR_NO_NVML" in result.error


def test_auto_on_this_machine_is_consistent_with_the_probe():
    result = probe_nvml()
    hw = resolve_hardware()  # default spec is "auto"
    assert hw.source == "probe" and hw.spec == "auto"
    if result.ok and result.devices:
        assert hw.kind == "gpu" and hw.gpu.probed_name == result.devices[0].name
    else:
        assert hw.kind == "cpu" and hw.cpu.cores >= 1 and hw.cpu.memory_bytes > 0
        assert len(hw.notes) == 1 and result.error in hw.notes[0]


def test_no_nvml_variable_skips_the_probe(monkeypatch):
    monkeypatch.setenv("INFER_ADVISOR_NO_NVML", "1")
    result = probe_nvml()
    assert not result.ok and "INFER_ADVISOR_NO_NVML=1" in result.error
    hw = resolve_hardware("auto")
    assert hw.kind == "cpu" and hw.notes == [
        "No GPU found (INFER_ADVISOR_NO_NVML=1 is set, so the NVML probe was skipped; "
        "INFER_ADVISOR_NO_NVML=1 is set, so the AMD probe was skipped); describing this machine's CPU instead."
    ]


def test_importing_the_stage_and_cli_module_stays_light():
    code = (
        "import sys, infer_advisor.hardware, infer_advisor.cli.gpus_cmd; "
        "heavy = [m for m in ('pynvml', 'rich', 'torch', 'transformers') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
