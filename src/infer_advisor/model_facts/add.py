"""Add a model to the catalog: validate its config.json, compute its counts, write the catalog file and index.

    entry, facts = add_model(Path("config.json"), "Qwen/Qwen3-32B", family="Qwen3")

This is what ``infer-advisor models add CONFIG.json --id ID`` runs; the catalog stays data (one JSON file per
model plus ``_index.json``), never code. By default it writes the USER catalog folder
(:func:`infer_advisor.constants.user_catalog_dir`: ``$INFER_ADVISOR_HOME/models``, else the XDG data dir), outside the
installed package, so a reinstall keeps it; the catalog loader reads it beside the shipped entries.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import DataFileError, ModelConfigError, OutputPathError, RequestError
from .build import facts_from_config
from .catalog import INDEX_FILE, CatalogEntry, Variant, build_index, clear_caches, entry_path, folder, user_folder
from .facts import ModelFacts
from .hub import is_repo_id
from .jsonfile import load_json

def check_repo_id(name: str, what: str = "--id") -> str:
    if not is_repo_id(name) or ".." in name:
        raise RequestError(f"{what} '{name[:100]}' is not a Hub id of the form owner/name")
    return name


def add_model(
    config_path: Path,
    model_id: str | None = None,
    *,
    family: str = "",
    aliases: list[str] | None = None,
    variants: list[str] | None = None,
    source: str | None = None,
    retrieved_from: str | None = None,
    catalog_dir: Path | None = None,
    force: bool = False,
) -> tuple[CatalogEntry, ModelFacts]:
    """Validate ``config_path`` and write it into the catalog as ``model_id``.

    Args:
        model_id: the Hub id; default: ``_name_or_path`` in the config.
        variants: other Hub ids with the same config, each ``ID`` or ``ID=KIND`` (kind: instruct, base, ...).
        source: URL of the published config.json (default: the Hub URL of ``model_id``).
        catalog_dir: the catalog folder to write (default: the user catalog folder, ``user_folder()``).
        force: replace an existing entry of the same id (in a user folder: also stand in for a shipped entry).
    """
    config = load_json(config_path)
    if not isinstance(config, dict):
        raise ModelConfigError(str(config_path), "config.json must be a JSON object")
    model_id = model_id or config.get("_name_or_path")
    if not isinstance(model_id, str) or not model_id:
        raise RequestError("the config names no model (_name_or_path); pass --id OWNER/NAME")
    check_repo_id(model_id)
    _check_text(family=family, alias=aliases, variant=variants, config_source=source, retrieved_from=retrieved_from)
    facts = facts_from_config(model_id, config, "local", where=str(config_path))
    entry = CatalogEntry(
        name=model_id,
        family=family,
        aliases=[a.lower() for a in (aliases or [])],
        variants=[_variant(v) for v in (variants or [])],
        source=source or f"https://huggingface.co/{model_id}/blob/main/config.json",
        retrieved_from=retrieved_from,
        config=config,
    )
    where = catalog_dir or user_folder()
    if where is None:
        raise RequestError("no home folder to keep your catalog in: set INFER_ADVISOR_HOME or pass --catalog-dir")
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputPathError(str(where), f"cannot be written ({err.strerror or err}); choose another --catalog-dir") from None
    from .._output import locked

    with locked(where):  # the existence check, the index and both writes as one step: concurrent adds keep each other's names
        target = entry_path(model_id, where)
        if target.exists() and not force:
            raise RequestError(f"{target} exists already; pass --force to replace it")
        entries = [e for e in _read_all(where) if e.name != model_id] + [entry]
        index = build_index(entries)
        clash = [k for k in (n.lower() for n in entry.names()) if index.get(k) != target.name]
        if clash:
            raise RequestError(f"name(s) {', '.join(clash[:3])} already belong to another catalog entry")
        _check_shipped_names(entry, where, force)
        # The config verbatim (json keeps Infinity, e.g. Nemotron-H's time_step_limit; pydantic's JSON mode would null it).
        _write_json(target, {**entry.model_dump(mode="json", exclude={"config"}), "config": config})
        _write_json(where / INDEX_FILE, {"_comment": _INDEX_COMMENT, "names": index})
    clear_caches()
    return entry, facts


def _check_shipped_names(entry: CatalogEntry, where: Path, force: bool) -> None:
    """A user entry may not take a shipped entry's name by accident (the user's entries win a lookup); ``--force``
    says it is meant."""
    if force or where.resolve() == folder().resolve():
        return
    from .catalog import _index

    shipped = _index()
    taken = [n for n in dict.fromkeys(k.lower() for k in entry.names()) if n in shipped]
    if taken:
        raise RequestError(
            f"name(s) {', '.join(taken[:3])} belong to the shipped catalog ({shipped[taken[0]]}); "
            "pass --force to use your config under that name"
        )


_INDEX_COMMENT = (
    "Generated by `infer-advisor models add` (model_facts/add.py): lower-cased name -> catalog file. "
    "tests/model_facts/test_catalog_index.py fails when it drifts from the entries."
)


def _check_text(**fields: str | list[str] | None) -> None:
    """The typed fields kept in the catalog and shown by `models` (an alias, a kind, a source URL): a control,
    line-separator or bidi character is refused where it enters, one line naming the option."""
    from ..untrusted import refuse_unsafe

    for name, value in fields.items():
        for text in value if isinstance(value, list) else [value]:
            if text:
                refuse_unsafe(text, f"--{name.replace('_', '-')}")


def _variant(text: str) -> Variant:
    name, _, kind = text.partition("=")
    check_repo_id(name.strip(), "--variant")
    return Variant(name=name.strip(), kind=kind.strip() or "instruct")


def _read_all(where: Path) -> list[CatalogEntry]:
    """Every entry of the catalog folder ``where``; a file there that is not a catalog entry is one error line."""
    from pydantic import ValidationError

    from .._data import format_validation_error

    out = []
    for path in sorted(where.glob("*.json")):
        if path.name.startswith(("_", ".")):
            continue
        try:
            out.append(CatalogEntry.model_validate(load_json(path)))
        except ModelConfigError as err:
            raise DataFileError(str(path), f"not a catalog entry: {err.problem}") from None
        except ValidationError as err:
            raise DataFileError(str(path), f"not a catalog entry: {format_validation_error(err)}") from None
    return out


def _write_json(path: Path, data: Any) -> None:
    """Write ``data`` atomically (the shared writer's temp file: a killed writer's leftover is removed later)."""
    from .._output import atomic_write

    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        atomic_write(path, text.encode("utf-8"))
    except OSError as err:
        raise OutputPathError(str(path), f"cannot be written ({err.strerror or err}); choose another --catalog-dir") from None
