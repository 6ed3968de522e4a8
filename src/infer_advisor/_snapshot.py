"""Validated data kept between runs: what a data or rule file validated to, so the next start skips the validation.

For a data or rule file's ``path`` and its ``raw`` text (tests/test_snapshot.py runs it in a temporary
cache)::

    rules = validated_snapshot(path, raw, "rules", lambda: validate_rules(path, raw))

Validating the shipped data (engines, formats, speed terms, rules) builds a pydantic schema per file and runs it: a
third of a plan's own start-up CPU. The first run that validates a file keeps the result as a pickle under
``<cache>/validated/``, keyed by the file's path and bytes, what it was validated as (``kind``), and the code that
validated it (every module of this package by path, size and modification time, and the Python and pydantic
versions); any change to one of them is a new key, so a snapshot is never older than the file or the code. A file
that fails validation is never kept. Like Python's own byte-code cache, a snapshot is code to the interpreter: it
is read only when this user owns it and nobody else may write to it; anything else, or an unreadable snapshot, is
validated again. ``INFER_ADVISOR_NO_SNAPSHOT=1`` turns it off.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

FORMAT = "snapshot-1"  # part of every key: a change to how snapshots are written is a new key
MAX_BYTES = 8 * 2**20  # a snapshot larger than this is neither written nor read
MAX_FILES = 256  # the folder keeps the newest ones
_PACKAGE = Path(__file__).resolve().parent


def validated_snapshot(path: Path, raw: bytes, kind: str, validate: Callable[[], T]) -> T:
    """``validate()``'s result for the file ``path`` with bytes ``raw``: from a snapshot when one exists, else
    validated now (raising what ``validate`` raises) and kept."""
    target = _target(path, raw, kind)
    if target is not None:
        found = _read(target)
        if found is not None:
            return found[0]
    value = validate()
    if target is not None:
        _write(target, value)
    return value


def _target(path: Path, raw: bytes, kind: str) -> Path | None:
    from .constants import cache_dir, snapshots_disabled

    if snapshots_disabled():
        return None

    h = hashlib.sha256(f"{FORMAT}\0{_code_fingerprint()}\0{kind}\0{Path(path).resolve()}\0".encode())
    h.update(raw)
    return cache_dir() / "validated" / f"{h.hexdigest()[:32]}.pickle"


@functools.cache
def _code_fingerprint() -> str:
    """Path, size and modification time of every module of the package, and the package's, the interpreter's and
    pydantic's versions (one directory walk, about half a millisecond; the versions alone where the package is not a
    folder, as in a zip)."""
    import pydantic

    from ._version import __version__

    h = hashlib.sha256(f"{__version__}\0{sys.version}\0{pydantic.VERSION}\0".encode())
    stack = [_PACKAGE]
    while stack:
        folder = stack.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False) and entry.name not in ("__pycache__", "data", "templates"):
                    stack.append(Path(entry.path))
                elif entry.name.endswith(".py"):
                    st = entry.stat()
                    h.update(f"{entry.path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def _read(target: Path) -> tuple[object] | None:
    """``(value,)`` from a snapshot this user owns and only this user may write, else None."""
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        import stat

        trusted = stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022
        if not trusted or st.st_size > MAX_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        from _pickle import loads  # the C unpickler pickle.py wraps (pickle.py itself costs a millisecond to import)

        return (loads(data),)  # noqa: S301 - our own snapshot, owned by this user and written only by it
    except Exception:  # noqa: BLE001 - a torn or stale snapshot costs only a validation
        return None


def _write(target: Path, value: object) -> None:
    import pickle

    from ._cache_files import write_cache_file

    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return  # a value that does not pickle only costs speed
    if len(data) <= MAX_BYTES:
        write_cache_file(target, data, keep=MAX_FILES, private=True)
