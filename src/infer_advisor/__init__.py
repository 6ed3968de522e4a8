"""infer_advisor: plan, emit, quantize and benchmark LLM inference deployments.

    >>> from infer_advisor import advise
    >>> plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
    >>> plan.engine.name, plan.quantization.method
    ('vllm', 'none')
    >>> from infer_advisor import size
    >>> fleet = size(model="meta-llama/Llama-3.1-70B", rate=20, input_tokens=2000, output_tokens=300,
    ...              ttft_p90=1.0, itl_p99=0.06, gpu="H100-80GB,A100-80GB")
    >>> fleet.chosen.gpu, fleet.chosen.layout, fleet.chosen.replicas  # doctest: +SKIP

Public names are imported lazily so ``import infer_advisor`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

_LAZY = {
    "advise": "infer_advisor.api",
    "DeploymentPlan": "infer_advisor.plan",
    "PlanRequest": "infer_advisor.request",
    "resolve_model": "infer_advisor.model_facts",
    "ModelFacts": "infer_advisor.model_facts",
    "resolve_hardware": "infer_advisor.hardware",
    "HardwareFacts": "infer_advisor.hardware",
    "quantize": "infer_advisor.quantize",
    "bench": "infer_advisor.bench",
    "size": "infer_advisor.capacity",
    "CapacityResult": "infer_advisor.capacity",
}
_ERRORS = (
    "InferAdvisorError",
    "ModelNotFoundError",
    "ModelConfigError",
    "UnsupportedArchitectureError",
    "UnknownGPUError",
    "HardwareSpecError",
    "RuleFileError",
    "DataFileError",
    "RequestError",
    "CalibrationMismatchError",
    "DoesNotFitError",
    "EngineNotInstalledError",
    "HubError",
    "OutputExistsError",
    "OutputPathError",
    "BenchmarkError",
    "GPURequiredError",
)
__all__ = [*_LAZY, *_ERRORS, "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from .bench import bench
    from .capacity import CapacityResult, size
    from .errors import *  # noqa: F403
    from .hardware import HardwareFacts, resolve_hardware
    from .model_facts import ModelFacts, resolve_model
    from .api import advise
    from .plan import DeploymentPlan
    from .request import PlanRequest
    from .quantize import quantize


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _ERRORS:
        from . import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'infer_advisor' has no attribute '{name}'")


def __dir__() -> list[str]:
    """The lazy public names too (``advise``, ``size`` ...), so ``dir(infer_advisor)`` and completion list them."""
    return sorted(set(globals()) | set(__all__))
