"""Every shipped rule has a situation where it applies and one where it must not (rule_fixtures.yaml).

The fact table comes from plan/facts.py over real catalog models and catalog hardware, so a rule that
names a fact the planner does not provide fails here too (RuleFileError). The effect is checked as the
search applies it (rules.evaluate.judge): forbid blocks the option, prefer adds its score, require
blocks every other option.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from infer_advisor.plan.advise import defaults
from infer_advisor.plan.facts import base_facts
from infer_advisor.request import PlanRequest
from infer_advisor.rules.evaluate import judge
from infer_advisor.rules.loader import load_rules
from tests.plan.planning import catalog_model, hardware

DATA = yaml.safe_load(Path(__file__).with_name("rule_fixtures.yaml").read_text(encoding="utf-8"))
SHIPPED = {r.id: r for r in load_rules()}


@cache
def _base(name: str) -> dict[str, Any]:
    spec = DATA["bases"][name]
    model = catalog_model(spec["model"], spec.get("pre_quantized_as"))
    hw = hardware(spec["gpu"])
    request = PlanRequest(model=spec["model"], **spec.get("options", {}))
    d = defaults()
    concurrency = request.concurrency or (d.cpu_concurrency if hw.kind == "cpu" else d.concurrency[request.goal])
    return base_facts(model, hw, request, concurrency, request.context or model.max_position_embeddings)


def _situations(entry: dict | list) -> list[dict]:
    return entry if isinstance(entry, list) else [entry]


def _judge(rule, situation: dict):
    facts = {**_base(situation["at"]), **situation.get("facts", {})}
    if rule.decides == "layout":
        facts.setdefault("pp", 1)
        facts.setdefault("nodes", 1)
        facts["pp"], facts["nodes"] = facts["pp"] or 1, facts["nodes"] or 1
        option = f"tp={facts['tp']} pp={facts['pp']} nodes={facts['nodes']}"
    else:
        option = situation["option"]
        facts[rule.decides] = option
    return judge([rule], rule.decides, option, facts, None), option


def test_no_stale_fixtures():
    stale = set(DATA["fixtures"]) - set(SHIPPED)
    assert not stale, f"fixtures for rules that are not shipped: {sorted(stale)}"


@pytest.mark.parametrize("rule_id", sorted(SHIPPED))
def test_rule_has_matching_and_non_matching_fixture(rule_id):
    rule = SHIPPED[rule_id]
    entry = DATA["fixtures"].get(rule_id)
    assert entry is not None, f"shipped rule {rule_id} has no fixture: add one to tests/rules/rule_fixtures.yaml"
    assert entry.get("match") and entry.get("no_match"), f"{rule_id}: needs both match and no_match"

    for situation in _situations(entry["match"]):
        verdict, option = _judge(rule, situation)
        assert rule in verdict.matched, f"{rule_id} should apply to {situation}"
        if rule.effect == "forbid":
            assert not verdict.allowed and verdict.blocked_by is rule
        elif rule.effect == "prefer":
            assert verdict.allowed and verdict.score == rule.score
        else:  # require: the required value passes, any other option is blocked
            assert verdict.allowed == (option == rule.value)
            other, _ = _judge(rule, {**situation, "option": "none" if rule.value != "none" else "awq"})
            assert not other.allowed and other.blocked_by is rule

    for situation in _situations(entry["no_match"]):
        verdict, _ = _judge(rule, situation)
        assert rule not in verdict.matched, f"{rule_id} must not apply to {situation}"
        assert verdict.allowed and verdict.score == 0
