"""Write rendered files as an output folder, through the shared writer (infer_advisor/_output.py).

A new folder appears in one rename; an existing one is refused unless empty, or (``force``) unless it holds only
files infer-advisor wrote (its manifest), which are then replaced. See :func:`infer_advisor._output_folders.staged`.
"""

from __future__ import annotations

from pathlib import Path

from .._output_folders import staged

# Files a launch script must be able to run directly.
_EXECUTABLE_SUFFIXES = (".sh", ".py")


def write_tree(files: dict[str, str], out: Path, *, force: bool) -> list[Path]:
    """Write ``files`` (name -> text) as the folder ``out``; the written paths."""
    with staged(out, force=force, kind="emit") as work:
        for name, text in files.items():
            path = work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if name.endswith(_EXECUTABLE_SUFFIXES):
                path.chmod(0o755)
    return [Path(out) / name for name in files]
