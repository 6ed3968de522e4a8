"""The plan stage. Entry point: :func:`advise` -> :class:`DeploymentPlan`."""

from .advise import advise
from .models import DeploymentPlan
from ..request import PlanRequest

__all__ = ["DeploymentPlan", "PlanRequest", "advise"]
