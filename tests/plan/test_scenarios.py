"""The scenario table (scenarios.yaml): model x hardware x goal -> engine, quantization, dtype, TP, PP, nodes.

Each expected value is defended in the entry's `why` from the issue's rules and the memory arithmetic;
the table is data so that a reviewer can read the cases without reading Python.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.plan.planning import hardware, plan_for

TABLE = Path(__file__).with_name("scenarios.yaml")
SCENARIOS = yaml.safe_load(TABLE.read_text(encoding="utf-8"))["scenarios"]
REQUIRED = ("feasible", "engine", "quantization", "dtype", "tp", "pp", "nodes")
KNOWN_EXPECT = {
    *REQUIRED, "replicas", "executor", "max_model_len", "engine_flag", "pre_quantized", "needs_quantize_step",
    "warnings", "no_warnings", "decisions", "explain", "reason", "suggestion", "accounting", "speculative",
}


def test_table_is_well_formed():
    ids = [s["id"] for s in SCENARIOS]
    assert len(ids) == len(set(ids)), "duplicate scenario ids"
    assert len([s for s in SCENARIOS if "expect" in s]) >= 25
    for s in SCENARIOS:
        assert s.get("why", "").strip(), f"{s['id']}: every case says why"
        assert ("expect" in s) != ("refused" in s), s["id"]
        if "expect" in s:
            assert set(REQUIRED) <= set(s["expect"]), f"{s['id']}: missing {set(REQUIRED) - set(s['expect'])}"
            assert set(s["expect"]) <= KNOWN_EXPECT, f"{s['id']}: unknown keys {set(s['expect']) - KNOWN_EXPECT}"


def _plan(s: dict, **extra):
    return plan_for(s["model"], s["gpu"], pre_quantized_as=s.get("pre_quantized_as"), **{**s.get("options", {}), **extra})


@pytest.mark.parametrize("s", [s for s in SCENARIOS if "expect" in s], ids=lambda s: s["id"])
def test_scenario(s):
    e = s["expect"]
    plan = _plan(s, explain=True)
    got = {
        "feasible": plan.feasible,
        "engine": plan.engine.name,
        "quantization": plan.quantization.method,
        "dtype": plan.dtype,
        "tp": plan.parallelism.tensor_parallel_size,
        "pp": plan.parallelism.pipeline_parallel_size,
        "nodes": plan.parallelism.nodes,
    }
    assert got == {k: e[k] for k in REQUIRED}, f"{s['id']}: {s['why']}"

    if "replicas" in e:
        assert plan.parallelism.replicas == e["replicas"]
    if "accounting" in e:
        assert plan.memory.accounting == e["accounting"]
    if "speculative" in e:
        assert (plan.speculative.draft_model if plan.speculative else None) == e["speculative"]
        assert (plan.memory.draft_weights_bytes_per_gpu > 0) == (e["speculative"] is not None)
    if "executor" in e:
        assert plan.parallelism.executor == e["executor"]
    if "max_model_len" in e:
        if e["max_model_len"] == "lowered":
            assert plan.engine.max_model_len < plan.model.max_position_embeddings
            assert plan.engine.max_model_len >= 4096  # defaults.yaml min_useful_context
        else:
            assert plan.engine.max_model_len == e["max_model_len"]
    for key in ("engine_flag", "pre_quantized", "needs_quantize_step"):
        if key in e:
            assert getattr(plan.quantization, key) == e[key], key
    for text in e.get("warnings", []):
        assert any(text in w for w in plan.warnings), f"no warning with {text!r}: {plan.warnings}"
    for text in e.get("no_warnings", []):
        assert not any(text in w for w in plan.warnings), f"unexpected warning with {text!r}: {plan.warnings}"
    cited = {d.rule_id for d in plan.decisions}
    for rule_id in e.get("decisions", []):
        assert rule_id in cited, f"{rule_id} not cited in {sorted(cited)}"
    for item in e.get("explain", []):
        hits = [t for t in plan.explain if t.rule_id == item["rule"] and t.applied_to == item["applied_to"]]
        assert hits and all(t.matched for t in hits), f"--explain: {item} did not match ({hits})"
    for text in e.get("reason", []):
        assert text in (plan.infeasible_reason or ""), plan.infeasible_reason

    if plan.feasible:
        assert plan.infeasible_reason is None and plan.suggestion is None
        # The engine can start: one request of max_model_len fits the KV cache it will have.
        assert plan.memory.fits and plan.memory.kv_cache_tokens >= plan.engine.max_model_len
        assert plan.memory.max_concurrency >= 1
    else:
        assert plan.infeasible_reason
    if e.get("suggestion"):
        _check_suggestion(s, plan)


def _check_suggestion(s: dict, plan) -> None:
    """The suggestion names catalog hardware on which the same request is feasible."""
    m = re.match(r"--gpu (\S+)", plan.suggestion or "")
    assert m, f"suggestion is not a --gpu spec: {plan.suggestion!r}"
    spec = m.group(1)
    hw = hardware(spec)
    again = plan_for(s["model"], spec, pre_quantized_as=s.get("pre_quantized_as"), **s.get("options", {}))
    assert again.feasible, f"suggested {spec} is not feasible either: {again.infeasible_reason}"
    # No catalog hardware with less memory than the weights in the smallest format the plan used could work.
    assert hw.total_gpus * hw.gpu.memory_bytes >= again.memory.weights_bytes


@pytest.mark.parametrize("s", [s for s in SCENARIOS if "refused" in s], ids=lambda s: s["id"])
def test_refused(s):
    """A forbidden user choice: an infeasible plan naming the rule; the choice is kept, never silently replaced."""
    plan = _plan(s)
    assert not plan.feasible
    reason = plan.infeasible_reason or ""
    assert "\n" not in reason
    for text in s["refused"]:
        assert text in reason, f"{text!r} not in {reason!r}"
    options = s.get("options", {})
    if options.get("engine", "auto") != "auto":
        assert plan.engine.name == options["engine"]
    if options.get("quantization", "auto") != "auto" and not plan.model.pre_quantized:
        assert plan.quantization.method == options["quantization"]
