"""What a user asks for: the one typed config surface from which `infer-advisor plan`'s flags are derived."""


from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ._field_defaults import empty_list

Goal = Literal["latency", "throughput", "balanced"]
EngineChoice = Literal[
    "auto", "vllm", "sglang", "tgi", "ctranslate2", "llama.cpp", "transformers", "trtllm", "mlc", "exllamav2", "mistralrs"
]
QuantChoice = Literal[
    "auto", "none", "awq", "gptq", "compressed-tensors-w4a16", "fp8", "int8", "ct2-int8", "gguf-q8_0", "gguf-q4_k_m", "gguf-q4_0", "gguf-f16",
    "nvfp4", "mlc-q4f16_1", "exl2", "isq-q4k", "isq-q8_0",
]
ServingChoice = Literal["auto", "server", "library"]
StackChoice = Literal["auto", "nvidia", "nvidia-triton"]
SpeculativeChoice = Literal["auto", "off"]
DTypeChoice = Literal["auto", "bfloat16", "float16", "float32"]
KVDTypeChoice = Literal["auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"]
ModelSourceChoice = Literal["auto", "local", "hub", "catalog"]
LengthDistribution = Literal["fixed", "uniform", "exponential", "lognormal", "normal"]


class PlanRequest(BaseModel):
    """Options of :func:`infer_advisor.advise` and `infer-advisor plan` (each field is one flag)."""

    model_config = ConfigDict(extra="forbid", defer_build=True, allow_inf_nan=False)

    model: str = Field(
        default="meta-llama/Llama-2-7b-hf",
        description="Hugging Face model id, local directory with config.json, or a catalog name (see `infer-advisor models`).",
    )
    gpu: str = Field(
        default="auto",
        description="GPUs: 'auto' probes this machine with NVML; or NAME[:COUNT][xNODES] such as 'H100-80GB:8x2', 'T4', 'cpu'; "
        "or a GPU the catalog lacks, inline with every field (or as a YAML/JSON file of them, PATH[:COUNT]): "
        "'{name: RTX-3080-Laptop, memory_gib: 16, memory_bandwidth_gb_s: 448, tflops: {fp16: 60, bf16: 60}, "
        "compute_capability: 8.6, interconnect: pcie, interconnect_gb_s: 16}:2'.",
    )
    goal: Goal = Field(default="throughput", description="What to optimise: latency (batch 1), throughput, or balanced.")
    context: int | None = Field(
        default=None, gt=0, le=10_000_000, description="Tokens per request (prompt + output) the deployment must hold; default: the model's full context, lowered to what fits."
    )
    concurrency: int | None = Field(
        default=None, gt=0, le=4096, description="Requests in flight at once; default by goal (latency 1, balanced 8, throughput 32)."
    )
    requests: int | None = Field(
        default=None, gt=0, le=100_000,
        description="A finite run of this many requests sent at once (an offline batch, or `vllm bench serve` at request rate "
        "inf; with --concurrency below it, that many in flight at a time): throughput is then their tokens over the time until "
        "the last one finishes, lengths spread by --input-distribution/--output-distribution. Default: a steady state at "
        "--concurrency.",
    )
    input_tokens: int | None = Field(default=None, gt=0, le=10_000_000, description="Typical prompt length, for speed predictions (default 512).")
    output_tokens: int | None = Field(default=None, gt=0, le=10_000_000, description="Typical output length, for speed predictions (default 200).")
    engine: EngineChoice = Field(default="auto", description="Engine to use; 'auto' lets the rules choose. A forbidden choice is refused with the rule's reason.")
    quantization: QuantChoice = Field(default="auto", description="Weight quantization; 'auto' lets the rules choose, 'none' keeps the model dtype.")
    dtype: DTypeChoice = Field(default="auto", description="Activation/weight dtype; 'auto' picks bfloat16 where the GPU supports it.")
    kv_cache_dtype: KVDTypeChoice = Field(
        default="auto",
        description="KV-cache dtype, as the engine's --kv-cache-dtype: auto is the engine's auto (the model dtype); bfloat16/float16 "
        "force one; fp8 (= fp8_e4m3 in vLLM/SGLang/TGI, q8_0 in llama.cpp) and fp8_e5m2 halve the cache. Unset, the plan "
        "keeps the model dtype and turns to fp8 only to keep an explicit --context.",
    )
    gpu_memory_utilization: float | None = Field(
        default=None, ge=0.05, le=1, description="Fraction of each GPU the engine may reserve (vLLM/SGLang/TGI); default: the engine's own."
    )
    max_num_batched_tokens: int | None = Field(
        default=None, gt=0, le=2_097_152, description="Prefill chunk the engine schedules per step; default: the engine version's own for the GPU."
    )
    rules: Path | None = Field(default=None, description="Folder of extra rule files layered over the shipped rules by id.")
    calibration: list[Path] = Field(
        default_factory=empty_list,
        description="Calibration files from `infer-advisor calibrate` (comma-separated): a speed profile and/or memory calibrations "
        "from start-up logs (--from-log). Each must match the plan's engine, engine version and GPU.",
    )
    model_source: ModelSourceChoice = Field(default="auto", description="Where to read model facts: auto (local, then Hub when online, then catalog), local, hub or catalog.")
    revision: str | None = Field(default=None, description="Hub revision (branch, tag or commit) of the model.")
    # Fields added for engines, platforms and artifacts (issue 12); appended so other field additions merge cleanly.
    serving: ServingChoice = Field(
        default="auto",
        description="server: an HTTP server deployment, never a library-only engine (CTranslate2, transformers); library: an "
        "in-process generation script is wanted; auto: a server unless such an engine is named with --engine.",
    )
    stack: StackChoice = Field(
        default="auto",
        description="nvidia: peak NVIDIA performance on NVIDIA's enterprise stack (TensorRT-LLM trtllm-serve, NGC image); "
        "nvidia-triton: the same engine served through Triton Inference Server's TensorRT-LLM backend (for teams that "
        "standardise on Triton); auto: the rules choose among the open-source engines.",
    )
    shared_prefix_tokens: int | None = Field(
        default=None, ge=0, le=10_000_000, description="Prompt tokens every request shares (system prompt, chat history); the engine's prefix caching is turned on for them."
    )
    speculative: SpeculativeChoice = Field(
        default="auto",
        description="auto: speculative decoding for the latency goal where the engine supports it and a draft head is published for the model; off: never.",
    )
    speculative_config: str | None = Field(
        default=None, max_length=2000,
        description="vLLM's --speculative-config JSON, e.g. '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}' (the model's "
        "own MTP layers) or a dflash/eagle3/draft_model draft named in data/speculative.yaml: its weights, its layers in the KV "
        "pool and the state it adds are planned, and the flag is passed to vLLM as given; other engines are not planned with it.",
    )
    download_speed: float | None = Field(
        default=None, gt=0, le=1_000_000, description="Download speed of the model weights in MB/s, for the start-up allowance (default: the assumption in data/emit.yaml)."
    )
    network: Literal["tcp", "rdma"] = Field(
        default="tcp",
        description="How multi-node artifacts link the nodes: tcp (NCCL over TCP, starts anywhere) or rdma (InfiniBand/RoCE "
        "devices, IPC_LOCK and the RDMA device-plugin resource: only where that hardware and plugin exist).",
    )
    startup_timeout: int | None = Field(
        default=None, gt=0, le=86_400, description="Seconds a server may take to become healthy (download + load); overrides the computed allowance."
    )
    engine_version: str | None = Field(
        default=None,
        description="Engine version to plan for (memory profile, per-GPU defaults, emitted flags), e.g. 0.7.3; needs --engine; "
        "default: the version the artifacts pin.",
    )
    calibration_mismatch: Literal["refuse", "warn"] = Field(
        default="refuse", description="A calibration made for another engine, engine version or GPU: refuse it, or apply it with a warning."
    )

    # Capacity planning and layout (issue 10): traffic, latency targets, prices, and pins for every layout dimension.
    rate: float | None = Field(
        default=None, gt=0, le=1_000_000,
        description="Requests per second the deployment must serve: the plan then sizes the fleet (replicas, GPU type with "
        "--gpu any or a list) by simulating continuous batching against the latency targets.",
    )
    input_distribution: LengthDistribution = Field(
        default="fixed", description="How prompt lengths vary around --input-tokens: fixed, uniform, exponential, lognormal or normal."
    )
    output_distribution: LengthDistribution = Field(
        default="fixed", description="How answer lengths vary around --output-tokens (same choices)."
    )
    lengths_file: Path | None = Field(
        default=None,
        description="JSONL of real requests, one {\"input_tokens\": N, \"output_tokens\": M} per line (optional \"arrival_s\", "
        "\"cached_tokens\", and \"adapter\": the LoRA adapter it names, null for the base model, which sets the adapter mix "
        "of --lora-adapters); replaces --input-tokens/--output-tokens for sizing.",
    )
    ttft_p90: float | None = Field(default=None, gt=0, le=3600, description="Target: 90th-percentile time to first token, seconds.")
    ttft_p99: float | None = Field(default=None, gt=0, le=3600, description="Target: 99th-percentile time to first token, seconds.")
    itl_p99: float | None = Field(default=None, gt=0, le=60, description="Target: 99th-percentile gap between tokens, seconds.")
    e2e_p90: float | None = Field(default=None, gt=0, le=86400, description="Target: 90th-percentile end-to-end latency, seconds.")
    price_per_gpu_hour: str | None = Field(
        default=None,
        description="USD per GPU-hour: one number for every GPU, or GPU=PRICE,... (default: the catalog's dated on-demand price).",
    )
    confidence: float = Field(
        default=0.5, ge=0.5, le=0.99,
        description="Sizing: how sure the fleet must be to hold if the speed model is optimistic; above 0.5 each replica's "
        "rate is divided by the upper edge of the engine's held-out error band (0.9: its 90th-percentile error).",
    )
    headroom: bool = Field(
        default=True, description="Sizing: replicas run at most 85 percent of what each sustains, and the fleet gets one spare "
        "replica (N+1) (rule sizing.headroom-n-plus-one); --no-headroom sizes to the rate alone.",
    )
    tensor_parallel_size: int | None = Field(default=None, ge=1, le=1024, description="Pin tensor parallelism (GPUs one layer is split over).")
    pipeline_parallel_size: int | None = Field(default=None, ge=1, le=256, description="Pin pipeline parallelism (stages, within a node or across nodes).")
    replicas: int | None = Field(default=None, ge=1, le=100_000, description="Pin the number of independent replicas (data parallel).")
    data_parallel_size: int | None = Field(
        default=None, ge=1, le=1024,
        description="Pin replicas that one engine process runs together (vLLM --data-parallel-size; with MoE and expert parallelism they share experts).",
    )
    enable_expert_parallel: bool | None = Field(
        default=None, description="MoE: spread experts over the GPUs instead of splitting each expert (default: tried both ways when sizing)."
    )
    max_num_seqs: int | None = Field(default=None, gt=0, le=65536, description="Sequences the engine schedules at once; default: the engine version's own.")
    enforce_eager: bool = Field(
        default=False, description="Run the engine without CUDA graphs (vLLM --enforce-eager, SGLang --disable-cuda-graph): no "
        "graph pool in memory (vLLM 0.20 and later give it to the KV cache), slower decode at small batches.",
    )
    lora_adapters: int = Field(default=0, ge=0, le=100_000, description="LoRA adapters to serve on the base model (vLLM --enable-lora; 0: none).")
    max_lora_rank: int | None = Field(default=None, gt=0, le=4096, description="Largest rank among the adapters (default: the engine's, 16 in vLLM).")

    @field_validator("model", "gpu", "revision", "price_per_gpu_hour")
    @classmethod
    def _safe_text(cls, value, info):
        """Names, specs and revisions hold no control, line-separator or bidi character (they reach artifacts)."""
        from .untrusted import refuse_unsafe

        return value if value is None else refuse_unsafe(value, f"--{info.field_name.replace('_', '-')}")

    @field_validator("rules", "lengths_file", "calibration")
    @classmethod
    def _safe_paths(cls, value, info):
        from .untrusted import refuse_unsafe

        for path in value if isinstance(value, list) else [value]:
            if path is not None:
                refuse_unsafe(str(path), f"--{info.field_name.replace('_', '-')}")
        return value

    @field_validator("*", mode="before")
    @classmethod
    def _no_bools_as_numbers(cls, value, info):
        """True is not 1: a bool given for a number (the Python API) is refused, not read as 1 or 0."""
        annotation = str(cls.model_fields[info.field_name].annotation)
        if isinstance(value, bool) and ("int" in annotation or "float" in annotation) and "bool" not in annotation:
            raise ValueError(f"--{info.field_name.replace('_', '-')} is a number, not {value}")
        return value

    @model_validator(mode="after")
    def _gpu_list_without_counts(self):
        """A list of GPU types takes no counts (they were dropped without a word)."""
        if searches_gpu_types(self.gpu) and ":" in self.gpu:
            raise ValueError(f"--gpu {self.gpu}: a list of GPU types takes names only (the sizing chooses the count); "
                             "pin one type and count with --gpu NAME:COUNT.")
        return self

    @field_validator("engine_version")
    @classmethod
    def _version(cls, value):
        """A strict version ('v0.19.0' is read as '0.19.0'): it becomes an image tag and a comment in artifacts."""
        from .untrusted import check_version

        return value if value is None else check_version(value)

    @field_validator("calibration", mode="before")
    @classmethod
    def _calibration_list(cls, value):
        """Accept one path, a comma-separated string, or a list (the Python API's single path keeps working)."""
        if value is None:
            return []
        if isinstance(value, (str, Path)):
            return [p.strip() for p in str(value).split(",") if p.strip()]
        return value


def check_api_arguments(request, model, options, model_facts, hardware, progress) -> None:
    """The Python API's arguments, checked like the CLI's: a wrong type is a RequestError, never an AttributeError,
    and an argument that would be ignored (``model`` or keywords beside ``request``) is refused."""
    from .errors import RequestError

    if request is not None and not isinstance(request, PlanRequest):
        raise RequestError(f"request must be a PlanRequest, not {type(request).__name__}; pass options as keywords "
                           "(advise(model=..., gpu=...)).")
    if request is not None and (model is not None or options):
        given = ", ".join(["model"] * (model is not None) + sorted(options))
        raise RequestError(f"advise(request=...) takes no other options ({given} would be ignored); set them on the request.")
    if model is not None and not isinstance(model, str):
        raise RequestError(f"model must be a string (a Hub id, a folder or a catalog name), not {type(model).__name__}.")
    if progress is not None and not callable(progress):
        raise RequestError(f"progress must be a callable that takes a line, not {type(progress).__name__}.")
    for name, value, kind in (("model_facts", model_facts, "ModelFacts"), ("hardware", hardware, "HardwareFacts")):
        if value is not None and type(value).__name__ != kind:  # the classes sit in stages above this module
            raise RequestError(f"{name} must be {kind}, not {type(value).__name__}.")


def refuse_unused(request: PlanRequest) -> None:
    """Options that only sizing reads are refused without ``rate``: every option is used or refused, never accepted
    and ignored (called where a user's request enters, not on the sizing search's own per-option copies). The length
    spreads are read by a finite run too (``requests``); ``requests`` with ``rate`` is refused (a run at a rate is
    sized, not sent at once)."""
    from .errors import RequestError

    if request.rate is not None:
        if request.requests is not None:
            raise RequestError("--requests (a finite run sent at once) and --rate (traffic to size a fleet for) ask two "
                               "different questions: give one of them.")
        return
    spread = request.requests is None  # a finite run reads the spreads
    sizing_only = {
        "ttft_p90": request.ttft_p90, "ttft_p99": request.ttft_p99, "itl_p99": request.itl_p99, "e2e_p90": request.e2e_p90,
        "price_per_gpu_hour": request.price_per_gpu_hour, "lengths_file": request.lengths_file,
        "input_distribution": (spread and request.input_distribution != "fixed") or None,
        "output_distribution": (spread and request.output_distribution != "fixed") or None,
    }
    given = [name for name, value in sizing_only.items() if value is not None]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise RequestError(f"{flag} is used only when sizing a fleet: add --rate REQUESTS_PER_S (or drop {flag}).")


def searches_gpu_types(spec: str) -> bool:
    """True for ``--gpu any`` or a comma list of GPU names (an inline YAML spec also has commas, inside braces)."""
    spec = spec.strip()
    return spec.lower() == "any" or ("," in spec and not spec.startswith("{"))


def field_default(field) -> Any:
    """A pydantic field's default, its factory called: ``field.get_default(call_default_factory=True)`` for factories
    that take no validated data (all of ours), without the signature check pydantic makes first (for a builtin
    factory such as ``list``, ``inspect.signature`` parses its text signature: a millisecond per start)."""
    return field.default_factory() if field.default_factory is not None else field.get_default()


def with_request_signature(fn):
    """``fn`` (``advise``, ``size``) with every :class:`PlanRequest` field as a typed keyword in its signature (what
    ``inspect.signature``, IPython, Jupyter and editors that introspect show), derived from the request model so the
    two cannot drift; ``fn`` still takes them through its ``**options``."""
    import inspect
    import typing

    sig = inspect.signature(fn)
    hints = typing.get_type_hints(PlanRequest)
    fixed = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    taken = {p.name for p in fixed}
    fields = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(name, f.annotation),
                          default=field_default(f))
        for name, f in PlanRequest.model_fields.items() if name not in taken
    ]
    fn.__signature__ = sig.replace(parameters=[*fixed, *fields])
    return fn
