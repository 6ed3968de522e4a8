"""Environment variables, read at use time (never at import) so tests and callers can change them.

infer_advisor's own variables:

- ``INFER_ADVISOR_CACHE``: cache folder (default ``~/.cache/infer_advisor``).
- ``INFER_ADVISOR_OFFLINE``: ``1`` never touches the network (as does ``HF_HUB_OFFLINE=1``).
- ``INFER_ADVISOR_NO_NVML``: ``1`` skips the NVML probe (treat the machine as having no GPU driver).
- ``INFER_ADVISOR_DEBUG``: ``1`` shows the traceback of an unexpected error (as ``--debug`` does).
- ``INFER_ADVISOR_NO_SNAPSHOT``: ``1`` validates every data and rule file on every run instead of keeping what it
  validated to under ``<cache>/validated/`` (``_snapshot.py``).
- ``INFER_ADVISOR_HOME``: the user's own data folder (default ``$XDG_DATA_HOME/infer_advisor``, else
  ``~/.local/share/infer_advisor``); ``infer-advisor models add`` writes the user catalog under ``models/`` there, outside
  the installed package, so a reinstall or upgrade keeps it.

Hugging Face's own: ``HF_ENDPOINT``, ``HF_TOKEN``, ``HF_HUB_OFFLINE`` are honoured as huggingface_hub does.
"""

from __future__ import annotations

import os
from pathlib import Path

_TRUE = {"1", "true", "yes", "on"}


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def offline() -> bool:
    """True when no network access may be attempted."""
    return _flag("INFER_ADVISOR_OFFLINE") or _flag("HF_HUB_OFFLINE")


def hf_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def hf_token() -> str | None:
    """The Hub token from the environment, if any. Never written into any file."""
    return os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or None


def debug_enabled() -> bool:
    return _flag("INFER_ADVISOR_DEBUG")


def nvml_disabled() -> bool:
    return _flag("INFER_ADVISOR_NO_NVML")


def snapshots_disabled() -> bool:
    return _flag("INFER_ADVISOR_NO_SNAPSHOT")


def cache_dir() -> Path:
    root = os.environ.get("INFER_ADVISOR_CACHE")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "infer_advisor"


def data_home() -> Path:
    """The user's infer_advisor data folder: ``INFER_ADVISOR_HOME``, else the XDG data dir (``$XDG_DATA_HOME`` or
    ``~/.local/share``) + ``infer_advisor``. Never inside the installed package."""
    root = os.environ.get("INFER_ADVISOR_HOME")
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "infer_advisor"


def user_catalog_dir() -> Path:
    """Where `infer-advisor models add` writes and the catalog loader reads the user's own model entries."""
    return data_home() / "models"
