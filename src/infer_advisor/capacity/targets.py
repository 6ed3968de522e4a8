"""Latency targets (any subset) and how a simulated replica measures up to them."""


from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from ..simulate import SimulationResult

# target field -> (metric of SimulationResult, percentile, words)
TARGET_METRICS: dict[str, tuple[str, str, str]] = {
    "ttft_p90": ("ttft_s", "p90", "p90 time to first token"),
    "ttft_p99": ("ttft_s", "p99", "p99 time to first token"),
    "itl_p99": ("itl_s", "p99", "p99 inter-token latency"),
    "e2e_p90": ("e2e_s", "p90", "p90 end-to-end latency"),
}


class LatencyTargets(BaseModel):
    """Service-level targets in seconds; None means no target on that figure."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    ttft_p90: float | None = Field(default=None, gt=0, le=3600)
    ttft_p99: float | None = Field(default=None, gt=0, le=3600)
    itl_p99: float | None = Field(default=None, gt=0, le=60)
    e2e_p90: float | None = Field(default=None, gt=0, le=86400)

    def given(self) -> dict[str, float]:
        return {k: v for k, v in self.model_dump().items() if v is not None}

    def __bool__(self) -> bool:
        return bool(self.given())


class TargetCheck(BaseModel):
    """One target against one simulated operating point."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    target: str = Field(description="ttft_p90, ttft_p99, itl_p99 or e2e_p90.")
    words: str
    limit_s: float
    value_s: float
    met: bool
    ratio: float = Field(description="value / limit: above 1 misses by that factor.")


def check(res: "SimulationResult", targets: LatencyTargets) -> list[TargetCheck]:
    out = []
    for name, limit in targets.given().items():
        metric, stat, words = TARGET_METRICS[name]
        value = getattr(res, metric).get(stat)
        out.append(TargetCheck(target=name, words=words, limit_s=limit, value_s=value, met=value <= limit,
                               ratio=value / limit if limit else float("inf")))
    return out


def meets(res: "SimulationResult", targets: LatencyTargets) -> bool:
    """All targets met, nothing saturated, and the simulation ran to completion."""
    if res.saturated or res.notes and any("stopped" in n or "does not fit" in n or "no request" in n for n in res.notes):
        return False
    return all(c.met for c in check(res, targets))


def binding(checks: list[TargetCheck]) -> TargetCheck | None:
    """The target closest to (or furthest past) its limit."""
    return max(checks, key=lambda c: c.ratio) if checks else None
