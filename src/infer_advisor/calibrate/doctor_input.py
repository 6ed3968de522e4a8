"""What `infer-advisor doctor` reads: a start-up log, or the vLLM command line that is about to be run.

    >>> log_from_command("vllm serve meta-llama/Llama-3.1-8B --max-model-len 32768 --gpu-memory-utilization 0.9")
    StartupLog(engine='vllm', model='meta-llama/Llama-3.1-8B', max_model_len=32768, gpu_memory_utilization=0.9, ...)

A command is recognised by its first words (``vllm serve``, ``python -m vllm.entrypoints...``); its flags are read
as vLLM's own argument parser spells them (``--max-model-len`` / ``--max_model_len``, ``--flag value`` /
``--flag=value``; ``-tp`` / ``-pp`` short forms). Flags the memory ledger does not depend on are ignored.
"""

from __future__ import annotations

import re
import shlex

from .startup_log import StartupLog

MAX_COMMAND_CHARS = 20_000
_COMMAND_START = re.compile(r"^\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:vllm\s+serve\b|python3?\s+-m\s+vllm\.entrypoints\.|python3?\s+-m\s+sglang\.launch_server\b|sglang\s+serve\b)")
_SGLANG_START = re.compile(r"sglang\.launch_server\b|sglang\s+serve\b")

# vLLM flag (dashes) -> (StartupLog field, converter)
_FLAGS: dict[str, tuple[str, type]] = {
    "model": ("model", str), "tensor-parallel-size": ("tp", int), "tp": ("tp", int),
    "pipeline-parallel-size": ("pp", int), "pp": ("pp", int), "max-model-len": ("max_model_len", int),
    "gpu-memory-utilization": ("gpu_memory_utilization", float), "kv-cache-dtype": ("kv_cache_dtype", str),
    "max-num-seqs": ("max_num_seqs", int), "max-num-batched-tokens": ("max_num_batched_tokens", int),
    "dtype": ("dtype", str), "quantization": ("quantization", str), "q": ("quantization", str),
}
# SGLang flag (server_args.py) -> StartupLog field, converter
_SGLANG_FLAGS: dict[str, tuple[str, type]] = {
    "model-path": ("model", str), "model": ("model", str), "tp": ("tp", int), "tp-size": ("tp", int), "pp-size": ("pp", int),
    "context-length": ("max_model_len", int), "mem-fraction-static": ("gpu_memory_utilization", float),
    "kv-cache-dtype": ("kv_cache_dtype", str), "max-running-requests": ("max_num_seqs", int),
    "chunked-prefill-size": ("max_num_batched_tokens", int), "dtype": ("dtype", str), "quantization": ("quantization", str),
}
_BOOL_FLAGS = {"enforce-eager", "enable-lora", "disable-cuda-graph"}
_INT_EXTRAS = {"max-loras", "max-lora-rank"}  # read into the extras, not the StartupLog
# the same settings as a log prints them (V1 "non-default args: {...}", V0 "Namespace(...)" / config lines)
_LOG_EXTRAS = {
    "enforce-eager": re.compile(r"(?<!')enforce_eager=True(?!')|'enforce_eager': True"),
    "enable-lora": re.compile(r"enable_lora=True|'enable_lora': True|lora_config=LoRAConfig"),
    "max-loras": re.compile(r"\bmax_loras['\"]?[=:]\s*(\d+)"),
    "max-lora-rank": re.compile(r"\bmax_lora_rank['\"]?[=:]\s*(\d+)"),
}


# vLLM 0.11+ gpu_worker: "Free memory on device (%s/%s GiB) on startup. ..." (info line and error alike)
_FREE_AT_START = re.compile(r"Free memory on device \(([\d.]+)/([\d.]+) GiB\) on startup")


def extras_from_log(text: str) -> dict[str, float | bool]:
    """Settings the memory ledger needs beyond the StartupLog's: eager mode, LoRA slots, and the memory free on the
    device when the engine started (``free-at-start`` / ``total-at-start``, bytes), as the log printed them."""
    out: dict[str, float | bool] = {}
    for name, pattern in _LOG_EXTRAS.items():
        m = pattern.search(text)
        if m:
            out[name] = int(m.group(1)) if name in _INT_EXTRAS else True
    m = _FREE_AT_START.search(text)
    if m:
        out["free-at-start"], out["total-at-start"] = float(m.group(1)) * 2**30, float(m.group(2)) * 2**30
    return out


def looks_like_command(text: str) -> bool:
    """True when ``text`` is a vLLM command line rather than a log."""
    return bool(_COMMAND_START.match(text[:500]))


def log_from_command(command: str) -> tuple[StartupLog, dict[str, int | bool]]:
    """The setup a vLLM command line asks for, as a :class:`StartupLog` with no measured figures, and the settings
    the ledger needs beyond it (``enforce-eager``, ``enable-lora``, ``max-loras``, ``max-lora-rank``)."""
    from ..errors import RequestError

    if len(command) > MAX_COMMAND_CHARS:
        raise RequestError(f"The command line is longer than {MAX_COMMAND_CHARS:,} characters; pass the vLLM command only.")
    try:
        words = shlex.split(command.replace("\\\n", " "))
    except ValueError as err:
        raise RequestError(f"Cannot split the command line into words ({err}); check its quotes.") from None
    engine = "sglang" if _SGLANG_START.search(command[:500]) else "vllm"
    log = StartupLog(engine=engine, command=command.strip()[:2000])
    flags: dict[str, int | bool] = {}
    positional = _read_flags(words, log, flags, _SGLANG_FLAGS if engine == "sglang" else _FLAGS)
    if flags.pop("disable-cuda-graph", False):
        flags["enforce-eager"] = True
    if log.model is None and positional:
        log.model = positional[0]
    if log.model is None:
        raise RequestError("The command names no model (vllm serve MODEL, --model MODEL, or SGLang's --model-path MODEL).")
    return log, flags


def _read_flags(words: list[str], log: StartupLog, flags: dict[str, int | bool], table: dict[str, tuple[str, type]]) -> list[str]:
    from ..errors import RequestError

    positional: list[str] = []
    start = words.index("serve") + 1 if "serve" in words else 0
    i = start
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-"):
            if start:  # after `vllm serve`: the model
                positional.append(word)
            continue
        name, _, value = word.lstrip("-").partition("=")
        name = name.replace("_", "-")
        if name in _BOOL_FLAGS:
            flags[name] = True
            continue
        if name not in table and name not in _INT_EXTRAS:
            continue
        if not value:
            if i >= len(words):
                raise RequestError(f"--{name} needs a value.")
            value, i = words[i], i + 1
        field, convert = table.get(name, (None, int))
        try:
            if field is None:
                flags[name] = convert(value)
            else:
                setattr(log, field, convert(value))
        except ValueError:
            raise RequestError(f"--{name} {value!r} is not a {convert.__name__}.") from None
    return positional


def apply_edit(command: str, argv: list[str]) -> str:
    """``command`` with the edit's flags replacing the same flags (``--flag value`` or ``--flag=value``), or appended;
    quoted for a POSIX shell word by word (shlex), as every emitted command is."""
    words = shlex.split(command.replace("\\\n", " "))
    flag = argv[0]
    names = {flag, flag.replace("-", "_").replace("__", "--", 1)}
    out, i = [], 0
    while i < len(words):
        name = words[i].split("=", 1)[0]
        if name in names:
            i += 1 if ("=" in words[i] or len(argv) == 1) else 2
            continue
        out.append(words[i])
        i += 1
    return shlex.join(out + list(argv))
