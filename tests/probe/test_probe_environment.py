"""Probe (issue 18, environment): a full disk, a file-size limit, stdout at /dev/full or closed, a deleted working
directory are the environment, not bugs: one line and exit 2 (closed stdout: nothing to print to, exit 0), never
the internal-error code 3."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

PLAN = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB"]


def _env(tmp_path) -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "INFER_ADVISOR_OFFLINE": "1", "INFER_ADVISOR_NO_NVML": "1",
            "INFER_ADVISOR_CACHE": str(tmp_path / "cache")}


def _cli(args, tmp_path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "infer_advisor.cli", *args], env=_env(tmp_path), capture_output=True,
                          text=True, timeout=60, check=False, **kw)


def _one_line_2(r) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("error: "), r.stderr


def test_stdout_on_a_full_device(tmp_path):
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "infer_advisor.cli", *PLAN], env=_env(tmp_path), stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    _one_line_2(r)
    assert "No space left" in r.stderr


def test_stdout_closed(tmp_path):
    r = subprocess.run([sys.executable, "-m", "infer_advisor.cli", *PLAN], env=_env(tmp_path), stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=60, check=False,
                       preexec_fn=lambda: os.close(1))
    assert r.returncode in (0, 2) and "internal error" not in r.stderr, r.stderr


def test_a_deleted_working_directory(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    r = subprocess.run([sys.executable, "-c", "import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
                        "from infer_advisor.cli import main; sys.exit(main(sys.argv[2:]))", str(gone), *PLAN,
                        "--emit", "script", "--out", "x"], env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    _one_line_2(r)
    assert "working directory" in r.stderr


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_FSIZE"), reason="no file-size limit on this platform")
def test_a_file_size_limit_during_emit(tmp_path):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "infer_advisor.cli", "plan", "--model", "meta-llama/Llama-3.1-405B",
                        "--gpu", "H100-80GB:8x2", "--emit", "all", "--out", str(out)], env=_env(tmp_path),
                       capture_output=True, text=True, timeout=60, check=False, preexec_fn=limit)
    _one_line_2(r)
    assert not out.exists()  # nothing half-written left behind


def test_python_warnings_are_one_line_each(tmp_path):
    r = _cli([*PLAN, "--engine", "vllm", "--engine-version", "0.40.0", "--emit", "script", "--out", str(tmp_path / "o")], tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines and all(line.startswith("warning: ") for line in lines), r.stderr


def test_force_keeps_a_user_file_named_like_a_staging_temp(tmp_path):
    out = tmp_path / "out"
    assert _cli([*PLAN, "--emit", "script", "--out", str(out)], tmp_path).returncode == 0
    mine = out / ".infer-advisor.partial-notes.tmp"
    mine.write_text("mine")
    os.utime(mine, (1, 1))  # old, unlocked: what a killed writer's temp file looks like
    assert _cli([*PLAN, "--emit", "script", "--out", str(out), "--force"], tmp_path).returncode == 0
    assert mine.read_text() == "mine"
