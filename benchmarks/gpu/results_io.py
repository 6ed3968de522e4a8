"""Read a committed result file, plain or gzipped (large results are committed as ``*.gz`` to keep the tree a device
call carries under 64 MiB: ``carry_size.py``)."""

from __future__ import annotations

import gzip
from pathlib import Path


def read_text(path: Path) -> str:
    """The text of ``path``; when only ``path.gz`` exists (or ``path`` ends in .gz) it is decompressed."""
    path = Path(path)
    if path.suffix != ".gz" and not path.exists() and path.with_name(path.name + ".gz").exists():
        path = path.with_name(path.name + ".gz")
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode(errors="replace")
