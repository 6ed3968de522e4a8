"""The error band of ``max_rate_per_replica`` for one engine on one GPU from the project's own GPU validation runs
(``data/speed/gpu_validation_band.yaml``: prospective open-loop calls, measured / predicted capacity), where it has
one; the TTFT band (``ttft_band.py``) uses it there instead of the all-engines published band."""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped


class ValidationCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    call: str
    model: str
    predicted: float = Field(gt=0, description="The call's predicted max_rate_per_replica (req/s).")
    measured: float = Field(gt=0, description="Requests served per second at the call's overloaded level.")
    source: str


class ValidationBand(BaseModel):
    model_config = ConfigDict(extra="forbid")
    engine: str
    gpu: str
    calls: list[ValidationCall] = Field(min_length=2)


class ValidationBandFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str
    added: str
    bands: list[ValidationBand]


@cache
def _bands() -> ValidationBandFile:
    return load_validated(shipped("data") / "speed" / "gpu_validation_band.yaml", ValidationBandFile)


def validation_band(engine: str, gpu: str) -> tuple[float, float, str, str] | None:
    """(low, high, source, in a few words): the envelope of measured / predicted capacity over the GPU validation calls of ``engine``
    on ``gpu``, widened to include 1 (the prediction itself); None where no such calls exist."""
    entry = next((b for b in _bands().bands if b.engine == engine and b.gpu == gpu), None)
    if entry is None:
        return None
    ratios = [c.measured / c.predicted for c in entry.calls]
    calls = ", ".join(f"{c.call} ({c.model.split('/')[-1]}: {c.measured / c.predicted - 1:+.1%})" for c in entry.calls)
    source = (f"the envelope of measured / predicted max rate per replica over {len(ratios)} prospective {gpu} "
              f"{engine} validation calls ({calls}; data/speed/gpu_validation_band.yaml), applied to the replica's "
              "step time; not a 90% band: few calls")
    return min(min(ratios), 1.0), max(max(ratios), 1.0), source, f"{len(ratios)} {gpu} validation runs"
