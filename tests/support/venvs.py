"""Heavy integration environments (vLLM, llm-compressor, AutoAWQ, llama.cpp server), built once and cached.

Each environment is a virtual environment under ``$INFER_ADVISOR_CACHE/test-venvs/<name>-<hash>``
(default ``~/.cache/infer_advisor/test-venvs``). The hash covers the requirement list, so a pin change
builds a fresh one; a ``.complete`` marker is written only after every install step succeeded, so an
interrupted build is never mistaken for a finished one. A file lock serialises concurrent builders.

    py = ensure_venv("vllm", ["torch==2.13.0", "vllm==0.33.0"])
    subprocess.run([py, "-c", "import vllm"], check=True)
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def venv_root() -> Path:
    root = os.environ.get("INFER_ADVISOR_CACHE")
    base = Path(root) if root else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "infer_advisor"
    return base / "test-venvs"


def ensure_venv(
    name: str,
    steps: Sequence[Sequence[str]],
    *,
    python: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 3600,
) -> Path:
    """Return the python of a cached venv after running each pip ``steps`` entry (``pip install <args>``) once.

    ``steps`` is a list of argument lists for ``pip install`` (several steps allow e.g. the CPU torch first,
    then a package with ``--no-deps``). ``env`` adds variables to the pip runs (e.g. ``VLLM_TARGET_DEVICE``).
    """
    # The base interpreter (not this checkout's venv) keys the cache, so fresh clones reuse it.
    python = python or getattr(sys, "_base_executable", None) or sys.executable
    key = hashlib.sha256(json.dumps([list(s) for s in steps] + [python]).encode()).hexdigest()[:12]
    root = venv_root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"{name}-{key}"
    py = target / "bin" / "python"
    marker = target / ".complete"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return py
        if target.exists():
            shutil.rmtree(target)
        subprocess.run([python, "-m", "venv", str(target)], check=True)
        run_env = {**os.environ, **(env or {}), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        for args in steps:
            subprocess.run(
                [str(py), "-m", "pip", "install", "-q", "--no-input", *args],
                check=True,
                env=run_env,
                timeout=timeout,
            )
        marker.write_text(json.dumps({"steps": [list(s) for s in steps]}))
    return py
