"""Memory calibration from an engine's start-up log: what `infer-advisor calibrate --from-log` writes.

From a vLLM start-up log on disk (tests/estimate/test_memory_calibration.py fits recorded logs)::

    log = parse_startup_log(Path("vllm-startup.log").read_text())
    cal = fit_memory_calibration(log, source="vllm-startup.log", gpu="H100-80GB")
    cal.write(Path("h100-vllm.json")); advise(model=..., gpu="H100-80GB", engine="vllm", calibration=["h100-vllm.json"])

The log's own figures replace the memory model's where the engine printed them, for that engine version x GPU
(x TP size for the figures that depend on it):

- ``gpu_memory_bytes``: the total the engine budgeted on (``total_gpu_memory``);
- ``non_torch_bytes``: the non-torch memory it counted (context, NCCL, workspaces), for layouts of the same TP size;
- ``activation_scale``: the measured activation peak over the formula's for the logged model, applied to any model;
- ``cuda_graph_bytes``: the CUDA-graph pool, where that engine version takes it out of the KV budget;
- ``weights_bytes``: the logged model's weights per GPU, for that model at that TP size only;
- ``residual_bytes``: what the engine left for KV beyond (or short of) the prediction with all of the above, for
  layouts of the same TP size (the part of the log no printed figure explains).

A plan that uses the file marks those figures ``calibrated (log)``.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ..estimate.calibration import MemoryCalibration
from ..engines.startup_log import StartupLog


def fit_memory_calibration(
    log: StartupLog,
    *,
    source: str,
    model: str | None = None,
    gpu: str | None = None,
    engine_version: str | None = None,
    tp: int | None = None,
    max_model_len: int | None = None,
) -> MemoryCalibration:
    """A :class:`MemoryCalibration` from a parsed log; arguments fill what the log did not print (and must agree)."""
    from ..errors import RequestError
    from ..hardware import resolve_hardware
    from ..model_facts import resolve_model

    version = engine_version or log.engine_version
    if version is None:
        raise RequestError(f"The log does not print the {log.engine} version; pass --engine-version (e.g. 0.8.5).")
    gpu_name = gpu or log.gpu_name
    if gpu_name is None:
        raise RequestError("The log does not name the GPU; pass --gpu NAME (the catalog GPU the log was made on).")
    hw = resolve_hardware(gpu_name)
    model_name = model or log.model
    if model_name is None:
        raise RequestError("The log does not name the model; pass --model NAME (a catalog name or local folder).")
    gpus = tp or ((log.tp or 1) * (log.pp or 1))
    cal = _plausible(source, dict(
        engine=log.engine, engine_version=version, gpu=hw.gpu.name, tp=gpus,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"), source=source, command=log.command, model=model_name,
        max_model_len=max_model_len or log.max_model_len, gpu_memory_bytes=log.total_gpu_memory_bytes,
        memory_fraction=log.gpu_memory_utilization, weights_bytes=log.weights_bytes, non_torch_bytes=log.non_torch_bytes,
        activation_bytes=log.activation_bytes, cuda_graph_bytes=log.cuda_graph_bytes, kv_cache_bytes=log.kv_cache_bytes,
        kv_cache_tokens=log.kv_cache_tokens, max_concurrency=log.max_concurrency, lines=dict(log.lines),
    ))  # fmt: skip
    try:
        facts = resolve_model(model_name, source="auto")
    except Exception as err:  # noqa: BLE001 - any model-facts failure becomes one line: the fit needs the model
        raise RequestError(f"Cannot read the facts of {model_name} to compare the log with ({err}); pass --model with a catalog name or local folder.") from None
    fitted = _fit(cal, log, facts, hw)
    # The fit's own figures (model_copy does not validate) meet the same bounds `plan --calibration` checks on load.
    return _plausible(source, fitted.model_dump())


def _plausible(source: str, fields: dict) -> MemoryCalibration:
    """A MemoryCalibration of ``fields``; figures outside the plausible bounds (a garbled log) are one error line."""
    from pydantic import ValidationError

    from .._data import format_validation_error
    from ..errors import DataFileError

    try:
        return MemoryCalibration.model_validate(fields)
    except ValidationError as err:
        raise DataFileError(source, f"the log's figures are not plausible: {format_validation_error(err)}") from None


def estimate_for_log(
    log: StartupLog, *, model: str | None = None, gpu: str | None = None, engine_version: str | None = None,
    calibration: MemoryCalibration | None = None,
):
    """The memory model's figures for the exact setup a start-up log describes (its model, GPU, context, TP and
    settings), with ``calibration`` applied if given: what `calibrate --from-log` and benchmarks/memory_logs.py compare."""
    from ..estimate.memory import estimate_memory

    facts, setup = setup_for_log(log, model=model, gpu=gpu, engine_version=engine_version)
    cal = calibration.for_layout(setup["tp"] * setup["pp"]) if calibration is not None else None
    return estimate_memory(facts, **setup, calibration=cal)


def setup_for_log(log: StartupLog, *, model: str | None = None, gpu: str | None = None, engine_version: str | None = None):
    """(model facts, :func:`estimate_memory` arguments) for the setup a log describes; callers that vary one setting
    (``infer-advisor doctor``'s edits) change an argument and call the memory model themselves."""
    from ..hardware import resolve_hardware
    from ..model_facts import resolve_model

    hw = resolve_hardware(gpu or log.gpu_name)
    facts = resolve_model(model or log.model, source="auto")
    setup_cal = MemoryCalibration(
        engine=log.engine, engine_version=engine_version or log.engine_version, gpu=hw.gpu.name, tp=(log.tp or 1) * (log.pp or 1),
        created="-", source="-", max_model_len=log.max_model_len, gpu_memory_bytes=log.total_gpu_memory_bytes,
        memory_fraction=log.gpu_memory_utilization,
    )
    return facts, _logged_setup(setup_cal, log, facts, hw)


def _fit(cal: MemoryCalibration, log: StartupLog, facts, hw) -> MemoryCalibration:
    from ..estimate.memory import estimate_memory

    setup = _logged_setup(cal, log, facts, hw)
    before = estimate_memory(facts, **setup)
    raw_activation = before.activation_bytes_per_gpu / _profile_scale(setup)
    update: dict = {"predicted_kv_cache_tokens": before.kv_cache_tokens}
    if cal.activation_bytes is not None and raw_activation > 0:
        update["activation_scale"] = min(max(cal.activation_bytes / raw_activation, 0.01), 50)
    cal = cal.model_copy(update=update)
    after = estimate_memory(facts, **setup, calibration=cal)
    measured = _measured_kv_bytes(cal, after)
    if measured is not None and after.accounting == "reserve":
        # the model's KV room is clipped at zero: where it predicted none, one correction leaves a gap; repeat it
        for _ in range(3):
            gap = int(measured - after.kv_cache_bytes_per_gpu)
            if abs(gap) < 2**20:
                break
            cal = cal.model_copy(update={"residual_bytes": cal.residual_bytes + gap})
            after = estimate_memory(facts, **setup, calibration=cal)
    return cal.model_copy(update={"calibrated_kv_cache_tokens": after.kv_cache_tokens})


def _profile_scale(setup: dict) -> float:
    return setup["memory"].activation_scale


def _measured_kv_bytes(cal: MemoryCalibration, est) -> float | None:
    """The KV bytes per GPU the engine settled on: its token count (what it schedules with; under TP the smallest
    rank's) x bytes per token at the logged context, else the GiB it printed."""
    if cal.kv_cache_tokens is not None and est.kv_cache_tokens:
        return cal.kv_cache_tokens * est.kv_cache_bytes_per_gpu / est.kv_cache_tokens
    if cal.kv_cache_bytes is not None:
        return float(cal.kv_cache_bytes)
    return None


def _logged_setup(cal: MemoryCalibration, log: StartupLog, facts, hw) -> dict:
    """estimate_memory arguments for the setup the log describes (log figures first, then the engine's defaults)."""
    from ..engines.settings import engine_settings
    from ..engines.profiles import engine_profile

    settings = engine_settings(cal.engine, cal.engine_version, hw.gpu, tp=log.tp or 1, pp=log.pp or 1, enforce_eager=bool(log.enforce_eager))
    dtype = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16", "float32": "float32"}.get(
        (log.dtype or "").lower(), "float16" if facts.torch_dtype == "float16" else "bfloat16"
    )
    kv = "fp8" if (log.kv_cache_dtype or "").startswith("fp8") else "auto"
    quant = _quantization(facts, log)
    context = cal.max_model_len or facts.max_position_embeddings
    engine = engine_profile(cal.engine)
    slots = (log.max_num_seqs or settings.max_num_seqs) if engine.kv_preallocated else 1  # llama.cpp: n_seq_max slots of n_ctx_per_seq
    return dict(
        gpu_memory_bytes=cal.gpu_memory_bytes or hw.gpu.budget_memory_bytes, engine=engine, quantization=quant,
        dtype=dtype, kv_cache_dtype=kv, tp=log.tp or 1, pp=log.pp or 1, context=context, concurrency=slots,
        max_num_batched_tokens=log.max_num_batched_tokens or settings.max_num_batched_tokens,
        max_num_seqs=log.max_num_seqs or settings.max_num_seqs, memory_fraction=cal.memory_fraction or settings.memory_fraction,
        memory=settings.profile, interconnect=hw.gpu.interconnect, engine_version=settings.version,
        compute_capability=hw.gpu.compute_capability, sampler=log.sampler, linear_kernel=log.linear_kernel,
        speculative=_speculative(log, facts), prefix_caching=bool(log.prefix_caching), language_model_only=bool(log.language_model_only),
        group_size=log.quantization_group_size,  # printed by the engine (None: the format's own)
    )


def _speculative(log: StartupLog, facts):
    """The draft the log's speculative config names, as vLLM holds it (engines/draft_shape.py); None without one. A
    method or draft the data does not know is left out, as before this was modelled (its memory is then missing)."""
    from ..engines.draft_shape import draft_shape, parse_speculative_config
    from ..errors import RequestError

    if not log.speculative_config or log.engine != "vllm":
        return None
    try:
        return draft_shape(parse_speculative_config(log.speculative_config), facts)
    except RequestError:
        return None


def _quantization(facts, log: StartupLog) -> str:
    from ..plan.options import prequantized_format

    if facts.pre_quantized:
        return prequantized_format(facts) or "none"
    q = (log.quantization or "").lower()
    if q.startswith("awq"):
        return "awq"
    if q.startswith("gptq"):
        return "gptq"
    if q in ("fp8", "int8"):
        return q
    if log.engine == "llama.cpp":
        return q if q in _known_formats() else _gguf_format(facts, log)  # a command's file name names its type (gguf-q4_k_m)
    return q if q in _known_formats() else "none"  # a weight format the data knows (compressed-tensors-w4a16) is kept


def _known_formats() -> set[str]:
    from ..estimate.formats import formats

    return set(formats().formats)


def _gguf_format(facts, log: StartupLog) -> str:
    """The GGUF type whose size is closest to the logged model buffer (the log names the file type only in metadata)."""
    from ..estimate.memory import weights_bytes

    if not log.weights_bytes:
        return "gguf-f16"
    options = ["gguf-q4_k_m", "gguf-q8_0", "gguf-f16"]
    return min(options, key=lambda f: abs(weights_bytes(facts, f, "float16") - log.weights_bytes))
