"""The cached llama.cpp environment: llama-cpp-python built from source for the CPU, plus what the GGUF backend needs.

PyPI carries only llama-cpp-python's source distribution; it compiles llama.cpp (about 5.5 minutes on
2 cores), so it is built ONCE into a cached venv by ``tests/support/venvs.py:ensure_venv``. The same
venv runs the llama.cpp server for the HTTP benchmark and the GGUF k-quant quantizer
(``llama_cpp.llama_model_quantize``); ``infer_advisor`` itself is put on ``PYTHONPATH`` there.
"""

from __future__ import annotations

import os
from pathlib import Path

LLAMA_CPP_PYTHON = "llama-cpp-python[server]==0.3.36"

STEPS = [
    [LLAMA_CPP_PYTHON],
    # The GGUF backend's own needs (infer_advisor runs from the source tree via PYTHONPATH).
    ["gguf>=0.10", "pydantic>=2.7,<3", "PyYAML>=6.0", "Jinja2>=3.1", "rich>=13.7", "psutil>=5.9"],
]

BUILD_ENV = {
    # CPU-only build: no CUDA/Metal/Vulkan/BLAS backends, no tests or examples, and no multimodal (mtmd/llava)
    # library, which llama-cpp-python imports only inside its vision chat handlers (a third of the compile).
    "CMAKE_ARGS": "-DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF "
    "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAVA_BUILD=OFF",
    "CMAKE_BUILD_PARALLEL_LEVEL": "2",
}

SRC = Path(__file__).resolve().parents[2] / "src"


def llama_python() -> Path:
    """Python of the cached llama.cpp venv (built on first use)."""
    from tests.support.venvs import ensure_venv

    return ensure_venv("llamacpp", STEPS, env=BUILD_ENV)


def llama_env() -> dict[str, str]:
    """Environment for subprocesses of that venv: infer_advisor importable, no network."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["HF_HUB_OFFLINE"] = "1"
    return env
