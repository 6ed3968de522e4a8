"""Load rule files: the shipped ``rules/`` folder, then ``--rules DIR`` layered over it by id."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .._data import parse_structured
from .._snapshot import validated_snapshot
from ..bounded_read import read_bounded
from .._paths import shipped
from ..errors import DataFileError, RuleFileError
from .schema import Rule

_KINDS = "always, compare, in, divides, all, any, not"


def _load_file(path: Path) -> list[Rule]:
    """The rules of one file; what it validated to is kept for the next run (``_snapshot``, keyed by its bytes)."""
    try:
        raw = read_bounded(path, "data")
    except DataFileError as err:
        raise RuleFileError(str(path), err.problem) from None
    return list(validated_snapshot(path, raw, "rules", lambda: _parse_file(path, raw)))


def _parse_file(path: Path, raw: bytes) -> list[Rule]:
    done: list[list[Rule]] = []
    try:  # validated before the parsed file is cached
        data = parse_structured(path, raw, check=lambda data: done.append(_validate(path, data)))
    except DataFileError as err:
        raise RuleFileError(str(path), err.problem) from None
    return done[0] if done else _validate(path, data)


def _validate(path: Path, raw: object) -> list[Rule]:
    from pydantic import ValidationError

    if not isinstance(raw, dict) or set(raw) != {"rules"} or not isinstance(raw["rules"], list):
        raise RuleFileError(str(path), "a rule file is a mapping with one key, 'rules', holding a list of rules")
    rules: list[Rule] = []
    seen: set[str] = set()
    for i, item in enumerate(raw["rules"]):
        rid = item.get("id") if isinstance(item, dict) else None
        try:
            rule = Rule.model_validate(item)
        except ValidationError as err:
            first = err.errors()[0]
            loc = [str(p) for p in first.get("loc", ())]
            # Drop pydantic's union branch names (e.g. 'compare') from the path shown to the user.
            field = ".".join(p for p in loc if p not in {"always", "compare", "in", "divides", "all", "any", "not", "FactRef", "bool", "int", "float", "str", "none"})
            msg = first.get("msg", "invalid")
            if first.get("type") in {"union_tag_invalid", "union_tag_not_found"}:
                msg = f"{msg}; condition kinds are: {_KINDS}"
            raise RuleFileError(str(path), msg, rule_id=rid or f"rules[{i}]", field=f"rules[{i}].{field}" if field else f"rules[{i}]") from None
        if rule.id in seen:
            raise RuleFileError(str(path), "duplicate rule id in this file", rule_id=rule.id, field=f"rules[{i}].id")
        seen.add(rule.id)
        rule._origin = str(path)
        rules.append(rule)
    return rules


def _load_dir(folder: Path) -> list[tuple[Path, Rule]]:
    if not folder.is_dir():
        raise RuleFileError(str(folder), "not a folder of rule files (*.yaml)")
    out: list[tuple[Path, Rule]] = []
    # SITE.YAML counts as much as site.yaml (a case-sensitive glob skipped it without a word).
    for path in sorted(p for p in folder.iterdir() if p.suffix.lower() in (".yaml", ".yml")):
        out.extend((path, r) for r in _load_file(path))
    return out


@lru_cache(maxsize=8)
def _layered(user_dir: str | None) -> tuple[Rule, ...]:
    by_id: dict[str, Rule] = {}
    origin: dict[str, Path] = {}
    for path, rule in _load_dir(shipped("rules")):
        if rule.id in by_id:
            raise RuleFileError(str(path), f"duplicate rule id (also in {origin[rule.id].name})", rule_id=rule.id)
        by_id[rule.id] = rule
        origin[rule.id] = path
    if user_dir:
        user_origin: dict[str, Path] = {}
        for path, rule in _load_dir(Path(user_dir)):
            if rule.id in user_origin:
                raise RuleFileError(str(path), f"duplicate rule id (also in {user_origin[rule.id].name})", rule_id=rule.id, field="id")
            user_origin[rule.id] = path
            by_id[rule.id] = rule  # same id replaces, new id adds
    return tuple(by_id.values())


def load_rules(user_dir: str | Path | None = None) -> tuple[Rule, ...]:
    """The shipped rules with ``user_dir``'s rules layered over them by id (same id replaces)."""
    return _layered(str(Path(user_dir).resolve()) if user_dir else None)
