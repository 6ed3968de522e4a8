"""Shared setup for the emit tests: `tests.support` importable, NVML never probed."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `tests.emit` / `tests.support` under plain `pytest` too
    sys.path.insert(0, str(ROOT))
