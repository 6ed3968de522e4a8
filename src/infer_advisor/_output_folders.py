"""Output folders, through the shared writer's promises (``_output.py``: manifest, lock, nothing lost, one winner):

- :func:`staged`: a folder written once (emit, quantize), built in a hidden staging folder and moved into place;
- :func:`claim_folder`: a folder whose files are rewritten while a run goes on (bench).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ._output import (
    INSIDE_PREFIX,
    MANIFEST,
    MARKER,
    _MANIFEST_TAG,
    _cannot,
    _locked,
    _state,
    _write_manifest,
    atomic_write,
    output_path,
    read_manifest,
    remove_leftovers,
)
from .errors import OutputExistsError, OutputPathError


# ---------------------------------------------------------------- folders written once: emit, quantize


class _Marker:
    """The marker file of a staging folder, locked while its writer lives."""

    def __init__(self, folder: Path, kind: str, out: Path):
        self.fd: int | None = None
        tmp = folder / f"{MARKER}.tmp"
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - not POSIX
            pass
        body = {"written_by": _MANIFEST_TAG, "kind": kind, "out": str(out), "pid": os.getpid()}
        os.write(fd, (json.dumps(body) + "\n").encode())
        os.rename(tmp, folder / MARKER)  # same inode: the lock comes along
        self.fd = fd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@contextlib.contextmanager
def staged(out: str | os.PathLike, *, force: bool, kind: str, cleaned: list[Path] | None = None) -> Iterator[Path]:
    """Yield an empty staging folder for ``out``; when the block ends normally its files become ``out``'s.

    A new ``out`` appears at once (one rename). An existing ``out`` (empty, or holding only infer-advisor's files,
    with ``force``) keeps its folder: each file is moved in, the files of the previous manifest that are not
    written again are removed. Any exception removes the staging folder and leaves ``out`` as it was.
    ``cleaned`` receives the leftover staging folders of interrupted writers that were removed.
    """
    path = output_path(out)
    state = _state(path, force)  # fail before any work is done
    removed = remove_leftovers(path)
    if cleaned is not None:
        cleaned.extend(removed)
    if state == "absent":
        base, prefix = path.parent, f".{path.name}.partial-"
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise _cannot(path, err) from None
    else:
        base, prefix = path, INSIDE_PREFIX
    try:
        staging = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    except OSError as err:
        raise _cannot(path, err) from None
    marker = None
    try:
        marker = _Marker(staging, kind, path)
        work = staging / "out"  # what the caller fills (backends may wipe and recreate it; the marker stays apart)
        work.mkdir(mode=0o777)  # the umask applies: an ordinary folder, unlike mkdtemp's private one
        yield work
        _commit(work, path, force=force, kind=kind)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if marker is not None:
            marker.close()
    shutil.rmtree(staging, ignore_errors=True)


def _files_under(folder: Path) -> list[str]:
    out = []
    for root, dirs, files in os.walk(folder):
        rel_root = Path(root).relative_to(folder)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            rel = (rel_root / name).as_posix()
            if rel not in (MARKER, MANIFEST):
                out.append(rel)
    return sorted(out)


def _commit(work: Path, out: Path, *, force: bool, kind: str) -> None:
    new = _files_under(work)
    with _locked(out.parent):
        state = _state(out, force)
        if state == "absent" and work.parent.parent == out.parent:
            _write_manifest(work, kind, new, complete=True)
            try:
                os.rename(work, out)
            except OSError as err:  # created meanwhile by something that does not take our lock
                if err.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    raise OutputExistsError(str(out)) from None
                raise _cannot(out, err) from None
            return
        if state == "absent":  # out vanished while we staged inside it (and the staging went with it)
            raise OutputPathError(str(out), "was removed while infer-advisor was writing into it; run again")
        manifest = read_manifest(out) if state == "ours" else None
        old = manifest["files"] if manifest else []
        _write_manifest(out, kind, old + new, complete=False)  # a crash from here on leaves every file listed
        for rel in sorted(set(old) - set(new)):
            _remove_inside(out, rel)
        for rel in new:
            dest = out / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(work / rel, dest)
        _write_manifest(out, kind, new, complete=True)


def _remove_inside(out: Path, rel: str) -> None:
    """Remove the file ``out/rel`` (never anything outside ``out``), then its folders left empty."""
    target = out / rel
    real_out = os.path.realpath(out)
    if os.path.commonpath([os.path.realpath(target.parent), real_out]) != real_out:
        return  # a link inside out points elsewhere: not ours to follow
    with contextlib.suppress(FileNotFoundError):
        if target.is_symlink() or not target.is_dir():
            target.unlink()
    parent = target.parent
    while parent != out and parent.is_relative_to(out):
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent


# ---------------------------------------------------------------- folders rewritten during a run: bench


class OutputFolder:
    """A claimed output folder whose files are (re)written while a run goes on; see :func:`claim_folder`."""

    def __init__(self, path: Path, kind: str):
        self.path = path
        self.kind = kind
        self.files: list[str] = []
        self.complete = False

    def write(self, name: str, data: bytes) -> Path:
        """Write (or replace) ``name`` atomically, listing it in the manifest first."""
        if name not in self.files:
            self.files.append(name)
            _write_manifest(self.path, self.kind, self.files, complete=self.complete)
        atomic_write(self.path / name, data)
        return self.path / name

    def remove(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.path / name).unlink()
        if name in self.files:
            self.files.remove(name)
            _write_manifest(self.path, self.kind, self.files, complete=self.complete)

    def finish(self) -> None:
        self.complete = True
        _write_manifest(self.path, self.kind, self.files, complete=True)


def claim_folder(out: str | os.PathLike, *, force: bool, kind: str) -> OutputFolder:
    """Create (or, with ``force``, take over) the folder ``out`` now, before any work; refused as :func:`staged` is.

    With ``force``, the files of the previous manifest are removed at once.
    """
    path = output_path(out)
    _state(path, force)
    remove_leftovers(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _cannot(path, err) from None
    with _locked(path.parent):
        state = _state(path, force)
        try:
            if state == "absent":
                path.mkdir()
            elif state == "ours":
                manifest = read_manifest(path)
                for rel in manifest["files"] if manifest else []:
                    _remove_inside(path, rel)
            _write_manifest(path, kind, [], complete=False)
        except OSError as err:
            raise _cannot(path, err) from None
    return OutputFolder(path, kind)
