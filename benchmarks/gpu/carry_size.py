"""Bytes a device run would carry from this checkout, against the device tool's 64 MiB: check it before a GPU call.

    python benchmarks/gpu/carry_size.py .gpu .whl        # run in the repository root; the carry paths as arguments

What travels: the tracked files present on disk, the untracked files git does not ignore, and the ignored paths named
in ``carry`` (the device tool's notes). Exit 1 when over the limit, with the largest files listed so one can tell what
to move (large results are committed gzipped: ``open.json.gz``; ``grade_openloop.py`` reads them as they are).

No device call reads ``benchmarks/results/`` (the committed results of earlier calls). When the tree is over, move it
aside for the call and back after: tracked files absent from disk do not travel (call G, 2026-12-04, ran so at
55.3 MiB after the tool refused 63.85 MiB as counted here: its own count is a little larger than this one's)::

    mv benchmarks/results /tmp/results_hold   # then the device call; then: mv /tmp/results_hold benchmarks/results
    python benchmarks/gpu/carry_size.py .gpu .whl --without benchmarks/results
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

LIMIT = 64 * 1024 * 1024


def _git_files(*args: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z", *args], capture_output=True, check=True).stdout
    return [Path(p) for p in out.decode().split("\0") if p]


def carried(carry: list[str]) -> dict[Path, int]:
    files = {p for p in _git_files() + _git_files("--others", "--exclude-standard") if p.is_file()}
    for c in carry:
        root = Path(c)
        files.update(p for p in ([root] if root.is_file() else root.rglob("*")) if p.is_file())
    return {p: p.stat().st_size for p in files}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("carry", nargs="*", help="the ignored paths given as carry (e.g. .gpu .whl)")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--without", action="append", default=[], help="a folder moved aside for the call (not counted)")
    args = ap.parse_args()
    sizes = {p: n for p, n in carried(args.carry).items() if not any(p.is_relative_to(w) for w in args.without)}
    total = sum(sizes.values())
    for p, n in sorted(sizes.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{n / 2**20:8.2f} MiB  {p}")
    print(f"total {total / 2**20:.2f} MiB of {LIMIT / 2**20:.0f} MiB ({len(sizes)} files): "
          + ("fits" if total <= LIMIT else f"over by {(total - LIMIT) / 2**20:.2f} MiB"))
    sys.exit(0 if total <= LIMIT else 1)


if __name__ == "__main__":
    main()
