"""Helpers of the quantize tests: the quantizers' own cached venvs, and running the CLI in them.

llm-compressor pins transformers 5.15-5.17 and AutoAWQ 0.2.9 needs transformers 4.x, while the dev venv has a
newer one, so each quantizer gets its own venv (``tests/support/venvs.py``). The package under test is not
installed into them: commands run ``python -m infer_advisor.cli`` with ``PYTHONPATH=<repo>/src``, so the venv's
cache key does not depend on where the checkout lives (CI clones elsewhere) and it never runs stale code.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `tests.support` under plain `pytest` as well as `python -m pytest`
    sys.path.insert(0, str(ROOT))

from tests.support.venvs import ensure_venv  # noqa: E402

# The interpreter the venvs are made from: the base Python, not the dev venv's, so the cache key (which covers the
# interpreter path) stays the same for every checkout of the repository (CI clones into another folder).
BASE_PYTHON = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
# The CPU build of torch lies on this machine's disk; installing it first stops pip pulling a CUDA build.
TORCH = "torch==2.13.0"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def base_requirements() -> list[str]:
    """infer-advisor's own light dependencies (pydantic, rich, ...), read from pyproject."""
    return list(_pyproject()["dependencies"])


def extra(name: str) -> list[str]:
    """An optional-dependencies list from pyproject, so the tests install exactly what users would."""
    return list(_pyproject()["optional-dependencies"][name])


def llmcompressor_python() -> Path:
    """Venv with llm-compressor (the `awq` extra) and CPU torch."""
    return ensure_venv(
        "quantize-llmcompressor", [[TORCH], [*extra("awq"), *base_requirements()]], python=BASE_PYTHON
    )


def autoawq_python() -> Path:
    """Venv with AutoAWQ (the `autoawq` extra) and CPU torch.

    AutoAWQ 0.2.9 lists plain `torch` and `triton` (a CUDA-only kernel path it imports optionally); the extra
    pins the transformers it was written for, and `--no-deps` keeps pip from replacing the CPU torch.
    """
    pins = extra("autoawq")
    awq = [p for p in pins if p.lower().startswith("autoawq")]
    rest = [p for p in pins if p not in awq]
    return ensure_venv(
        "quantize-autoawq", [[TORCH], [*rest, *base_requirements()], ["--no-deps", *awq]], python=BASE_PYTHON
    )


def run_cli(python: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run `infer-advisor <args>` with ``python`` on this checkout's sources; output captured as text."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "INFER_ADVISOR_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [str(python), "-m", "infer_advisor.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
