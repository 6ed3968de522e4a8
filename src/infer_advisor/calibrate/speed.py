"""Calibration: fit an engine's step-time coefficients to points measured on your own hardware.

From measured ``points`` on a GPU ``hw`` (tests/estimate/test_calibrate.py fits synthetic and recorded points)::

    cal = fit_calibration(points, engine="transformers", quantization="none", dtype="float16", hw=hw,
                          command="infer-advisor calibrate ...")
    cal.write(Path("h200-transformers.json")); advise(model=..., calibration="h200-transformers.json")

The points come from `infer-advisor bench` reports (bench.json: closed-loop levels of C concurrent clients) or
from the device script benchmarks/gpu/measure_transformers.py (static batches); :func:`points_from_file` reads
either. The fit is the same one benchmarks/speed_fit.py runs on published measurements (estimate/fit.py): the
engine coefficients of the step-time model (host overhead per step and per sequence, GEMM / attention / prefill
efficiency factors, host launch time for engines without CUDA graphs, CPU bandwidth efficiency on a CPU) that
minimise the log error of every point's TTFT and time per output token, each predicted by the simulator exactly
as `plan` predicts it. The plan path reads a calibration with :func:`load_calibration` (pydantic only).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from ..estimate.calibration import Calibration, CalibrationPoint


# ---------------------------------------------------------------- reading measurements


def points_from_file(path: Path) -> tuple[list[CalibrationPoint], str | None, str | None]:
    """Points from a bench.json or a measure_transformers JSON (validated: see calibrate/inputs.py)."""
    from .inputs import points_from_file as read

    return read(path)


# ---------------------------------------------------------------- fitting


def _identifiable(profile, on_gpu: bool, moe: bool) -> list[str]:
    """The coefficients a handful of batch sizes can pin down for this engine on this device."""
    names = ["step_overhead_s", "per_sequence_s", "gemm_scale", "attention_scale", "prefill_attention_scale"]
    if on_gpu and not profile.cuda_graphs:
        names.append("host_launch_s")
    if not on_gpu:
        names = ["step_overhead_s", "per_sequence_s", "gemm_scale", "cpu_bandwidth_efficiency"]
    if moe:
        names.append("moe_scale")
    return names


def predict_point(point: CalibrationPoint, model, hw, profile, *, engine: str, quantization: str, dtype: str,
                  max_num_seqs: int | None = None) -> tuple[float, float]:
    """(TTFT, time per output token) the simulator predicts for one measured point (the plan's own path)."""
    from ..engines.profiles import engine_profile
    from ..simulate import LengthSpec, SchedulerConfig, Workload, simulate
    from ..estimate.memory import estimate_memory
    from ..estimate.step_time import build_step_model

    gpu = hw.gpu if hw.kind == "gpu" else None
    dt = point.dtype or dtype
    step = build_step_model(model, gpu=gpu, engine=engine, quantization=quantization, dtype=dt, tp=point.tp, profile=profile,
                            cpu_cores=hw.cpu.cores if hw.cpu else None, cpu_simd=hw.cpu.simd if hw.cpu else None)
    ctx = point.input_tokens + point.output_tokens
    mem_bytes = gpu.memory_bytes if gpu else (hw.cpu.memory_bytes if hw.cpu else 16 * 2**30)
    mem = estimate_memory(model, gpu_memory_bytes=mem_bytes, engine=engine_profile(engine), quantization=quantization,
                          dtype=dt, tp=point.tp, context=ctx, concurrency=point.batch, on_gpu=gpu is not None)
    seqs = max_num_seqs or point.batch
    cfg = SchedulerConfig(max_num_seqs=seqs, max_num_batched_tokens=max(2048, point.input_tokens),
                          kv_capacity_tokens=max(mem.kv_cache_tokens, seqs * ctx), kv_admission=profile.kv_admission,
                          block_size=engine_profile(engine).block_size)
    lengths = dict(input_tokens=LengthSpec(mean=point.input_tokens), output_tokens=LengthSpec(mean=point.output_tokens))
    if point.mode == "static":  # one batch in this process: no request passes an HTTP server or a tokeniser first
        step.request_overhead_s = 0.0
        res = simulate(step, Workload(**lengths, arrival="burst"), cfg, requests=point.batch, warmup_fraction=0.0)
    else:
        res = simulate(step, Workload(**lengths, arrival="closed", concurrency=point.batch), cfg,
                       requests=max(4 * point.batch, 16), warmup_fraction=0.25)
    return res.ttft_s.p50, res.tpot_s.p50


def fit_calibration(
    points: list[CalibrationPoint], *, engine: str, quantization: str, dtype: str, hw, command: str,
    max_num_seqs: int | None = None, engine_version: str | None = None,
) -> Calibration:
    """Fit a :class:`Calibration` to ``points`` measured on ``hw`` (one GPU type, or the CPU)."""
    import statistics

    from ..errors import RequestError
    from ..model_facts import resolve_model
    from ..estimate.fit import fit_coefficients
    from ..estimate.speed_data import engine_speeds

    if hw.kind == "gpu" and hw.gpu is None:
        raise RequestError("calibrate: pass --gpu NAME (the GPU the points were measured on).")
    if len(points) < 2:
        raise RequestError("calibrate needs at least two measured batch sizes, e.g. --concurrency 1,8,32.")
    base = engine_speeds(apply_fitted=False).engines.get(engine)
    if base is None:
        raise RequestError(f"calibrate: no speed profile for engine '{engine}' (data/speed/engines.yaml).")
    models: dict[str, object] = {}
    for p in points:
        if p.model not in models:
            models[p.model] = resolve_model(p.model)
    moe = any(getattr(m, "family", "dense") == "moe" for m in models.values())
    names = _identifiable(base, hw.kind == "gpu", moe)

    def errors(profile) -> list[float | None]:
        out: list[float | None] = []
        for p in points:
            ttft, tpot = predict_point(p, models[p.model], hw, profile, engine=engine, quantization=quantization, dtype=dtype,
                                       max_num_seqs=max_num_seqs)
            out.append(ttft / p.ttft_s - 1 if ttft > 0 else None)
            out.append(tpot / p.tpot_s - 1 if tpot > 0 else None)
        return out

    values = fit_coefficients(base, names, errors, iters=80, prior_weight=0.0)  # your own measurements of your setup: bounds, no prior pull
    from ..estimate.fit import with_coefficients

    errs = errors(with_coefficients(base, values))
    ttft_err = [abs(e) for e in errs[0::2] if e is not None]
    tpot_err = [abs(e) for e in errs[1::2] if e is not None]
    return Calibration(
        engine=engine, engine_version=engine_version, tp=max(p.tp for p in points), quantization=quantization, dtype=dtype,
        gpu=hw.gpu.name if hw.kind == "gpu" else "cpu", coefficients=values, max_num_seqs=max_num_seqs,
        fit_median_abs_error={"ttft_s": statistics.median(ttft_err) if ttft_err else float("nan"),
                              "tpot_s": statistics.median(tpot_err) if tpot_err else float("nan")},
        points=list(points), command=command, created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
