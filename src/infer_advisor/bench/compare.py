"""A plan's predictions beside the measurements, read defensively (plans gain fields over time)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..errors import RequestError
from .report import LevelResult, PlanComparison, PredictedPoint

# plan attribute path -> measured attribute of a level (Stats are compared by their mean).
PREDICTIONS = {
    ("performance", "ttft_s"): "ttft_s",
    ("performance", "tpot_s"): "tpot_s",
    ("performance", "e2e_s"): "e2e_s",
    ("performance", "output_tokens_per_s_per_request"): "output_tokens_per_s_per_request",
    ("performance", "output_tokens_per_s_aggregate"): "output_tokens_per_s_aggregate",
    ("performance", "requests_per_s"): "requests_per_s",
    ("memory", "total_bytes_per_gpu"): "peak_memory_bytes",
}
# Where a plan may say which concurrency its predictions are for (first found wins).
_CONCURRENCY_PATHS = (
    ("performance", "concurrency"),
    ("workload", "concurrency"),
    ("request", "workload", "concurrency"),
)


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        obj = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        if obj is None:
            return None
    return obj


_WRITE_ONE = "Write one with `infer-advisor plan ... --json > plan.json`."


def load_plan(path: Path) -> Any:
    """A plan JSON file as attribute-accessible objects; a file that is not a plan is one RequestError line."""
    try:
        from ..bounded_read import read_text_bounded

        raw = json.loads(read_text_bounded(path, "report", lambda p, why: OSError(0, why)))
    except (OSError, ValueError, RecursionError) as err:  # ValueError: bad JSON or bytes that are not UTF-8
        why = err.strerror if isinstance(err, OSError) and err.strerror else type(err).__name__
        raise RequestError(f"--plan {path}: cannot read a plan JSON ({why}). {_WRITE_ONE}") from None
    sections = [k for k in ("performance", "memory") if isinstance(raw, dict) and isinstance(raw.get(k), dict)]
    if not sections:
        what = "a bench.json" if isinstance(raw, dict) and "levels" in raw else "not a plan"
        raise RequestError(
            f"--plan {path}: {what} (no 'performance' or 'memory' section to compare with). {_WRITE_ONE}"
        )
    return json.loads(json.dumps(raw), object_hook=lambda d: SimpleNamespace(**d))


def plan_concurrency(plan: Any) -> int | None:
    """The concurrency the plan's predictions are for, when it says."""
    return next((c for p in _CONCURRENCY_PATHS if isinstance(c := _get(plan, p), int)), None)


def compare(plan: Any, levels: list[LevelResult]) -> list[PlanComparison]:
    """Predicted vs measured at the plan's concurrency (or at every level when the plan does not say)."""
    if plan is None or not levels:
        return []
    conc = plan_concurrency(plan)
    source = _get(plan, ("performance", "source"))
    chosen = [lv for lv in levels if lv.concurrency == conc] if conc is not None else levels
    out = []
    for path, attr in PREDICTIONS.items():
        predicted = _get(plan, path)
        if not isinstance(predicted, (int, float)):
            continue
        for lv in chosen:
            measured = getattr(lv, attr)
            measured = getattr(measured, "mean", measured)
            if not measured:
                continue
            out.append(
                PlanComparison(
                    metric=attr,
                    concurrency=lv.concurrency,
                    predicted=float(predicted),
                    measured=float(measured),
                    error_pct=(float(predicted) - float(measured)) / float(measured) * 100.0,
                    predicted_source=f"plan ({source})"
                    if path[0] == "performance" and isinstance(source, str)
                    else "plan",
                )
            )
    return out


def _plain(obj: Any) -> Any:
    """A plan read by :func:`load_plan` back into plain dicts and lists."""
    if isinstance(obj, SimpleNamespace):
        return {k: _plain(v) for k, v in vars(obj).items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def predicted_curve(plan: Any, concurrencies: list[int]) -> tuple[list[PredictedPoint], str | None]:
    """The plan's deployment (its engine, weights, KV cache, layout and GPUs pinned) planned again at each measured
    concurrency through :func:`~infer_advisor.plan.advise.advise`, the path a user runs; and a note when it cannot be
    (a plan without a request, a GPU given inline, ...)."""
    from ..errors import InferAdvisorError
    from ..plan.advise import advise
    from ..request import PlanRequest

    raw = _plain(plan)
    asked, hw = raw.get("request"), raw.get("hardware") or {}
    if not isinstance(asked, dict) or not concurrencies:
        return [], None
    pins = {
        "engine": _get(plan, ("engine", "name")), "quantization": _get(plan, ("quantization", "method")),
        "dtype": raw.get("dtype"), "kv_cache_dtype": _get(plan, ("engine", "kv_cache_dtype")),
        "tensor_parallel_size": _get(plan, ("parallelism", "tensor_parallel_size")),
        "pipeline_parallel_size": _get(plan, ("parallelism", "pipeline_parallel_size")), "rate": None,
    }  # fmt: skip
    gpus = hw.get("gpus") or []
    if hw.get("kind") == "gpu" and gpus:
        pins["gpu"] = f"{gpus[0]['name']}:{hw.get('gpus_per_node', 1)}" + (f"x{hw['nodes']}" if hw.get("nodes", 1) > 1 else "")
    out = []
    try:
        for c in sorted(set(concurrencies)):
            request = PlanRequest.model_validate({**asked, **pins, "concurrency": c})
            perf = advise(request=request).performance
            if perf is None:
                return [], "the plan has no speed prediction to draw"
            out.append(PredictedPoint(concurrency=c, ttft_s=perf.ttft_s, tpot_s=perf.tpot_s,
                                      output_tokens_per_s_aggregate=perf.output_tokens_per_s_aggregate,
                                      error_band=perf.error_band, source=f"{perf.source} ({perf.profile})"))
    except (InferAdvisorError, ValueError) as err:  # ValueError: pydantic's ValidationError on an older plan's request
        return [], f"the plan's curve was not drawn: it could not be planned again here ({type(err).__name__}: {str(err)[:120]})"
    return out, None
