"""Write rendered files atomically: a temp dir beside the target, renamed on success."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..errors import OutputExistsError

# Files a launch script must be able to run directly.
_EXECUTABLE_SUFFIXES = (".sh", ".py")


def write_tree(files: dict[str, str], out: Path, *, force: bool) -> list[Path]:
    """Write ``files`` (name -> text) as the folder ``out``; refuse a non-empty ``out`` unless ``force``."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        raise OutputExistsError(str(out))
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    try:
        for name, text in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if name.endswith(_EXECUTABLE_SUFFIXES):
                path.chmod(0o755)
        tmp.chmod(0o755)
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=parent))
            os.replace(out, old / "old")
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [out / name for name in files]
