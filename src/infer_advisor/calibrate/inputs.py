"""What `infer-advisor calibrate --from FILE` reads: bench.json reports and benchmarks/gpu/measure_transformers.py
results, validated before any point is fitted.

Every problem is one :class:`~infer_advisor.errors.DataFileError` line naming the file and the place: a missing key,
a wrong type (``"0.02"`` is text, not seconds), a time that is not a finite positive number, an unfinished bench run
(``"complete": false``), bytes that are not UTF-8, JSON nested too deeply.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    from ..estimate.calibration import CalibrationPoint

# Our own benchmark script's output: strict types, extra keys (raw step times, versions ...) ignored.
_STRICT = ConfigDict(extra="ignore", strict=True, defer_build=True)


def _seconds(description: str):
    return Field(gt=0, allow_inf_nan=False, description=description)


class MeasuredPoint(BaseModel):
    model_config = _STRICT
    batch: int = Field(gt=0)
    ttft_s: float = _seconds("Time to first token, cold allocator.")
    decode_step_s_median: float = _seconds("Median decode step, cold allocator.")
    ttft_s_warm: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    decode_step_s_warm_median: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    peak_allocated_bytes: int | None = Field(default=None, ge=0)


class MeasuredModel(BaseModel):
    model_config = _STRICT
    model: str = Field(min_length=1)
    dtype: str | None = None
    points: list[MeasuredPoint] = Field(default_factory=list)


class MeasureFile(BaseModel):
    """benchmarks/gpu/measure_transformers.py's JSON (the fields calibrate reads)."""

    model_config = _STRICT
    input_tokens: int = Field(gt=0)
    output_tokens: int = Field(gt=0)
    gpu: str | None = None
    ceilings: dict
    models: list[MeasuredModel]


class _LevelTimes(BaseModel):
    """The figures calibrate takes from one bench level: finite, positive."""

    model_config = ConfigDict(extra="forbid", strict=True)
    ttft_s: float = _seconds("Median TTFT of the level.")
    tpot_s: float = _seconds("Median TPOT of the level.")


def _problem(err: ValidationError, prefix: str = "") -> str:
    from .._data import format_validation_error

    return (prefix + "." if prefix else "") + format_validation_error(err)


def points_from_file(path: Path) -> tuple[list[CalibrationPoint], str | None, str | None]:
    """Points from a bench.json or a measure_transformers JSON; also (GPU name, dtype) when recorded.

    measure_transformers points use the warm-allocator run when the file has one (a fresh caching allocator
    grows with the KV cache and slowed decode 2-3x on the H200 VM: a start-up effect, not the steady state).
    """
    from .._data import read_structured
    from ..errors import DataFileError

    path = Path(path)
    raw = read_structured(path)
    try:
        if isinstance(raw, dict) and "models" in raw and "ceilings" in raw:
            return _from_measure(path, raw)
        if isinstance(raw, dict) and "metadata" in raw and "levels" in raw:
            return _from_bench(path, raw)
    except ValidationError as err:
        raise DataFileError(str(path), _problem(err)) from None
    raise DataFileError(str(path), "not a bench.json (infer-advisor bench) nor a measure_transformers.py result")


def _from_measure(path: Path, raw: dict):
    from ..estimate.calibration import CalibrationPoint

    data = MeasureFile.model_validate(raw)
    pts = []
    for m in data.models:
        for p in m.points:
            warm = p.ttft_s_warm is not None and p.decode_step_s_warm_median is not None
            pts.append(
                CalibrationPoint(
                    model=m.model, batch=p.batch, input_tokens=data.input_tokens, output_tokens=data.output_tokens,
                    ttft_s=p.ttft_s_warm if warm else p.ttft_s,
                    tpot_s=p.decode_step_s_warm_median if warm else p.decode_step_s_median,
                    peak_memory_bytes=p.peak_allocated_bytes, dtype=m.dtype,
                    origin=f"{path.name} (benchmarks/gpu/measure_transformers.py{', warm allocator' if warm else ''})",
                )
            )  # fmt: skip
    dtypes = [m.dtype for m in data.models if m.dtype]
    return pts, data.gpu, (dtypes[0] if dtypes else None)


def _from_bench(path: Path, raw: dict):
    from ..bench.report import BenchReport
    from ..errors import DataFileError
    from ..estimate.calibration import CalibrationPoint

    rep = BenchReport.model_validate(raw)
    if not rep.complete:
        why = f" ({rep.error})" if rep.error else ""
        raise DataFileError(
            str(path),
            f"an unfinished bench run (complete: false{why}); fit only finished runs, or run `infer-advisor bench` again",
        )
    request = rep.metadata.request
    resolved = request.get("resolved") if isinstance(request.get("resolved"), dict) else {}
    out_tokens = resolved.get("output_tokens") or request.get("output_tokens")
    if out_tokens is not None and (not isinstance(out_tokens, int) or isinstance(out_tokens, bool) or out_tokens < 1):
        raise DataFileError(str(path), f"metadata.request: output_tokens {out_tokens!r} is not a positive whole number")
    pts = []
    for i, lv in enumerate(rep.levels):
        if lv.tpot_s is None or lv.request_rate is not None:
            continue  # open-loop levels (bench --request-rate) are not clients back to back: no batch size to fit
        try:
            times = _LevelTimes(ttft_s=lv.ttft_s.p50, tpot_s=lv.tpot_s.p50)
        except ValidationError as err:
            raise DataFileError(str(path), _problem(err, f"levels[{i}]")) from None
        mean = lv.input_tokens_mean
        if mean is not None and not (math.isfinite(mean) and mean > 0):
            raise DataFileError(str(path), f"levels[{i}].input_tokens_mean: {mean!r} is not a positive number")
        if lv.concurrency < 1:
            raise DataFileError(str(path), f"levels[{i}].concurrency: {lv.concurrency} is not a positive number")
        pts.append(
            CalibrationPoint(
                model=str(rep.metadata.model), batch=lv.concurrency,
                input_tokens=max(int(round(lv.input_tokens_mean or 1)), 1),
                output_tokens=int(out_tokens or max(lv.output_tokens_total // max(lv.num_requests, 1), 1)),
                ttft_s=times.ttft_s, tpot_s=times.tpot_s, peak_memory_bytes=lv.peak_memory_bytes,
                origin=f"{path.name} (infer-advisor bench)", dtype=rep.metadata.dtype, mode="closed_loop",
            )
        )  # fmt: skip
    return pts, rep.metadata.device.name, rep.metadata.dtype
