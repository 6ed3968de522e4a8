"""Golden files: one rendered plan per engine, so a template change shows up as a readable diff.

Regenerate with `python -m tests.emit.regen` (or `UPDATE_GOLDEN=1 pytest tests/emit/test_golden.py`).
"""

from __future__ import annotations

import os

import pytest

from tests.emit.plans import GOLDEN
from tests.emit.regen import GOLDEN_DIR, golden_files, write_golden


@pytest.fixture(scope="module")
def rendered() -> dict[str, dict[str, str]]:
    if os.environ.get("UPDATE_GOLDEN") == "1":
        write_golden()
    return golden_files()


@pytest.mark.parametrize("case", sorted(GOLDEN))
def test_matches_golden(case, rendered):
    folder = GOLDEN_DIR / case
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir())} if folder.is_dir() else {}
    assert sorted(on_disk) == sorted(rendered[case]), "file set changed: run `python -m tests.emit.regen`"
    for name, text in rendered[case].items():
        assert text == on_disk[name], f"{case}/{name} differs from the golden file: run `python -m tests.emit.regen` and review"
