"""An engine's speed terms by version (``data/speed/engines.yaml`` ``engines:``): what runs on the host per step, the
kernels it launches, its batching admission, and the coefficients (stated with bounds and sources; fitted ones laid
over them by ``estimate/speed_data.py`` from ``data/speed/fitted.yaml``).

Engine facts, so they live here; the step-time model (``estimate/step_time.py``) reads them.
"""


import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .versions import version_key


class Coefficient(BaseModel):
    """A fitted or assumed engine coefficient with where it came from.

    ``bounds`` is the physically plausible range (from the engine's code or a measurement, said in ``source``): a fit
    stays inside it and is pulled toward the stated value (the prior) by ``estimate/fit.py``'s penalty.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    value: float = Field(description="The coefficient.")
    kind: Literal["fitted", "measured", "assumed", "published"]
    source: str
    bounds: tuple[float, float] | None = Field(default=None, description="Range a fit may move the value in (lower > 0 for host terms).")

    @field_validator("bounds")
    @classmethod
    def _bounds(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        if v is not None and not (0 <= v[0] < v[1]):
            raise ValueError("bounds must be 0 <= low < high")
        return v

    @field_validator("value")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v) or v < 0:
            raise ValueError("must be finite and >= 0")
        return v


class SpeedVersion(BaseModel):
    """Coefficients of one engine version range ``[first, below)``: what runs on the host per step differs by release."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    first: str
    below: str | None = None
    label: str
    source: str = Field(description="The engine source read for this range (file at a pinned version).")
    coefficients: dict[str, Coefficient] = Field(default_factory=dict)
    kv_admission: Literal["on_demand", "on_demand_cached", "reserve"] | None = Field(
        default=None, description="This range's KV admission where it differs from the engine's (simulate.SchedulerConfig).")
    kv_admission_source: str | None = None

    def covers(self, version: str) -> bool:
        v = version_key(version)
        return version_key(self.first) <= v and (self.below is None or v < version_key(self.below))


FITTED_FIELDS = ("step_overhead_s", "per_sequence_s", "attention_scale", "prefill_attention_scale", "gemm_scale", "gddr_scale",
                 "moe_scale", "amd_scale", "request_overhead_s")
MEASURABLE_FIELDS = (*FITTED_FIELDS, "sampler_s_per_vocab", "prompt_host_s", "prompt_host_s_per_token")


class MeasuredSetup(BaseModel):
    """Coefficients measured on one GPU type with this engine (a benchmark we ran there, never the runs that grade
    it): they replace the engine-wide stated and fitted values when a plan runs on that GPU, as aiconfigurator keeps
    measured data per system. Other GPUs keep the engine-wide values."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    gpu: str = Field(description="GPU catalog name the measurements were made on.")
    label: str = Field(description="Engine build and machine, as measured.")
    source: str = Field(description="The fitting script and the result files.")
    coefficients: dict[str, Coefficient] = Field(description="EngineSpeed coefficient fields, measured there.")

    @field_validator("coefficients")
    @classmethod
    def _known(cls, v: dict[str, Coefficient]) -> dict[str, Coefficient]:
        unknown = sorted(set(v) - set(MEASURABLE_FIELDS))
        if unknown:
            raise ValueError(f"not measurable coefficients: {', '.join(unknown)} (known: {', '.join(MEASURABLE_FIELDS)})")
        return v


class EngineSpeed(BaseModel):
    """One engine's step: kernels it launches, what runs on the host, and fitted efficiencies."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    cuda_graphs: bool = Field(description="Decode steps replay CUDA graphs (launch cost off the critical path).")
    small_kernels_per_layer: float = Field(ge=0, description="Norm/RoPE/activation/add/cache-write kernels per decoder layer.")
    small_kernels_source: str
    host_launch_s: float = Field(default=5e-6, ge=0, description="Host time per kernel launch when graphs are off.")
    kv_admission: Literal["on_demand", "on_demand_cached", "reserve"] = Field(
        default="on_demand", description="How the scheduler admits requests against the KV cache (simulate.SchedulerConfig)."
    )
    kv_admission_source: str | None = None
    weight_kernels: dict[str, str] = Field(description="weight format -> weight-kernel class (links to `weight_kernels`).")
    expert_kernels: dict[str, str] = Field(
        default_factory=dict, description="weight format -> the routed experts' kernel class where it differs (MXFP4 gpt-oss experts)."
    )
    step_overhead_s: Coefficient = Field(description="Host time per engine step not hidden behind the GPU (schedule, sample, sync).")
    per_sequence_s: Coefficient = Field(description="Host time per running sequence per step.")
    attention_scale: Coefficient = Field(description="Decode-attention bandwidth efficiency x the measured SDPA kernel's.")
    prefill_attention_scale: Coefficient = Field(description="Prefill-attention efficiency x the measured SDPA kernel's.")
    gemm_scale: Coefficient = Field(description="Weight-kernel bandwidth/compute efficiency x the measured curves.")
    gddr_scale: Coefficient = Field(description="Extra bandwidth-efficiency factor on GDDR (consumer/workstation) GPUs.")
    moe_scale: Coefficient = Field(description="MoE expert-kernel bandwidth and compute efficiency x the measured grouped GEMM's.")
    amd_scale: Coefficient = Field(
        default_factory=lambda: Coefficient(value=1.0, kind="assumed", source="no AMD correction"),
        description="Bandwidth and compute efficiency on AMD Instinct GPUs (ROCm kernels) x the NVIDIA-measured curves.",
    )
    cpu_bandwidth_efficiency: Coefficient | None = Field(default=None, description="Fraction of CPU memory bandwidth reached (CPU engines).")
    sampler_s_per_vocab: Coefficient | None = Field(
        default=None, description="Host time per sampled sequence per step per vocabulary entry: servers that sample on the CPU "
        "over the whole vocabulary, one slot after another, between steps (llama-server's common_sampler).")
    prompt_host_s: Coefficient | None = Field(
        default=None, description="Time per prompt batch inside the server's step loop beyond the GPU prompt time (llama-server: "
        "measured as its prompt eval less llama-batched-bench's): holds the slot and stalls the other slots' decodes.")
    prompt_host_s_per_token: Coefficient | None = Field(
        default=None, description="The same, per prompt token in the batch.")
    request_overhead_s: Coefficient = Field(
        default_factory=lambda: Coefficient(value=0.003, kind="assumed", source="HTTP request, tokenisation, first schedule and detokenisation: a few ms (assumed)",
                                            bounds=(0.0005, 0.05)),
        description="Host time of one request outside the engine steps (HTTP, tokenisation, scheduling, first sampling): added to TTFT.",
    )
    moe_routing_kernels: float = Field(default=4, ge=0, description="Kernels per MoE layer that route tokens (top-k, sort/align, permute, combine).")
    expert_matvec_max_rows: int = Field(
        default=0, ge=0, description="Rows (tokens) per step up to which the engine runs the routed experts as its mat-vec "
        "over the selected experts' ids (the experts' bytes at the expert kernel class's mat-vec bandwidth, no tile padding) "
        "instead of a grouped GEMM; 0: never (llama.cpp: 1, ggml-cuda.cu ggml_cuda_mul_mat_id).")
    moe_routing_source: str = "vLLM fused_moe: topk_softmax, moe_align_block_size, the fused expert kernels' gather and moe_sum (model_executor/layers/fused_moe)"
    hybrid_state_ratio: float | None = Field(
        default=None, gt=0, description="Hybrid (Mamba / DeltaNet) models: recurrent-state pool : KV pool memory ratio r; the engine "
        "runs at most (KV memory x r / (1 + r)) / state per request at once (SGLang's mamba_full_memory_ratio).",
    )
    hybrid_state_source: str | None = None
    versions: list[SpeedVersion] = Field(default_factory=list, description="Coefficients by engine version range (newest last).")
    measured_on: list[MeasuredSetup] = Field(default_factory=list, description="Coefficients measured on a GPU type (override there).")
    version_range: str | None = Field(default=None, description="The range these coefficients are for (set by engine_speed).")
    fit: dict | None = Field(default=None, description="Points, sources and leave-one-source-out error of the fit.")
    source: str


def version_row(profile: EngineSpeed, version: str | None) -> SpeedVersion | None:
    """The version range of ``profile`` that holds ``version`` (None: the newest; older than all: the oldest)."""
    if not profile.versions:
        return None
    if version is None:
        return profile.versions[-1]
    for row in profile.versions:
        if row.covers(version):
            return row
    return profile.versions[-1] if version_key(version) >= version_key(profile.versions[-1].first) else profile.versions[0]


def profile_key(name: str, row: SpeedVersion | None) -> str:
    """The key of one engine version range in data/speed/fitted.yaml (``vllm@0.8``), or the engine's name."""
    return f"{name}@{row.first}" if row is not None else name
