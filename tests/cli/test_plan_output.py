"""`plan` output a reader can use: --format table|markdown|json, tables that never cut a number in a pipe,
--explain grouped by candidate with bracketed conditions and the deciding comparison, plain wording."""

from __future__ import annotations

import json
import re

import pytest

from infer_advisor.cli import main
from infer_advisor.plan import advise
from infer_advisor.plan.explain import candidate_groups, deciding_comparison

ARGS = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB"]


def _out(capsys, *extra: str, code: int = 0) -> str:
    assert main([*ARGS, *extra]) == code
    return capsys.readouterr().out


def test_format_json_is_the_json_alias(capsys):
    assert json.loads(_out(capsys, "--format", "json")) == json.loads(_out(capsys, "--json"))
    assert main([*ARGS, "--json", "--format", "markdown"]) == 2
    assert "disagree" in capsys.readouterr().err


def test_markdown_has_the_tables_and_the_same_figures(capsys):
    md = _out(capsys, "--format", "markdown", "--explain")
    assert md.startswith("## meta-llama/Llama-2-7b-hf (catalog) on 1x A100-80GB (catalog): feasible\n")
    assert "| model | LlamaForCausalLM, 6.74 B params, context 4,096 | catalog |" in md
    assert "### Decisions" in md and "### Rules considered, by decision" in md and "**engine: vllm (score +50" in md
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert all(line.count("|") - line.count("\\|") == rows[0].count("|") for line in rows[:14])  # 3 columns each
    plan = json.loads(_out(capsys, "--json"))
    assert f"{plan['memory']['kv_cache_tokens']:,} tokens" in md


def test_table_in_a_pipe_is_wide_and_cuts_nothing(capsys, monkeypatch):
    """The probe: 80 columns in a pipe or CI log; reasons wrapped at about 18 characters; numbers cut with '…'."""
    monkeypatch.delenv("COLUMNS", raising=False)
    out = _out(capsys, "--explain")
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) > 120
    plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
    assert f"{plan.memory.kv_cache_tokens:,} tokens" in out
    reason = plan.decisions[0].reason  # a whole reason sentence wraps at most once at 200 columns
    first_words = " ".join(reason.split()[:8])
    assert first_words in out


def test_explain_groups_rules_by_named_candidate(capsys):
    """The probe: the same rules repeated for every candidate without naming it; `not (4 divides 64 is True)`."""
    assert "engine vllm (score +50)" in _out(capsys, "--explain")  # the table names it too
    out = _out(capsys, "--explain", "--format", "markdown")  # one line per row: exact text
    assert "| engine vllm (score +50) | engine.default.vllm | prefer +50 | yes | always |" in out
    assert "vllm: dtype float32 (forbidden by dtype.gpu-no-float32)" in out
    assert "vllm + none: layout tp=1 pp=1 nodes=1" in out
    assert "(gpu.vendor='nvidia' == 'nvidia' is True) and (gpu.compute_capability=8.0 < 7.0 is False)" in out
    assert "not (tp=1 divides model.num_attention_heads=32 is True) is False" in out
    assert out.index("**engine: vllm (score +50") < out.index("| engine vllm (score +50) |")  # each decision's summary first


def test_every_rule_appears_once_per_candidate():
    plan = advise(model="meta-llama/Llama-3.1-70B", gpu="H100-80GB:8", explain=True)
    groups = candidate_groups(plan)
    for g in groups:
        ids = [t.rule_id for t in g.rules]
        assert len(ids) == len(set(ids)), g.name
    names = [g.name for g in groups]
    assert len(names) == len(set(names))
    layouts = {g.context for g in groups if g.decides == "layout"}
    assert {"vllm + none", "vllm + awq"} <= layouts  # the same layout, named apart by the weights it was judged for


def test_deciding_comparison_says_why_the_winner_won():
    plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", explain=True)
    lines = deciding_comparison(plan)
    assert lines[0].startswith("engine: vllm (score +50: engine.default.vllm) over sglang (+40)")
    assert "tgi (forbidden by engine.tgi.on-request-only)" in lines[0]
    assert [line.split(":")[0] for line in lines] == [
        "engine", "dtype (vllm)", "KV-cache dtype (vllm)", "quantization (vllm)", "layout (vllm + none)", "prefix caching",
    ]  # fmt: skip
    assert "Chosen by memory fit" in lines[-2]
    # When memory passes over a higher-ranked option, the line says so.
    big = deciding_comparison(advise(model="meta-llama/Llama-3.1-70B", gpu="L40S", explain=True))
    quant = next(line for line in big if line.startswith("quantization"))
    assert quant.startswith("quantization (vllm): awq") and "ranked higher but not chosen: none (+30)" in quant
    kv = next(line for line in big if line.startswith("KV-cache dtype"))
    assert kv.startswith("KV-cache dtype (vllm): fp8") and "5,376" in kv and "10,768" in kv


def test_wording(capsys):
    from infer_advisor.cli.render_plan import summary_rows

    text = _out(capsys, "--explain", "--format", "markdown")
    assert "highest-ranked none layout" not in text and "for unquantized weights whose memory fits" in text
    assert "about 30B" not in text and "Models up to 35B parameters" in text
    one = advise(model="meta-llama/Llama-3.1-70B", gpu="L40S")
    table = "\n".join(str(r) for r in summary_rows(one))
    assert re.search(r"\b1 requests\b", table + " ".join(one.warnings)) is None
    assert "1 request of 10,768 tokens" in table


@pytest.mark.parametrize("gpu", ["L40S", "A100-80GB", "T4"])
def test_warnings_never_advise_what_the_rules_refuse(gpu):
    """The probe: a plan advised --kv-cache-dtype fp8 where the fp8 gate then refused it."""
    from tests.plan.planning import plan_for

    for model in ("meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-8B"):
        for hw in (gpu, "cpu"):
            plan = plan_for(model, hw, explain=True)
            for warning in plan.warnings:
                for kv in re.findall(r"--kv-cache-dtype (\w+)", warning):
                    refused = [g for g in candidate_groups(plan) if g.decides == "kv_cache_dtype" and g.option == kv and not g.allowed]
                    assert not refused, (model, hw, warning)
                    assert kv != plan.engine.kv_cache_dtype, (model, hw, warning)


def test_markdown_and_explain_show_the_new_plan_fields(capsys):
    """The fields main added (usable memory, speculative decoding, prefix caching, published checkpoints, CPU sockets,
    llama.cpp's f16 KV, calibrated figures) appear in every format, and --explain names the built-in decisions."""
    md = _out_of(capsys, ["--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "H100-80GB:4", "--goal", "latency",
                          "--format", "markdown", "--explain"])  # fmt: skip
    assert "80.0 GiB (79.2 GiB usable)" in md
    assert "| speculative decoding | eagle3 with yuhuili/EAGLE3-LLaMA3.3-Instruct-70B, " in md and "draft weights" in md
    assert "| prefix caching | on by default in vLLM" in md
    assert "**speculative decoding: eagle3 with yuhuili/EAGLE3-LLaMA3.3-Instruct-70B (the latency goal" in md
    assert "**prefix caching: on by default in vLLM" in md
    plan = advise(model="meta-llama/Llama-3.3-70B-Instruct", gpu="L40S", quantization="awq", model_source="catalog", explain=True)
    repo = plan.quantization.published_checkpoint.repo
    md = _out_of(capsys, ["--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "L40S", "--quantization", "awq",
                          "--model-source", "catalog", "--format", "markdown", "--explain"])  # fmt: skip
    assert f"| quantization | awq (published checkpoint {repo}) | rules |" in md and "infer-advisor quantize" not in md
    assert f"served from the published checkpoint {repo}" in next(
        line for line in deciding_comparison(plan) if line.startswith("quantization")
    )
    md = _out_of(capsys, ["--model", "meta-llama/Llama-2-7b-hf", "--gpu", "cpu", "--engine", "llama.cpp", "--format", "markdown",
                          "--explain"])  # fmt: skip
    assert " per socket" in md and " per GPU" not in md and "/ auto (f16) |" in md
    table = _out_of(capsys, ["--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "H100-80GB:4", "--goal", "latency", "--explain"])
    assert "speculative decoding" in table and "prefix caching" in table and "(79.2 GiB usable)" in table


def _out_of(capsys, args: list[str], code: int = 0) -> str:
    assert main(["plan", *args]) == code, capsys.readouterr().err
    return capsys.readouterr().out
