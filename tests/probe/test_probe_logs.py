"""Probe (issue 18, start-up logs): a log that contradicts itself or the command line is refused with one line,
not turned into a calibration of the first value found."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.probe.contract import check, probe_environment, run_cli

LOGS = Path(__file__).parents[1] / "estimate" / "logs"


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    probe_environment(monkeypatch, tmp_path / "cache")


def test_two_runs_in_one_log_are_refused(tmp_path):
    a = (LOGS / "vllm_v0_0.6.4_rtx3090_llama31_8b.log").read_text()
    b = (LOGS / "vllm_v0_0.6.4_rtx3090_llama31_8b_29k.log").read_text()
    log = tmp_path / "two.log"
    log.write_text(a + "\n" + b)
    args = ["calibrate", "--from-log", str(log), "--gpu", "RTX-3090", "--out", str(tmp_path / "c.json")]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 2 and "two different" in outcome.err, outcome.err
    assert not (tmp_path / "c.json").exists()


def test_a_log_from_another_gpu_is_refused(tmp_path):
    log = LOGS / "llamacpp_b7200_rtx4090_mistral7b.log"
    args = ["calibrate", "--from-log", str(log), "--gpu", "H100-80GB", "--out", str(tmp_path / "c.json")]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 2 and "RTX-4090" in outcome.err and "H100-80GB" in outcome.err, outcome.err


def test_calibrations_differing_only_in_case_or_v_prefix_are_one_setup(tmp_path):
    import json

    log = LOGS / "vllm_v0_0.6.4_rtx3090_llama31_8b.log"
    first = tmp_path / "a.json"
    args = ["calibrate", "--from-log", str(log), "--gpu", "RTX-3090", "--out", str(first)]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 0, outcome.err
    raw = json.loads(first.read_text())
    raw["gpu"] = raw["gpu"].lower()
    if raw.get("engine_version"):
        raw["engine_version"] = "v" + raw["engine_version"]
    second = tmp_path / "b.json"
    second.write_text(json.dumps(raw))
    args = ["plan", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "RTX-3090", "--engine", "vllm", "--engine-version",
            json.loads(first.read_text()).get("engine_version") or "0.6.4", "--calibration", f"{first},{second}"]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 2 and "second memory calibration" in outcome.err, outcome.err
