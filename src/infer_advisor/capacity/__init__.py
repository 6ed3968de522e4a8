"""The capacity stage: traffic and latency targets in; the cheapest GPUs, layout and replica count out, with cost.

A search over the catalog's GPUs takes seconds (tests/capacity/test_capacity_search.py runs smaller ones)::

    from infer_advisor import size
    result = size(model="meta-llama/Llama-3.1-70B", rate=20, input_tokens=2000, output_tokens=300,
                  ttft_p90=1.0, itl_p99=0.06, gpu="any")
    result.chosen.gpu, result.chosen.layout, result.chosen.replicas, result.chosen.cost_per_hour

`infer-advisor plan --rate ...` runs the same search and prints the chosen plan with the per-GPU table. Each
candidate replica is planned by the planner with its layout pinned (rules and the memory model decide engine,
weights and what fits), simulated by ``simulate`` on the step-time model, and priced; see ``capacity.sizing``.
"""

from __future__ import annotations

from typing import Any

from .result import Binding, Candidate, CapacityResult, FrontPoint, Price
from .targets import LatencyTargets

__all__ = ["Binding", "Candidate", "CapacityResult", "FrontPoint", "LatencyTargets", "Price", "size", "size_request"]


def size(model: str | None = None, *, progress=None, **options: Any) -> CapacityResult:
    """Search GPU types and layouts for the cheapest fleet serving ``rate`` requests/s within the latency targets.

    Takes the fields of :class:`~infer_advisor.request.PlanRequest` as keywords (``rate`` is required;
    ``gpu="any"`` or ``"H100-80GB,L40S"`` searches GPU types; ``ttft_p90``/``ttft_p99``/``itl_p99``/``e2e_p90``
    are targets in seconds; ``price_per_gpu_hour`` overrides the catalog prices).
    """
    from pydantic import ValidationError

    from .._data import format_validation_error
    from ..errors import RequestError
    from ..request import PlanRequest, check_api_arguments

    check_api_arguments(None, model, options, None, None, progress)
    if model is not None:
        options["model"] = model
    try:
        request = PlanRequest(**options)
    except ValidationError as err:
        raise RequestError(format_validation_error(err)) from None
    return size_request(request, progress=progress)


def _typed(fn):
    from ..request import with_request_signature

    return with_request_signature(fn)


size = _typed(size)


def size_request(request, model_facts=None, *, progress=None) -> CapacityResult:
    """:func:`size` for a ready :class:`PlanRequest` (and optionally resolved model facts)."""
    from ..errors import RequestError
    from .sizing import search

    if not request.rate:
        raise RequestError("sizing needs --rate (requests per second the deployment must serve).")
    if model_facts is None:
        from ..model_facts import resolve_model

        model_facts = resolve_model(request.model, revision=request.revision, source=request.model_source)

    plan_fn = pinned_planner(request, model_facts)
    result = search(request, model_facts, plan_fn, progress=progress)
    return result.model_copy(update={"accuracy": _accuracy_note(result)})


def pinned_planner(request, model_facts):
    """``plan_fn(hw, tp, pp, ep, **pins)``: the ordinary planner for one replica with its layout and GPU pinned (and any
    other request field in ``pins``, e.g. ``quantization="fp8"``)."""

    def plan_fn(hw, tp, pp, ep, **pins):
        from ..plan.advise import advise

        pinned = request.model_copy(update={"rate": None, "tensor_parallel_size": tp, "pipeline_parallel_size": pp,
                                            "enable_expert_parallel": ep or None, "replicas": 1, **pins,
                                            "gpu": f"{hw.gpu.name}:{hw.gpus_per_node}" + (f"x{hw.nodes}" if hw.nodes > 1 else "")})
        # the search simulates it, and reports a replica that does not fit by its reason
        return advise(request=pinned, model_facts=model_facts, hardware=hw, speed=False, suggest=False)

    return plan_fn


def _accuracy_note(result: CapacityResult) -> str | None:
    """How far the chosen engine's speed profile has been off on published data it was not fitted to."""
    if result.chosen is None:
        return None
    from ..estimate.speed import engine_accuracy

    return engine_accuracy(result.chosen.engine)
