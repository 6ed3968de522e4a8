"""Find a model's facts: a local folder, else the Hub when online, else the embedded catalog.

facts = resolve_model("meta-llama/Llama-2-7b-hf")           # hub if reachable, else catalog
facts = resolve_model("./my-model", source="local")          # config.json + safetensors headers
facts = resolve_model("llama-2-7b", source="catalog")        # aliases and the part after '/' work
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from ..errors import DataFileError, HubError, ModelConfigError, ModelNotFoundError
from .catalog import find_entry, lookup_names
from .facts import ModelFacts
from .jsonfile import load_json

Source = Literal["auto", "local", "hub", "catalog"]
# Longest model name accepted: a path the OS can open (PATH_MAX is 4096 on Linux); Hub ids are at most 96 + 1 + 96.
MAX_NAME_CHARS = 4096


def _is_dir(path: Path) -> bool:
    """Path.is_dir() that answers False for names the OS refuses (too long, a component too long)."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _from_local(folder: Path, name: str) -> ModelFacts:
    from .safetensors_header import read_local_checkpoint

    cfg_path = folder / "config.json"
    try:
        os.listdir(folder)  # a folder we may not read fails here, by name, before anything else
        exists = cfg_path.is_file()
    except OSError as err:
        raise ModelConfigError(str(folder), f"cannot read this folder: {err.strerror or err}") from None
    if not exists:
        raise ModelConfigError(str(folder), "no config.json in this folder")
    from .build import facts_from_config

    config = load_json(cfg_path)
    summary = read_local_checkpoint(folder)
    return facts_from_config(name, config, "local", summary, where=str(cfg_path))


def _from_catalog(name: str) -> ModelFacts | None:
    """A catalog model's facts. They depend only on the entry's file, the variant asked for, the architecture
    tables and the code, so the first run keeps them (:mod:`.._snapshot`, keyed by all four) and later runs skip
    reading the architecture (and importing its modules)."""
    from .._snapshot import validated_snapshot
    from .arch_tables import tables_bytes
    from .catalog import entry_file

    path = entry_file(name)
    if path is None:
        return None
    entry = find_entry(name)
    variant = entry.variant_for(name)
    try:
        raw = path.read_bytes() + b"\0" + tables_bytes()
    except OSError as err:
        raise DataFileError(str(path), f"cannot read: {err}") from None

    def build() -> ModelFacts:
        from .build import facts_from_config

        return facts_from_config(variant, entry.config, "catalog", where=f"catalog entry {entry.name}")

    return validated_snapshot(path, raw, f"model-facts\0{variant}", build)


def _not_found(name: str, detail: str = "") -> ModelNotFoundError:
    """ModelNotFoundError suggesting catalog ids close to ``name``: the same family and size first."""
    from .suggest import rank_names

    suggestions: list[str] = []
    for hit in rank_names(name[:200], lookup_names(), n=12):
        entry = find_entry(hit)
        if entry is not None and entry.variant_for(hit) not in suggestions:
            suggestions.append(entry.variant_for(hit))
    return ModelNotFoundError(name[:200], suggestions[:3], detail)


def _looks_like_repo_id(name: str) -> bool:
    """owner/name as the Hub accepts it (huggingface_hub's validate_repo_id would raise on anything else)."""
    from .hub import is_repo_id

    return is_repo_id(name) and ".." not in name and not name.startswith((".", "/", "~"))


def resolve_model(name: str, *, revision: str | None = None, source: Source = "auto") -> ModelFacts:
    """The facts of model ``name``; ``ModelFacts.source`` says which source answered.

    ``source="auto"`` tries, in order: a local directory called ``name``; the Hugging Face Hub (unless
    offline, or the endpoint does not answer a TCP connect within a second); the embedded catalog. A
    catalog model that the Hub refuses (gated, no ``HF_TOKEN``) or cannot serve falls back to the
    catalog; any other model raises the Hub's error. ``revision`` is a Hub branch, tag or commit.

    Raises :class:`ModelNotFoundError` (with close catalog names), :class:`ModelConfigError`,
    :class:`UnsupportedArchitectureError` or :class:`HubError`.
    """
    from . import hub

    text = name.strip() if isinstance(name, str) else ""
    if not text:
        raise ModelNotFoundError(str(name)[:100], (), "empty model name")
    if len(text) > MAX_NAME_CHARS:
        raise ModelNotFoundError(text[:100] + "...", (), f"a model name or path has at most {MAX_NAME_CHARS} characters")
    from ..untrusted import refuse_unsafe

    refuse_unsafe(text, "model name or path")  # control, line-separator and bidi characters reach artifacts and tables
    path = Path(text).expanduser()
    if source in ("auto", "local") and _is_dir(path):
        return _from_local(path, text)
    if source == "local":
        raise ModelNotFoundError(name, (), f"'{text}' is not a directory")
    if source == "catalog":
        facts = _from_catalog(text)
        if facts is None:
            raise _not_found(text, "not in the catalog")
        return facts

    hub_detail = ""
    if _looks_like_repo_id(text) and hub.hub_available():
        try:
            from .build import facts_from_config

            config, summary = hub.fetch_from_hub(text, revision)
            return facts_from_config(text, config, "hub", summary, where=f"{text}/config.json (Hub)")
        except hub.HubNotFound as err:
            if source == "hub":
                raise _not_found(text, f"the Hub says: {err}") from None
            hub_detail = "not on the Hub"
        except hub.HubDenied as err:
            if source == "hub" or find_entry(text) is None:
                raise HubError(
                    f"{err}. Set HF_TOKEN to a token with access to '{text}' (and accept its license on the Hub)."
                ) from None
            hub_detail = str(err)
        except HubError:
            if source == "hub" or find_entry(text) is None:
                raise
    elif source == "hub":
        from .. import constants

        if not _looks_like_repo_id(text):
            raise ModelNotFoundError(name, (), "a Hub model id looks like 'owner/name'")
        why = (
            "offline mode is on (HF_HUB_OFFLINE / INFER_ADVISOR_OFFLINE)"
            if constants.offline()
            else (f"{constants.hf_endpoint()} is not reachable")
        )
        raise HubError(f"Cannot ask the Hub for '{text}': {why}.")

    facts = _from_catalog(text)
    if facts is None:
        raise _not_found(text, hub_detail or "not a local folder and not in the catalog")
    return facts
