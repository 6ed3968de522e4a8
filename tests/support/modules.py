"""A benchmark script or a data folder's checker, loaded as a module from its path (they are files, not packages)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def module_from_path(path: Path, name: str | None = None) -> ModuleType:
    """The module the file at ``path`` defines, executed once per call under ``name`` (default: the file's stem)."""
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
