"""Probe (issue 18): the injection cases as a user or an attacker types them, through the CLI and the Python API.
Each ends in exit 2 with one line (or a RequestError), and nothing is written; safe-but-special values are quoted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.probe.contract import check, probe_environment, run_cli
from tests.probe.hostile import BAD_VERSIONS, GOOD_VERSIONS, LINE_BREAKS, REFUSED

PLAN = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--engine", "vllm"]
INLINE_GPU = ('{{name: "{name}", memory_gib: 80, memory_bandwidth_gb_s: 2000, tflops: {{bf16: 300, fp16: 300}}, '
              "compute_capability: 8.0, interconnect: pcie, interconnect_gb_s: 32}}")


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    probe_environment(monkeypatch, tmp_path / "cache")
    monkeypatch.chdir(tmp_path)


def _refused(args: list[str], out: Path) -> str:
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 2, (args, outcome.out[-500:])
    assert not out.exists() and not Path("CANARY").exists()
    return outcome.err


@pytest.mark.parametrize("version", BAD_VERSIONS)
def test_bad_engine_version_is_refused(version, tmp_path):
    out = tmp_path / "out"
    err = _refused([*PLAN, "--engine-version", version, "--emit", "all", "--out", str(out)], out)
    assert "--engine-version" in err and "\n" not in err.rstrip("\n")


@pytest.mark.parametrize(("typed", "kept"), sorted(GOOD_VERSIONS.items()))
def test_good_engine_versions_are_kept(typed, kept):
    if typed == "b7200":
        args = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--engine", "llama.cpp",
                "--quantization", "gguf-q4_k_m", "--engine-version", typed, "--format", "json"]
    else:
        args = [*PLAN, "--engine-version", typed, "--format", "json"]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 0, outcome.err
    assert json.loads(outcome.out)["engine"]["version"] == kept


@pytest.mark.parametrize("brk", LINE_BREAKS)
def test_inline_gpu_name_with_a_line_break_is_refused(brk, tmp_path):
    out = tmp_path / "out"
    spec = INLINE_GPU.format(name="x" + brk.encode("unicode_escape").decode().replace("\\x", "\\x") + "touch CANARY #")
    err = _refused(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", spec, "--emit", "all", "--out", str(out)], out)
    assert "--gpu" in err


@pytest.mark.parametrize("brk", ["\x85", "\u2028", "\u2029", "\n", "\u202e"])
def test_model_folder_with_a_separator_is_refused(brk, tmp_path):
    from infer_advisor.model_facts.catalog import find_entry

    folder = tmp_path / f"my{brk}key: injected"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(find_entry("meta-llama/Llama-2-7b-hf").config))
    out = tmp_path / "out"
    _refused(["plan", "--model", str(folder), "--gpu", "A100-80GB", "--emit", "all", "--out", str(out)], out)


@pytest.mark.parametrize("value", REFUSED[:6] + REFUSED[-4:])
def test_python_api_refuses_unsafe_values(value):
    from infer_advisor import advise
    from infer_advisor.errors import InferAdvisorError

    for kwargs in ({"model": value}, {"gpu": value}, {"engine": "vllm", "engine_version": value}, {"revision": value}):
        with pytest.raises(InferAdvisorError):
            advise(**{"model": "meta-llama/Llama-2-7b-hf", "gpu": "A100-80GB", **kwargs})


def test_quotable_values_reach_the_script_as_one_word(tmp_path):
    """A local model folder whose name holds shell and YAML specials (all safe characters) is served, quoted."""
    import subprocess

    from infer_advisor.model_facts.catalog import find_entry

    folder = tmp_path / "m$(touch CANARY) `touch CANARY`'\"; x #[b] key: v"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(find_entry("meta-llama/Llama-2-7b-hf").config))
    out = tmp_path / "out"
    args = ["plan", "--model", str(folder), "--gpu", "A100-80GB", "--engine", "vllm", "--emit", "all", "--out", str(out)]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 0, outcome.err
    assert subprocess.run(["bash", "-n", str(out / "serve.sh")], check=False).returncode == 0
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "vllm").write_text('#!/bin/bash\nprintf "%s\\n" "$2" > "$RECORD"\n')
    os.chmod(stub / "vllm", 0o755)
    record = tmp_path / "record"
    subprocess.run(["bash", str(out / "serve.sh")], env={"PATH": f"{stub}:/usr/bin:/bin", "RECORD": str(record)},
                   cwd=tmp_path, check=False, timeout=30)
    assert record.read_text().rstrip("\n") == str(folder)
    assert not list(tmp_path.rglob("CANARY"))
