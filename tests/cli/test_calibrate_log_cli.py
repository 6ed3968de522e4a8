"""`infer-advisor calibrate --from-log` and `plan --calibration` end to end: files, exit codes, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infer_advisor.cli import main

LOGS = Path(__file__).parents[1] / "estimate" / "logs"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_from_log_writes_a_memory_calibration_the_plan_uses(tmp_path, capsys):
    out = tmp_path / "h100.json"
    rc = main(["calibrate", "--from-log", str(LOGS / "vllm_v1_0.19_h100_llama31_8b.log"), "--gpu", "H100-80GB",
               "--model", "meta-llama/Llama-3.1-8B", "--out", str(out)])
    assert rc == 0
    said = capsys.readouterr().out
    assert "memory calibration for vllm 0.19.0 on H100-80GB" in said and "476,016 tokens logged" in said
    cal = json.loads(out.read_text())
    assert cal["kind"] == "memory" and cal["engine_version"] == "0.19.0" and cal["tp"] == 1
    assert "GPU KV cache size: 476,016 tokens" in cal["lines"]["kv_cache_tokens"]
    rc = main(["plan", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-80GB", "--engine", "vllm", "--engine-version", "0.19.0",
               "--context", "8192", "--gpu-memory-utilization", "0.95", "--calibration", str(out), "--json"])
    plan = json.loads(capsys.readouterr().out)
    assert rc == 0 and plan["memory"]["source"] == "calibrated (log)"
    assert plan["memory"]["kv_cache_tokens"] == pytest.approx(476_016, rel=0.03)
    rc = main(["plan", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-80GB", "--engine", "vllm", "--engine-version", "0.19.0",
               "--context", "8192", "--calibration", str(out)])
    assert rc == 0 and "calibrated (log)" in capsys.readouterr().out


def test_plan_refuses_a_foreign_calibration_with_exit_2(tmp_path, capsys):
    out = tmp_path / "h100.json"
    assert main(["calibrate", "--from-log", str(LOGS / "vllm_v1_0.19_h100_llama31_8b.log"), "--gpu", "H100-80GB",
                 "--model", "meta-llama/Llama-3.1-8B", "--out", str(out)]) == 0
    capsys.readouterr()
    rc = main(["plan", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "L40S", "--engine", "vllm", "--engine-version", "0.19.0",
               "--calibration", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "made for vllm 0.19.0 on H100-80GB" in err and "L40S" in err and "--calibration-mismatch warn" in err
    rc = main(["plan", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "L40S", "--engine", "vllm", "--engine-version", "0.19.0",
               "--calibration", str(out), "--calibration-mismatch", "warn", "--json"])
    assert rc in (0, 1) and any("is applied to vllm 0.19.0 on L40S" in w for w in json.loads(capsys.readouterr().out)["warnings"])


@pytest.mark.parametrize("text", ['{"kind": "memory", "engine": "vllm"', '[1, 2]', '{"kind": "memory", "engine": "vllm", "gpu": "T4", '
                                  '"created": "x", "source": "y", "kv_cache_tokens": NaN}',
                                  "[" * 100_000 + "]" * 100_000, '{"kind": "memory", "tp": ' + "9" * 5000 + "}"])  # probe: were exit 3
def test_bad_calibration_files_exit_2_with_one_line(tmp_path, capsys, text):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    rc = main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "T4", "--calibration", str(bad)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and str(bad) in err


def test_from_log_errors_are_one_line(tmp_path, capsys):
    rc = main(["calibrate", "--from-log", str(LOGS / "vllm_v0_0.2_a100_llama2_7b.log"), "--gpu", "A100-80GB", "--out", str(tmp_path / "x.json")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "--engine-version" in err and len(err.splitlines()) == 1
    junk = tmp_path / "junk.log"
    junk.write_text("nothing to see\n")
    rc = main(["calibrate", "--from-log", str(junk), "--gpu", "T4", "--out", str(tmp_path / "y.json")])
    assert rc == 2 and "does not look like" in capsys.readouterr().err
    rc = main(["calibrate", "--from-log", str(tmp_path / "missing.log"), "--out", str(tmp_path / "z.json")])
    assert rc == 2 and "cannot read the log" in capsys.readouterr().err


def test_engine_version_needs_an_engine(capsys):
    rc = main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--engine-version", "0.7.3"])
    assert rc == 2 and "needs --engine" in capsys.readouterr().err
    rc = main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--engine", "vllm", "--engine-version", "0.1.0"])
    assert rc == 2 and "older than the memory profiles" in capsys.readouterr().err


def test_from_log_out_goes_through_the_shared_writer(tmp_path, capsys):
    """--from-log's --out follows the rules of every calibrate --out: refused before the log is read when it exists,
    --force replaces only a calibration file (memory or speed), a user's file is never replaced."""
    from infer_advisor.estimate.calibration_file import is_calibration_file

    log = str(LOGS / "vllm_v1_0.19_h100_llama31_8b.log")
    args = ["--gpu", "H100-80GB", "--model", "meta-llama/Llama-3.1-8B"]
    out = tmp_path / "h100.json"
    assert main(["calibrate", "--from-log", log, *args, "--out", str(out)]) == 0
    assert is_calibration_file(out)
    capsys.readouterr()
    rc = main(["calibrate", "--from-log", str(tmp_path / "missing.log"), "--out", str(out)])  # --out checked first
    err = capsys.readouterr().err
    assert rc == 2 and "exists already" in err and len(err.strip().splitlines()) == 1
    before = out.read_bytes()
    assert main(["calibrate", "--from-log", log, *args, "--out", str(out), "--force"]) == 0
    assert json.loads(out.read_text())["kind"] == "memory" and out.read_bytes() != b""
    mine = tmp_path / "notes.json"
    mine.write_text('{"my": "notes"}')
    capsys.readouterr()
    rc = main(["calibrate", "--from-log", log, *args, "--out", str(mine), "--force"])
    err = capsys.readouterr().err
    assert rc == 2 and "was not written by infer-advisor" in err and mine.read_text() == '{"my": "notes"}'
    rc = main(["calibrate", "--from-log", log, *args, "--out", "/proc/x/cal.json"])
    assert rc == 2 and "cannot be written" in capsys.readouterr().err
    assert before and sorted(p.name for p in tmp_path.iterdir()) == ["h100.json", "notes.json"]  # no temp file left


def test_is_calibration_file_knows_both_kinds(tmp_path):
    from infer_advisor.estimate.calibration_file import is_calibration_file

    speed = {"schema_version": 1, "engine": "vllm", "points": [], "command": "x", "created_at": "t"}
    memory = {"schema_version": 1, "kind": "memory", "engine": "vllm", "gpu": "T4", "created": "t", "source": "s"}
    for name, body, ours in [("s.json", speed, True), ("s2.json", {**speed, "kind": "speed"}, True), ("m.json", memory, True),
                             ("other.json", {**memory, "kind": "other"}, False), ("notes.json", {"my": "notes"}, False)]:
        (tmp_path / name).write_text(json.dumps(body))
        assert is_calibration_file(tmp_path / name) is ours, name
    (tmp_path / "bad.json").write_bytes(b"\xff")
    assert not is_calibration_file(tmp_path / "bad.json")
