"""The work every quantization method shares: model resolution, output directory, sizes, check, summary."""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ModelConfigError, ModelNotFoundError, RequestError
from .methods import MethodSpec

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def weight_bytes(folder: Path) -> int:
    """Bytes of the weight files (safetensors, bin, gguf, pt) under ``folder``."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)


def has_weights(folder: Path) -> bool:
    """Does ``folder`` hold any weight file (safetensors, bin, pt, gguf) at its top level?"""
    try:
        return any(p.suffix in _WEIGHT_SUFFIXES and p.is_file() for p in folder.iterdir())
    except OSError:
        return False


def _path_kind(path: Path, text: str) -> str | None:
    """'dir', 'other' or None (absent); a name the OS refuses to look up is a one-line error."""
    try:
        return "dir" if path.is_dir() else ("other" if path.exists() else None)
    except OSError as err:
        raise ModelNotFoundError(text[:80] + ("..." if len(text) > 80 else ""), detail=err.strerror or "unreadable path") from None


def resolve_source(model: str | Path) -> Path:
    """A local model directory for ``model``: the directory itself, or a Hub snapshot when online."""
    from .. import constants

    text = str(model)
    path = Path(text).expanduser()
    kind = _path_kind(path, text)
    if kind == "dir":
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(text, detail="the directory has no config.json")
        if not has_weights(path):
            raise ModelNotFoundError(
                text, detail="the directory has a config.json but no weight files (*.safetensors, *.bin, *.pt, *.pth)"
            )
        return path.resolve()
    if kind == "other":
        raise ModelNotFoundError(text, detail="not a directory")
    if not _HUB_ID.fullmatch(text) or text.startswith((".", "/", "~")):
        raise ModelNotFoundError(text, detail="no such directory")
    if constants.offline():
        raise ModelNotFoundError(
            text, detail="not a local directory, and INFER_ADVISOR_OFFLINE/HF_HUB_OFFLINE forbid the Hub"
        )
    from .hub_download import download_model

    return download_model(text)


def _read_config(source: Path) -> dict:
    import json

    try:
        config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ModelConfigError(str(source / "config.json"), f"unreadable: {err}") from None
    return config.get("text_config") or config


def linear_input_sizes(source: Path) -> dict[str, int]:
    """Input sizes of the decoder's Linear layers, by config field (what group quantization must divide)."""
    cfg = _read_config(source)
    hidden = cfg.get("hidden_size")
    if not isinstance(hidden, int):
        raise ModelConfigError(str(source / "config.json"), "no integer hidden_size")
    heads = cfg.get("num_attention_heads") or 0
    head_dim = cfg.get("head_dim") or (hidden // heads if heads else hidden)
    sizes = {"hidden_size (q/k/v, gate/up)": hidden, "num_attention_heads x head_dim (o_proj)": heads * head_dim}
    for key in ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size"):
        if isinstance(cfg.get(key), int) and cfg[key] > 0:
            sizes[f"{key} (down_proj)"] = cfg[key]
    return {k: v for k, v in sizes.items() if v}


def validate_group_size(source: Path, spec: MethodSpec) -> None:
    """Raise :class:`RequestError` unless the group size divides every quantized layer's input size."""
    if spec.group_size is None:
        return
    sizes = linear_input_sizes(source)
    bad = {k: v for k, v in sizes.items() if v % spec.group_size}
    if bad:
        name, size = next(iter(bad.items()))
        common = math.gcd(*sizes.values())
        fits = [g for g in (128, 64, 32) if common % g == 0]
        hint = f"use --group-size {fits[0]}" if fits else f"use a divisor of {common}"
        raise RequestError(
            f"--group-size {spec.group_size} does not divide {name} = {size} of {source.name}; {hint}."
        )


def copy_side_files(source: Path, target: Path) -> None:
    """Copy tokenizer and generation files the backend did not write."""
    from .hub_download import SIDE_FILES

    for name in SIDE_FILES:
        if (source / name).is_file() and not (target / name).exists():
            shutil.copy2(source / name, target / name)


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to stdout (fd 1 too: llm-compressor logs there) to stderr, so --json stays clean."""
    import contextlib

    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):  # no real fd 1 (embedded interpreters): Python-level redirection only
        with contextlib.redirect_stdout(sys.stderr):
            yield
        return
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        for stream in (sys.stdout, sys.__stdout__):
            with contextlib.suppress(Exception):
                stream.flush()
        os.dup2(saved, 1)
        os.close(saved)


def reporter(enabled: bool) -> Callable[[str], None]:
    """A progress callback printing timed lines on stderr with rich (a no-op when disabled)."""
    if not enabled:
        return lambda message: None
    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=True, highlight=False)
    start = time.monotonic()

    def report(message: str) -> None:
        console.print(f"[dim]{time.monotonic() - start:7.1f}s[/dim] {escape(message)}", soft_wrap=True)

    return report


def check_output(
    module, out: Path, source: Path, spec: MethodSpec, eval_texts: list[str] | None, report: Callable[[str], None]
):
    """Run the backend's ``check`` (if it has one) and, with ``eval_texts``, the source's perplexity."""
    from .results import QuickCheck

    check = getattr(module, "check", None)
    if check is None:
        return QuickCheck(status="skipped", loaded=False, detail=f"the {spec.backend} backend has no reload check")
    report(f"checking the output with its runtime ({spec.backend})")
    try:
        result = check(out, spec, prompt=CHECK_PROMPT, max_new_tokens=CHECK_NEW_TOKENS, eval_texts=eval_texts)
    except Exception as err:  # the output exists; a runtime that cannot load it is reported, not raised
        result = QuickCheck(status="failed", loaded=False, detail=f"{type(err).__name__}: {err}")
    if eval_texts and result.perplexity_after is not None:
        from ._torch_eval import source_perplexity

        report("measuring the source model's perplexity (transformers)")
        result.perplexity_before = source_perplexity(source, eval_texts)
    return result


# The reload check generates this many tokens greedily from this prompt: enough to prove the weights run.
CHECK_PROMPT = "The quick brown fox"
CHECK_NEW_TOKENS = 8
# Perplexity uses at most this many calibration samples (keeps `--eval` to seconds on CPU for small models).
EVAL_SAMPLES = 16


def log_summary(line: str, enabled: bool) -> None:
    if enabled:
        print(line, file=sys.stderr)
