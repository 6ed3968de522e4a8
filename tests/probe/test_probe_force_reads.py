"""Probe (secaudit, session 8: every read is bounded): with --force, a writer first reads the existing file to check
it is its own (a calibration JSON, a --plot PNG, an --out folder's manifest). Those reads were unbounded
`read_text()`/`read_bytes()`: `calibrate ... --out PIPE --force` (a FIFO) hung forever, and a --plot or --out that is a
link to /dev/zero would have read without end. They now go through the bounded reader (regular files only, capped):
such a path is "not written by infer-advisor", one line, exit 2, in well under the time limit.

Each case runs in a subprocess with a timeout (tests/probe/test_probe_reads.py), so a regression fails instead of
hanging the suite. /dev/zero links are only tried where the bounded reader refuses them before reading.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import infer_advisor
from tests.probe.contract import TIME_LIMIT_S
from tests.probe.test_probe_reads import _one_line_exit_2

LOG = Path(__file__).parents[1] / "estimate" / "logs" / "vllm_v1_0.19_h100_llama31_8b.log"
CALIBRATE = ["calibrate", "--from-log", str(LOG), "--gpu", "H100-80GB", "--model", "meta-llama/Llama-3.1-8B"]
SIZED = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--rate", "1"]


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """The CLI of the package under test (its source folder first on the path, whatever the working directory)."""
    src = str(Path(infer_advisor.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]), "HF_HUB_OFFLINE": "1",
           "INFER_ADVISOR_OFFLINE": "1", "INFER_ADVISOR_NO_NVML": "1", "INFER_ADVISOR_CACHE": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "infer_advisor.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIME_LIMIT_S, check=False)


def _special(path: Path, kind: str) -> Path:
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("writer", ["calibrate-out", "plan-plot"])
def test_force_never_reads_a_special_file(writer, kind, tmp_path):
    if writer == "plan-plot":
        pytest.importorskip("matplotlib")
        args = [*SIZED, "--plot", str(_special(tmp_path / "front.png", kind)), "--force"]
    else:
        args = [*CALIBRATE, "--out", str(_special(tmp_path / "cal.json", kind)), "--force"]
    line = _one_line_exit_2(_cli(args, tmp_path))
    assert "was not written by infer-advisor" in line, line


def test_force_never_reads_a_fifo_manifest(tmp_path):
    """An --out folder whose manifest is a FIFO: the check does not block (the folder is written or refused)."""
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / ".infer-advisor-manifest.json")
    r = _cli(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--emit", "script", "--out", str(out),
              "--force"], tmp_path)
    assert r.returncode in (0, 2), r.stderr
    if r.returncode == 2:
        _one_line_exit_2(r)
    else:
        assert (out / "serve.sh").is_file() and (out / ".infer-advisor-manifest.json").is_file()
