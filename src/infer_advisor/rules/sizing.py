"""The sizing rules (``rules/capacity/sizing.yaml``): each choice the capacity search makes as an operator would, with
its reason and source. One closed ``kind`` per decision; :func:`applies` is the one place a rule's condition is read,
for the search and for the rule's own fixtures alike.

    >>> rule = sizing_rule("sizing.headroom-n-plus-one")
    >>> applies(rule, {"replicas_needed": 3})
    True
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped

Kind = Literal["search_dimension", "exclude_pipeline", "tie_quality", "tie_break", "headroom", "confidence", "flag_fleet", "prefix_cache",
               "published_checkpoint", "objective"]
# Weight formats whose published checkpoints the search sizes (rule sizing.published-checkpoints): FP8 is the
# search_dimension rule's, GGUF is llama.cpp's and not searched.
PUBLISHED_METHODS = ("awq", "gptq", "int8", "compressed-tensors-w4a16")


class Fixtures(BaseModel):
    model_config = ConfigDict(extra="forbid")
    match: list[dict[str, Any]] = Field(min_length=1)
    no_match: list[dict[str, Any]] = Field(min_length=1)


class SizingRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^sizing\.[a-z0-9.-]+$")
    kind: Kind
    params: dict[str, float] = Field(default_factory=dict)
    reason: str = Field(min_length=10)
    source: str = Field(min_length=5)
    fixtures: Fixtures


class SizingRules(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: list[SizingRule]


@cache
def sizing_rules() -> dict[str, SizingRule]:
    from ..errors import RuleFileError

    path = shipped("rules") / "capacity" / "sizing.yaml"
    data = load_validated(path, SizingRules)
    out: dict[str, SizingRule] = {}
    for r in data.rules:
        if r.id in out:
            raise RuleFileError(str(path), f"duplicate rule id {r.id}")
        out[r.id] = r
    return out


def sizing_rule(rule_id: str) -> SizingRule:
    return sizing_rules()[rule_id]


def by_kind(kind: str) -> SizingRule:
    return next(r for r in sizing_rules().values() if r.kind == kind)


def applies(rule: SizingRule, s: dict[str, Any]) -> bool:
    """Whether ``rule`` applies in situation ``s`` (the facts its kind reads)."""
    p = rule.params
    if rule.kind == "search_dimension":  # FP8 variants beside the rules' own choice
        return (s["quantization"] == "auto" and s["kv_cache_dtype"] == "auto" and not s["pre_quantized"]
                and s["chosen"] != "fp8")
    if rule.kind == "exclude_pipeline":
        return s["pp"] > 1 and s["fits_without_pipeline"] and not s.get("pinned_pp")
    if rule.kind == "tie_quality":  # a (more bits per weight, then per KV entry) wins over b at equal cost
        a, b = s["a"], s["b"]
        within = by_kind("tie_break").params["equal_cost_within"]  # one tie window for both tie-breaks
        tie = abs(a["cost"] - b["cost"]) <= within * max(a["cost"], b["cost"])
        return tie and (a["weight_bits"], a["kv_bits"]) > (b["weight_bits"], b["kv_bits"])
    if rule.kind == "tie_break":  # a (the simpler layout) wins over b at equal cost
        a, b = s["a"], s["b"]
        tie = abs(a["cost"] - b["cost"]) <= p["equal_cost_within"] * max(a["cost"], b["cost"])
        return tie and (a["pp"], a["tp"]) < (b["pp"], b["tp"])
    if rule.kind == "headroom":
        return s["replicas_needed"] >= p["from_replicas"]
    if rule.kind == "confidence":
        return s["confidence"] > p["default"]
    if rule.kind == "flag_fleet":
        chosen = s.get("chosen_gpus")
        return s["total_gpus"] > p["max_gpus"] or bool(chosen and s["total_gpus"] > p["max_times_chosen"] * chosen)
    if rule.kind == "prefix_cache":
        return bool(s.get("shared_prefix_tokens")) and s["shared_prefix_tokens"] < s["input_tokens"]
    if rule.kind == "published_checkpoint":  # a published checkpoint beside the rules' own choice
        return (s["quantization"] == "auto" and not s["pre_quantized"] and s["method"] != s["chosen"]
                and s["method"] in PUBLISHED_METHODS)
    if rule.kind == "objective":
        return bool(s["meets_targets"])
    raise AssertionError(rule.kind)
