"""Fixtures for the bench tests: a tiny Llama, its CTranslate2 int8 conversion, and a real llama.cpp server.

The server is llama-cpp-python's OpenAI-compatible server (built once into a cached venv, see
``llamacpp_env.py``) serving the tiny model converted to GGUF by infer_advisor's own GGUF backend. It listens
on 127.0.0.1 on a free port and is stopped in the fixture's teardown.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `tests.support` under plain `pytest` as well as `python -m pytest`
    sys.path.insert(0, str(ROOT))

from tests.bench.llamacpp_env import llama_env, llama_python  # noqa: E402
from tests.support.tiny_llama import build_tiny_llama  # noqa: E402

SERVER_START_TIMEOUT_S = 180  # loading a 1 MB GGUF takes a second; the margin covers a busy 2-core CI box


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("bench-models") / "tiny-llama")


@pytest.fixture(scope="session")
def tiny_ct2(tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Llama converted by infer_advisor.quantize(method="ct2-int8")."""
    from infer_advisor.quantize import quantize

    out = tmp_path_factory.mktemp("bench-ct2") / "tiny-ct2"
    quantize(tiny_llama, "ct2-int8", out, progress=False)
    return out


@pytest.fixture(scope="session")
def tiny_gguf(tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Llama as an f16 GGUF written by infer_advisor's GGUF backend."""
    from infer_advisor.quantize.gguf_backend import run
    from infer_advisor.quantize.methods import resolve_method

    work = tmp_path_factory.mktemp("bench-gguf")
    run(tiny_llama, work, resolve_method("gguf-f16"), [], lambda _msg: None)
    return work / "model-f16.gguf"


@pytest.fixture(scope="session")
def llama_py() -> Path:
    return llama_python()


@pytest.fixture(scope="session")
def llama_server(llama_py: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory):
    """Base URL of a running llama.cpp server (llama-cpp-python[server]) serving the tiny GGUF as 'tiny'."""
    import httpx

    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    cmd = [
        str(llama_py),
        "-m",
        "llama_cpp.server",
        "--model",
        str(tiny_gguf),
        "--model_alias",
        "tiny",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "1024",
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",  # spinning ggml threads stall on a busy 2-core box
        "--interrupt_requests",
        "False",  # default True: a new request would cut the streaming one short
    ]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=llama_env())
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"llama.cpp server not ready after {SERVER_START_TIMEOUT_S} s: {log.read_text()[-2000:]}"
                )
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
