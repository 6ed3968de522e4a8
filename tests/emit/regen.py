"""Regenerate the golden files: `python -m tests.emit.regen` (from the repository root).

For one plan per engine (tests/emit/plans.py GOLDEN) this writes tests/emit/golden/<case>/plan.json (the plan as
the planner makes it today) and the files rendered from it. The golden test renders from the stored plan.json,
so only emit/template changes show up there, not planner changes. Review `git diff tests/emit/golden` before
committing. `UPDATE_GOLDEN=1 pytest tests/emit/test_golden.py` does the same.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"
PLAN_FILE = "plan.json"


def stored_plan(case: str):
    from infer_advisor.plan.models import DeploymentPlan

    return DeploymentPlan.model_validate_json((GOLDEN_DIR / case / PLAN_FILE).read_text(encoding="utf-8"))


def write_golden() -> list[Path]:
    from infer_advisor.emit import render
    from tests.emit.plans import GOLDEN, make_plan

    written = []
    for case, options in GOLDEN.items():
        plan = make_plan(**options)
        folder = GOLDEN_DIR / case
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        (folder / PLAN_FILE).write_text(plan.model_dump_json(indent=2) + "\n", encoding="utf-8")
        written.append(folder / PLAN_FILE)
        for name, text in render(plan, "all").items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)  # Triton's model_repository/
            (folder / name).write_text(text, encoding="utf-8")
            written.append(folder / name)
    return written


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root))
    for path in write_golden():
        print(path.relative_to(root))
