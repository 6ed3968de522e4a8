"""The typed result of the hardware-facts stage."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FigureSource = Literal["probe", "catalog"]


class GPUInfo(BaseModel):
    """One GPU model's figures. Probed figures win over catalog ones; ``source`` says which answered."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Catalog name, e.g. 'A100-80GB' (the probed name when no entry matched).")
    vendor: Literal["nvidia", "amd", "intel"] = "nvidia"
    memory_bytes: int = Field(gt=0, description="Total device memory in bytes.")
    free_memory_bytes: int | None = Field(default=None, description="Free memory when probed.")
    compute_capability: float = Field(description="CUDA compute capability, e.g. 8.0 (0.0 for non-NVIDIA).")
    memory_bandwidth_bytes_per_s: float = Field(gt=0, description="Peak DRAM bandwidth.")
    tflops: dict[str, float] = Field(
        default_factory=dict,
        description="Dense (no sparsity) peak tensor TFLOPS by dtype: fp32, fp16, bf16, fp8, int8.",
    )
    sm_clock_mhz: int | None = None
    interconnect: Literal["nvlink", "pcie", "infinity-fabric"] = "pcie"
    interconnect_bandwidth_bytes_per_s: float = Field(
        gt=0, description="Per-GPU bandwidth to its peers (one direction)."
    )
    mig_enabled: bool | None = None
    source: FigureSource = "catalog"


class CPUInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cores: int
    memory_bytes: int
    name: str | None = None


class HardwareFacts(BaseModel):
    """What the plan runs on: ``gpus_per_node`` identical GPUs on each of ``nodes`` nodes, or the CPU."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["gpu", "cpu"]
    gpus: list[GPUInfo] = Field(default_factory=list, description="The GPUs of one node.")
    nodes: int = Field(default=1, ge=1)
    cpu: CPUInfo | None = None
    source: FigureSource = Field(description="probe: NVML/psutil on this machine; catalog: named with --gpu.")
    notes: list[str] = Field(default_factory=list, description="What the probe could not do, in words.")

    @property
    def gpus_per_node(self) -> int:
        return len(self.gpus)

    @property
    def total_gpus(self) -> int:
        return len(self.gpus) * self.nodes

    @property
    def gpu(self) -> GPUInfo | None:
        """The (first) GPU model; plans assume identical GPUs within a node."""
        return self.gpus[0] if self.gpus else None
