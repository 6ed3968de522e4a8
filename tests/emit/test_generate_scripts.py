"""The generated Python scripts really run: transformers' generate.py and CTranslate2's generate.py (after the
README's exact `infer-advisor quantize` command) on a tiny Llama built here, on CPU."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from infer_advisor.emit import render
from tests.emit.plans import local_plan
from tests.support.tiny_llama import build_tiny_llama

pytestmark = pytest.mark.integration
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("models") / "tiny llama")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PATH": f"{BIN}:{os.environ['PATH']}"}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


def test_transformers_script_generates(tiny, tmp_path):
    plan = local_plan(str(tiny), json.loads((tiny / "config.json").read_text()), gpu="cpu", engine="transformers")
    out = tmp_path / "out"
    render(plan, "script", out=out)
    r = _run([sys.executable, str(out / "generate.py"), "--prompt", "Hello", "--prompt", "The quick", "--max-new-tokens", "4"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(r.stdout.splitlines()) == 2


def test_ctranslate2_script_generates_after_the_readme_quantize_step(tiny, tmp_path):
    plan = local_plan(str(tiny), json.loads((tiny / "config.json").read_text()), gpu="cpu", engine="ctranslate2")
    out = tmp_path / "out"
    files = render(plan, "script", out=out)
    step = next(line for line in files["README.md"].splitlines() if line.startswith("infer-advisor quantize "))
    r = _run(shlex.split(step), out)
    assert r.returncode == 0, r.stderr[-3000:]
    r = _run([sys.executable, "generate.py", "--prompt", "Hello", "--max-new-tokens", "4", "--device", "cpu"], out)
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(r.stdout.splitlines()) == 1
