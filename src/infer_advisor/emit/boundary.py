"""The emit stage's own boundary: a plan built outside ``advise()`` (read from JSON, made in Python) is checked
again before any template sees it, so the escapers never meet a value the request boundary would have refused."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import EmitError

if TYPE_CHECKING:  # pragma: no cover
    from ..plan.models import DeploymentPlan

# An image reference as Docker's distribution/reference grammar writes it: [domain[:port]/]path[:tag][@digest];
# path components lower-case alphanumerics joined by '.', '_', '__' or dashes.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_REF = re.compile(
    rf"^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?(?:@sha256:[a-f0-9]{{64}})?$"
)


def check_plan_values(plan: DeploymentPlan, *images: str) -> None:
    """The emit boundary for plans built outside `advise()` (JSON, the Python API): a strict engine version, names
    without control/separator/bidi characters, and image references Docker accepts, so no value can add a line, a
    Dockerfile instruction or an invalid FROM."""
    from ..untrusted import check_version, refuse_unsafe

    check_version(plan.engine.version, "engine version", EmitError)
    names = [("model name", plan.model.name), ("model path", plan.model.path), ("served model name", plan.engine.served_model_name),
             *(("GPU name", g.name) for g in plan.hardware.gpus)]
    for what, value in names:
        if value:
            refuse_unsafe(value, what, EmitError)
    for image in images:
        if not IMAGE_REF.match(image):
            raise EmitError(f"{image!r} is not a valid image reference for a Dockerfile FROM or an image: field.")
