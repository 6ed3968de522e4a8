"""Where shipped files live: inside the wheel, or at the repository root in an editable install."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PKG = Path(__file__).resolve().parent


@cache
def shipped(name: str) -> Path:
    """Folder of shipped data: ``rules``, ``templates`` (top-level in the repo) or ``data`` (in the package)."""
    if name == "data":
        return _PKG / "data"
    inside = _PKG / "_shipped" / name
    if inside.is_dir():
        return inside
    repo = _PKG.parents[1] / name
    if repo.is_dir():
        return repo
    raise FileNotFoundError(f"shipped folder '{name}' is missing from the installation ({inside})")
