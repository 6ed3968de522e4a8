"""One way to write a cache file: atomically (a temporary file renamed into place), then keep the newest few.

Used by the parsed-YAML cache (``_data.py``) and the validated-data snapshots (``_snapshot.py``). A cache that
cannot be written only costs speed, so every OS error is swallowed here; callers serialise before calling.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_cache_file(target: Path, data: bytes, *, keep: int, private: bool = False) -> None:
    """Write ``data`` to ``target`` atomically, then keep the ``keep`` newest files of its suffix in the folder.

    ``private``: the folder is created owner-only (0700) and the file, like every ``mkstemp`` file, is 0600."""
    import tempfile

    tmp = None
    try:
        if private:
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
        tmp = None
        evict(target.parent, target.suffix, keep)
    except OSError:
        pass  # a read-only or full cache folder only costs speed
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def evict(folder: Path, suffix: str, keep: int) -> None:
    """Keep the newest ``keep`` files ending in ``suffix`` (by modification time); remove the older ones."""
    with contextlib.suppress(OSError):
        entries = [e for e in os.scandir(folder) if e.name.endswith(suffix)]
        if len(entries) <= keep:
            return
        entries.sort(key=lambda e: e.stat().st_mtime)
        for entry in entries[: len(entries) - keep]:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
