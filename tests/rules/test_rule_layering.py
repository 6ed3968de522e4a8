"""`--rules DIR` / advise(rules=...): a user rule with a shipped id replaces it, a new id adds a rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infer_advisor.cli import main
from infer_advisor.rules.loader import load_rules
from tests.plan.planning import plan_for

# Same id as the shipped engine.default.vllm: this site does not run vLLM.
REPLACE = """\
rules:
  - id: engine.default.vllm
    decides: engine
    effect: prefer
    value: vllm
    score: -100
    reason: Site policy - vLLM is not approved on this cluster.
    source: site operations handbook
"""

# A new id: this site never serves FP8 weights.
ADD = """\
rules:
  - id: site.no-fp8-weights
    decides: quantization
    effect: forbid
    value: fp8
    reason: Site policy - FP8 weights failed our accuracy review.
    source: site evaluation report
"""


def _folder(tmp_path: Path, body: str) -> Path:
    folder = tmp_path / "site-rules"
    folder.mkdir()
    (folder / "site.yaml").write_text(body, encoding="utf-8")
    return folder


def test_same_id_replaces(tmp_path):
    folder = _folder(tmp_path, REPLACE)
    shipped = {r.id: r for r in load_rules()}
    layered = {r.id: r for r in load_rules(folder)}
    assert set(layered) == set(shipped), "a replacement adds no rule"
    assert layered["engine.default.vllm"].score == -100 and shipped["engine.default.vllm"].score > 0

    before = plan_for("meta-llama/Llama-3.1-8B", "A100-80GB")
    after = plan_for("meta-llama/Llama-3.1-8B", "A100-80GB", rules=folder, explain=True)
    assert before.engine.name == "vllm"
    # With vLLM's preference replaced by -100, SGLang (the named alternative, +40) ranks first.
    assert after.engine.name == "sglang"
    assert "engine.alternative.sglang" in {d.rule_id for d in after.decisions}
    traced = [t for t in after.explain if t.rule_id == "engine.default.vllm"]
    assert traced and all(t.matched for t in traced)


def test_new_id_adds(tmp_path):
    folder = _folder(tmp_path, ADD)
    assert len(load_rules(folder)) == len(load_rules()) + 1

    before = plan_for("Qwen/Qwen2.5-14B", "L4", context=8192)
    after = plan_for("Qwen/Qwen2.5-14B", "L4", context=8192, rules=folder, explain=True)
    assert before.quantization.method == "fp8"
    # FP8 forbidden by the site: the next quantization that keeps 14B on the L4 is AWQ.
    assert after.feasible and after.quantization.method == "awq"
    assert any(t.rule_id == "site.no-fp8-weights" and t.applied_to == "fp8" and t.matched for t in after.explain)


def test_user_choice_refused_by_a_user_rule(tmp_path):
    folder = _folder(tmp_path, ADD)
    plan = plan_for("Qwen/Qwen2.5-14B", "L4", context=8192, quantization="fp8", rules=folder)
    assert not plan.feasible and plan.quantization.method == "fp8"
    assert "site.no-fp8-weights" in plan.infeasible_reason and "accuracy review" in plan.infeasible_reason


@pytest.mark.parametrize(
    "body, args, field, expected, rule_id",
    [
        (REPLACE, ["--model", "meta-llama/Llama-3.1-8B", "--gpu", "A100-80GB"], ("engine", "name"), "sglang", "engine.default.vllm"),
        (ADD, ["--model", "Qwen/Qwen2.5-14B", "--gpu", "L4", "--context", "8192"], ("quantization", "method"), "awq", "site.no-fp8-weights"),
    ],
    ids=["replace", "add"],
)
def test_cli_rules_dir(tmp_path, capsys, body, args, field, expected, rule_id):
    folder = _folder(tmp_path, body)
    code = main(["plan", *args, "--model-source", "catalog", "--rules", str(folder), "--json", "--explain"])
    out = capsys.readouterr().out
    assert code == 0
    plan = json.loads(out)
    assert plan[field[0]][field[1]] == expected
    assert any(t["rule_id"] == rule_id and t["matched"] for t in plan["explain"])
