"""Engine profiles (``data/engines.yaml``): versions, images, ports and memory accounting per engine.

    >>> from infer_advisor.engines.profiles import engine_profile
    >>> engine_profile("vllm").memory_fraction
    0.92
"""


from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped

EngineName = Literal[
    "vllm", "sglang", "tgi", "ctranslate2", "llama.cpp", "transformers", "trtllm", "mlc", "exllamav2", "mistralrs"
]
ENGINE_NAMES: tuple[str, ...] = (
    "vllm", "sglang", "tgi", "ctranslate2", "llama.cpp", "transformers", "trtllm", "mlc", "exllamav2", "mistralrs"
)


class EngineProfile(BaseModel):
    """One engine's fixed facts; each figure has a ``*_source`` sibling saying where it came from."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = ""
    display: str
    alternative: str | None = Field(default=None, description="The engine a plan names as the other good choice.")
    served_model_name: str | None = Field(
        default=None, description="The model name the server answers to whatever the model; None: the model's own name."
    )
    version: str = Field(description="Engine version the templates and flags target.")
    image: str = Field(description="Official container image, pinned (never latest).")
    rocm_image: str | None = Field(default=None, description="The engine's ROCm image for AMD GPUs (None: no ROCm build emitted).")
    rocm_image_by_gpu: dict[str, str] = Field(default_factory=dict, description="ROCm image per AMD GPU name, where it differs.")
    rocm_image_source: str | None = None
    http_server: bool
    health_path: str | None
    port: int | None
    port_source: str = ""
    memory_accounting: Literal["reserve", "peak", "reserve-free"] = Field(
        description="reserve: a fraction of total memory; reserve-free: a fraction of what is free after weights; peak: grows."
    )
    memory_fraction: float = Field(gt=0, le=1)
    memory_fraction_source: str
    non_torch_bytes: int = Field(ge=0)
    non_torch_source: str
    nccl_bytes: int = Field(ge=0)
    nccl_source: str
    cuda_graph_bytes: int = Field(ge=0)
    cuda_graph_source: str
    max_num_batched_tokens: int = Field(ge=0)
    max_num_batched_tokens_source: str
    max_num_seqs: int = Field(gt=0)
    max_num_seqs_source: str
    block_size: int = Field(gt=0)
    block_size_source: str
    min_compute_capability: float
    min_compute_capability_source: str
    runs_on: list[Literal["gpu", "cpu"]]
    quantizations: list[str] = Field(description="Weight formats the engine loads (see data/formats.yaml).")
    maintenance_note: str | None = None
    kv_preallocated: bool = Field(default=False, description="KV for every slot's full context is allocated at start (llama.cpp n_ctx).")
    prefix_caching: Literal["default-on", "flag", "none"] = Field(
        default="none", description="Whether the server reuses shared prompt prefixes: on by default, behind a flag, or not at all."
    )
    prefix_caching_source: str = ""
    speculative: list[Literal["eagle3", "draft"]] = Field(
        default_factory=list, description="Speculative-decoding methods the server takes on its command line."
    )
    speculative_source: str = ""
    batched_tokens_at_least_seqs: bool = Field(
        default=False, description="The engine refuses max_num_batched_tokens below max_num_seqs at start-up."
    )
    batched_tokens_at_least_seqs_source: str = ""
    load_time_quantizations: list[str] = Field(
        default_factory=list,
        description="Weight formats the engine quantizes itself at load when its quantization flag names them (the plan "
        "passes the flag only for these; pre-quantized and published checkpoints are detected by the engine).",
    )
    load_time_quantizations_source: str = ""
    own_max_num_seqs: int | None = Field(
        default=None, gt=0, description="The engine's own default batch limit where ``max_num_seqs`` above is a planning cap "
        "(what its own benchmark tools size batches to; benchmarks/speed_predict.py asks for it on offline points).",
    )
    own_max_num_seqs_source: str = ""
    auto_kv_cache_dtype: str | None = Field(
        default=None, description="The type the KV cache holds when the plan leaves kv_cache_dtype on auto, where the engine "
        "fixes it (llama.cpp: f16); None: the model's dtype.",
    )
    auto_kv_cache_dtype_source: str = ""
    in_situ_quantization: bool = Field(
        default=False, description="The engine quantizes the unquantized checkpoint while loading it (mistral.rs ISQ): "
        "that checkpoint is what is downloaded and read.",
    )
    in_situ_quantization_source: str = ""
    awq_checkpoint_format: str = Field(
        default="compressed-tensors", description="The checkpoint format `infer-advisor quantize --method awq` writes for "
        "this engine (llm-compressor's compressed-tensors; AutoAWQ's own awq where the engine loads only that).",
    )
    awq_checkpoint_format_source: str = ""
    planning_caps: list[Literal["max_num_seqs", "max_num_batched_tokens"]] = Field(
        default_factory=list,
        description="Settings whose figure above is a planning cap the launch command always passes, not the engine's own "
        "default: the plan's engine.defaults leaves them unknown (None).",
    )


class _EngineFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    engines: dict[str, EngineProfile]


@cache
def engine_profiles() -> dict[str, EngineProfile]:
    data = load_validated(shipped("data") / "engines.yaml", _EngineFile)
    return {name: p.model_copy(update={"name": name}) for name, p in data.engines.items()}


def engine_profile(name: str) -> EngineProfile:
    from ..errors import RequestError, close_matches

    profiles = engine_profiles()
    if name not in profiles:
        hint = close_matches(name, profiles)
        raise RequestError(
            f"Unknown engine '{name}'." + (f" Did you mean '{hint[0]}'?" if hint else "") + f" Choose from {', '.join(profiles)}."
        )
    return profiles[name]
