"""Calibration files, whatever they calibrate: one header, one loader, one check that a file fits the plan.

For calibration files on disk (tests/estimate/test_memory_calibration.py writes and loads real ones)::

    cals = load_calibrations([Path("h100-vllm-memory.json"), Path("h200-transformers.json")])
    cals.memory[0].header.engine, [str(p) for p, _ in cals.speed]
    check_applies(cals.memory[0].header, path=..., engine="vllm", engine_version="0.19.0", gpu="H100-80GB", mode="refuse")

Every calibration file is JSON with a ``kind`` (``memory`` from ``calibrate --from-log``, ``speed`` from
``calibrate``; a file without ``kind`` is a speed calibration written before the field existed) and the shared
:class:`CalibrationHeader` fields: which engine, engine version, GPU and TP size it was made on, when, and from
what. Files are validated on load: numbers must be finite, positive where they are sizes and inside plausible
ranges (each model's ``Field`` bounds); a bad file is one :class:`~infer_advisor.errors.DataFileError` line.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

CalibrationKind = Literal["memory", "speed"]


class CalibrationHeader(BaseModel):
    """What every calibration says about where it was made (the mismatch check reads only this)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)

    kind: CalibrationKind
    engine: str = Field(min_length=1, description="Engine measured (vllm, sglang, llama.cpp, transformers, ...).")
    engine_version: str | None = Field(default=None, description="Engine version measured (None: not recorded).")
    gpu: str = Field(min_length=1, description="GPU measured (catalog name, or the name NVML reported).")
    tp: int = Field(default=1, ge=1, le=1024, description="GPUs one model instance spanned (tensor x pipeline parallel).")
    created: str = Field(description="When the file was written (ISO 8601, UTC).")
    source: str = Field(min_length=1, description="What it was made from: the log or result files.")

    def setup(self) -> str:
        version = f" {self.engine_version}" if self.engine_version else ""
        return f"{self.engine}{version} on {self.gpu}" + (f" (TP {self.tp})" if self.tp > 1 else "")


def version_key(version: str | None) -> str | None:
    """A version as compared: 'v0.19.0' and '0.19.0' are one version (vLLM logs and tags write both)."""
    if not version:
        return version
    text = version.strip()
    return text[1:] if text[:1] in ("v", "V") and text[1:2].isdigit() else text


def check_applies(
    header: CalibrationHeader, *, path: Path | str, engine: str, engine_version: str | None, gpu: str | None, mode: str
) -> str | None:
    """Refuse (``mode='refuse'``) or warn (``'warn'``) when ``header`` was made for another engine, version or GPU.

    Returns the warning text (``None`` when the file fits). The TP size is not a mismatch: a memory calibration
    applies its TP-specific figures only to layouts of its own TP size.
    """
    from ..errors import CalibrationMismatchError
    from ..hardware.catalog import normalize

    wrong = header.engine != engine
    if not wrong and header.engine_version and engine_version and version_key(header.engine_version) != version_key(engine_version):
        wrong = True
    if not wrong and gpu is not None and normalize(header.gpu) != normalize(gpu):
        wrong = True
    if not wrong:
        return None
    plan_for = f"{engine}{' ' + engine_version if engine_version else ''} on {gpu or 'CPU'}"
    err = CalibrationMismatchError(str(path), header.setup(), plan_for)
    if mode == "refuse":
        raise err
    if header.engine != engine and header.kind == "memory":
        return f"calibration {path} was made for {header.setup()}, the plan is for {plan_for}: another engine's memory figures are not applied."
    return f"calibration {path} was made for {header.setup()} and is applied to {plan_for} (--calibration-mismatch warn)."


def reject_non_finite(raw: Any, where: str = "") -> str | None:
    """The first non-finite number anywhere in a parsed JSON document (json accepts NaN and Infinity), else None."""
    if isinstance(raw, float) and not math.isfinite(raw):
        return f"{where or 'value'}: {raw} is not a finite number"
    if isinstance(raw, dict):
        for key, value in raw.items():
            problem = reject_non_finite(value, f"{where}.{key}" if where else str(key))
            if problem:
                return problem
    if isinstance(raw, list):
        for i, value in enumerate(raw):
            problem = reject_non_finite(value, f"{where}[{i}]")
            if problem:
                return problem
    return None


def calibration_kind(path: Path) -> str:
    from ..errors import DataFileError

    if not path.is_file():
        raise DataFileError(str(path), "calibration file not found; write one with `infer-advisor calibrate`")
    from ..bounded_read import read_text_bounded

    try:
        raw = json.loads(read_text_bounded(path, "data"))
    except UnicodeDecodeError as err:
        raise DataFileError(str(path), f"cannot read: {err}") from None
    except json.JSONDecodeError as err:
        raise DataFileError(str(path), f"not a calibration file: invalid JSON at line {err.lineno}: {err.msg}") from None
    except RecursionError:
        raise DataFileError(str(path), "not a calibration file: JSON nested too deeply") from None
    except ValueError as err:  # e.g. an integer literal too long to convert
        raise DataFileError(str(path), f"not a calibration file: {str(err).splitlines()[0][:120]}") from None
    if not isinstance(raw, dict):
        raise DataFileError(str(path), "not a calibration file: the JSON is not an object")
    problem = reject_non_finite(raw)
    if problem:
        raise DataFileError(str(path), problem)
    kind = raw.get("kind", "speed")
    if kind not in ("memory", "speed"):
        raise DataFileError(str(path), f"kind: '{kind}' is not a calibration kind (memory, speed)")
    return kind


def is_calibration_file(path: Path) -> bool:
    """Does ``path`` hold a calibration JSON infer-advisor wrote (a speed or a memory calibration)? Only those may be
    replaced by ``calibrate --force`` (see infer_advisor/_output.py)."""
    from ..bounded_read import read_bounded
    from ..errors import DataFileError

    try:  # bounded, regular files only: a FIFO or /dev/zero given as --out with --force is not ours, never a hang
        raw = json.loads(read_bounded(path, "data").decode("utf-8"))
    except (DataFileError, OSError, ValueError, RecursionError):
        return False
    if not isinstance(raw, dict):
        return False
    if raw.get("kind") == "memory":
        return {"schema_version", "engine", "gpu", "created", "source"} <= raw.keys()
    return raw.get("kind", "speed") == "speed" and {"schema_version", "engine", "points", "command", "created_at"} <= raw.keys()


def write_calibration(path: Path, cal: BaseModel, *, force: bool = False) -> Path:
    """Write a calibration as JSON through the shared output writer: an existing file is replaced only with ``force``
    and only if it is a calibration (:func:`is_calibration_file`); of two concurrent writers one wins."""
    from .._output import write_file

    return write_file(path, (cal.model_dump_json(indent=2) + "\n").encode(), force=force, ours=is_calibration_file)


def validate(path: Path, model: type[BaseModel]) -> Any:
    """Validate ``path`` as ``model`` with one-line errors (finite numbers, the model's bounds)."""
    from .._data import format_validation_error, read_structured
    from ..errors import DataFileError

    raw = read_structured(path)
    problem = reject_non_finite(raw)
    if problem:
        raise DataFileError(str(path), problem)
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        raise DataFileError(str(path), format_validation_error(err)) from None
