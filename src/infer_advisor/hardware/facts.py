"""The typed result of the hardware-facts stage."""


from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FigureSource = Literal["probe", "catalog", "spec"]  # spec: a GPU the user described with --gpu


class GPUInfo(BaseModel):
    """One GPU model's figures. Probed figures win over catalog ones; ``source`` says which answered."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(description="Catalog name, e.g. 'A100-80GB' (the probed name when no entry matched).")
    vendor: Literal["nvidia", "amd", "intel"] = Field(default="nvidia", description="GPU maker.")
    memory_bytes: int = Field(gt=0, description="Total device memory in bytes.")
    free_memory_bytes: int | None = Field(default=None, description="Free memory when probed.")
    compute_capability: float = Field(description="CUDA compute capability, e.g. 8.0 (0.0 for non-NVIDIA).")
    gfx_arch: str | None = Field(default=None, description="AMD GPU architecture, e.g. gfx942 (None for NVIDIA).")
    memory_bandwidth_bytes_per_s: float = Field(gt=0, description="Peak DRAM bandwidth.")
    tflops: dict[str, float] = Field(
        default_factory=dict,
        description="Dense (no sparsity) peak tensor TFLOPS by dtype: fp32, fp16, bf16, fp8, int8.",
    )
    sm_clock_mhz: int | None = Field(default=None, description="Max SM clock in MHz when probed.")
    interconnect: Literal["nvlink", "pcie", "infinity-fabric"] = Field(
        default="pcie", description="How this GPU reaches its peers in the node."
    )
    interconnect_bandwidth_bytes_per_s: float = Field(
        gt=0, description="Per-GPU bandwidth to its peers (one direction)."
    )
    mig_enabled: bool | None = Field(default=None, description="MIG mode when probed; None: unknown or unsupported.")
    source: FigureSource = Field(default="catalog", description="probe: NVML on this machine; catalog: gpus.yaml.")
    # Added fields (append-only): where each figure came from, and what the catalog says about the entry.
    figure_sources: dict[str, FigureSource] = Field(
        default_factory=dict,
        description="Per figure (field name or 'tflops'), whether NVML measured it ('probe') or the catalog gave it.",
    )
    probed_name: str | None = Field(default=None, description="The device name exactly as NVML reported it.")
    aliases: list[str] = Field(default_factory=list, description="Other names that resolve to this catalog entry.")
    memory_type: str | None = Field(default=None, description="DRAM kind from the catalog, e.g. HBM3e, GDDR6X.")
    nvlink_active_links: int | None = Field(default=None, description="Active NVLink links when probed.")
    catalog_source: str | None = Field(
        default=None, description="Datasheet or document the catalog figures come from (None: not in the catalog)."
    )
    catalog_notes: str | None = Field(default=None, description="Caveats the catalog records for this GPU.")
    unified_memory: bool = Field(
        default=False, description="Memory shared with the CPU and the OS (DGX Spark): the model gets less than memory_bytes."
    )
    driver_memory_bytes: int | None = Field(default=None, description="Total the driver reports (NVML / nvidia-smi), when known.")
    usable_memory_bytes: int | None = Field(
        default=None,
        description="Total CUDA gives a process (torch.cuda.mem_get_info): what vLLM, SGLang and TGI budget on. Plans use it.",
    )
    usable_memory_source: str | None = Field(default=None, description="Where usable_memory_bytes comes from.")

    @property
    def budget_memory_bytes(self) -> int:
        """The total a plan budgets on: the CUDA-visible total when known, else memory_bytes."""
        return self.usable_memory_bytes or self.memory_bytes


class CPUInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    cores: int = Field(description="Logical CPU cores (what os.cpu_count() reports).")
    memory_bytes: int = Field(description="Total RAM in bytes.")
    name: str | None = Field(default=None, description="CPU model name, when the OS says.")
    physical_cores: int | None = Field(default=None, description="Physical cores, when psutil can tell.")
    available_memory_bytes: int | None = Field(default=None, description="RAM available when probed.")
    simd: Literal["avx512", "avx2"] | None = Field(
        default=None, description="Widest x86 vector extension the CPU reports (/proc/cpuinfo flags), when probed."
    )


class HardwareFacts(BaseModel):
    """What the plan runs on: ``gpus_per_node`` identical GPUs on each of ``nodes`` nodes, or the CPU."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    kind: Literal["gpu", "cpu"] = Field(description="gpu: run on the GPUs; cpu: no GPU, run on the CPU.")
    gpus: list[GPUInfo] = Field(default_factory=list, description="The GPUs of one node.")
    nodes: int = Field(default=1, ge=1, description="Identical nodes, each with `gpus`.")
    cpu: CPUInfo | None = Field(default=None, description="This machine's CPU (kind='cpu').")
    source: FigureSource = Field(description="probe: NVML/psutil on this machine; catalog: named with --gpu.")
    notes: list[str] = Field(default_factory=list, description="What the probe could not do, in words.")
    driver_version: str | None = Field(default=None, description="NVIDIA driver version when probed.")
    spec: str | None = Field(
        default=None, description="The hardware spec this was resolved from, e.g. 'H100-80GB:8x2'."
    )

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
