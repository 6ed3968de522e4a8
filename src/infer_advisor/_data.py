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
    cached = _cache_path(path, text)
    if cached is not None:
        try:
            return json.loads(cached.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise DataFileError(str(path), f"invalid YAML{where}: {getattr(err, 'problem', err)}") from None
    if cached is not None:
        _write_cache(cached, data)
    return data


def _cache_path(path: Path, text: str) -> Path | None:
    """Parsed YAML is kept as JSON under the cache folder, keyed by the file's content (JSON parses ~20x faster)."""
    import hashlib

    from .constants import cache_dir

    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
    return cache_dir() / "parsed-yaml" / f"{digest}.json"


def _write_cache(target: Path, data: Any) -> None:
    import os
    import tempfile

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, target)
    except (OSError, TypeError, ValueError):
        pass  # a read-only or full cache folder only costs speed


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
