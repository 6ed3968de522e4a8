"""The embedded model catalog: one JSON file per model in ``data/models/`` holding its real config.json.

Each file is ``{"name", "aliases", "source", "config"}``; ``source`` is the config.json it was copied from.
Lookup is case-insensitive and matches the full name, the part after the ``/`` and any alias.

Loading all 38 files and validating them takes about 7-12 ms (measured on 2 busy cores); one pre-joined
JSON file would save 2-9 ms of that, not worth a generated artifact that can drift. An exact canonical id
reads only its own file.

    entry = find_entry("llama-2-7b")       # CatalogEntry or None
    entry.name, entry.config["hidden_size"]
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._data import format_validation_error
from .._paths import shipped
from ..errors import DataFileError


class CatalogEntry(BaseModel):
    """One catalog file."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(description="Canonical Hugging Face id, e.g. meta-llama/Llama-2-7b-hf.")
    aliases: list[str] = Field(default_factory=list, description="Other names that find this entry.")
    source: str = Field(description="URL of the config.json the `config` was copied from.")
    config: dict[str, Any] = Field(description="The model's config.json, verbatim.")


@cache
def load_catalog() -> tuple[CatalogEntry, ...]:
    """Every catalog entry, sorted by name; read once per process."""
    entries = [_read_one(path) for path in sorted(_folder().glob("*.json")) if not path.name.startswith("_")]
    return tuple(sorted(entries, key=lambda e: e.name.lower()))


def _folder() -> Path:
    return shipped("data") / "models"


@cache
def _index() -> dict[str, CatalogEntry]:
    index: dict[str, CatalogEntry] = {}
    for entry in load_catalog():
        for key in (entry.name, entry.name.split("/")[-1], *entry.aliases):
            index.setdefault(key.lower(), entry)
    return index


@cache
def _read_one(path: Path) -> CatalogEntry:
    try:
        return CatalogEntry.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except json.JSONDecodeError as err:
        raise DataFileError(str(path), f"invalid JSON at line {err.lineno}: {err.msg}") from None
    except ValidationError as err:
        raise DataFileError(str(path), format_validation_error(err)) from None


def find_entry(name: str) -> CatalogEntry | None:
    """The catalog entry called ``name`` (full id, part after '/', or alias; any case), else None.

    An exact canonical id reads only its own file (the common case for `plan`); anything else builds
    the index of every name once.
    """
    text = name.strip()
    if text.count("/") == 1 and not text.startswith("."):
        path = _folder() / (text.replace("/", "--") + ".json")
        if path.is_file():
            entry = _read_one(path)
            if entry.name == text:
                return entry
    key = text.lower()
    return _index().get(key) or _index().get(key.split("/")[-1])


def catalog_names() -> list[str]:
    """Canonical names of every catalog model."""
    return [e.name for e in load_catalog()]


def lookup_names() -> list[str]:
    """Every name the catalog answers to (for suggestions)."""
    return [*catalog_names(), *(a for e in load_catalog() for a in e.aliases)]
