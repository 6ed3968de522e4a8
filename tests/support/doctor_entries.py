"""The published start-up failures (benchmarks/published/startup_failures.yaml) by id, and the doctor's answer on
one exactly as benchmarks/doctor_grade.py runs it: shared by the retrospective doctor tests (tests/doctor)."""

from __future__ import annotations

from functools import cache


@cache
def failures_by_id() -> dict:
    from benchmarks.published.startup_failures import load_failures

    return {f.id: f for f in load_failures().failures}


def diagnose_entry(entry_id: str):
    from benchmarks.doctor_grade import run_doctor

    return run_doctor(failures_by_id()[entry_id])
