"""The contract every probe checks: one CLI call with hostile input ends in exit 0 or 1, or in exit 2 with exactly one
line on stderr; never a traceback, never the internal-error code 3; within a time bound; writing only inside the
probe's own folder, and little there."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from infer_advisor.cli import main

# A single call may take this long on the shared 2-core CI box (plans with a hardware suggestion search the
# whole catalog: about 0.1 s here); a hang (the probe's billion laughs, a 10^9-layer loop) takes minutes.
TIME_LIMIT_S = 20.0
# What one call may leave on disk: the YAML cache of a rules folder, a small output. The probe's billion laughs
# wrote 603 MB in 30 s.
DISK_LIMIT_BYTES = 8 * 2**20


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    seconds: float


def run_cli(args: list[str]) -> Outcome:
    """``infer-advisor ARGS`` in this process, stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:  # --help and --version exit through argparse
            code = exc.code if isinstance(exc.code, int) else 2
    return Outcome(code, out.getvalue(), err.getvalue(), time.monotonic() - start)


def disk_bytes(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def check(outcome: Outcome, args: list[str], *, allowed: tuple[int, ...] = (0, 1, 2)) -> None:
    """Assert the contract; the failure message shows the arguments that broke it."""
    shown = " ".join(repr(a) if (" " in a or not a) else a for a in args)[:2000]
    assert "Traceback" not in outcome.err, f"traceback for: {shown}\n{outcome.err[-3000:]}"
    assert outcome.code in allowed, f"exit {outcome.code} for: {shown}\n{outcome.err[-3000:]}"
    if outcome.code == 2:
        lines = outcome.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), f"not one error line for: {shown}\n{outcome.err}"
    assert outcome.seconds < TIME_LIMIT_S, f"{outcome.seconds:.1f} s for: {shown}"


def probe_environment(monkeypatch, cache: Path) -> None:
    """Offline, no GPU probe, the YAML cache in the probe's own folder."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("INFER_ADVISOR_OFFLINE", "1")
    monkeypatch.setenv("INFER_ADVISOR_NO_NVML", "1")
    monkeypatch.setenv("INFER_ADVISOR_CACHE", str(cache))
    monkeypatch.delenv("INFER_ADVISOR_DEBUG", raising=False)
    sys.stdout.flush()
