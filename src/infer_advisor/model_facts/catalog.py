"""The embedded model catalog: one JSON file per model in ``data/models/`` holding its real config.json.

Each file is ``{"name", "family", "aliases", "variants", "source", "retrieved_from", "config"}``: ``source`` is
the config.json it is a copy of, ``retrieved_from`` where this copy was read when that is not the Hub itself
(a repository that vendors the file, with its commit). ``variants`` are other Hub repositories with the same
architecture numbers (Instruct / base / reasoning releases): they resolve to this config under their own id.

``data/models/_index.json`` maps every lower-cased name (id, the part after '/', alias, variant) to its file,
so ANY exact name reads the index and one file; only fuzzy lookups ("did you mean") read every file.
``infer-advisor models add`` keeps the index in step, and a test fails when it drifts.

The user's own entries (``infer-advisor models add``) live in the user catalog folder,
:func:`infer_advisor.constants.user_catalog_dir` (``$INFER_ADVISOR_HOME/models``, else the XDG data dir), with an
index of their own; they are read beside the shipped ones and win over a shipped entry of the same name.

    entry = find_entry("llama-2-7b")       # CatalogEntry or None
    entry.name, entry.config["hidden_size"]
"""


import json
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._data import format_validation_error
from .._snapshot import validated_snapshot
from .._paths import shipped
from ..constants import user_catalog_dir
from ..errors import DataFileError

INDEX_FILE = "_index.json"


class Variant(BaseModel):
    """Another Hub repository sized by the same config (same architecture numbers)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(description="Hub id of the variant, e.g. meta-llama/Llama-3.1-8B-Instruct.")
    kind: str = Field(default="instruct", description="instruct, base, reasoning, chat, coder ...")
    aliases: list[str] = Field(default_factory=list, description="Short names of this variant.")
    source: str | None = Field(
        default=None,
        description="Where the variant is stated to share this architecture (e.g. its model card naming this model as its "
        "base), when the catalog holds no config.json of its own.",
    )


class CatalogEntry(BaseModel):
    """One catalog file."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(description="Canonical Hugging Face id, e.g. meta-llama/Llama-2-7b-hf.")
    family: str = Field(default="", description="Model family for listings, e.g. 'Llama 3.1', 'Qwen3'.")
    aliases: list[str] = Field(default_factory=list, description="Other names that find this entry.")
    variants: list[Variant] = Field(default_factory=list, description="Hub repositories that share this config.")
    source: str = Field(description="URL of the config.json the `config` was copied from.")
    retrieved_from: str | None = Field(
        default=None, description="Where this copy was read, when not from the Hub itself (repository, path, commit)."
    )
    config: dict[str, Any] = Field(description="The model's config.json, verbatim.")

    def names(self) -> list[str]:
        """Every name this entry answers to (ids, the part after '/', aliases, variants)."""
        out = [self.name, self.name.split("/")[-1], *self.aliases]
        for v in self.variants:
            out += [v.name, v.name.split("/")[-1], *v.aliases]
        return out

    def variant_for(self, name: str) -> str:
        """The Hub id ``name`` designates: a variant's id when it names a variant, else the entry's."""
        key = name.strip().lower()
        for v in self.variants:
            if key in {n.lower() for n in (v.name, v.name.split("/")[-1], *v.aliases)}:
                return v.name
        return self.name


def folder() -> Path:
    """The shipped catalog (inside the package)."""
    return shipped("data") / "models"


def user_folder() -> Path | None:
    """The user's catalog folder (read at use time: ``INFER_ADVISOR_HOME`` may change between calls); None when no
    home folder can be determined and ``INFER_ADVISOR_HOME`` is unset (then there is no user catalog to read)."""
    try:
        return user_catalog_dir()
    except (RuntimeError, KeyError):  # Path.home() without HOME and without a passwd entry
        return None


def entry_path(name: str, where: Path | None = None) -> Path:
    return (where or folder()) / (name.replace("/", "--") + ".json")


def _stamp(where: Path | None) -> tuple[str, int] | None:
    """(folder, index mtime) of a user catalog folder, None when it has no index: the cache key of its contents."""
    if where is None:
        return None
    try:
        return str(where), (where / INDEX_FILE).stat().st_mtime_ns
    except OSError:
        return None


def load_catalog() -> tuple[CatalogEntry, ...]:
    """Every catalog entry (shipped, then the user's, which win by name), sorted by name; read once per state."""
    return _load_catalog(_stamp(user_folder()))


@cache
def _load_catalog(user: tuple[str, int] | None) -> tuple[CatalogEntry, ...]:
    entries = {e.name: e for e in _read_folder(folder())}
    if user is not None:
        entries.update({e.name: e for e in _read_folder(Path(user[0]))})
    return tuple(sorted(entries.values(), key=lambda e: e.name.lower()))


def _read_folder(where: Path) -> list[CatalogEntry]:
    return [_read_one(path) for path in sorted(where.glob("*.json")) if not path.name.startswith(("_", "."))]


def _index() -> dict[str, str]:
    """lower-cased name -> catalog file name of the shipped catalog (from its _index.json)."""
    return _read_index(folder() / INDEX_FILE, None)


@cache
def _read_index(path: Path, _mtime: int | None) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        names = data["names"]
        if not isinstance(names, dict):
            raise ValueError("'names' is not an object")
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DataFileError(str(path), f"cannot read the catalog index: {err}") from None
    return names


def _user_index() -> tuple[Path, dict[str, str]] | None:
    stamp = _stamp(user_folder())
    if stamp is None:
        return None
    where = Path(stamp[0])
    return where, _read_index(where / INDEX_FILE, stamp[1])


def clear_caches() -> None:
    """Forget what was read (after `models add` rewrote a catalog folder in this process)."""
    _load_catalog.cache_clear()
    _read_index.cache_clear()
    _read_one.cache_clear()


def build_index(entries: list[CatalogEntry] | tuple[CatalogEntry, ...]) -> dict[str, str]:
    """The index ``_index.json`` holds for ``entries`` (first entry in name order wins a shared key)."""
    index: dict[str, str] = {}
    for entry in sorted(entries, key=lambda e: e.name.lower()):
        for key in entry.names():
            index.setdefault(key.lower(), entry_path(entry.name).name)
    return dict(sorted(index.items()))


@cache
def _read_one(path: Path) -> CatalogEntry:
    try:
        raw = path.read_bytes()  # the validated entry is kept for the next run (_snapshot)
        return validated_snapshot(path, raw, "model-catalog-entry", lambda: CatalogEntry.model_validate(json.loads(raw.decode("utf-8"))))
    except (OSError, UnicodeDecodeError) as err:
        raise DataFileError(str(path), f"cannot read: {err}") from None
    except json.JSONDecodeError as err:
        raise DataFileError(str(path), f"invalid JSON at line {err.lineno}: {err.msg}") from None
    except ValidationError as err:
        raise DataFileError(str(path), format_validation_error(err)) from None


def find_entry(name: str) -> CatalogEntry | None:
    """The catalog entry called ``name`` (full id, part after '/', alias or variant; any case), else None.

    Reads the index and at most one catalog file.
    """
    key = name.strip().lower()
    if not key or len(key) > 256:
        return None
    user = _user_index()
    for where, index in ((user[0], user[1]) if user else (None, {}), (folder(), _index())):
        file = index.get(key) or (index.get(key.split("/")[-1]) if key.count("/") == 1 else None)
        if isinstance(file, str) and where is not None and "/" not in file and "\\" not in file:
            return _read_one(where / file)
    return None


def catalog_names() -> list[str]:
    """Canonical names of every catalog model."""
    return [e.name for e in load_catalog()]


def lookup_names() -> list[str]:
    """Every name the catalog answers to (for suggestions), from the indexes alone."""
    user = _user_index()
    return list({**_index(), **(user[1] if user else {})})
