"""Regenerate the golden files: `python -m tests.emit.regen` (from the repository root).

Writes tests/emit/golden/<case>/<file> for one plan per engine (tests/emit/plans.py GOLDEN); review the diff
with `git diff tests/emit/golden` before committing. `UPDATE_GOLDEN=1 pytest tests/emit/test_golden.py` does the same.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"


def golden_files() -> dict[str, dict[str, str]]:
    from infer_advisor.emit import render
    from tests.emit.plans import GOLDEN, make_plan

    return {case: render(make_plan(**options), "all") for case, options in GOLDEN.items()}


def write_golden() -> list[Path]:
    written = []
    for case, files in golden_files().items():
        folder = GOLDEN_DIR / case
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
            written.append(folder / name)
    return written


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root))
    for path in write_golden():
        print(path.relative_to(root))
