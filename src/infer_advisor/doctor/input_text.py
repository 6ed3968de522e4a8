"""What `infer-advisor doctor` reads: a start-up log, or the launch command that is about to be run.

    >>> log, flags = log_from_command("llama-server -m llama-3.1-8b-Q4_K_M.gguf -c 32768 -np 4 -ngl 99")
    >>> log.engine, log.model, log.max_model_len, log.max_num_seqs, flags
    ('llama.cpp', 'llama-3.1-8b-Q4_K_M.gguf', 8192, 4, {'ctx-slots': 4, 'gpu-layers': 99})

A command of vLLM, SGLang, TGI or llama.cpp is read by :mod:`infer_advisor.engines.command_line` (the engines' own
flag spellings, data/engine_cli.yaml); here its settings become the setup the memory ledger takes: llama.cpp's ``-c``
over its slots, TGI's ``--cuda-memory-fraction`` times its wiggle room and its context sized from memory when
``--max-total-tokens`` is left out. Flags the memory ledger does not depend on are ignored.
"""

from __future__ import annotations

import re

from ..engines.startup_log import FREE_ON_DEVICE, StartupLog

# the same settings as a log prints them (V1 "non-default args: {...}", V0 "Namespace(...)" / config lines)
_LOG_EXTRAS = {
    "enforce-eager": re.compile(r"(?<!')enforce_eager=True(?!')|'enforce_eager': True"),
    "enable-lora": re.compile(r"enable_lora=True|'enable_lora': True|lora_config=LoRAConfig"),
    "max-loras": re.compile(r"\bmax_loras['\"]?[=:]\s*(\d+)"),
    "max-lora-rank": re.compile(r"\bmax_lora_rank['\"]?[=:]\s*(\d+)"),
}
_INT_EXTRAS = {"max-loras", "max-lora-rank"}


# vLLM 0.11+ gpu_worker: "Free memory on device (%s/%s GiB) on startup. ..." (info line and error alike)
_FREE_AT_START = re.compile(FREE_ON_DEVICE + r"([\d.]+)/([\d.]+) ?GiB\) on startup")  # docfix19 (sf313): " ?GiB"


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
    """True when ``text`` is a launch command of vLLM, SGLang, TGI or llama.cpp rather than a log."""
    from ..engines.command_line import looks_like_command as _looks

    return _looks(text)


# engine setting -> StartupLog field (the rest go to the extras, or are read below)
_LOG_FIELDS = {"model": "model", "tp": "tp", "pp": "pp", "max_model_len": "max_model_len", "memory_fraction": "gpu_memory_utilization",
               "kv_cache_dtype": "kv_cache_dtype", "max_num_seqs": "max_num_seqs", "max_num_batched_tokens": "max_num_batched_tokens",
               "dtype": "dtype", "quantization": "quantization"}
_EXTRAS = {"enforce_eager": "enforce-eager", "enable_lora": "enable-lora", "max_loras": "max-loras", "max_lora_rank": "max-lora-rank"}
# a GGUF file or Hub tag names its type: ...-Q4_K_M.gguf, repo:Q8_0 (llama.cpp's own ggml type names)
_GGUF_TYPE = re.compile(r"(?:^|[-_.:/])(Q4_K_M|Q4_0|Q8_0|F16|BF16)(?=[-_.]|\.gguf|$)", re.IGNORECASE)


def log_from_command(command: str) -> tuple[StartupLog, dict[str, int | bool | str]]:
    """The setup a launch command asks for, as a :class:`StartupLog` with no measured figures, and the settings the
    ledger needs beyond it (``enforce-eager``, ``enable-lora``, ``max-loras``, ``max-lora-rank``; ``context-from-memory``
    where the engine sizes the context itself; ``ctx-slots`` where llama.cpp divides ``-c`` over its slots;
    ``note-*``: what the ledger reads differently from the engine)."""
    from ..engines.command_line import engine_cli, parse_command
    from ..errors import RequestError

    cmd = parse_command(command)
    settings = dict(cmd.settings)
    log = StartupLog(engine=cmd.engine, command=cmd.text[:2000], engine_version=cmd.image_version)
    extras: dict[str, int | bool | str] = {}
    if cmd.engine == "llama.cpp":
        _llamacpp_settings(settings, extras)
    if cmd.engine == "tgi":
        _tgi_settings(settings, extras, cmd.image_version)
    if cmd.engine == "vllm" and settings.get("max_model_len") == -1:  # --max-model-len auto / -1: the longest that fits
        del settings["max_model_len"]
        extras["context-from-memory"] = True
        extras["note-auto"] = "--max-model-len auto: vLLM takes the longest context the KV cache holds (up to the model's), so any KV pool starts"
    for setting, value in settings.items():
        if setting in _LOG_FIELDS:
            setattr(log, _LOG_FIELDS[setting], value)
        elif setting in _EXTRAS:
            extras[_EXTRAS[setting]] = value
    scale = engine_cli(cmd.engine).memory_fraction_scale
    if scale != 1.0:  # TGI: the KV budget is the fraction x its wiggle room (data/engine_cli.yaml)
        log.gpu_memory_utilization = round((log.gpu_memory_utilization or 1.0) * scale, 4)
    if log.model is None:
        flag = {"vllm": "vllm serve MODEL or --model", "sglang": "--model-path", "tgi": "--model-id", "llama.cpp": "-m FILE.gguf or -hf REPO"}[cmd.engine]
        raise RequestError(f"The {cmd.engine} command names no model ({flag}).")
    return log, extras


def _llamacpp_settings(settings: dict, extras: dict) -> None:
    """llama.cpp: ``-c`` is the KV cells of all slots together (0 or unset: the model's n_ctx_train); with ``-np N``
    each slot gets ``-c / N`` (padded up to 256), with ``--kv-unified`` or ``-np`` auto (4 slots, unified) one request
    may use them all (llama-context.cpp, tools/server/server.cpp)."""
    model = settings.pop("model", None) or settings.pop("hf_repo", None)
    if model:
        settings["model"] = model
        m = _GGUF_TYPE.search(str(model).rsplit("/", 1)[-1])
        if m and "quantization" not in settings:
            settings["quantization"] = "gguf-" + m.group(1).lower()
    ctx = settings.pop("max_model_len", None) or None
    slots = settings.pop("max_num_seqs", -1)
    unified = settings.pop("kv_unified", False) or slots < 0
    if ctx is not None and not unified and slots > 1:
        per_seq = _pad(_pad(ctx) // slots)
        settings["max_model_len"], settings["max_num_seqs"], extras["ctx-slots"] = per_seq, slots, slots
    else:
        settings["max_num_seqs"] = 1  # memory: one pool of -c cells (unified, or one slot)
        if ctx is not None:
            settings["max_model_len"] = _pad(ctx)
        else:
            extras["note-ctx"] = "no -c (or -c 0): the context is the model's n_ctx_train"
    k, v = str(settings.pop("kv_cache_dtype", "f16")).lower(), str(settings.pop("kv_cache_dtype_v", "f16")).lower()
    if k == v == "q8_0":
        settings["kv_cache_dtype"] = "fp8"  # the memory profile's 8-bit KV for llama.cpp is q8_0 (engine_memory.yaml kv_8bit_dtype)
    elif {k, v} - {"f16", "bf16"}:
        extras["note-kv"] = f"KV cache types K {k}, V {v}: the ledger counts q8_0 only where both are q8_0, else f16 (an upper bound)"
    layers = settings.pop("gpu_layers", None)
    if layers is not None and str(layers).lstrip("-").isdigit() and int(layers) >= 0:
        extras["gpu-layers"] = int(layers)
    flash = str(settings.pop("flash_attn", "auto"))
    settings.pop("ubatch", None)  # the micro-batch sizes the compute buffer, which the memory model takes from its profile
    split = str(settings.pop("split_mode", "layer"))
    # what llama_init_from_model refuses before allocating (docfix13; doctor/startup_refusals.py): -ctv quantized with -fa off,
    # -sm tensor with -fa off, -np above LLAMA_MAX_SEQ (256)
    refusal = 0 if (v not in _FULL and flash == "off") else 8 if (split == "tensor" and flash == "off") else 6 if slots > 256 else None
    if refusal is not None:
        extras["refusal"] = refusal
    unset = [flag for flag, value in (("-ngl", layers), ("-c", ctx)) if value is None]
    if settings.pop("fit", "on") != "off" and unset:
        extras["note-fit"] = (f"{' and '.join(unset)} not given: builds with --fit (on by default since ggml-org/llama.cpp PR 16653, late 2025) "
                              "lower an unset -ngl or -c to fit the free memory, so such a build starts where this ledger, which counts every "
                              "layer on the GPU at the full context, says it does not (with layers on the CPU: slower)")


_FULL = ("f16", "bf16", "f32")


def _pad(n: int) -> int:
    """GGML_PAD(n, 256): llama.cpp rounds n_ctx and n_ctx_seq up to 256 cells."""
    return -(-n // 256) * 256


def _tgi_settings(settings: dict, extras: dict, version: str | None) -> None:
    """TGI: without --max-total-tokens the launcher takes min(KV tokens, the model's length) after warm-up, so any KV
    pool starts; --cuda-graphs 0 turns CUDA graphs off; before 2.4.1 an unset --max-batch-prefill-tokens is
    max_input_tokens + 50 (launcher/src/main.rs, flash_causal_lm.warmup; data/engine_cli.yaml)."""
    from ..engines.command_line import engine_cli
    from ..engines.versions import version_key

    below = engine_cli("tgi").prefill_from_input_below
    given_input = settings.get("max_input_tokens")
    if (given_input is not None and "max_num_batched_tokens" not in settings and version and below
            and version_key(version) < version_key(below)):
        settings["max_num_batched_tokens"] = given_input + 50
    if "max_model_len" not in settings:
        extras["context-from-memory"] = True
    graphs = str(settings.pop("cuda_graphs", "")).replace(" ", "")
    if graphs and all(g in ("", "0") for g in graphs.split(",")):
        settings["enforce_eager"] = True
    given_input = settings.pop("max_input_tokens", None)
    if given_input is not None:
        extras["max-input-tokens"] = given_input
    settings.pop("max_batch_total_tokens", None)


def apply_edit(command: str, argv: list[str]) -> str:
    """``command`` with the edit's flags replacing every spelling of the same setting, or appended; quoted for a POSIX
    shell word by word (shlex), as every emitted command is."""
    from ..engines.command_line import apply_edit as _apply, parse_command

    return _apply(parse_command(command), argv)
