"""Bad inputs give one line and exit 2; failed or interrupted runs leave nothing that looks like an output."""

from __future__ import annotations

import importlib.util
import json

import pytest

from infer_advisor.cli import main
from infer_advisor.quantize import ct2_backend, quantize


def _error_line(capsys, *args: str) -> str:
    code = main(["quantize", *args])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: ")
    assert "Traceback" not in captured.err
    return captured.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "int4"], "Unknown quantization method 'int4'"),
        (["--method", "awq", "--backend", "ct2"], "Method 'awq' has no backend 'ct2'"),
        (["--method", "awq", "--group-size", "96"], "--group-size 96 does not divide hidden_size"),
        (["--method", "awq", "--group-size", "0"], "--group-size: Input should be greater than 0"),
        (["--method", "ct2-int8", "--calibration", "/nonexistent/calib.txt", "--eval"], "calibration file not found"),
    ],
)
def test_bad_options_exit_2_with_one_line(tiny_llama, tmp_path, capsys, args, message):
    err = _error_line(capsys, "--model", str(tiny_llama), "--out", str(tmp_path / "out"), *args)
    assert message in err
    assert list(tmp_path.iterdir()) == []


def test_missing_model_exits_2(tmp_path, capsys, monkeypatch):
    err = _error_line(capsys, "--model", str(tmp_path / "nope"), "--method", "ct2-int8", "--out", str(tmp_path / "o"))
    assert "not found (no such directory)" in err
    monkeypatch.setenv("INFER_ADVISOR_OFFLINE", "1")
    err = _error_line(capsys, "--model", "someorg/some-model", "--method", "ct2-int8", "--out", str(tmp_path / "o"))
    assert "forbid the Hub" in err
    (tmp_path / "empty").mkdir()
    err = _error_line(capsys, "--model", str(tmp_path / "empty"), "--method", "ct2-int8", "--out", str(tmp_path / "o"))
    assert "has no config.json" in err


def test_out_may_not_be_the_source(tiny_llama, capsys):
    err = _error_line(capsys, "--model", str(tiny_llama), "--method", "ct2-int8", "--out", str(tiny_llama), "--force")
    assert "would overwrite the source model" in err


def test_missing_backend_exits_2_naming_the_extra(tiny_llama, tmp_path, capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "ctranslate2" else real(n, *a))
    err = _error_line(capsys, "--model", str(tiny_llama), "--method", "ct2-int8", "--out", str(tmp_path / "o"))
    assert "pip install 'infer-advisor[ctranslate2]'" in err


@pytest.mark.parametrize("failure", [RuntimeError("converter crashed"), KeyboardInterrupt()])
def test_failing_backend_leaves_nothing(tiny_llama, tmp_path, monkeypatch, failure):
    def broken(source, work_dir, spec, calibration, progress):
        (work_dir / "model.bin").write_bytes(b"half written")
        (work_dir / "config.json").write_text("{}")
        raise failure

    monkeypatch.setattr(ct2_backend, "run", broken)
    with pytest.raises(type(failure)):
        quantize(tiny_llama, "ct2-int8", tmp_path / "out", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_failed_forced_run_keeps_the_previous_output(tiny_llama, tmp_path, monkeypatch):
    out = tmp_path / "out"
    quantize(tiny_llama, "ct2-int8", out, progress=False)
    before = (out / "model.bin").read_bytes()

    def broken(source, work_dir, spec, calibration, progress):
        raise RuntimeError("disk full")

    monkeypatch.setattr(ct2_backend, "run", broken)
    with pytest.raises(RuntimeError):
        quantize(tiny_llama, "ct2-float32", out, force=True, progress=False)
    assert (out / "model.bin").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_cli_reports_a_failing_backend_as_a_bug_not_a_user_error(tiny_llama, tmp_path, monkeypatch, capsys):
    def broken(source, work_dir, spec, calibration, progress):
        raise RuntimeError("converter crashed")

    monkeypatch.setattr(ct2_backend, "run", broken)
    args = ["quantize", "--model", str(tiny_llama), "--method", "ct2-int8", "--out", str(tmp_path / "o"), "--no-progress"]
    assert main(args) == 3  # its own code: neither "did not load" (1) nor bad input (2)
    err = capsys.readouterr().err
    assert err == (
        "internal error: RuntimeError: converter crashed. This is a bug in infer-advisor; rerun with --debug for the "
        "traceback and report it.\n"
    )
    with pytest.raises(RuntimeError, match="converter crashed"):
        main(["--debug", *args])
    assert list(tmp_path.iterdir()) == []


def test_output_that_does_not_load_exits_1_but_stays(tiny_llama, tmp_path, capsys, monkeypatch):
    def unloadable(model_dir, spec, *, prompt, max_new_tokens, eval_texts):
        raise RuntimeError("model.bin is truncated")

    monkeypatch.setattr(ct2_backend, "check", unloadable)
    code = main(["quantize", "--model", str(tiny_llama), "--method", "ct2-int8", "--out", str(tmp_path / "o")])
    captured = capsys.readouterr()
    assert code == 1
    assert "check: failed" in captured.out and "RuntimeError: model.bin is truncated" in captured.out
    assert "did not load" in captured.err
    assert (tmp_path / "o" / "model.bin").is_file()


def test_reload_check_runs_in_the_staging_folder(tiny_llama, tmp_path, monkeypatch):
    """The probe: a signal during the reload check left a complete-looking, unchecked folder."""
    seen = {}

    def interrupted_check(model_dir, spec, *, prompt, max_new_tokens, eval_texts):
        seen["checked_a_model"] = (model_dir / "model.bin").is_file()
        seen["out_existed"] = (tmp_path / "o").exists()
        raise KeyboardInterrupt  # what the CLI's SIGTERM handler raises

    monkeypatch.setattr(ct2_backend, "check", interrupted_check)
    with pytest.raises(KeyboardInterrupt):
        quantize(tiny_llama, "ct2-int8", tmp_path / "o", progress=False)
    assert seen == {"checked_a_model": True, "out_existed": False}
    assert list(tmp_path.iterdir()) == []


def test_config_without_weights_is_one_line(tmp_path, capsys):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text('{"model_type": "llama", "hidden_size": 128}')
    err = _error_line(capsys, "--model", str(tmp_path / "m"), "--method", "ct2-int8", "--out", str(tmp_path / "o"))
    assert "no weight files" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


@pytest.mark.parametrize("where", ["/proc/x", "FILE/sub", "/sys/x"])
def test_out_that_cannot_be_created_is_one_line(tiny_llama, tmp_path, capsys, where):
    (tmp_path / "FILE").write_text("x")
    out = str(tmp_path / where) if where.startswith("FILE") else where
    err = _error_line(capsys, "--model", str(tiny_llama), "--method", "ct2-int8", "--out", out)
    assert "cannot be written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FILE"]


_KILLED = """
import os, sys, time
from infer_advisor.quantize import ct2_backend
from infer_advisor.cli import main

parent = os.fdopen(os.dup(1), "w")  # quantize sends fd 1 to stderr while a backend runs

def slow(source, work_dir, spec, calibration, progress):
    (work_dir / "model.bin").write_bytes(b"half written")
    print("converting", file=parent, flush=True)
    time.sleep(120)
    return []

ct2_backend.run = slow
sys.exit(main(["quantize", "--model", sys.argv[1], "--method", "ct2-int8", "--out", sys.argv[2], "--no-progress"]))
"""


def test_killed_run_leftover_is_removed_by_the_next_run(tiny_llama, tmp_path, capsys):
    """The probe: a kill left hidden `.NAME.partial-*` folders behind for good."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "q"
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "INFER_ADVISOR_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED, str(tiny_llama), str(out)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout.readline().strip() == "converting"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (left,) = [p.name for p in tmp_path.iterdir()]
    assert left.startswith(".q.partial-") and not out.exists()

    code = main(["quantize", "--model", str(tiny_llama), "--method", "ct2-int8", "--out", str(out), "--json", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert f"removed {left}, left by an interrupted run" in json.loads(captured.out)["notes"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q"]
