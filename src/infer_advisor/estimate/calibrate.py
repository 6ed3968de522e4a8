"""Calibration: fit an engine's speed profile (efficiencies, per-step overheads) to measured points.

    >>> cal = fit_calibration(points, engine="transformers", quantization="none", dtype="float16", hw=hw,
    ...                       command="infer-advisor calibrate ...")
    >>> cal.write(Path("h200-transformers.json")); advise(model=..., calibration="h200-transformers.json")

The points come from `infer-advisor bench` reports (bench.json) or from the device script
benchmarks/gpu/measure_transformers.py; :func:`points_from_file` reads either. The fit (numpy, imported
only here) is least squares on relative error:

- decode: ``tpot = serial + max(layer x layers + moe x moe_layers, bytes / (eta_bw x bandwidth))``, searched on
  a grid (eta from 1 down, so data with no bandwidth-bound point keep the highest efficiency they allow).
- prefill: ``ttft - serial = flops / (eta_c x peak)`` over the points where compute outlasts the launches.

The plan path reads a calibration with :func:`load_calibration` (pydantic only, no numpy).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .speed import SpeedProfile

SCHEMA_VERSION = 1


class CalibrationPoint(BaseModel):
    """One measured batch size of one model."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model: str = Field(description="Catalog name or path of the model measured.")
    batch: int = Field(gt=0, description="Sequences decoded together (bench concurrency).")
    input_tokens: int = Field(gt=0)
    output_tokens: int = Field(gt=0)
    ttft_s: float = Field(gt=0, description="Measured time to first token (prefill of the batch + sampling).")
    tpot_s: float = Field(gt=0, description="Measured time per decode step (median).")
    peak_memory_bytes: int | None = Field(default=None, description="Measured peak device memory, if recorded.")
    origin: str = Field(description="Which file and tool measured it.")
    dtype: str | None = Field(default=None, description="Weights dtype of this point (default: the calibration's).")


class Calibration(BaseModel):
    """A fitted speed profile: what `infer-advisor calibrate --out FILE` writes and `--calibration FILE` reads.

    Bounds are plausibility limits (a file outside them is refused on load, see estimate/calibration_file.py):
    bandwidth up to 1 PB/s, compute up to 1 EFLOP/s, efficiencies from 0.1% to 100%, overheads under 10 s.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    schema_version: Literal[1] = SCHEMA_VERSION
    kind: Literal["speed"] = Field(default="speed", description="Calibration kind (shared header, estimate/calibration_file.py).")
    engine: str = Field(min_length=1)
    engine_version: str | None = Field(default=None, description="Engine version measured (shared header).")
    tp: int = Field(default=1, ge=1, le=1024, description="GPUs per model instance measured (shared header).")
    quantization: str
    dtype: str
    gpu: str = Field(min_length=1, description="GPU the points were measured on (catalog name).")
    bandwidth_bytes_per_s: float = Field(gt=0, le=1e15, description="Peak bandwidth the efficiencies are relative to.")
    flops_per_s: float = Field(gt=0, le=1e18, description="Peak dense FLOPS (compute dtype) the efficiency is relative to.")
    bandwidth_efficiency: float = Field(ge=0.001, le=1)
    compute_efficiency: float = Field(ge=0.001, le=1)
    step_overhead_s: float = Field(ge=0, le=10)
    layer_overhead_s: float = Field(default=0.0, ge=0, le=1)
    moe_layer_overhead_s: float = Field(default=0.0, ge=0, le=1)
    kv_traffic_factor: float = Field(default=1.0, ge=1, le=100, description="From the shipped profile of the engine (not fitted).")
    fit_rms_error_pct: dict[str, float] = Field(default_factory=dict, description="RMS relative error of the fit, per metric.")
    points: list[CalibrationPoint] = Field(min_length=1)
    command: str = Field(description="The command that produced the points and this fit.")
    created_at: str

    def header(self):
        """The shared calibration header (estimate/calibration_file.py) of this file."""
        from .calibration_file import CalibrationHeader

        return CalibrationHeader(kind="speed", engine=self.engine, engine_version=self.engine_version, gpu=self.gpu, tp=self.tp,
                                 created=self.created_at, source=self.command)

    def profile(self) -> SpeedProfile:
        return SpeedProfile(
            bandwidth_efficiency=self.bandwidth_efficiency, compute_efficiency=self.compute_efficiency,
            step_overhead_s=self.step_overhead_s, layer_overhead_s=self.layer_overhead_s,
            moe_layer_overhead_s=self.moe_layer_overhead_s, kv_traffic_factor=self.kv_traffic_factor, kind="measured",
            source=f"calibrated on {self.gpu}: {self.command}",
        )

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
    return validate(path, Calibration)


# ---------------------------------------------------------------- reading measurements


def points_from_file(path: Path) -> tuple[list[CalibrationPoint], str | None, str | None]:
    """Points from a bench.json or a measure_transformers JSON (validated: see calibrate_inputs.py)."""
    from .calibrate_inputs import points_from_file as read

    return read(path)


# ---------------------------------------------------------------- fitting


def _works(points, engine, quantization, dtype, hw):
    from ..engines import engine_profile
    from ..model_facts import resolve_model
    from .formats import dtype_bytes
    from .memory import estimate_memory
    from .speed import decode_work, prefill_work

    facts: dict[str, object] = {}
    rows = []
    for p in points:
        if p.model not in facts:
            facts[p.model] = resolve_model(p.model)
        m = facts[p.model]
        dt = p.dtype or dtype
        mem = estimate_memory(m, gpu_memory_bytes=hw.gpu.memory_bytes, engine=engine_profile(engine), quantization=quantization,
                              dtype=dt, context=p.input_tokens + p.output_tokens, concurrency=p.batch, input_tokens=p.input_tokens)
        act = dtype_bytes(dt)
        dec = decode_work(m, mem, tp=1, pp=1, batch=p.batch, context=p.input_tokens + p.output_tokens / 2, act_bytes=act)
        pre = prefill_work(m, mem, tp=1, pp=1, batch=p.batch, prompt=p.input_tokens, act_bytes=act)
        rows.append((p, dec, pre))
    return rows


def _grid_fit(y, layers, moe, mem1) -> tuple[float, float, float, float, float]:
    """Fit ``y = s + max(l x layers + m x moe, mem1 / eta)`` by relative least squares on a grid.

    Returns (s, l, m, eta, squared error). ``eta`` is tried from 1 down, so when no point is bandwidth
    bound (every ``mem1 / eta`` under the launch time) the highest efficiency consistent with the data wins.
    """
    import numpy as np

    y, layers, moe, mem1 = (np.asarray(v, dtype=float) for v in (y, layers, moe, mem1))
    w = 1.0 / y**2
    ls = np.linspace(0.0, LAUNCH_GRID_MAX_S, 241)
    ms = np.linspace(0.0, LAUNCH_GRID_MAX_S, 121) if np.any(moe) else np.zeros(1)
    launch = ls[:, None, None] * layers + ms[None, :, None] * moe
    best = (0.0, 0.0, 0.0, 1.0, np.inf)
    for eta in np.linspace(1.0, 0.05, 96):
        g = np.maximum(launch, mem1 / eta)
        s = np.clip(((y - g) * w).sum(-1) / w.sum(), 0.0, None)
        err = (((s[..., None] + g - y) / y) ** 2).sum(-1)
        i, j = np.unravel_index(np.argmin(err), err.shape)
        if err[i, j] < best[4] * (1 - 1e-9):
            best = (float(s[i, j]), float(ls[i]), float(ms[j]), float(eta), float(err[i, j]))
    return best


LAUNCH_GRID_MAX_S = 3e-3  # largest launch time per layer tried; eager transformers measured ~0.6 ms (H200)


def fit_calibration(
    points: list[CalibrationPoint], *, engine: str, quantization: str, dtype: str, hw, command: str
) -> Calibration:
    """Fit a :class:`Calibration` to ``points`` measured on ``hw.gpu`` (one GPU, tp = pp = 1)."""
    from ..errors import RequestError
    from .speed import SpeedProfile, device_ceilings, speed_profile, step_time

    if hw.kind != "gpu" or hw.gpu is None:
        raise RequestError("calibrate fits GPU measurements: pass --gpu NAME (the GPU the points were measured on).")
    if len(points) < 2:
        raise RequestError("calibrate needs at least two measured batch sizes, e.g. --concurrency 1,8,32.")
    bw, flops, _, _ = device_ceilings(hw, dtype, quantization)
    shipped, _ = speed_profile(engine, quantization)
    kv_factor = shipped.kv_traffic_factor
    rows = _works(points, engine, quantization, dtype, hw)
    s, l, m, eta_bw, _ = _grid_fit(
        [p.tpot_s for p, _, _ in rows], [d.layers for _, d, _ in rows], [d.moe_layers for _, d, _ in rows],
        [(d.bytes + kv_factor * d.kv_bytes) / bw for _, d, _ in rows],
    )
    # prefill: ttft - serial = flops / (eta_c x peak) on the points where compute outlasts the launches
    num = den = 0.0
    for p, _, pre in rows:
        y = p.ttft_s - s
        c = pre.flops / flops
        if y > 0 and y > l * pre.layers + m * pre.moe_layers:
            num += c / y
            den += (c / y) ** 2
    eta_c = min(1.0, den / num) if num > 0 else 1.0  # ttft = z x c with z = num / den = 1 / eta_c
    profile = SpeedProfile(bandwidth_efficiency=eta_bw, compute_efficiency=max(eta_c, 0.001), step_overhead_s=s,
                           layer_overhead_s=l, moe_layer_overhead_s=m, kv_traffic_factor=kv_factor, kind="measured", source="fit")
    kw = dict(bandwidth=bw, flops=flops, tp=1, pp=1, interconnect=1.0, allreduce_latency=0.0)
    errs: dict[str, list[float]] = {"tpot_s": [], "ttft_s": []}
    for p, dec, pre in rows:
        errs["tpot_s"].append((step_time(dec, profile, **kw) - p.tpot_s) / p.tpot_s)
        errs["ttft_s"].append((step_time(pre, profile, **kw) - p.ttft_s) / p.ttft_s)
    rms = {k: 100 * (sum(e * e for e in v) / len(v)) ** 0.5 for k, v in errs.items()}
    return Calibration(
        engine=engine, quantization=quantization, dtype=dtype, gpu=hw.gpu.name, bandwidth_bytes_per_s=bw, flops_per_s=flops,
        bandwidth_efficiency=profile.bandwidth_efficiency, compute_efficiency=profile.compute_efficiency,
        step_overhead_s=profile.step_overhead_s, layer_overhead_s=profile.layer_overhead_s,
        moe_layer_overhead_s=profile.moe_layer_overhead_s, kv_traffic_factor=kv_factor, fit_rms_error_pct=rms, points=list(points), command=command,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
