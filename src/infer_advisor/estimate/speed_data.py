"""The speed model's data (``data/speed/``), validated on load: measured kernels, engine profiles, links.

- ``kernels.yaml``: kernel efficiencies measured on the reference GPU (the lent H200), as fractions of its
  datasheet ceilings, written by ``benchmarks/gpu/fit_kernels.py`` (never by hand).
- ``engines.yaml``: per engine, how it runs a step (CUDA graphs, fused small kernels, host overhead), the
  weight-kernel class per quantization, and the coefficients fitted on published measurements
  (``benchmarks/speed_fit.py``, leave-one-source-out graded), each with its source.
- ``links.yaml``: all-reduce latency and bus efficiency per interconnect, with sources.
"""


import math
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._data import load_validated
from .._paths import shipped
# The engine speed terms are engine facts (engines/speed_terms.py); re-exported for the estimate stage's readers.
from ..engines.speed_terms import (  # noqa: F401
    FITTED_FIELDS, MEASURABLE_FIELDS, Coefficient, EngineSpeed, MeasuredSetup, SpeedVersion, profile_key, version_row,
)


def _check_table(table: list[tuple[float, float]]) -> list[tuple[float, float]]:
    if not table:
        raise ValueError("needs at least one (tokens, efficiency) pair")
    xs = [x for x, _ in table]
    if xs != sorted(xs) or len(set(xs)) != len(xs) or xs[0] <= 0:
        raise ValueError("tokens must be positive and strictly increasing")
    for _, y in table:
        if not (0 < y <= 1) or not math.isfinite(y):
            raise ValueError(f"efficiency {y} is not in (0, 1]")
    return table


def interp_log(table: list[tuple[float, float]], x: float) -> float:
    """Piecewise linear in log(x), clamped at both ends (benchmarks/gpu/fit_kernels.py uses the same rule)."""
    if x <= table[0][0]:
        return table[0][1]
    for (x0, y0), (x1, y1) in zip(table, table[1:]):
        if x <= x1:
            f = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return y0 + f * (y1 - y0)
    return table[-1][1]


class _Fit(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    fit_points: int | None = None
    fit_median_abs_error: float | None = None
    note: str | None = None


class GemmCurve(_Fit):
    """``t = launch + max(bytes / (bandwidth_efficiency x BW), flops / (eta(tokens) x PEAK))`` per GEMM."""

    launch_s: float = Field(ge=0, le=1e-3)
    bandwidth_efficiency: float = Field(gt=0, le=1)
    compute_efficiency_by_tokens: list[tuple[float, float]]

    @field_validator("compute_efficiency_by_tokens")
    @classmethod
    def _table(cls, v: list[tuple[float, float]]) -> list[tuple[float, float]]:
        return _check_table(v)


class GroupedGemm(_Fit):
    launch_s: float = Field(ge=0, le=1e-3)
    bandwidth_efficiency: float = Field(gt=0, le=1)
    compute_efficiency_scale: float = Field(gt=0, le=1, description="x the dense bf16 curve at the rows per expert.")


class AttentionDecode(_Fit):
    launch_s: float = Field(ge=0, le=1e-3)
    bandwidth_efficiency: float = Field(gt=0, le=1)


class AttentionPrefill(_Fit):
    compute_efficiency_by_tokens: list[tuple[float, float]]

    @field_validator("compute_efficiency_by_tokens")
    @classmethod
    def _table(cls, v: list[tuple[float, float]]) -> list[tuple[float, float]]:
        return _check_table(v)


class Attention(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    decode: AttentionDecode
    prefill: AttentionPrefill


class SmallKernel(_Fit):
    seconds_per_kernel: float = Field(gt=0, le=1e-3)
    range_s: list[float] | None = None


class KernelsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    reference_gpu: str
    reference_ceilings: dict[str, float]
    source: str
    measured_ceilings: dict
    gemm: dict[str, GemmCurve]
    attention: Attention
    grouped_gemm: GroupedGemm
    small_kernel: SmallKernel
    sdpa_backend: str | None = None


class WeightKernel(BaseModel):
    """How one weight format's GEMMs run, relative to a measured curve."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    curve: Literal["bf16", "fp8"] = Field(description="Measured curve the efficiencies start from.")
    peak: Literal["bf16", "fp16", "fp8", "int8", "fp4"] = Field(description="Which datasheet peak the compute runs at.")
    bandwidth_scale: float = Field(default=1.0, gt=0, le=2)
    batched_bandwidth_scale: float | None = Field(
        default=None, gt=0, le=2, description="Bandwidth scale when more than one row goes through the GEMM, where the engine "
        "switches kernels there (llama.cpp f16 on Ampere and newer: a mat-vec kernel for one row, tensor-core tiles above); "
        "default: ``bandwidth_scale``.")
    compute_scale: float = Field(default=1.0, gt=0, le=2)
    launch_scale: float = Field(default=1.0, gt=0, le=10)
    needs_compute_capability: float | None = Field(default=None, description="Below it, ``fallback`` is used instead.")
    amd_native: bool = Field(default=True, description="AMD Instinct GPUs run it natively (else ``fallback``).")
    fallback: str | None = None
    source: str


class LinkSpeed(BaseModel):
    """All-reduce cost on one interconnect: the faster of a latency-optimised kernel and a bandwidth-optimised ring."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    allreduce_latency_s: float = Field(ge=0, le=1e-2, description="Latency of the small-message (one-shot) all-reduce.")
    small_message_bytes_per_s: float = Field(gt=0, description="Bus bandwidth the small-message kernel reaches.")
    nccl_latency_s: float = Field(ge=0, le=1e-2, description="Latency of the ring all-reduce.")
    bus_efficiency: float = Field(gt=0, le=1, description="Ring bus bandwidth / link bandwidth.")
    source: str


class CPUCeilings(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    memory_bandwidth_bytes_per_s: float = Field(gt=0)
    flops_per_core_per_s: float = Field(gt=0)
    flops_per_core_per_s_by_simd: dict[str, float] = Field(
        default_factory=dict, description="Peak per core by the CPU's probed vector extension (avx2, avx512)."
    )
    compute_efficiency: float = Field(gt=0, le=1)
    tiled_bandwidth_ratio_by_row_elements: dict[str, list[tuple[float, float]]] = Field(
        default_factory=dict,
        description="By weight kernel class: (weight row length in elements, the tiled mat-mul's weight streaming rate "
                    "at 2+ rows / the one-row mat-vec's); classes not listed stream at the mat-vec's rate.")
    tiled_bandwidth_source: str = ""
    source: str


class EnginesFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    engines: dict[str, EngineSpeed]
    weight_kernels: dict[str, WeightKernel]
    links: dict[str, LinkSpeed]
    cpu: CPUCeilings


@cache
def kernels() -> KernelsFile:
    return load_validated(shipped("data") / "speed" / "kernels.yaml", KernelsFile)


class FittedEngine(BaseModel):
    """Coefficients benchmarks/speed_fit.py fitted for one engine, and how well they predict held-out sources."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    coefficients: dict[str, float]
    points: int = Field(ge=0)
    sources: int = Field(ge=0)
    loso_median_abs_error: float | None = Field(default=None, description="Leave-one-source-out median |relative error|.")
    loso_p90_abs_error: float | None = None
    in_sample_median_abs_error: float | None = None
    band_90: tuple[float, float] | None = Field(
        default=None, description="5th-95th percentile of measured / predicted: the in-sample band at freeze, the prospective one after grading.")
    band_from: str | None = Field(default=None, description="Which errors the band comes from (in-sample at freeze, prospective).")
    prospective_profile_sha256: str | None = Field(default=None, description="The frozen profile the prospective figures grade.")
    prospective_points: int | None = Field(default=None, description="Points gathered after the freeze, from sources never used.")
    prospective_scope: str | None = Field(default=None, description="Whose points: this engine's, or all engines' where it had fewer than 8.")
    prospective_median_abs_error: float | None = Field(default=None, description="Median |error| of the frozen profile on them.")
    prospective_p90_abs_error: float | None = None
    prospective_batches: int | None = Field(default=None, description="Batches pooled, each predicted by the profile frozen before it.")


class FittedFile(BaseModel):
    """``engines`` keys: an engine (``vllm``) or one of its version ranges (``vllm@0.8``: the range whose ``first`` is 0.8)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    generated_by: str
    dataset: str
    frozen_sha256: str | None = Field(default=None, description="sha256 of the canonical coefficients (benchmarks/speed_fit.py canonical_hash).")
    frozen_at: str | None = None
    prospective: dict | None = Field(default=None, description="Error of this frozen profile on points gathered after it was frozen.")
    engines: dict[str, FittedEngine] = Field(default_factory=dict)




@cache
def _fitted_file() -> FittedFile | None:
    path = _fitted_path()
    return load_validated(path, FittedFile) if path.exists() else None


def _apply_fitted(eng: EngineSpeed, fe: FittedEngine, dataset: str, generated_by: str, frozen_sha: str | None = None) -> EngineSpeed:
    label = (f"fitted by {generated_by} on {fe.points} published points from {fe.sources} sources ({dataset})"
             + (f"; leave-one-source-out median |error| {fe.loso_median_abs_error:.0%}" if fe.loso_median_abs_error is not None else ""))
    update: dict = {"fit": {**(eng.fit or {}), **fe.model_dump(exclude_none=True), "frozen_sha256": frozen_sha}}
    for key, value in fe.coefficients.items():
        if key in FITTED_FIELDS:
            old = getattr(eng, key)
            update[key] = Coefficient(value=value, kind="fitted", source=f"{label}; prior: {old.value:g} ({old.source})",
                                      bounds=old.bounds)
    return eng.model_copy(update=update)


@cache
def engine_speeds(apply_fitted: bool = True) -> EnginesFile:
    """engines.yaml with the engine-wide coefficients of data/speed/fitted.yaml (when present) applied and labelled ``fitted``.

    ``apply_fitted=False`` gives the stated (assumed/measured) values only: what benchmarks/speed_fit.py starts from.
    Coefficients of one engine version range come from :func:`engine_speed`.
    """
    base_path = shipped("data") / "speed" / "engines.yaml"
    if not apply_fitted or not _fitted_path().exists():
        return load_validated(base_path, EnginesFile)
    return _kept("engine-speeds-fitted", _fitted_engines)


def _fitted_engines() -> EnginesFile:
    base = load_validated(shipped("data") / "speed" / "engines.yaml", EnginesFile)
    fitted = _fitted_file()
    engines = dict(base.engines)
    for name, fe in fitted.engines.items():
        if name in engines:
            engines[name] = _apply_fitted(engines[name], fe, fitted.dataset, fitted.generated_by, fitted.frozen_sha256)
    return base.model_copy(update={"engines": engines})


def _fitted_path() -> Path:
    return shipped("data") / "speed" / "fitted.yaml"


def _kept(kind: str, build):
    """``build()``, kept between runs (:mod:`.._snapshot`) under ``kind`` and the bytes of engines.yaml and fitted.yaml,
    from which alone (and the code) it follows: applying the fit builds and validates coefficients, a cost on every
    start otherwise."""
    from .._snapshot import validated_snapshot
    from ..bounded_read import read_bounded

    base_path = shipped("data") / "speed" / "engines.yaml"
    fitted_path = _fitted_path()
    raw = read_bounded(base_path, "data") + b"\0" + (read_bounded(fitted_path, "data") if fitted_path.exists() else b"")
    return validated_snapshot(base_path, raw, kind, build)


# Profiles a fit is trying (benchmarks/speed_fit.py): set through :func:`trial_profiles` so that a fit predicts its
# points through exactly the path a user runs (advise -> estimate_speed -> engine_speed), never a parallel one.
_TRIAL: ContextVar[dict[str, EngineSpeed]] = ContextVar("infer_advisor_trial_speed_profiles", default={})


@contextmanager
def trial_profiles(profiles: dict[str, EngineSpeed]):
    """Within the block, :func:`engine_speed` answers these profiles (keys from :func:`profile_key`)."""
    token = _TRIAL.set(profiles)
    try:
        yield
    finally:
        _TRIAL.reset(token)


def stated_profile(name: str, version: str | None = None) -> tuple[str, EngineSpeed]:
    """(key, profile) of ``name`` at ``version`` with the stated (prior) values only: what a fit starts from."""
    base = engine_speeds(apply_fitted=False).engines[name]
    row = version_row(base, version)
    return profile_key(name, row), _with_row(base, row)


def _with_row(prof: EngineSpeed, row: SpeedVersion | None) -> EngineSpeed:
    if row is None:
        return prof
    update = dict(row.coefficients)
    update["version_range"] = row.label
    if row.kv_admission is not None:
        update.update(kv_admission=row.kv_admission, kv_admission_source=row.kv_admission_source)
    return prof.model_copy(update=update)


@cache
def _resolved(name: str, first: str | None) -> EngineSpeed:
    return _kept(f"engine-speed\0{name}\0{first}", lambda: _resolve(name, first))


def _resolve(name: str, first: str | None) -> EngineSpeed:
    stated = engine_speeds(apply_fitted=False).engines[name]
    row = next((r for r in stated.versions if r.first == first), None)
    prof = _with_row(engine_speeds().engines[name], row)
    fitted = _fitted_file()
    fe = fitted.engines.get(profile_key(name, row)) if (fitted and row is not None) else None
    return _apply_fitted(prof, fe, fitted.dataset, fitted.generated_by, fitted.frozen_sha256) if fe is not None else prof


def engine_speed(name: str, version: str | None = None, gpu: str | None = None) -> EngineSpeed:
    """The speed profile of ``name`` at ``version`` (default: its newest range): stated values, fitted ones over them,
    and on ``gpu`` (a catalog name) the coefficients measured there (``measured_on``) over both."""
    from ..errors import RequestError

    table = engine_speeds().engines
    if name not in table:
        raise RequestError(f"No speed profile for engine '{name}'. Known: {', '.join(table)}.")
    row = version_row(table[name], version)
    trial = _TRIAL.get().get(profile_key(name, row))
    prof = trial if trial is not None else _resolved(name, row.first if row is not None else None)
    return measured_setup(prof, gpu)


def _setup_on(prof: EngineSpeed, gpu: str | None) -> MeasuredSetup | None:
    return next((m for m in prof.measured_on if gpu is not None and m.gpu == gpu), None)


def measured_setup(prof: EngineSpeed, gpu: str | None) -> EngineSpeed:
    """``prof`` with the coefficients measured on ``gpu`` (``measured_on``), when it has any."""
    setup = _setup_on(prof, gpu)
    return prof if setup is None else prof.model_copy(update=dict(setup.coefficients))


def measured_label(prof: EngineSpeed, gpu: str | None) -> str | None:
    """Where the coefficients measured on ``gpu`` come from, or None."""
    setup = _setup_on(prof, gpu)
    return f"{setup.label} ({setup.source})" if setup else None
