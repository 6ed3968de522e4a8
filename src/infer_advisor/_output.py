"""Every output infer-advisor writes goes through here: emitted artifacts, quantized models, bench results,
calibration files. One set of promises for all of them:

1. **Nothing of the user's is lost.** Each output folder holds a manifest (:data:`MANIFEST`) listing the files
   infer-advisor wrote there. ``force`` replaces only those; a folder holding anything else is refused, unless it
   is empty. The folder itself is never removed or renamed, so ``--out .`` and ``--out ~`` are safe.
2. **Concurrent writers never both win.** The existence check and the move into place are one step under an
   exclusive lock (``flock``) on the parent folder; the second writer gets :class:`OutputExistsError`.
3. **An interrupted run leaves nothing that looks complete.** A new output is built in a hidden staging folder
   (``.NAME.partial-XXXX`` beside the output, or ``.infer-advisor.partial-XXXX`` inside an existing one) that holds
   a marker file locked for as long as its writer lives; the next writer removes staging folders whose writer is
   gone (and only those: a folder without our marker, or with a live writer, is left alone).

    >>> with _output_folders.staged("deploy/", force=False, kind="emit") as work:    # doctest: +SKIP
    ...     (work / "serve.sh").write_text("...")
    # deploy/ now holds serve.sh and .infer-advisor-manifest.json

Folders written once (emit, quantize: :func:`staged`) and bench folders rewritten while a run goes on
(:func:`claim_folder`) are in ``_output_folders.py``, over this module's lock, manifest and state checks;
calibration files and plots are single files (:func:`write_file`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

from .errors import DataFileError, OutputExistsError, OutputPathError

MANIFEST = ".infer-advisor-manifest.json"
MARKER = ".infer-advisor-partial"
INSIDE_PREFIX = ".infer-advisor.partial-"
_MANIFEST_TAG = "infer-advisor"


def output_path(path: str | os.PathLike) -> Path:
    """``path`` made absolute and normal (``~`` expanded, ``.``/``..`` folded, no trailing slash). A path holding a
    control, line-separator or bidi character is refused (one line, exit 2), as every path a user types is where it
    enters (:func:`infer_advisor.untrusted.refuse_unsafe`): every writer's ``--out``/``--plot`` passes here."""
    from .untrusted import refuse_unsafe

    text = os.fspath(path)
    refuse_unsafe(text if isinstance(text, str) else os.fsdecode(text), "output path")
    return Path(os.path.abspath(os.path.expanduser(text)))


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _why(err: OSError) -> str:
    if err.errno in (errno.ENOTDIR, errno.EEXIST):
        return "a part of the path is a file, not a folder"
    if err.errno == errno.ENAMETOOLONG:
        return "the path is too long for this file system"
    return err.strerror or str(err)


def _cannot(path: Path, err: OSError, option: str = "--out") -> OutputPathError:
    return OutputPathError(str(path), f"cannot be written ({_why(err)}); choose another {option}")


# ---------------------------------------------------------------- atomic single files


def _locked_temp(folder: Path, prefix: str) -> tuple[int, str]:
    """A new temp file (fd, path) in ``folder``, flock-ed while it is open: a killed writer's leftover is
    recognised by :func:`remove_leftovers` (the lock is free) and removed."""
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=folder)
    with contextlib.suppress(ImportError, OSError):
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)
    return fd, tmp


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to a temp file beside ``path`` and rename it over: a crash never leaves half a file."""
    path = Path(path)
    fd, tmp = _locked_temp(path.parent, f"{INSIDE_PREFIX}{path.name}-")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; results are ordinary files
        _write_all(fd, data)
        os.replace(tmp, path)  # still open, so still locked: no cleaner takes it for a leftover
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# ---------------------------------------------------------------- lock, manifest, leftovers


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive flock on ``folder`` (a directory) for the duration; a no-op where flock is unavailable."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # unreadable parent: the rename below still refuses a non-empty target
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def locked(folder: Path):
    """An exclusive lock on the folder ``folder`` (it must exist) for a read-modify-write of several files in it,
    taken by the same writers that :func:`staged` and :func:`write_file` lock out (``models add``: entry + index)."""
    return _locked(folder)


def read_manifest(folder: Path) -> dict | None:
    """The manifest of ``folder`` when it is one of ours (else None)."""
    from .bounded_read import read_bounded

    try:  # bounded, regular files only: a FIFO named like the manifest in a --force folder is not ours, never a hang
        raw = json.loads(read_bounded(folder / MANIFEST, "data").decode("utf-8"))
    except (DataFileError, OSError, ValueError, RecursionError):
        return None
    if not isinstance(raw, dict) or raw.get("written_by") != _MANIFEST_TAG or not isinstance(raw.get("files"), list):
        return None
    files = [f for f in raw["files"] if isinstance(f, str) and _safe_relative(f)]
    return {**raw, "files": files}


def _safe_relative(name: str) -> bool:
    parts = Path(name).parts
    return bool(parts) and not Path(name).is_absolute() and ".." not in parts and name != MANIFEST


def _write_manifest(folder: Path, kind: str, files: list[str], complete: bool) -> None:
    from ._version import __version__

    body = {
        "written_by": _MANIFEST_TAG,
        "version": __version__,
        "kind": kind,
        "complete": complete,
        "updated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "note": "Files infer-advisor wrote here; --force replaces these and nothing else.",
        "files": sorted(set(files)),
    }
    atomic_write(folder / MANIFEST, (json.dumps(body, indent=2) + "\n").encode())


def _is_staging(name: str, out_name: str | None = None) -> bool:
    return name.startswith(INSIDE_PREFIX) or (out_name is not None and name.startswith(f".{out_name}.partial-"))


def remove_leftovers(out: Path) -> list[Path]:
    """Remove staging folders an interrupted writer of ``out`` left behind (ours, writer gone); the removed paths."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return []
    candidates: list[Path] = []
    for folder, match in ((out.parent, lambda n: n.startswith(f".{out.name}.partial-")), (out, _is_staging)):
        with contextlib.suppress(OSError):
            candidates += [folder / n for n in os.listdir(folder) if match(n)]
    removed = []
    for staging in candidates:
        if staging.name.endswith(".tmp") and not staging.is_dir():
            if _OUR_TEMP.search(staging.name):  # mkstemp's '-XXXXXXXX.tmp': a user's '.infer-advisor.partial-x.tmp' stays
                _remove_stale_temp(staging, fcntl)
            continue
        try:
            fd = os.open(staging / MARKER, os.O_RDONLY)
        except OSError:  # no marker: not ours, or a writer that is just starting
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its writer is alive
            os.close(fd)
            continue
        try:
            shutil.rmtree(staging, ignore_errors=True)
            removed.append(staging)
        finally:
            os.close(fd)
    return removed


# The tail tempfile.mkstemp gives our temp files (_locked_temp: PREFIX + name + '-' + 8 random characters + '.tmp').
_OUR_TEMP = re.compile(r"-[a-z0-9_]{8}\.tmp$")
_TEMP_GRACE_S = 10.0  # a temp file younger than this may be one whose writer has not locked it yet


def _remove_stale_temp(path: Path, fcntl) -> None:
    """Remove a temp file of ours whose writer is gone (its lock is free and it is not brand new)."""
    import time

    try:
        if time.time() - path.stat().st_mtime < _TEMP_GRACE_S:
            return
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        path.unlink()
    except OSError:
        pass  # its writer is alive, or it went already
    finally:
        os.close(fd)


def _foreign(out: Path, ours: set[str]) -> list[str]:
    """Entries of ``out`` (relative paths) that the manifest does not list.

    Staging folders and sub-folders that are infer-advisor outputs of their own (a model that `quantize` wrote
    into an emitted folder's ``models/``) are not foreign; they are left as they are.
    """
    found: list[str] = []
    for root, dirs, files in os.walk(out):
        rel_root = Path(root).relative_to(out)
        links = [d for d in dirs if os.path.islink(os.path.join(root, d))]
        dirs[:] = [
            d for d in dirs
            if d not in links and not (rel_root == Path(".") and _is_staging(d)) and read_manifest(Path(root) / d) is None
        ]
        if rel_root == Path("."):
            files = [f for f in files if not _is_staging(f)]
        for name in files + links:
            rel = (rel_root / name).as_posix()
            if rel not in ours and rel != MANIFEST:
                found.append(rel)
        if len(found) > 3:
            break
    return found


def _kind_of(path: Path) -> str | None:
    """'dir', 'file', 'broken link' or None (absent); a path the OS cannot even look up is an OutputPathError."""
    import stat

    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "broken link" if os.path.islink(path) else None
    except NotADirectoryError:
        return None  # a file on the way: creating it will say so
    except OSError as err:
        raise _cannot(path, err) from None
    return "dir" if stat.S_ISDIR(st.st_mode) else "file"


def _state(out: Path, force: bool) -> str:
    """'absent', 'empty' or 'ours' (``force`` and every file listed in the manifest); otherwise raise."""
    kind = _kind_of(out)
    if kind is None:
        return "absent"
    if kind != "dir":
        raise OutputPathError(str(out), f"exists and is a {kind}, not a folder; choose another --out")
    try:
        entries = [n for n in os.listdir(out) if not _is_staging(n)]
    except OSError as err:
        raise _cannot(out, err) from None
    if not entries:
        return "empty"
    if not force:
        raise OutputExistsError(str(out))
    manifest = read_manifest(out)
    foreign = _foreign(out, set(manifest["files"]) if manifest else set())
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise OutputPathError(
            str(out),
            f"holds files infer-advisor did not write ({shown}); --force replaces only what infer-advisor wrote "
            f"(listed in {MANIFEST}). Move them away, or choose another --out.",
        )
    return "ours"


def check_output(out: str | os.PathLike, force: bool) -> Path:
    """Fail now (before any work) if writing ``out`` would be refused; the absolute path."""
    path = output_path(out)
    if _state(path, force) == "absent":  # can it be created? Try, in the same place the writer will
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.rmdir(tempfile.mkdtemp(prefix=f".{path.name}.probe-", dir=path.parent))
        except OSError as err:
            raise _cannot(path, err) from None
    return path


# ---------------------------------------------------------------- single files: calibrate


def check_file(path: str | os.PathLike, *, force: bool, ours: Callable[[Path], bool], option: str = "--out") -> Path:
    """Fail now (before any work) if :func:`write_file` would refuse ``path``; the absolute path."""
    target = output_path(path)
    kind = _kind_of(target)
    if kind == "dir":
        raise OutputPathError(str(target), f"is a folder; give {option} a file name")
    if kind is not None:
        if not force:
            raise OutputExistsError(str(target), option)
        if not ours(target):
            raise OutputPathError(str(target), _NOT_OURS.format(option=option))
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.probe-", dir=target.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise _cannot(target, err, option) from None
    return target


_NOT_OURS = "was not written by infer-advisor; --force replaces only its own files. Choose another {option}."


def write_file(path: str | os.PathLike, data: bytes, *, force: bool, ours: Callable[[Path], bool],
               option: str = "--out") -> Path:
    """Write the single file ``path``; an existing one is replaced only with ``force`` and only if ``ours(path)``.

    Without ``force`` the file appears by ``link()``, which fails if it exists: of two concurrent writers one
    wins, the other gets :class:`OutputExistsError`.
    """
    target = output_path(path)
    if _kind_of(target) == "dir":
        raise OutputPathError(str(target), f"is a folder; give {option} a file name")
    remove_leftovers(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _locked_temp(target.parent, f".{target.name}.partial-")
    except OSError as err:
        raise _cannot(target, err, option) from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        _write_all(fd, data)
        with _locked(target.parent):
            if _kind_of(target) is not None:
                if not force:
                    raise OutputExistsError(str(target), option)
                if not ours(target):
                    raise OutputPathError(str(target), _NOT_OURS.format(option=option))
                os.replace(tmp, target)
            else:
                try:
                    os.link(tmp, target)
                except FileExistsError:
                    raise OutputExistsError(str(target), option) from None
                except OSError:  # no hard links on this file system: the lock above keeps the check and rename together
                    os.replace(tmp, target)
    except OSError as err:
        if isinstance(err, OutputPathError | OutputExistsError):
            raise
        raise _cannot(target, err, option) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        os.close(fd)
    return target
