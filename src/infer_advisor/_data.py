"""One way to read a data file: YAML or JSON, validated by a pydantic model, errors that name the place."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .errors import DataFileError

T = TypeVar("T")


def read_structured(path: Path, check: Callable[[Any], Any] | None = None) -> Any:
    """Parse a .yaml/.yml/.json file; errors name the file and the line, in one line each.

    YAML aliases (``*name``) are refused: they are never needed in a data or rule file, and nested ones expand
    exponentially (a 342-byte "billion laughs" file ran until killed). Parsed YAML is cached as JSON
    (:func:`_cache_path`), but only after ``check`` (the caller's validation, which raises on bad data) passed.
    """
    from .bounded_read import read_bounded

    return parse_structured(path, read_bounded(path, "data"), check)  # regular files only, at most 16 MiB


def parse_structured(path: Path, raw: bytes, check: Callable[[Any], Any] | None = None) -> Any:
    """:func:`read_structured` on bytes already read from ``path``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataFileError(
            str(path), f"not UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start}); save it as UTF-8"
        ) from None
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise DataFileError(str(path), f"invalid JSON at line {err.lineno}: {err.msg}") from None
        except RecursionError:
            raise DataFileError(str(path), "nested too deeply to be a data file") from None
    cached = _cache_path(path, text)
    if cached is not None:
        try:
            return json.loads(cached.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            pass
    data = _parse_yaml(path, text)
    if check is not None:
        check(data)
    if cached is not None:
        _write_cache(cached, data)
    return data


@functools.cache
def _strict_loader():
    """The C safe loader, refusing a mapping that repeats a key (YAML keeps the last one without a word)."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node, deep=False):
            seen: set = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: the base constructor names it
                    duplicate = False
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (each key once)", key_node.start_mark
                    )
            return super().construct_mapping(node, deep)

    return StrictLoader


def parse_yaml_text(text: str, where: str) -> Any:
    """Parse YAML ``text`` (aliases and duplicate keys refused); errors name ``where`` and the line."""
    return _parse_yaml(Path(where), text)


def _parse_yaml(path: Path, text: str) -> Any:
    import yaml

    loader = _strict_loader()
    try:
        if "*" in text:  # an alias needs a '*': only then look at the events
            for event in yaml.parse(text, Loader=loader):
                if isinstance(event, yaml.AliasEvent):
                    mark = event.start_mark
                    where = f" at line {mark.line + 1}" if mark else ""
                    raise DataFileError(
                        str(path), f"YAML alias (*{event.anchor}){where}: aliases are not allowed here; write the values out"
                    )
        return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = " ".join(str(getattr(err, "problem", None) or err).split())
        raise DataFileError(str(path), f"invalid YAML{where}: {problem}") from None
    except RecursionError:
        raise DataFileError(str(path), "nested too deeply to be a data file") from None


# The parser's rules (aliases, duplicate keys refused) are part of the cache key: a file cached before a rule was
# added is parsed again. Files above CACHE_MAX_BYTES are not cached; the folder keeps at most CACHE_MAX_FILES.
PARSER_RULES = "strict-2"
CACHE_MAX_BYTES = 4 * 2**20
CACHE_MAX_FILES = 256


def _cache_path(path: Path, text: str) -> Path | None:
    """Parsed YAML is kept as JSON under the cache folder, keyed by the file's content (JSON parses ~20x faster)."""
    import hashlib

    from .constants import cache_dir

    if len(text) > CACHE_MAX_BYTES:
        return None
    digest = hashlib.sha256(f"{PARSER_RULES}\n{text}".encode()).hexdigest()[:24]
    return cache_dir() / "parsed-yaml" / f"{digest}.json"


def _write_cache(target: Path, data: Any) -> None:
    from ._cache_files import write_cache_file

    try:
        payload = json.dumps(data).encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        return  # a value JSON cannot hold is only not cached
    write_cache_file(target, payload, keep=CACHE_MAX_FILES)


def format_validation_error(err: Any) -> str:
    """First problem of a pydantic ValidationError as 'a.b.c: message' (one line)."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()))
    more = len(err.errors()) - 1
    tail = f" (and {more} more)" if more > 0 else ""
    msg = str(first.get("msg")).removeprefix("Value error, ")
    if first.get("type") == "value_error" and msg.startswith("--"):  # our validators name the option themselves
        return f"{msg}{tail}"
    return f"{loc}: {msg}{tail}"


def load_validated(path: Path, model: type[T]) -> T:
    """Read ``path`` and validate it as ``model`` (a pydantic model or TypeAdapter-able type); the validated
    value is kept for the next run (:mod:`._snapshot`, keyed by the file's bytes and the code)."""
    from ._snapshot import validated_snapshot
    from .bounded_read import read_bounded

    raw = read_bounded(path, "data")
    kind = f"{getattr(model, '__module__', '')}.{getattr(model, '__qualname__', repr(model))}"
    return validated_snapshot(path, raw, kind, lambda: _validate_file(path, raw, model))


def _validate_file(path: Path, raw: bytes, model: type[T]) -> T:
    from pydantic import TypeAdapter, ValidationError

    adapter = TypeAdapter(model)
    done: list[T] = []

    def validate(data: Any) -> None:
        try:
            done.append(adapter.validate_python(data))
        except ValidationError as err:
            raise DataFileError(str(path), format_validation_error(err)) from None

    data = parse_structured(path, raw, check=validate)
    if not done:  # read from the parsed-YAML cache: validate now
        validate(data)
    return done[0]
