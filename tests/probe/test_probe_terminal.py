"""Probe (issue 18, terminal): text from config.json fields, folder names, rule reasons and warnings reaches tables,
--explain and markdown only through one sanitiser; --format json stays raw and exact."""

from __future__ import annotations

import json

import pytest

from tests.probe.contract import check, probe_environment, run_cli
from tests.probe.hostile import MARKUP_SPECIAL

ESC_LINK = "\x1b]8;;http://evil/\x1b\\click\x1b]8;;\x1b\\"


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    probe_environment(monkeypatch, tmp_path / "cache")
    monkeypatch.chdir(tmp_path)


def _model_dir(tmp_path, name: str, **fields):
    from infer_advisor.model_facts.catalog import find_entry

    folder = tmp_path / name
    folder.mkdir()
    config = {**find_entry("meta-llama/Llama-2-7b-hf").config, **fields}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _no_controls(text: str) -> None:
    assert "\x1b" not in text and "\x9b" not in text and "\r" not in text and "\u202e" not in text, repr(text[:400])


@pytest.mark.parametrize("markup", MARKUP_SPECIAL)
def test_models_dir_with_markup_in_its_name_and_fields(markup, tmp_path):
    folder = _model_dir(tmp_path, "m" + markup.replace("/", "_"), architectures=[f"Llama{markup}{ESC_LINK}ForCausalLM"])
    args = ["models", str(folder)]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 0, outcome.err  # `[/]` exited 3 (rich MarkupError)
    _no_controls(outcome.out)
    assert f"Llama{markup}" in outcome.out.replace("\n", "")  # shown as text, not interpreted


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_plan_output_neutralises_terminal_and_markdown(fmt, tmp_path):
    folder = _model_dir(tmp_path, "m-[link=http:__evil]x[_link]", architectures=[f"Llama<img src=x>\r|{ESC_LINK}ForCausalLM"])
    args = ["plan", "--model", str(folder), "--gpu", "A100-80GB", "--explain", "--format", fmt]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 0, outcome.err
    _no_controls(outcome.out)
    if fmt == "markdown":
        assert "<img" not in outcome.out and "&lt;img" in outcome.out
        assert "[link=http:__evil]" not in outcome.out and "\\[link=http:__evil\\]" in outcome.out
        for line in outcome.out.splitlines():
            if line.startswith("| model "):
                assert line.count(" | ") == 2, line  # '|' in a value does not add a cell
    else:
        assert "[link=http:__evil]x[_link]" in outcome.out.replace("\n", "").replace("│", "").replace(" ", "")


def test_json_stays_raw_and_exact(tmp_path):
    arch = f"Llama[/]<b>\r{ESC_LINK}ForCausalLM"
    folder = _model_dir(tmp_path, "m-[b]-x", architectures=[arch])
    args = ["plan", "--model", str(folder), "--gpu", "A100-80GB", "--format", "json"]
    outcome = run_cli(args)
    check(outcome, args)
    data = json.loads(outcome.out)
    assert data["model"]["architecture"] == arch and data["model"]["name"] == str(folder)
