"""Issue 25 item 6: one spelling for output formats, `--format`, on every command; `--json` stays its alias."""

from __future__ import annotations

import json

import pytest

from infer_advisor.cli import main


@pytest.mark.parametrize("args", [
    ["gpus", "--catalog-only"],
    ["models"],
    ["schema"],
    ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB"],
])  # fmt: skip
def test_format_json_equals_the_json_alias(capsys, args):
    assert main([*args, "--format", "json"]) == 0
    by_format = json.loads(capsys.readouterr().out)
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_format


@pytest.mark.parametrize("command", ["gpus", "models", "plan", "bench", "calibrate", "quantize", "schema"])
def test_every_command_documents_format(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "--format" in out and "--json" in out, command


def test_a_clash_is_one_line(capsys):
    assert main(["gpus", "--catalog-only", "--json", "--format", "table"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--json and --format table disagree" in err


def test_extras_say_what_they_download():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme, pyproject = (root / "README.md").read_text(), (root / "pyproject.toml").read_text()
    recipe = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    assert recipe in readme and recipe in pyproject
    assert "CUDA wheels, even on a machine without\na GPU" in readme or "even on a machine without a GPU" in readme
    for extra in ("transformers", "ctranslate2", "bench", "vllm", "llamacpp"):  # a comment right above each
        lines = pyproject.splitlines()
        i = next(n for n, line in enumerate(lines) if line.startswith(f"{extra} = ["))
        assert lines[i - 1].startswith("#"), extra
