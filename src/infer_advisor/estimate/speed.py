"""The performance model's result type. (The model itself: `estimate_speed`, see the speed issue.)"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class PerformanceEstimate(BaseModel):
    """Predicted speed of a plan at its concurrency; ``source`` says whether a calibration was used."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["estimated", "calibrated"] = Field(description="estimated: shipped default profile; calibrated: a measured profile.")
    profile: str = Field(description="Efficiency profile used (engine x quantization) and where it was measured.")
    concurrency: int
    input_tokens: int
    output_tokens: int
    ttft_s: float = Field(description="Time to first token: prefill of the prompt plus fixed overhead.")
    tpot_s: float = Field(description="Time per output token after the first, at this concurrency.")
    e2e_s: float = Field(description="End-to-end latency of one request.")
    output_tokens_per_s_per_request: float
    output_tokens_per_s_aggregate: float
    requests_per_s: float
    decode_fraction_of_bandwidth_ceiling: float = Field(description="Predicted decode speed / memory-bandwidth ceiling.")
    prefill_fraction_of_compute_ceiling: float = Field(description="Predicted prefill speed / compute (FLOPS) ceiling.")
    notes: list[str] = Field(default_factory=list)
