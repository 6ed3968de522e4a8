"""The emit stage's data file (``data/emit.yaml``): engine commands, container paths, pinned packages."""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped


class DownloadFacts(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    command: list[str] | None = Field(default=None, description="Command in the engine's image that fills the HF cache (+ model id).")
    env: dict[str, str] = Field(default_factory=dict, description="Variables that turn on the hub's high-performance download.")


class EngineEmitFacts(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    host_command: list[str] = Field(description="How the engine starts where it is installed.")
    container_command: list[str] = Field(description="How it starts inside its image.")
    cache_dir: str = Field(description="Hugging Face cache folder inside the image.")
    gpu_image: str | None = Field(default=None, description="Image for GPU plans when engines.yaml's is a CPU build.")
    kv_cache_dtype: dict[str, str] = Field(description="Plan kv_cache_dtype -> the engine's flag value.")
    equals_form: bool = Field(default=False, description="User-derived values are written --flag=value.")
    gpu_image_by_sm: list[int] = Field(default_factory=list, description="CUDA architectures gpu_image is built for ({sm} in it).")
    builds_image: bool = Field(default=False, description="The Dockerfile installs the engine (compose/Kubernetes run the built image).")
    entrypoint_script: bool = Field(
        default=True,
        description="With builds_image: the image runs entrypoint.sh (preparation, then the server); false: the Dockerfile "
        "prepares everything at build time and its ENTRYPOINT is the server command.",
    )
    download: DownloadFacts = Field(default_factory=DownloadFacts)
    request_names_model: bool = Field(
        default=True, description="A request names the model it asks for; false: the server answers the one model it "
        "was started with and names it after its path (MLC: the converted folder), so the first request leaves it out.",
    )
    single_gpu_reason: str | None = Field(
        default=None, description="Why artifacts for more than one GPU per replica are not emitted (None: they are).",
    )
    source: str


class EmitFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    engines: dict[str, EngineEmitFacts]
    pip_packages: dict[str, list[str]]
    pip_packages_source: str
    pip_find_links: dict[str, str] = Field(default_factory=dict)
    base_image_digests: dict[str, str] = Field(default_factory=dict, description="Base image tag -> the digest it is pinned to.")
    base_image_digests_source: str = ""
    hf_cli_package: str
    hf_cli_source: str
    apt_packages: dict[str, list[str]]
    apt_packages_source: str
    tabbyapi_git: str
    tabbyapi_source: str
    mlc_conv_templates: dict[str, str]
    mlc_conv_templates_source: str
    download_speed_mb_s: float = Field(gt=0)
    download_speed_source: str
    k8s_cpu_per_gpu: int = Field(gt=0)
    k8s_memory_base_gib: int = Field(ge=0)
    k8s_requests_source: str
    gpu_node_labels: dict[str, str] = Field(description="Vendor -> the node label that names the GPU model.")
    gpu_node_label_values: dict[str, list[str]] = Field(default_factory=dict, description="Catalog GPU -> values of that label.")
    gpu_node_labels_source: str
    rdma_resource: str
    rdma_source: str
    startup_seconds_base: int = Field(gt=0, description="Image start, engine start-up, compilation and CUDA-graph capture (s).")
    startup_floor_seconds: int = Field(gt=0, description="The smallest start-up allowance ever emitted (s).")
    startup_source: str
    load_speed_mb_s: float = Field(gt=0, description="Bytes per second a server reads its weights from the cache volume (MB/s).")
    load_speed_source: str
    download_include: list[str] = Field(description="hf download --include patterns: the files a safetensors engine loads.")
    download_exclude: list[str] = Field(description="hf download --exclude patterns: copies in other formats, never loaded.")
    download_patterns_source: str
    probe_period_seconds: int = Field(gt=0)
    probe_period_source: str
    cache_headroom: float = Field(ge=1)
    cache_headroom_source: str


@cache
def emit_facts() -> EmitFile:
    return load_validated(shipped("data") / "emit.yaml", EmitFile)


# The emit entry and template folder of a TensorRT-LLM plan served through Triton (--stack nvidia-triton).
TRITON_KEY = "trtllm-triton"


def emit_key(plan) -> str:
    """Which data/emit.yaml entry and templates/ folder a plan uses: its engine, or trtllm-triton behind Triton."""
    return TRITON_KEY if plan.engine.server == "triton" else plan.engine.name


def engine_facts(plan) -> EngineEmitFacts:
    return emit_facts().engines[emit_key(plan)]


def download_args() -> list[str]:
    """``hf download`` filters for the files a safetensors engine loads (no original/, metal/, .pth or GGUF copies)."""
    facts = emit_facts()
    return [*(x for p in facts.download_include for x in ("--include", p)), *(x for p in facts.download_exclude for x in ("--exclude", p))]
