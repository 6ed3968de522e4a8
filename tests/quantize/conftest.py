"""Fixtures for the quantize tests: a tiny Llama built once, and the quantizers' own cached venvs."""

from __future__ import annotations

from pathlib import Path

import pytest
from quantize_envs import autoawq_python, llmcompressor_python

from tests.support.tiny_llama import build_tiny_llama


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama (hidden 128, MLP 256) with its tokenizer, built once per session."""
    return build_tiny_llama(tmp_path_factory.mktemp("models") / "tiny-llama")


@pytest.fixture(scope="session")
def llmcompressor_py() -> Path:
    return llmcompressor_python()


@pytest.fixture(scope="session")
def autoawq_py() -> Path:
    return autoawq_python()
