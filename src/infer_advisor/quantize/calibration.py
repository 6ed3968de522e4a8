"""Calibration text: the built-in set (``data/quantize/calibration.txt``) or a user's .txt / .jsonl file.

    >>> texts = load_calibration(None, num_samples=8)
    >>> len(texts)
    8

A .txt file holds one sample per paragraph (blank-line separated) or, with no blank lines, one per line;
a .jsonl file holds one JSON object per line with a "text" field. The first ``num_samples`` are used.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import DataFileError


def builtin_calibration_path() -> Path:
    from .._paths import shipped

    return shipped("data") / "quantize" / "calibration.txt"


def _txt_samples(text: str) -> list[str]:
    lines = text.splitlines()
    if any(not line.strip() for line in lines):
        paragraphs, current = [], []
        for line in lines:
            if line.strip():
                current.append(line.strip())
            elif current:
                paragraphs.append(" ".join(current))
                current = []
        if current:
            paragraphs.append(" ".join(current))
        return paragraphs
    return [line.strip() for line in lines if line.strip()]


def _jsonl_samples(path: Path, text: str) -> list[str]:
    samples = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFileError(str(path), f"line {number}: invalid JSON ({err.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise DataFileError(str(path), f'line {number}: expected an object with a "text" string field')
        if row["text"].strip():
            samples.append(row["text"].strip())
    return samples


def load_calibration(path: str | Path | None, num_samples: int) -> list[str]:
    """Up to ``num_samples`` calibration texts from ``path`` (default: the built-in set)."""
    file = Path(path) if path is not None else builtin_calibration_path()
    if file.suffix not in (".txt", ".jsonl"):
        raise DataFileError(str(file), "calibration must be a .txt file (one sample per paragraph) or .jsonl ('text' field)")
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataFileError(str(file), "calibration file not found; check the --calibration path") from None
    except (OSError, UnicodeDecodeError) as err:
        raise DataFileError(str(file), f"cannot read as UTF-8 text: {err}") from None
    samples = _jsonl_samples(file, text) if file.suffix == ".jsonl" else _txt_samples(text)
    if not samples:
        raise DataFileError(str(file), "no calibration text found (the file is empty)")
    return samples[:num_samples]
