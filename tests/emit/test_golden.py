"""Golden files: one stored plan per engine rendered by today's templates, so a template change shows up as a
readable diff. Regenerate with `python -m tests.emit.regen` (or `UPDATE_GOLDEN=1 pytest tests/emit/test_golden.py`)."""

from __future__ import annotations

import os

import pytest

from infer_advisor.emit import render
from tests.emit.checks import check_file
from tests.emit.plans import GOLDEN
from tests.emit.regen import GOLDEN_DIR, PLAN_FILE, stored_plan, write_golden

if os.environ.get("UPDATE_GOLDEN") == "1":
    write_golden()


@pytest.mark.parametrize("case", sorted(GOLDEN))
def test_matches_golden(case):
    folder = GOLDEN_DIR / case
    rendered = render(stored_plan(case), "all")
    on_disk = {
        p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(folder.rglob("*")) if p.is_file() and p.name != PLAN_FILE
    }
    assert sorted(on_disk) == sorted(rendered), "file set changed: run `python -m tests.emit.regen`"
    for name, text in rendered.items():
        assert text == on_disk[name], f"{case}/{name} differs from the golden file: run `python -m tests.emit.regen` and review"
        check_file(name, text)
