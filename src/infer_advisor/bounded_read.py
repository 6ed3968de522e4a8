"""Every file a user names is read here: regular files only, never more than a cap per kind of input.

For a file the user names (tests/probe/test_probe_reads.py feeds regular files, FIFOs and devices)::

    data = read_bounded(Path("rules/site.yaml"), "data")
    for line in bounded_lines(Path("trace.jsonl"), "trace"): ...

A FIFO, a character device (``/dev/zero``, a terminal), a socket or a directory is refused with one line before
anything is read: opening uses ``O_NONBLOCK`` so a FIFO without a writer cannot block the open, and the file type
is checked on the opened descriptor (no race with a rename). The caps are far above any real input of the kind.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import DataFileError
from .units import MIB

# Largest input of each kind. data: rule files, GPU descriptions, catalog entries, calibrations (the shipped
# catalog is < 1 MiB). trace: a JSONL of 1,000,000 requests (simulate.workload.MAX_TRACE_ROWS) at ~100 bytes a
# line. log: an engine start-up log (vLLM's with debug logging is a few MiB). config: a model's config.json or an
# index (the largest Hub config.json files are < 1 MiB).
LIMITS = {"data": 16 * MIB, "trace": 128 * MIB, "log": 64 * MIB, "config": 16 * MIB, "report": 64 * MIB}

_KINDS = [(stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")]


def _error(path: Path, why: str) -> Exception:
    return DataFileError(str(path), why)


def _open_regular(path: Path, kind: str, error: Callable[[Path, str], Exception]) -> tuple[int, int]:
    """An open descriptor of ``path`` and its size; refuses what is not a regular file or is over the cap."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise error(path, f"cannot read: {err.strerror or err}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
            raise error(path, f"is {what}, not a regular file; give a file")
        if st.st_size > LIMITS[kind]:
            raise error(path, f"{st.st_size:,} bytes is more than the {LIMITS[kind] // MIB} MiB a {kind} file may hold")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def read_bounded(path: Path | str, kind: str, error: Callable[[Path, str], Exception] = _error) -> bytes:
    """The bytes of regular file ``path`` (at most ``LIMITS[kind]``; a file that grows past it while read is refused)."""
    path = Path(path)
    fd, _ = _open_regular(path, kind, error)
    limit = LIMITS[kind]
    chunks, total = [], 0
    try:
        while True:
            chunk = os.read(fd, min(MIB, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise error(path, f"more than the {limit // MIB} MiB a {kind} file may hold")
    except OSError as err:
        raise error(path, f"cannot read: {err.strerror or err}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text_bounded(path: Path | str, kind: str, error: Callable[[Path, str], Exception] = _error,
                      errors: str = "strict") -> str:
    return read_bounded(path, kind, error).decode("utf-8", errors=errors)


def bounded_lines(path: Path | str, kind: str, error: Callable[[Path, str], Exception] = _error) -> Iterator[str]:
    """The UTF-8 lines of regular file ``path``, streamed (at most ``LIMITS[kind]`` bytes in all)."""
    path = Path(path)
    fd, _ = _open_regular(path, kind, error)
    limit, total = LIMITS[kind], 0
    with os.fdopen(fd, "r", encoding="utf-8", newline=None) as fh:
        for line in fh:
            total += len(line)
            if total > limit:
                raise error(path, f"more than the {limit // MIB} MiB a {kind} file may hold")
            yield line
