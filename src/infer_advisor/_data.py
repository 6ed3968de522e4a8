"""One way to read a data file: YAML or JSON, validated by a pydantic model, errors that name the place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from .errors import DataFileError

T = TypeVar("T")


def read_structured(path: Path) -> Any:
    """Parse a .yaml/.yml/.json file; errors name the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise DataFileError(str(path), f"cannot read: {err.strerror or err}") from None
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise DataFileError(str(path), f"invalid JSON at line {err.lineno}: {err.msg}") from None
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise DataFileError(str(path), f"invalid YAML{where}: {getattr(err, 'problem', err)}") from None


def format_validation_error(err: Any) -> str:
    """First problem of a pydantic ValidationError as 'a.b.c: message' (one line)."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()))
    more = len(err.errors()) - 1
    tail = f" (and {more} more)" if more > 0 else ""
    return f"{loc}: {first.get('msg')}{tail}"


def load_validated(path: Path, model: type[T]) -> T:
    """Read ``path`` and validate it as ``model`` (a pydantic model or TypeAdapter-able type)."""
    from pydantic import TypeAdapter, ValidationError

    raw = read_structured(path)
    try:
        return TypeAdapter(model).validate_python(raw)
    except ValidationError as err:
        raise DataFileError(str(path), format_validation_error(err)) from None
