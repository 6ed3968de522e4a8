"""Issue 25 item 1: the default `plan` answer fits on a screen (README's first command <= 20 rows at 100 columns),
says what to run, what it holds and how sure the speed is, and leaves rules that decided nothing to --explain."""

from __future__ import annotations

import math

import pytest

from infer_advisor.cli import main

README_FIRST = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB"]


def _run(capsys, monkeypatch, args: list[str], columns: int = 100, code: int = 0) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(args) == code, capsys.readouterr().err
    return capsys.readouterr().out


def rows_at(text: str, columns: int) -> int:
    """Terminal rows the text takes at ``columns`` (a command line is one line the terminal soft-wraps)."""
    return sum(max(1, math.ceil(len(line) / columns)) for line in text.splitlines())


def test_readme_first_command_fits_in_twenty_rows_at_100_columns(capsys, monkeypatch):
    out = _run(capsys, monkeypatch, README_FIRST)
    assert rows_at(out, 100) <= 20, out
    lines = out.splitlines()
    assert lines[0] == "meta-llama/Llama-2-7b-hf (catalog) on 1x A100-80GB (catalog): feasible"
    run = next(line for line in lines if line.startswith("run "))
    assert "vllm serve meta-llama/Llama-2-7b-hf" in run and "--max-model-len 4096" in run  # the command, on one line
    for label in ("engine", "layout", "memory", "speed", "how sure", "decided", "more"):
        assert any(line.startswith(label + " ") for line in lines), label
    assert "121,728 tokens" in out and "29 requests of 4,096 tokens" in out  # KV tokens and concurrency
    from infer_advisor import advise

    lo, hi = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB").performance.error_band
    assert f"within {lo:.2f}x-{hi:.2f}x of the prediction" in out  # the speed's error band
    assert all(len(line) <= 100 for line in lines if not line.startswith("run "))


def test_only_rules_that_decided_something(capsys, monkeypatch):
    out = _run(capsys, monkeypatch, README_FIRST)
    assert "not gptq" not in out and "not int8" not in out and "not nvfp4" not in out  # forbids of unchosen options
    decided = [line for line in out.splitlines() if "(" in line and "): " in line and ("decided" in line or line.startswith(" "))]
    assert len(decided) == 5 and all(len(line) <= 100 for line in decided)  # one line each
    explain = _run(capsys, monkeypatch, [*README_FIRST, "--explain"])
    assert "quant.no-quantizer-gptq" in explain  # ... and every rule is behind --explain


def test_explain_puts_the_summary_first_and_groups_by_decision(capsys, monkeypatch):
    brief = _run(capsys, monkeypatch, README_FIRST)
    out = _run(capsys, monkeypatch, [*README_FIRST, "--explain"])
    assert out.startswith(brief)
    order = [out.index(head) for head in ("engine: vllm (score", "dtype (vllm): bfloat16", "KV-cache dtype (vllm): auto",
                                          "quantization (vllm): none", "layout (vllm + none):")]
    assert order == sorted(order)


def test_at_most_three_warnings_and_the_step_before_the_command(capsys, monkeypatch):
    out = _run(capsys, monkeypatch, ["plan", "--model", "meta-llama/Llama-3.1-70B", "--gpu", "L40S"])
    warnings = [i for i, line in enumerate(out.splitlines()) if line.startswith("warning ")]
    assert len(warnings) == 1  # one label; at most three warnings under it
    assert rows_at(out, 100) <= 30
    assert "infer-advisor quantize --model meta-llama/Llama-3.1-70B --method awq" in out  # the step before the command


@pytest.mark.parametrize("args", [
    ["--gpu", "cpu", "--model", "meta-llama/Llama-3.1-8B"],
    ["--gpu", "H100-80GB:4", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--goal", "latency"],
])  # fmt: skip
def test_other_plans_stay_short(capsys, monkeypatch, args):
    out = _run(capsys, monkeypatch, ["plan", *args])
    assert rows_at(out, 100) <= 25, out


def test_markdown_is_the_same_short_answer(capsys, monkeypatch):
    md = _run(capsys, monkeypatch, [*README_FIRST, "--format", "markdown"])
    assert md.startswith("## meta-llama/Llama-2-7b-hf (catalog) on 1x A100-80GB (catalog): feasible\n")
    assert "- **run**: vllm serve meta-llama/Llama-2-7b-hf" in md and "| model |" not in md
    assert len(md.splitlines()) <= 20


def test_a_worst_case_the_user_never_asked_for_is_said_in_their_terms():
    """The probe: "not 32 x 131,072" when neither 32 nor 131,072 was asked for."""
    from infer_advisor import advise

    plan = advise(model="meta-llama/Llama-3.1-70B", gpu="L40S")
    text = " ".join(plan.warnings)
    assert "32 x 131,072" not in text
    assert "max_model_len lowered to 10,768 tokens, below meta-llama/Llama-3.1-70B's full 131,072" in text
    assert "32 concurrent requests (the throughput goal's default; --concurrency sets it)" in text
    asked = advise(model="meta-llama/Llama-3.1-70B", gpu="L40S", concurrency=64)  # the user's own number stays theirs
    assert any(w.startswith("64 concurrent requests of") for w in asked.warnings) and "default" not in " ".join(asked.warnings)


def test_the_readme_shows_what_the_first_command_prints(capsys, monkeypatch):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    shown = readme.split("```text\n", 1)[1].split("```", 1)[0]
    assert _run(capsys, monkeypatch, README_FIRST) == shown, (
        "README's first example is stale: paste the output of `COLUMNS=100 infer-advisor plan --model "
        "meta-llama/Llama-2-7b-hf --gpu A100-80GB` into it")
