"""Evaluate rules against facts: which options survive, their scores, and a trace of why."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

from ..errors import RuleFileError
from .schema import AllOf, Always, AnyOf, Compare, Condition, Divides, FactRef, In, Not, Rule

Facts = dict[str, Any]

_OPS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge}
_SYMBOL = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class _UnknownFact(Exception):
    def __init__(self, name: str):
        self.name = name


class _BadOperand(Exception):
    """A comparison whose sides can never meet (a number against text): a rule-file error, not a silent False."""


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _incomparable(left: Any, right: Any) -> bool:
    return (_number(left) and isinstance(right, str)) or (isinstance(left, str) and _number(right))


def _fact(facts: Facts, name: str) -> Any:
    try:
        return facts[name]
    except KeyError:
        raise _UnknownFact(name) from None


def _value(facts: Facts, operand: Any) -> Any:
    return _fact(facts, operand.fact) if isinstance(operand, FactRef) else operand


def _named(operand: Any, value: Any) -> str:
    return f"{operand.fact}={value!r}" if isinstance(operand, FactRef) else repr(value)


def holds(cond: Condition, facts: Facts) -> tuple[bool, str]:
    """(outcome, the outcome in words)."""
    if isinstance(cond, Always):
        return True, "always"
    if isinstance(cond, Compare):
        left = _fact(facts, cond.fact)
        right = _value(facts, cond.value)
        if _incomparable(left, right):
            raise _BadOperand(f"compares {cond.fact}={left!r} with {right!r}: a number and text never compare")
        try:
            ok = bool(_OPS[cond.op](left, right))
        except TypeError:  # e.g. None < 8.0: an absent fact never satisfies an ordering
            if left is not None and right is not None:
                raise _BadOperand(f"cannot order {cond.fact}={left!r} against {right!r}") from None
            ok = False
        return ok, f"{cond.fact}={left!r} {_SYMBOL[cond.op]} {right!r} is {ok}"
    if isinstance(cond, In):
        left = _fact(facts, cond.fact)
        if left is not None and all(_incomparable(left, v) for v in cond.values):
            raise _BadOperand(f"looks for {cond.fact}={left!r} among {cond.values}: a number and text never compare")
        ok = left in cond.values
        return ok, f"{cond.fact}={left!r} in {cond.values} is {ok}"
    if isinstance(cond, Divides):
        operands = [_value(facts, d) for d in cond.divisor]
        dividend = _value(facts, cond.dividend)
        if None in operands or dividend is None:  # a candidate fact not decided yet: never divides
            return False, f"{' x '.join(map(repr, operands))} divides {dividend!r} is False"
        bad = [v for v in [*operands, dividend] if not isinstance(v, int) or isinstance(v, bool)]
        if bad:
            raise _BadOperand(f"divides needs whole numbers; got {bad[0]!r}")
        product = 1
        for d in operands:
            product *= d
        ok = bool(product) and dividend % product == 0
        names = " x ".join(_named(o, v) for o, v in zip(cond.divisor, operands, strict=True))
        return ok, f"{names} divides {_named(cond.dividend, dividend)} is {ok}"
    # Compound conditions bracket every part, so `(A) and ((B) or (C))` reads one way only; evaluation stops
    # at the first part that decides (the parts after it are not shown).
    if isinstance(cond, AllOf):
        whys = []
        for sub in cond.of:
            ok, why = holds(sub, facts)
            whys.append(f"({why})")
            if not ok:
                return False, " and ".join(whys)
        return True, " and ".join(whys)
    if isinstance(cond, AnyOf):
        whys = []
        for sub in cond.of:
            ok, why = holds(sub, facts)
            whys.append(f"({why})")
            if ok:
                return True, " or ".join(whys)
        return False, " or ".join(whys)
    if isinstance(cond, Not):
        ok, why = holds(cond.of, facts)
        return not ok, f"not ({why}) is {not ok}"
    raise TypeError(f"unknown condition {cond!r}")  # pragma: no cover - the schema forbids it


def check(rule: Rule, facts: Facts) -> tuple[bool, str]:
    """Does ``rule``'s condition hold for ``facts``? Unknown facts are a rule-file error."""
    try:
        return holds(rule.when, facts)
    except _UnknownFact as err:
        known = ", ".join(sorted(k for k in facts if not k.startswith("_")))
        raise RuleFileError(rule._origin, f"unknown fact '{err.name}'. Known facts: {known}", rule_id=rule.id, field="when") from None
    except _BadOperand as err:
        raise RuleFileError(rule._origin, f"the condition {err}", rule_id=rule.id, field="when") from None


@dataclass
class Verdict:
    """One option (or candidate layout) after the rules: allowed?, score, and the rules that matched."""

    value: Any
    allowed: bool = True
    score: float = 0.0
    matched: list[Rule] = field(default_factory=list)
    blocked_by: Rule | None = None


@dataclass
class Trace:
    rule: Rule
    applied_to: str
    matched: bool
    why: str
    context: str = ""  # the choices already made when the option was judged, e.g. "vllm" or "vllm + awq"
    score: float = 0.0  # what this rule added to the option's score
    blocked: bool = False  # this rule made the option not allowed


def judge(
    rules: list[Rule], decision: str, value: Any, facts: Facts, trace: list[Trace] | None, context: str = ""
) -> Verdict:
    """Apply every ``decision`` rule to one option ``value`` (facts must already hold the option).

    ``context`` names the choices already made (for ``--explain``: which candidate the rules were applied to).
    """
    verdict = Verdict(value=value)
    for rule in rules:
        if rule.value is not None and rule.effect != "require" and rule.value != value:
            continue
        ok, why = check(rule, facts)
        added, blocked = 0.0, False
        if ok:
            verdict.matched.append(rule)
            if rule.effect == "forbid" or (rule.effect == "require" and value != rule.value):
                blocked = True
                verdict.allowed = False
                verdict.blocked_by = verdict.blocked_by or rule
            elif rule.effect == "prefer":
                added = rule.score
                verdict.score += rule.score
        if trace is not None:
            trace.append(Trace(rule, str(value), ok, why, context=context, score=added, blocked=blocked))
    return verdict


def rank(
    rules: list[Rule], decision: str, options: list[Any], facts: Facts, trace: list[Trace] | None, context: str = ""
) -> list[Verdict]:
    """Judge each option of ``decision``; allowed options first, by score (stable for ties)."""
    verdicts = []
    for option in options:
        verdicts.append(judge(rules, decision, option, {**facts, decision: option}, trace, context))
    return sorted(verdicts, key=lambda v: (not v.allowed, -v.score))
