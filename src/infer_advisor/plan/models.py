"""The plan: the typed result of :func:`infer_advisor.advise`, and the stable JSON contract.

``DeploymentPlan.model_dump(mode="json")`` is what `infer-advisor plan --json` prints and
``DeploymentPlan.model_json_schema()`` is the published schema (`infer-advisor schema`). Fields are
added over time, never renamed.
"""


from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._field_defaults import empty_dict, empty_list

from ..engines.lora import LoRASlots
from ..estimate.memory import MemoryEstimate
from ..estimate.speed import PerformanceEstimate
from ..capacity.result import CapacityResult
from ..request import PlanRequest

SCHEMA_VERSION = "1"


class ModelSummary(BaseModel):
    model_config = ConfigDict(defer_build=True)
    name: str
    source: Literal["local", "hub", "catalog"] = Field(description="Which source answered: local, hub or catalog.")
    architecture: str
    family: str
    num_parameters: int
    num_active_parameters: int
    max_position_embeddings: int
    num_active_parameters_without_embedding: int = Field(
        default=0, description="Parameters per token without the input embedding, as model cards count them."
    )
    torch_dtype: str
    pre_quantized: str | None = None
    path: str | None = Field(default=None, description="Local directory when the model was read from disk.")
    model_type: str | None = Field(default=None, description="config.json model_type, e.g. llama (picks MLC's conversation template).")


class GPUSummary(BaseModel):
    model_config = ConfigDict(defer_build=True)
    name: str
    memory_bytes: int
    compute_capability: float
    memory_bandwidth_bytes_per_s: float
    interconnect: str
    source: str = Field(description="probe (NVML on this machine) or catalog.")
    vendor: str = Field(default="nvidia", description="nvidia, amd or intel: picks the images and device plumbing of the artifacts.")
    product_names: list[str] = Field(
        default_factory=empty_list, description="Names the vendor's driver reports for this GPU (NVML names), for node selection."
    )
    usable_memory_bytes: int | None = Field(default=None, description="What CUDA gives a process: the total plans budget on.")
    usable_memory_source: str | None = Field(default=None, description="Where usable_memory_bytes comes from.")
    gfx_arch: str | None = Field(default=None, description="AMD GPU architecture, e.g. gfx942 (None for NVIDIA).")


class HardwareSummary(BaseModel):
    model_config = ConfigDict(defer_build=True)
    kind: Literal["gpu", "cpu"]
    gpus: list[GPUSummary] = Field(description="GPUs of one node (all identical).")
    gpus_per_node: int
    nodes: int
    cpu_cores: int | None = None
    cpu_simd: str | None = Field(default=None, description="CPU vector extension probed (avx512, avx2): sets the CPU compute ceiling.")
    cpu_memory_bytes: int | None = None
    source: str
    notes: list[str] = Field(default_factory=empty_list)


class MemoryPlan(MemoryEstimate):
    """The memory model's figures for the chosen layout (all ``estimated``)."""


class EngineConfig(BaseModel):
    model_config = ConfigDict(defer_build=True)
    name: str = Field(description="vllm, sglang, tgi, ctranslate2, llama.cpp, transformers, trtllm, mlc, exllamav2 or mistralrs.")
    version: str = Field(description="Engine version the emitted flags target.")
    image: str = Field(description="Pinned container image.")
    http_server: bool = Field(description="False for engines without a server (CTranslate2, transformers): the artifact is a script.")
    port: int | None
    health_path: str | None
    max_model_len: int = Field(description="Longest request (prompt + output) the engine accepts.")
    max_num_seqs: int = Field(description="Requests scheduled at once.")
    max_num_batched_tokens: int | None = None
    gpu_memory_utilization: float | None = Field(
        default=None, description="Reserve engines: fraction of total memory (TensorRT-LLM: of the memory free after weights)."
    )
    kv_cache_dtype: str = "auto"
    served_model_name: str
    alternative: str | None = Field(default=None, description="A named alternative engine for the same plan.")
    # Added fields (append-only).
    defaults: dict[str, float | int | str | None] = Field(
        default_factory=empty_dict,
        description="The engine version's own values of the settings above on this GPU; launch scripts pass only settings that differ.",
    )
    memory_profile: str | None = Field(default=None, description="The engine memory profile (version range) the plan's memory figures use.")
    server: Literal["triton"] | None = Field(
        default=None,
        description="The server in front of the engine when it is not the engine's own: triton (Triton Inference Server's "
        "TensorRT-LLM backend, --stack nvidia-triton; image, port and health path are Triton's, served_model_name is "
        "the Triton model).",
    )
    server_version: str | None = Field(default=None, description="Triton release (yy.mm) whose container ships the engine version.")
    lora: LoRASlots | None = Field(default=None, description="LoRA adapter slots (--lora-adapters), or None without adapters.")
    enforce_eager: bool = Field(default=False, description="No CUDA graphs (vLLM --enforce-eager, SGLang --disable-cuda-graph).")


class PublishedCheckpointRef(BaseModel):
    model_config = ConfigDict(defer_build=True)
    repo: str = Field(description="Hub id the engine loads instead of the base model.")
    method: str
    file: str | None = Field(default=None, description="GGUF quant tag (`llama-server -hf REPO:TAG`).")
    format: str | None = Field(default=None, description="Checkpoint format as engines detect it (data/formats_by_platform.yaml).")
    size_bytes: int | None = Field(
        default=None, description="Weight bytes the repository states, if it does; the memory model then plans with them."
    )
    source: str = Field(description="Where the checkpoint is listed: the data file's model-card URL, or the Hub's answer.")
    size_source: str | None = Field(default=None, description="Where size_bytes was read (safetensors index or model card).")
    origin: Literal["published checkpoint"] = "published checkpoint"


class QuantizationPlan(BaseModel):
    model_config = ConfigDict(defer_build=True)
    method: str = Field(description="'none' when unquantized; else awq, gptq, compressed-tensors-w4a16, fp8, int8, ct2-int8, gguf-*.")
    bits: float | None = None
    group_size: int | None = None
    pre_quantized: bool = Field(default=False, description="The checkpoint is already quantized; nothing to run.")
    engine_flag: str | None = Field(default=None, description="Value for the engine's --quantization flag, or None to let it detect.")
    needs_quantize_step: bool = Field(default=False, description="`infer-advisor quantize` must run before launch.")
    converter: str | None = Field(
        default=None, description="The engine's own conversion tool the artifacts run first (MLC convert_weight, ExLlamaV2 convert_exl2)."
    )
    published_checkpoint: PublishedCheckpointRef | None = Field(
        default=None,
        description="A published checkpoint already in this format: the engine serves it and nothing is quantized "
        "(source 'published checkpoint'); `infer-advisor quantize` stays the fallback.",
    )


class Parallelism(BaseModel):
    model_config = ConfigDict(defer_build=True)
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    nodes: int = 1
    replicas: int = Field(default=1, description="Independent copies over the remaining GPUs (data parallel).")
    executor: Literal["mp", "ray", "none"] = Field(default="mp", description="vLLM distributed executor: ray across nodes.")
    expert_parallel: bool = Field(default=False, description="MoE experts spread over the ranks (vLLM --enable-expert-parallel).")
    data_parallel_size: int = Field(default=1, description="Replicas one engine process runs together (pinned --data-parallel-size).")


class SpeculativePlan(BaseModel):
    """Speculative decoding with a published draft head (data/speculative.yaml); its memory is in ``plan.memory``."""

    model_config = ConfigDict(defer_build=True)
    method: str = Field(description="eagle3 (an EAGLE-3 head) or draft (a small draft model).")
    draft_model: str = Field(description="Hub id of the draft head.")
    num_speculative_tokens: int
    draft_params: int = Field(description="Parameters of the draft head, counted in the memory model.")
    source: str
    params_source: str
    config: str | None = Field(default=None, description="The --speculative-config the user gave, passed to the engine as given.")


class PrefixCachingPlan(BaseModel):
    """Whether the engine reuses shared prompt prefixes, and the workload's shared prefix (--shared-prefix-tokens)."""

    model_config = ConfigDict(defer_build=True)
    enabled: bool
    shared_prefix_tokens: int | None = Field(default=None, description="Prompt tokens every request shares, as asked.")
    how: str = Field(description="What the artifacts do: keep the engine's default, or pass its flag.")
    source: str


class Decision(BaseModel):
    model_config = ConfigDict(defer_build=True)
    rule_id: str
    decides: str = Field(description="What the rule decided: engine, quantization, dtype, kv_cache_dtype, layout, context.")
    value: str
    effect: str = Field(description="forbid, prefer, require or set.")
    reason: str
    source: str | None = None


class RuleTrace(BaseModel):
    """One rule as it was considered (for --explain)."""
    model_config = ConfigDict(defer_build=True)

    rule_id: str
    decides: str
    matched: bool
    applied_to: str = Field(description="The option or candidate it was evaluated against.")
    why: str = Field(description="The condition's outcome in words.")
    context: str = Field(
        default="",
        description="The choices already made when the option was judged: the engine (for dtype, KV-cache dtype and "
        "quantization), engine + quantization (for layouts); empty for engines. With applied_to it names the candidate.",
    )
    effect: str | None = Field(default=None, description="The rule's effect: forbid, prefer or require.")
    score: float = Field(default=0.0, description="What the rule added to the option's score (prefer rules that matched).")
    blocked: bool = Field(default=False, description="The rule made the option not allowed (forbid, or require of another option).")


class DeploymentPlan(BaseModel):
    model_config = ConfigDict(defer_build=True)
    """A deployment decision with every figure's origin; render it with :meth:`render`."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    schema_version: str = SCHEMA_VERSION
    feasible: bool
    infeasible_reason: str | None = None
    suggestion: str | None = Field(default=None, description="Smallest catalog hardware that would work, when infeasible.")
    request: PlanRequest
    model: ModelSummary
    hardware: HardwareSummary
    engine: EngineConfig
    quantization: QuantizationPlan
    dtype: str
    parallelism: Parallelism
    memory: MemoryPlan
    performance: PerformanceEstimate | None = None
    decisions: list[Decision] = Field(default_factory=empty_list)
    warnings: list[str] = Field(default_factory=empty_list)
    explain: list[RuleTrace] | None = Field(default=None, description="Every rule considered, with --explain.")
    speculative: SpeculativePlan | None = Field(default=None, description="Speculative decoding, when the plan uses it.")
    prefix_caching: PrefixCachingPlan | None = Field(default=None, description="The engine's prefix caching as the artifacts set it.")
    capacity: CapacityResult | None = Field(
        default=None, description="With --rate: the fleet sizing (chosen option, best per GPU type, front, binding target)."
    )

    def __repr__(self) -> str:
        """Short: model, hardware, engine, layout and verdict; ``model_dump()`` has everything."""
        hw = self.hardware
        where = "CPU" if hw.kind == "cpu" else f"{hw.gpus_per_node}x {hw.gpus[0].name}" + (f" x {hw.nodes} nodes" if hw.nodes > 1 else "")
        p = self.parallelism
        layout = f"TP{p.tensor_parallel_size} x PP{p.pipeline_parallel_size}, {p.replicas} replica" + ("" if p.replicas == 1 else "s")
        verdict = "feasible" if self.feasible else "NOT feasible"
        return (f"DeploymentPlan(model={self.model.name!r}, hardware={where!r}, engine={self.engine.name + ' ' + self.engine.version!r}, "
                f"layout={layout!r}, verdict={verdict!r})")

    __str__ = __repr__

    def render(self, kind: str, out: str | Path | None = None, **options: Any):
        """Render launch artifacts (``script``, ``docker``, ``compose``, ``k8s``, ``all``); write them under ``out`` if given."""
        from ..emit import render

        return render(self, kind, out=out, **options)
