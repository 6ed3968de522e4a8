"""llama.cpp's own C++ ``llama-server`` (continuous batching over ``--parallel`` slots), built once and cached.

llama-cpp-python's Python server runs one request at a time under a global lock; the C++ server schedules
every slot in the same decode step (continuous batching, on by default), which is what the capacity
simulator models. It is compiled from the llama.cpp source vendored in the llama-cpp-python sdist the other
llama.cpp tests pin (``tests/bench/llamacpp_env.py``), CPU only, the ``llama-server`` target alone, and cached
like the test venvs (``tests/support/venvs.py``): ``<cache>/test-venvs/llama-server-<hash>/bin/llama-server``,
a file lock for concurrent builders and a ``.complete`` marker written only after the binary is in place.

    binary = build_llama_server()                                   # minutes the first time, then instant
    gguf = build_capacity_model(tmp / "capacity-llama")            # a random Llama big enough to time on a CPU
    with llama_server(binary, gguf, parallel=4, ctx_per_slot=256, threads=2) as url:
        httpx.get(f"{url}/health")

Building from an empty cache: the sdist download (8 s) and the compile of the ``llama-server`` target on 2 cores,
5.5 minutes on an idle machine, 7.4 beside other jobs.

``GGML_NATIVE=ON`` compiles for this CPU's instruction set; the hash covers the CPU's feature flags so a cache
directory moved to another machine builds again instead of crashing with an illegal instruction.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.venvs import venv_root

LLAMA_CPP_PYTHON_VERSION = "0.3.36"  # the same sdist as tests/bench/llamacpp_env.py (llama-cpp-python[server]==0.3.36)

CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",  # one self-contained binary to cache
    "-DGGML_NATIVE=ON",  # this CPU's SIMD (AVX2/AVX-512 ...); see the cpu key in _key()
    "-DGGML_CUDA=OFF",
    "-DGGML_METAL=OFF",
    "-DGGML_VULKAN=OFF",
    "-DGGML_BLAS=OFF",
    "-DGGML_RPC=OFF",
    "-DLLAMA_OPENSSL=OFF",  # no HTTPS: the tests talk to 127.0.0.1
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TOOLS=ON",  # the server lives under tools/
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",  # no npm build of the web UI
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # and no download of it from a Hugging Face bucket: the UI table stays empty
]
BUILD_JOBS = 2  # the development and CI machines have 2 cores
BUILD_TIMEOUT_S = 3600
SERVER_START_TIMEOUT_S = 180  # loading a model of tens of MB takes a second; the margin covers a busy 2-core box


def _cpu_flags() -> str:
    """The CPU's feature flags (a native build runs only where they are all present)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _key() -> str:
    blob = json.dumps([LLAMA_CPP_PYTHON_VERSION, CMAKE_FLAGS, platform.machine(), _cpu_flags()])
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def server_dir() -> Path:
    return venv_root() / f"llama-server-{_key()}"


def build_llama_server(*, log=None) -> Path:
    """Path of the cached ``llama-server`` binary; downloads the sdist and compiles it on first use.

    ``log``: a callable given one line per stage (download, configure, build) and its duration.
    """
    say = log or (lambda _msg: None)
    target = server_dir()
    binary = target / "bin" / "llama-server"
    marker = target / ".complete"
    root = target.parent
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "llama-server.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists() and binary.exists():
            return binary
        if target.exists():
            shutil.rmtree(target)
        cmake = shutil.which("cmake")
        if cmake is None:
            raise RuntimeError("building llama-server needs cmake (apt-get install cmake, or pip install cmake)")
        ninja = shutil.which("ninja")
        timings: dict[str, float] = {}
        with tempfile.TemporaryDirectory(prefix="llama-server-build-") as tmp:
            work = Path(tmp)
            t0 = time.monotonic()
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-input", "--no-deps", "--no-binary", ":all:",
                 f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}", "-d", str(work)],
                check=True, timeout=BUILD_TIMEOUT_S, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
            )
            sdist = next(work.glob("llama_cpp_python-*.tar.gz"))
            prefix = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}/vendor/llama.cpp/"
            with tarfile.open(sdist) as tar:
                members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
                tar.extractall(work, members=members, filter="data")
            src = work / prefix
            timings["download_s"] = time.monotonic() - t0
            say(f"llama-server: sdist downloaded and unpacked in {timings['download_s']:.0f} s")
            build = work / "build"
            t0 = time.monotonic()
            gen = ["-G", "Ninja"] if ninja else []
            subprocess.run([cmake, "-S", str(src), "-B", str(build), *gen, *CMAKE_FLAGS], check=True,
                           timeout=BUILD_TIMEOUT_S, stdout=subprocess.DEVNULL)
            timings["configure_s"] = time.monotonic() - t0
            t0 = time.monotonic()
            subprocess.run([cmake, "--build", str(build), "--target", "llama-server", "-j", str(BUILD_JOBS)],
                           check=True, timeout=BUILD_TIMEOUT_S, stdout=subprocess.DEVNULL)
            timings["build_s"] = time.monotonic() - t0
            say(f"llama-server: configured in {timings['configure_s']:.0f} s, compiled in {timings['build_s']:.0f} s")
            built = build / "bin" / "llama-server"
            (target / "bin").mkdir(parents=True)
            shutil.copy2(built, binary)
        marker.write_text(json.dumps({"llama_cpp_python": LLAMA_CPP_PYTHON_VERSION, "cmake_flags": CMAKE_FLAGS,
                                      "timings": {k: round(v, 1) for k, v in timings.items()}}))
    return binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(binary: Path, model: Path, *, port: int, parallel: int, ctx_per_slot: int, batch: int,
                   ubatch: int | None = None, threads: int, alias: str = "model") -> list[str]:
    """The ``llama-server`` argument list: ``parallel`` slots sharing ``parallel x ctx_per_slot`` KV tokens."""
    return [
        str(binary), "--model", str(model), "--alias", alias, "--host", "127.0.0.1", "--port", str(port),
        "--parallel", str(parallel), "--ctx-size", str(parallel * ctx_per_slot),
        "--batch-size", str(batch), "--ubatch-size", str(ubatch or batch),
        "--threads", str(threads), "--threads-batch", str(threads),
        "--no-warmup",  # nothing to warm on a CPU; the benchmark sends its own warm-up requests
        "--cache-reuse", "0", "--no-cache-prompt",  # every request prefills its whole prompt, as the simulator does
        "--log-disable",
    ]


@contextlib.contextmanager
def llama_server(binary: Path, model: Path, *, parallel: int = 4, ctx_per_slot: int = 256, batch: int = 512,
                 ubatch: int | None = None, threads: int = 2, alias: str = "model", log_file: Path | None = None,
                 extra: list[str] | None = None) -> Iterator[str]:
    """Run ``llama-server`` on 127.0.0.1 (a free port) until the block ends; yields its base URL once /health is ok."""
    import httpx

    port = free_port()
    cmd = server_command(binary, model, port=port, parallel=parallel, ctx_per_slot=ctx_per_slot, batch=batch,
                         ubatch=ubatch, threads=threads, alias=alias) + list(extra or [])
    own_log = log_file is None
    if own_log:
        fd, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        os.close(fd)
        log_file = Path(name)
    url = f"http://127.0.0.1:{port}"
    with open(log_file, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {proc.returncode}: {log_file.read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama-server not ready after {SERVER_START_TIMEOUT_S} s: "
                                   f"{log_file.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        if own_log:
            log_file.unlink(missing_ok=True)


# ---------------------------------------------------------------- the model it serves

# A random-weight Llama sized so that one engine step is long enough to time on a 2-core CPU (decode steps of
# a few ms, a prefill of 128 tokens in tens of ms) while a test stays fast: 8 layers of hidden 512, GQA 8/4,
# a 32000-token vocabulary (a Llama-2-sized lm_head). About 58M parameters, 116 MB as f16 GGUF.
CAPACITY_MODEL = dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
                      num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048)


def _byte_chars() -> dict[int, str]:
    """GPT-2's byte-level alphabet: the character each byte is written as in a byte-level BPE vocabulary."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


_BYTE_CHARS = _byte_chars()


def _tokenizer_corpus(vocab_words: list[str], seed: int) -> list[str]:
    """Text whose BPE vocabulary reaches 32000 tokens and holds each of ``vocab_words`` (with its leading space)."""
    import random

    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    filler = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(120_000)]
    lines = [" ".join(vocab_words) for _ in range(400)]  # the bench's words: frequent, so each is one token
    lines += [" ".join(filler[i : i + 20]) for i in range(0, len(filler), 20)]
    return lines


def build_capacity_model(path: Path, *, seed: int = 0, **sizes) -> Path:
    """Write a random Llama (``CAPACITY_MODEL`` sizes) with a 32000-token BPE to ``path``; return its f16 GGUF.

    The tokenizer is trained here (nothing downloaded) so that every word `bench` puts in a synthetic prompt
    is one token: a prompt of --input-tokens N words is N tokens (+ BOS), as the simulator is told. The folder
    keeps config.json, so ``infer_advisor.model_facts.resolve_model(path)`` gives the plan its facts.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from infer_advisor.bench.workload import workload_file
    from infer_advisor.quantize.gguf_backend import write_f16

    cfg = {**CAPACITY_MODEL, **sizes}
    path = Path(path)
    gguf_path = path / "model-f16.gguf"
    if gguf_path.exists() and (path / "config.json").exists():
        return gguf_path
    path.mkdir(parents=True, exist_ok=True)
    words = sorted({w for p in workload_file().profiles["latency"].prompts for w in p.lower().split()})
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    # ASCII bytes only: a random model decoding greedily can repeat one token forever, and a lone byte >= 0x80 is
    # incomplete UTF-8 that llama-server holds back, so a whole answer streamed no chunk (seen at 0.5 req/s). With
    # every token ASCII, every generated token is text the server streams at once, one chunk per token.
    trainer = trainers.BpeTrainer(vocab_size=cfg["vocab_size"], special_tokens=["<s>", "</s>"],
                                  initial_alphabet=[_BYTE_CHARS[b] for b in range(128)], show_progress=False)
    tok.train_from_iterator(_tokenizer_corpus(words, seed), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>")
    fast.save_pretrained(path)
    torch.manual_seed(seed)
    config = LlamaConfig(**{**cfg, "vocab_size": len(fast)}, bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
                         tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # special tokens get logit 0, below the largest of ~32000 random logits: never generated
        model.lm_head.weight[[fast.bos_token_id, fast.eos_token_id]] = 0.0
    model.save_pretrained(path, safe_serialization=True)
    del model
    write_f16(path, gguf_path)
    for f in path.glob("*.safetensors"):  # the GGUF and config.json are all the benchmark and the plan need
        f.unlink()
    return gguf_path
