"""The public entry points that compose stages.

:func:`advise` plans one deployment (the plan stage) or, with a traffic ``rate``, sizes the fleet (the capacity
stage, which plans its chosen option through the plan stage). The plan stage never imports capacity; the
composition lives here, above both (see docs/architecture.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .hardware.facts import HardwareFacts
    from .model_facts.facts import ModelFacts
    from .plan.models import DeploymentPlan
    from .request import PlanRequest


def advise(
    model: str | None = None,
    *,
    request: PlanRequest | None = None,
    explain: bool = False,
    model_facts: ModelFacts | None = None,
    hardware: HardwareFacts | None = None,
    progress: Any = None,
    **options: Any,
) -> DeploymentPlan:
    """Recommend how to deploy ``model``: engine, quantization, dtype, parallelism, memory and speed.

        >>> from infer_advisor import advise
        >>> plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
        >>> plan.engine.name, plan.parallelism.tensor_parallel_size
        ('vllm', 1)
        >>> sorted(plan.render("docker"))          # in memory; out="deploy/" also writes them there
        ['Dockerfile', 'README.md']

    Args:
        model: Hub id, local folder or catalog name. Every other :class:`PlanRequest` field is a typed keyword
            in the signature (``gpu="H100-80GB:8"``, ``goal="latency"``, ``context=8192``, ``rules="my-rules/"`` ...).
        request: a ready :class:`PlanRequest` instead of keywords.
        explain: keep every rule considered (matched or not) in ``plan.explain``.
        model_facts, hardware: pre-resolved facts (skips the model/hardware stages; used by tools and tests).
        progress: with ``rate``, a callable that receives a line now and then while a long sizing search runs.

    With ``rate`` (requests/s) and optional latency targets, the plan is the cheapest fleet that meets them, found by
    simulating every GPU type and layout searched (``gpu="any"``, a comma list, or one GPU type); ``plan.capacity``
    holds the comparison (see :func:`infer_advisor.size`).

    An impossible request returns a plan with ``feasible=False``, the reason and a ``suggestion``;
    bad input raises an :class:`~infer_advisor.errors.InferAdvisorError` subclass.
    """
    from .plan.advise import advise as plan_advise, plan_request
    from .request import check_api_arguments, refuse_unused

    check_api_arguments(request, model, options, model_facts, hardware, progress)
    request = plan_request(model, request, options)
    refuse_unused(request)  # sizing-only options without a rate (the sizing search plans through the plan stage)
    if hardware is None and request.rate:
        if model_facts is None:
            from .model_facts import resolve_model

            model_facts = resolve_model(request.model, revision=request.revision, source=request.model_source)
        from .capacity.fleet_plan import sized_plan

        return sized_plan(request, model_facts, explain, progress=progress)
    return plan_advise(request=request, explain=explain, model_facts=model_facts, hardware=hardware)



def _typed(fn):
    from .request import with_request_signature

    return with_request_signature(fn)


advise = _typed(advise)
