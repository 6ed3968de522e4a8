"""Calibration data the estimates read: a fitted speed profile (:class:`Calibration`, kind ``speed``) and a memory
calibration from an engine's start-up log (:class:`MemoryCalibration`, kind ``memory``), with their loaders.

The fitting that writes them lives in the calibrate stage (``calibrate/speed.py``, ``calibrate/memory.py``); the
estimate and plan stages only read the typed files (pydantic only, no fitting code on the plan path).
The shared header, applicability check and file kinds are in ``estimate/calibration_file.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from ..units import GIB
from .calibration_file import CalibrationHeader, calibration_kind

SCHEMA_VERSION = 2


class CalibrationPoint(BaseModel):
    """One measured batch size of one model."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)

    model: str = Field(description="Catalog name or path of the model measured.")
    batch: int = Field(gt=0, description="Sequences decoded together (bench concurrency).")
    input_tokens: int = Field(gt=0)
    output_tokens: int = Field(gt=0)
    ttft_s: float = Field(gt=0, description="Measured time to first token (prefill of the batch + sampling).")
    tpot_s: float = Field(gt=0, description="Measured time per decode step (median).")
    peak_memory_bytes: int | None = Field(default=None, description="Measured peak device memory, if recorded.")
    origin: str = Field(description="Which file and tool measured it.")
    dtype: str | None = Field(default=None, description="Weights dtype of this point (default: the calibration's).")
    mode: Literal["static", "closed_loop"] = Field(
        default="static", description="static: all `batch` requests start together; closed_loop: `batch` clients back to back (bench)."
    )
    tp: int = Field(default=1, ge=1, le=64, description="Tensor-parallel GPUs the model ran on.")


class Calibration(BaseModel):
    """A fitted speed profile: what `infer-advisor calibrate --out FILE` writes and `--calibration FILE` reads.

    Bounds are plausibility limits (a file outside them is refused on load, see estimate/calibration_file.py):
    bandwidth up to 1 PB/s, compute up to 1 EFLOP/s, efficiencies from 0.1% to 100%, overheads under 10 s.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)

    schema_version: Literal[2] = SCHEMA_VERSION
    kind: Literal["speed"] = Field(default="speed", description="Calibration kind (shared header, estimate/calibration_file.py).")
    engine: str = Field(min_length=1)
    engine_version: str | None = Field(default=None, description="Engine version measured (shared header).")
    tp: int = Field(default=1, ge=1, le=1024, description="GPUs per model instance measured (shared header).")
    quantization: str
    dtype: str
    gpu: str = Field(min_length=1, description="GPU the points were measured on (catalog name), or 'cpu'.")
    coefficients: dict[str, float] = Field(
        min_length=1, description="Fitted step-time coefficients of the engine (names as in data/speed/engines.yaml)."
    )
    max_num_seqs: int | None = Field(default=None, gt=0, description="Sequences the engine scheduled at once when measured (slots).")
    fit_median_abs_error: dict[str, float] = Field(default_factory=dict, description="Median |relative error| of the fit, per metric.")
    points: list[CalibrationPoint] = Field(min_length=1)
    command: str = Field(description="The command that produced the points and this fit.")
    created_at: str

    @field_validator("coefficients")
    @classmethod
    def _known(cls, value: dict[str, float]) -> dict[str, float]:
        from .fit import BOUNDS

        for name, v in value.items():
            if name not in BOUNDS:
                raise ValueError(f"unknown coefficient {name!r} (known: {', '.join(BOUNDS)})")
            lo, hi = BOUNDS[name]
            if not (lo <= v <= hi):
                raise ValueError(f"{name} = {v} is outside the plausible range {lo}..{hi}")
        return value

    def header(self):
        """The shared calibration header (estimate/calibration_file.py) of this file."""
        from .calibration_file import CalibrationHeader

        return CalibrationHeader(kind="speed", engine=self.engine, engine_version=self.engine_version, gpu=self.gpu, tp=self.tp,
                                 created=self.created_at, source=self.command)

    def write(self, path: Path, *, force: bool = False) -> Path:
        """Write this calibration as JSON; an existing file is replaced only with ``force`` and only if it is a
        calibration infer-advisor wrote (see estimate/calibration_file.py and infer_advisor/_output.py)."""
        from .calibration_file import write_calibration

        return write_calibration(path, self, force=force)


def load_calibration(path: Path) -> Calibration:
    """Read and validate a calibration file; a bad file raises DataFileError (exit 2 in the CLI)."""
    from ..errors import DataFileError
    from .calibration_file import validate

    path = Path(path)
    if not path.is_file():
        raise DataFileError(str(path), "calibration file not found; write one with `infer-advisor calibrate --engine E --out FILE`")
    if path.suffix != ".json":
        raise DataFileError(str(path), "a calibration file is the .json that `infer-advisor calibrate --out` writes")
    try:
        import json

        old = json.loads(path.read_text(encoding="utf-8")).get("schema_version") == 1
    except (OSError, ValueError, AttributeError, RecursionError):
        old = False
    if old:
        raise DataFileError(str(path), "a speed calibration from an older infer-advisor (efficiency profile, no step-time "
                                       "coefficients): rerun `infer-advisor calibrate` to make a new one")
    return validate(path, Calibration)


TIB = 2**40


class MemoryCalibration(BaseModel):
    """A memory calibration (kind ``memory``); bounds are plausibility limits checked on load."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)

    schema_version: Literal[1] = 1
    kind: Literal["memory"] = "memory"
    engine: str = Field(min_length=1)
    engine_version: str | None = None
    gpu: str = Field(min_length=1, description="GPU of the log (catalog name).")
    tp: int = Field(default=1, ge=1, le=1024, description="GPUs per model instance in the log (tensor x pipeline parallel).")
    created: str
    source: str = Field(min_length=1, description="The log file the figures were read from.")
    command: str | None = Field(default=None, description="The engine's command line or arguments, as the log printed them.")
    model: str | None = Field(default=None, description="The model of the log (catalog name, Hub id or folder).")
    max_model_len: int | None = Field(default=None, ge=1, le=100_000_000)
    gpu_memory_bytes: int | None = Field(default=None, gt=2**28, le=4 * TIB, description="Total the engine budgeted on.")
    memory_fraction: float | None = Field(default=None, gt=0, le=1)
    weights_bytes: int | None = Field(default=None, gt=0, le=4 * TIB, description="Weights per GPU, as logged.")
    non_torch_bytes: int | None = Field(default=None, ge=0, le=128 * GIB)
    activation_bytes: int | None = Field(default=None, ge=0, le=1024 * GIB)
    cuda_graph_bytes: int | None = Field(default=None, ge=0, le=128 * GIB)
    kv_cache_bytes: int | None = Field(default=None, ge=0, le=4 * TIB, description="KV cache per GPU, as logged.")
    kv_cache_tokens: int | None = Field(default=None, ge=0, le=10**10)
    max_concurrency: float | None = Field(default=None, ge=0, le=10**7)
    activation_scale: float | None = Field(default=None, ge=0.01, le=50, description="Measured activation / the formula's.")
    residual_bytes: int = Field(default=0, ge=-128 * GIB, le=128 * GIB, description="Logged KV minus the calibrated prediction.")
    predicted_kv_cache_tokens: int | None = Field(default=None, ge=0, description="The plan's figure for the logged setup before calibration.")
    calibrated_kv_cache_tokens: int | None = Field(default=None, ge=0, description="... and after.")
    lines: dict[str, str] = Field(default_factory=dict, description="The log line behind each figure.")

    _path: str = PrivateAttr(default="")

    @property
    def header(self) -> CalibrationHeader:
        return CalibrationHeader(kind="memory", engine=self.engine, engine_version=self.engine_version, gpu=self.gpu,
                                 tp=self.tp, created=self.created, source=self.source)

    @property
    def path(self) -> str:
        return self._path or self.source

    def for_layout(self, gpus: int) -> MemoryCalibration:
        """The figures that apply to a layout of ``gpus`` GPUs per instance (TP-specific ones only at the log's size)."""
        if gpus == self.tp:
            return self
        return self.model_copy(update={"non_torch_bytes": None, "residual_bytes": 0, "weights_bytes": None})

    def write(self, path: Path, *, force: bool = False) -> Path:
        """Write this calibration as JSON through the shared output writer (``force`` replaces only a calibration)."""
        from .calibration_file import write_calibration

        return write_calibration(path, self, force=force)


def load_memory_calibration(path: Path) -> MemoryCalibration:
    from .calibration_file import validate

    cal = validate(Path(path), MemoryCalibration)
    cal._path = str(path)
    return cal


@dataclass
class Calibrations:
    """The calibration files a plan was given, sorted by kind."""

    memory: list[Any] = field(default_factory=list)  # MemoryCalibration, with .path set
    speed: list[tuple[Path, Any]] = field(default_factory=list)  # (path, Calibration)

    def memory_for(self, engine: str, engine_version: str | None, gpu: str | None, gpus: int, *, strict: bool = True):
        """The memory calibration for this engine version x GPU, preferring one made at ``gpus`` GPUs per instance.

        ``strict=False`` (``--calibration-mismatch warn``) also takes one of the same engine made for another version
        or GPU; made on another GPU, its total memory is not used (the plan's GPU keeps its own).
        """
        from ..hardware.catalog import normalize
        from .calibration_file import version_key

        if gpu is None:
            return None

        def same_gpu(c) -> bool:  # noqa: ANN001
            return normalize(c.header.gpu) == normalize(gpu)

        def same_version(c) -> bool:  # noqa: ANN001
            return (not c.header.engine_version or not engine_version
                    or version_key(c.header.engine_version) == version_key(engine_version))

        ours = [c for c in self.memory if c.header.engine == engine]
        matching = [c for c in ours if same_gpu(c) and same_version(c)] or ([] if strict else ours)
        exact = [c for c in matching if c.header.tp == gpus]
        cal = (exact or matching or [None])[0]
        if cal is not None and not same_gpu(cal):
            cal = cal.model_copy(update={"gpu_memory_bytes": None})
        return cal


def load_calibrations(paths: list[Path]) -> Calibrations:
    """Read, validate and sort calibration files by ``kind``; two memory files for one setup are refused."""
    from ..errors import DataFileError

    out = Calibrations()
    seen: dict[tuple, Path] = {}
    for path in paths:
        path = Path(path)
        kind = calibration_kind(path)
        if kind == "memory":
            cal = load_memory_calibration(path)
            from ..hardware.catalog import normalize
            from .calibration_file import version_key

            # h100-80gb and H100-80GB, v0.19.0 and 0.19.0 are one setup: both files would otherwise apply
            key = (cal.header.engine, version_key(cal.header.engine_version), normalize(cal.header.gpu), cal.header.tp)
            if key in seen:
                raise DataFileError(str(path), f"a second memory calibration for {cal.header.setup()} (the first is {seen[key]}); pass one")
            seen[key] = path
            out.memory.append(cal)
        else:
            out.speed.append((path, load_calibration(path)))
    if len(out.speed) > 1:
        raise DataFileError(str(out.speed[1][0]), "a second speed calibration; pass one speed and any memory calibrations")
    return out
