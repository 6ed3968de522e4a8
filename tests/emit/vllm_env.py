"""The slim vLLM 0.33.0 venv for the flag contract test (built once, cached by tests/support/venvs.py).

A full `pip install vllm==0.33.0` pulls a CUDA torch and ~9.5 GB; the parser and config creation need far
less. Steps: the CPU torch 2.13.0 (local disk), vLLM itself without dependencies, then only the modules
`vllm serve`'s parser and `create_engine_config()` import (found by trying, pinned to what resolved),
compressed-tensors without its own torch pin, and Ray for the multi-node executor check.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.venvs import ensure_venv

VLLM_VERSION = "0.33.0"
STEPS = [
    ["torch==2.13.0"],
    [f"vllm=={VLLM_VERSION}", "--no-deps"],
    [
        "transformers==5.20.2", "pydantic==2.14.4", "numpy==2.4.6", "PyYAML==6.0.4", "regex==2026.11.19",
        "cachetools==8.0.2", "psutil==7.2.2", "requests==2.34.2", "tqdm==4.70.1", "huggingface_hub==2.4.0",
        "tokenizers==0.23.3", "safetensors==0.8.0", "msgspec==0.23.0", "cloudpickle==3.1.3", "py-cpuinfo==9.0.0",
        "blake3==1.0.11", "cbor2==6.3.0", "pyzmq==27.3.0", "aiohttp==3.14.5", "openai-harmony==0.0.8",
        "openai==3.57.0", "pillow==13.0.0", "pybase64==1.5.1", "uvloop==0.23.0", "fastapi==0.165.0",
        "prometheus_client==0.26.0", "partial-json-parser==0.2.1.1.post7", "xgrammar==0.2.9", "llguidance==1.9.1",
        "einops==0.8.2", "loguru==0.7.3", "ray==2.60.0", "uvicorn==0.55.0", "watchfiles==1.3.0", "orjson==3.13.0",
        "torch==2.13.0",  # keeps pip from swapping in a CUDA torch for any dependency
    ],
    ["compressed-tensors==0.17.0", "--no-deps"],
]


def vllm_python() -> Path:
    return ensure_venv("vllm-emit", STEPS, env={"VLLM_TARGET_DEVICE": "cpu"})
