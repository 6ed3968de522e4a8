"""Read an engine's launch command line into typed settings, and write an edit back into it.

    >>> cmd = parse_command("llama-server -m /models/llama-3.1-8b-instruct-Q4_K_M.gguf -c 32768 -ngl 99 --parallel 4")
    >>> cmd.engine, cmd.settings["max_model_len"], cmd.settings["max_num_seqs"]
    ('llama.cpp', 32768, 4)
    >>> apply_edit(cmd, ["--ctx-size", "16384"])
    'llama-server -m /models/llama-3.1-8b-instruct-Q4_K_M.gguf -ngl 99 --parallel 4 --ctx-size 16384'

The flag tables are data (data/engine_cli.yaml, read from each engine's own argument definitions at the version its
``source`` names): vLLM (``vllm serve``), SGLang (``python -m sglang.launch_server``, ``sglang serve``), TGI
(``text-generation-launcher`` or ``docker run ... ghcr.io/huggingface/text-generation-inference ...``, with ``-e NAME=VALUE``
settings) and llama.cpp (``llama-server``). A command is recognised by the engine's launcher or image; only the words
after it are the engine's own arguments, so ``docker run``'s options are never read as engine flags. Flags the
table does not list are kept as they are and not read.
"""

from __future__ import annotations

import re
import shlex
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import RequestError

MAX_COMMAND_CHARS = 20_000
Setting = Literal[
    "model", "hf_repo", "tp", "pp", "max_model_len", "memory_fraction", "kv_cache_dtype", "kv_cache_dtype_v", "max_num_seqs",
    "max_num_batched_tokens", "dtype", "quantization", "max_loras", "max_lora_rank", "enforce_eager", "enable_lora",
    "cuda_graph_max_bs", "cuda_graphs", "max_input_tokens", "max_batch_total_tokens", "gpu_layers", "flash_attn", "kv_unified",
    "fit", "ubatch", "split_mode",
]
Value = int | float | str | bool
_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_ONOFF = {"on": "on", "off": "off", "auto": "auto", "true": "on", "false": "off", "1": "on", "0": "off", "enabled": "on", "disabled": "off"}
_SUFFIX = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}


class Option(BaseModel):
    model_config = ConfigDict(extra="forbid")

    flags: list[str] = Field(min_length=1)
    setting: Setting
    type: Literal["int", "int_k", "float", "str", "onoff"] = "str"


class Switch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    flags: list[str] = Field(min_length=1)
    setting: Setting


class EngineCli(BaseModel):
    """One engine's launcher and the spellings of its memory-relevant flags (data/engine_cli.yaml)."""

    model_config = ConfigDict(extra="forbid")

    launchers: list[str]
    images: list[str]
    positional_model: bool
    underscores: bool
    options: list[Option]
    switches: list[Switch]
    env: dict[str, Setting]
    memory_fraction_scale: float = Field(default=1.0, gt=0, le=1)
    memory_fraction_scale_source: str | None = None
    prefill_from_input_below: str | None = None
    prefill_from_input_source: str | None = None
    source: str = Field(min_length=8)

    def flag_table(self) -> dict[str, Option | Switch]:
        return {flag: entry for entry in [*self.options, *self.switches] for flag in entry.flags}

    def spellings(self, setting: str) -> set[str]:
        return {flag for entry in [*self.options, *self.switches] if entry.setting == setting for flag in entry.flags}


class CliFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    engines: dict[str, EngineCli]


@cache
def engine_cli(engine: str) -> EngineCli:
    from .._data import load_validated
    from .._paths import shipped

    return load_validated(shipped("data") / "engine_cli.yaml", CliFile).engines[engine]


@cache
def _engines() -> dict[str, EngineCli]:
    from .._data import load_validated
    from .._paths import shipped

    return load_validated(shipped("data") / "engine_cli.yaml", CliFile).engines


class LaunchCommand(BaseModel):
    """A launch command line: the engine, where its own arguments start, and the settings they (and the
    environment words before them) give; a setting the command leaves out is absent."""

    engine: str
    text: str = Field(description="The command as given (line continuations joined).")
    words: list[str]
    start: int = Field(description="Index in words of the engine's first argument.")
    settings: dict[str, Value] = Field(default_factory=dict)
    given: dict[str, str] = Field(default_factory=dict, description="Setting -> the flag or variable that gave it.")
    image_version: str | None = Field(default=None, description="The engine version the container image's tag names (2.2.0, v0.6.4, server-b7200).")


def _split(command: str) -> list[str]:
    if len(command) > MAX_COMMAND_CHARS:
        raise RequestError(f"The command line is longer than {MAX_COMMAND_CHARS:,} characters; pass the engine's launch command only.")
    try:
        return shlex.split(command.replace("\\\r\n", " ").replace("\\\n", " "))
    except ValueError as err:
        raise RequestError(f"Cannot split the command line into words ({err}); check its quotes.") from None


def find_engine(command: str) -> tuple[str, int] | None:
    """(engine, the character offset where its arguments start) when ``command`` launches a known engine."""
    head = command[:2000]
    best: tuple[int, str, int] | None = None
    for name, cli in _engines().items():
        for pattern in cli.launchers:
            m = re.search(pattern, head)
            if m and (best is None or m.start() < best[0]):
                best = (m.start(), name, m.end())
        for image in cli.images:
            m = re.search(rf"(?:^|\s){re.escape(image)}(?::[\w.-]+)?(?=\s|$)", head)
            if m and re.search(r"\b(?:docker|podman|nerdctl)\s+(?:container\s+)?run\b", head[:m.start()]) and (best is None or m.start() < best[0]):
                best = (m.start(), name, m.end())
    return (best[1], best[2]) if best else None


_TAG_VERSION = re.compile(r":(?:v|[a-z]+(?:-[a-z]+)*-)?(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?|b\d{3,5})(?:-[\w.]+)?$")


def _image_version(words: list[str]) -> str | None:
    """The version in the tag of the word before the engine's arguments (an image), if it names one."""
    m = _TAG_VERSION.search(words[-1]) if words else None
    return m.group(1) if m else None


def looks_like_command(text: str) -> bool:
    """True when ``text`` is a launch command of vLLM, SGLang, TGI or llama.cpp rather than a log: it starts with
    the launcher (after ``NAME=value`` words), or with ``docker run`` naming the engine's image; a short text only."""
    if len(text) > MAX_COMMAND_CHARS or _newline_outside_quotes(text.replace("\\\r\n", " ").replace("\\\n", " ").strip()):
        return False
    found = find_engine(text)
    if found is None:
        return False
    lead = text[: found[1]].strip().split()
    return bool(lead) and (lead[0] in ("docker", "podman", "nerdctl", "sudo", "exec", "env", "nohup", "uv", "uvx", *_SHELLS) or _ENV_WORD.match(lead[0]) is not None
                           or lead[0] in ("vllm", "python", "python3", "sglang", "text-generation-launcher") or lead[0].endswith("llama-server"))


def _newline_outside_quotes(text: str) -> bool:
    """A line break a POSIX shell would end the command at (a log has many; a command has them only in quotes)."""
    quote, escaped = "", False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "\n\r":
            return True
    return False


def parse_command(command: str) -> LaunchCommand:
    """The engine and settings of a launch command (see the module docstring); one clear line for what cannot be read."""
    found = find_engine(command)
    if found is None:
        raise RequestError("Not a vLLM, SGLang, TGI or llama.cpp launch command (vllm serve, python -m sglang.launch_server, "
                           "text-generation-launcher, docker run ...text-generation-inference, llama-server).")
    inner = _shell_payload(command)
    if inner is not None:  # sh -c "vllm serve ..." (a container's command): the engine command is the payload
        return parse_command(inner)
    engine, offset = found
    before, after = _split(command[:offset]), _split(command[offset:])
    cmd = LaunchCommand(engine=engine, text=command.replace("\\\r\n", " ").replace("\\\n", " ").strip(), words=before + after,
                        start=len(before))
    cmd.image_version = _image_version(before) if before and not before[-1].startswith("-") and ":" in before[-1] else None
    cli = engine_cli(engine)
    _read_env(cli, before, cmd)
    positional = _read_flags(cli, after, cmd)
    if "model" not in cmd.settings and cli.positional_model and positional:
        cmd.settings["model"], cmd.given["model"] = positional[0], "positional"
    return cmd


_SHELLS = {"sh", "bash", "/bin/sh", "/bin/bash"}


def _shell_payload(command: str) -> str | None:
    """The script of ``sh -c '...'`` / ``bash -c '...'`` (what a Kubernetes or compose command often is), else None."""
    words = command.strip().split(None, 2)
    if len(words) < 3 or words[0] not in _SHELLS or words[1] not in ("-c", "-lc", "-ec"):
        return None
    rest = _split(command)
    return rest[2] if len(rest) >= 3 else None


def _read_env(cli: EngineCli, words: list[str], cmd: LaunchCommand) -> None:
    """``NAME=value`` words before the launcher and docker's ``-e/--env NAME=value``."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("-e", "--env") and i + 1 < len(words):
            word, i = words[i + 1], i + 1
        elif word.startswith("--env="):
            word = word[len("--env="):]
        i += 1
        name, eq, value = word.partition("=")
        if eq and name in cli.env:
            _store(cli, cli.env[name], name, value, cmd)


def _read_flags(cli: EngineCli, words: list[str], cmd: LaunchCommand) -> list[str]:
    table = cli.flag_table()
    positional: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-") or word in ("-", "--"):
            positional.append(word)
            continue
        name, eq, value = word.partition("=")
        if cli.underscores:
            name = "--" + name.lstrip("-").replace("_", "-") if name.startswith("--") else name
        entry = table.get(name)
        if entry is None:
            continue
        if isinstance(entry, Switch):
            cmd.settings[entry.setting], cmd.given[entry.setting] = True, name
            continue
        if not eq:
            if entry.type == "onoff" and (i >= len(words) or words[i].startswith("-")):
                cmd.settings[entry.setting], cmd.given[entry.setting] = "on", name  # older builds: -fa with no value
                continue
            if i >= len(words):
                raise RequestError(f"{name} needs a value.")
            value, i = words[i], i + 1
        _store(cli, entry.setting, name, value, cmd, entry.type)
    return positional


def _store(cli: EngineCli, setting: str, name: str, value: str, cmd: LaunchCommand, kind: str | None = None) -> None:
    if kind is None:  # from the environment: the type of the flag with that setting, or a switch's truth
        kinds = [o.type for o in cli.options if o.setting == setting]
        kind = kinds[0] if kinds else "switch"
    cmd.settings[setting], cmd.given[setting] = convert(name, value, kind), name


def convert(name: str, value: str, kind: str) -> Value:
    """``value`` of flag ``name`` as its type; one clear line when it is not one."""
    text = value.strip()
    try:
        if kind == "int":
            return int(text)
        if kind == "int_k":
            if text.lower() == "auto":  # vLLM's human_readable_int_or_auto (max_model_len): -1, fit to memory
                return -1
            if text[-1:] in _SUFFIX:
                return int(float(text[:-1]) * _SUFFIX[text[-1]])
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "onoff":
            return _ONOFF[text.lower()]
        if kind == "switch":
            return text.lower() in ("1", "true", "on", "yes", "enabled")
    except (ValueError, KeyError, IndexError):
        expected = {"int": "an integer", "int_k": "an integer", "float": "a number", "onoff": "on, off or auto"}[kind]
        raise RequestError(f"{name} {value[:40]!r} is not {expected}.") from None
    return text


def edit_pairs(engine: str, argv: list[str]) -> list[tuple[str, str | None]]:
    """An edit's argv as (flag, value) pairs by the engine's table (a switch has no value)."""
    table = engine_cli(engine).flag_table()
    pairs, i = [], 0
    while i < len(argv):
        flag = argv[i]
        entry = table.get(flag)
        takes_value = not isinstance(entry, Switch) and i + 1 < len(argv) and not (argv[i + 1].startswith("--"))
        pairs.append((flag, argv[i + 1] if takes_value else None))
        i += 2 if takes_value else 1
    return pairs


def apply_edit(cmd: LaunchCommand, argv: list[str]) -> str:
    """The command with the edit's flags replacing every spelling of the same setting among the engine's arguments
    (``-c 8192`` is replaced by ``--ctx-size 4096``), or appended; quoted for a POSIX shell word by word (the project's shell escaper, untrusted.sh_join)."""
    cli = engine_cli(cmd.engine)
    table = cli.flag_table()
    pairs = edit_pairs(cmd.engine, argv)
    drop: set[str] = set()
    for flag, _ in pairs:
        entry = table.get(flag)
        drop |= cli.spellings(entry.setting) if entry is not None else {flag}
    head, tail = cmd.words[: cmd.start], cmd.words[cmd.start:]
    out, i = [], 0
    while i < len(tail):
        word = tail[i]
        name = word.split("=", 1)[0]
        if cli.underscores and name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        if name in drop:
            entry = table.get(name)
            takes_value = "=" not in word and not isinstance(entry, Switch) and i + 1 < len(tail)
            if entry is not None and entry.type == "onoff" and takes_value and tail[i + 1].lower() not in _ONOFF:
                takes_value = False
            i += 2 if takes_value else 1
            continue
        out.append(word)
        i += 1
    added = [w for flag, value in pairs for w in ([flag] if value is None else [flag, value])]
    from ..untrusted import sh_join

    return sh_join(head + out + added)
