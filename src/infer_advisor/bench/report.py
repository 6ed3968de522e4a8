"""The typed result of a benchmark: per-request samples, per-level statistics, plan comparison, metadata.

``BenchReport.model_json_schema()`` is the published contract of ``bench.json``: add fields, never rename.
Every figure here is measured on this run unless its field says otherwise (``predicted`` comes from a plan).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1

# finish-length: no usage, fewer chunks than max_tokens and finish_reason "length" (the server stopped at max_tokens
# and streamed some tokens merged into one chunk: llama-cpp-python holds back a token that ends in an incomplete
# UTF-8 character and sends it with the next).
TokenCountSource = Literal["server-usage", "streamed-chunks", "tokenizer", "finish-length"]
MemorySource = Literal["nvml", "torch-allocator", "psutil-rss", "none"]


class RequestSample(BaseModel):
    """One measured request."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int = Field(
        description="The level this request ran at; open loop: requests in flight when it was sent, itself included."
    )
    index: int = Field(description="Request number within its level.")
    input_tokens: int | None = Field(description="Prompt tokens (tokenizer or server usage); None if unknown.")
    output_tokens: int = Field(description="Generated tokens.")
    token_count_source: TokenCountSource = Field(description="Where output_tokens came from.")
    streamed_chunks: int | None = Field(default=None, description="Content chunks received (openai engine).")
    ttft_s: float = Field(description="Seconds from sending the request to its first generated token.")
    e2e_s: float = Field(description="Seconds from sending the request to its last token.")
    tpot_s: float | None = Field(description="(e2e - ttft) / (output_tokens - 1); None for one-token answers.")
    itl_s: list[float] = Field(default_factory=list, description="Gaps between consecutive tokens: one per token after the "
                               "first; a streamed chunk that carried k tokens gives k gaps, its wait shared equally.")
    request_rate: float | None = Field(
        default=None, description="Open loop: the level's offered rate in requests per second; None in closed loop."
    )
    sent_offset_s: float | None = Field(
        default=None, description="Seconds from the level's start to sending this request (openai engine)."
    )
    scheduled_offset_s: float | None = Field(
        default=None,
        description="Open loop: when the Poisson schedule said to send it; sent_offset_s minus this is the client's lateness.",
    )


class Stats(BaseModel):
    """Mean and percentiles of one metric over a level's requests (seconds unless named otherwise)."""

    model_config = ConfigDict(extra="forbid")

    mean: float
    p50: float
    p90: float
    p99: float
    n: int = Field(description="Number of values.")


class LevelResult(BaseModel):
    """All requests of one level: a concurrency (closed loop) or a request rate (open loop)."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int = Field(
        description="Closed loop: requests kept in flight. Open loop: the most that were in flight at once (measured)."
    )
    num_requests: int = Field(description="Requests measured (answered in full); failed ones are counted apart.")
    failed_requests: int = Field(
        default=0, description="Requests the server answered wrongly (HTTP error, malformed or cut stream, empty "
        "answer, bad usage) or too slowly; not in the statistics."
    )
    failure_reasons: list[str] = Field(default_factory=list, description="Distinct reasons of the failed requests (a few).")
    duration_s: float = Field(description="Wall time of the level, first request sent to last token received.")
    ttft_s: Stats
    tpot_s: Stats | None = Field(
        description="Time per output token after the first; None if every answer had one token."
    )
    itl_s: Stats | None = Field(description="Inter-token latency over all gaps of all requests.")
    e2e_s: Stats
    output_tokens_total: int
    input_tokens_mean: float | None
    output_tokens_per_s_per_request: float = Field(
        description="Mean over requests of output_tokens / e2e_s: the speed one user sees, TTFT included."
    )
    output_tokens_per_s_aggregate: float = Field(description="All output tokens / duration_s: the server's throughput.")
    requests_per_s: float = Field(description="num_requests / duration_s.")
    peak_memory_bytes: int | None = Field(
        description="Peak memory seen during the level (see metadata.memory_source for what was sampled)."
    )
    request_rate: float | None = Field(
        default=None, description="Open loop: requests per second offered (Poisson arrivals); None for a closed-loop level."
    )
    achieved_rate_per_s: float | None = Field(
        default=None,
        description="Open loop: requests actually sent per second, (requests - 1) / (last send - first send); "
        "below request_rate only by the chance of a short Poisson sample or a client that fell behind (send_lateness_s).",
    )
    send_lateness_s: Stats | None = Field(
        default=None, description="Open loop: how late each request was sent after its scheduled time (the client's lag)."
    )
    saturated: bool | None = Field(
        default=None,
        description="Open loop: the queue kept growing (median TTFT of the last quarter of requests, in the order sent, "
        "above 3x the first quarter's and above 1 s: the simulator's test); None in closed loop or with under 20 requests.",
    )
    peak_device_memory_bytes: int | None = Field(
        default=None,
        description="With memory_source torch-allocator: NVML's whole-device figure over the level, as nvidia-smi "
        "shows it (every process on the GPU, the driver's own reserve, the allocator's cached blocks), kept beside "
        "the allocator figure; None otherwise.",
    )


class PlanComparison(BaseModel):
    """A plan's prediction beside the measurement."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(description="ttft_s, tpot_s, output_tokens_per_s_per_request, ... or peak_memory_bytes.")
    concurrency: int = Field(description="The measured level compared.")
    predicted: float = Field(description="The plan's estimate (source: the plan).")
    measured: float = Field(description="Measured on this run.")
    error_pct: float = Field(description="(predicted - measured) / measured x 100.")
    predicted_source: str = Field(
        default="plan", description="Where the prediction came from, e.g. 'plan (estimated)'."
    )


class PredictedPoint(BaseModel):
    """The plan's prediction at one measured concurrency: the same deployment planned again at that concurrency
    through the path a user runs (``advise``), with the speed model's held-out error band."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int
    ttft_s: float
    tpot_s: float
    output_tokens_per_s_aggregate: float
    error_band: tuple[float, float] | None = Field(
        default=None, description="The true figure lies within (low, high) x the prediction in 9 of 10 held-out cases."
    )
    source: str = Field(description="The plan's speed source and profile, e.g. 'estimated (vllm speed profile (fitted))'.")


class DeviceInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["cpu", "cuda", "remote"] = Field(description="Where the model ran (remote: behind --url).")
    name: str = Field(description="GPU or CPU model name, or the server URL.")
    count: int = Field(default=1, description="Devices used.")


class BenchMetadata(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    engine: str
    model: str | None
    url: str | None = None
    workload: str
    request: dict = Field(description="Every option of the run (BenchRequest), defaults filled in.")
    random_weights: bool = Field(description="True: random weights from the config; speed is real, text is noise.")
    dtype: str | None = None
    device: DeviceInfo
    versions: dict[str, str] = Field(description="infer_advisor, python, and the engine's packages.")
    memory_source: MemorySource = Field(
        description="nvml: GPU device memory used (all processes on the GPUs in use); torch-allocator: the peak "
        "of torch's allocator (torch.cuda.max_memory_allocated) plus this process's CUDA context (cuda_context_bytes), "
        "what the plan's peak memory counts; psutil-rss: this process's resident memory (CPU runs); none: not "
        "measured (e.g. a remote server)."
    )
    cuda_context_bytes: int | None = Field(
        default=None,
        description="torch-allocator: device memory the CUDA context took at start-up (NVML used after creating "
        "it, minus before, minus what the allocator held then); None when not measured.",
    )
    started_at: str = Field(description="UTC, ISO 8601.")
    finished_at: str | None = Field(default=None, description="UTC, ISO 8601; None while running or after a crash.")
    command_line: list[str]


class BenchReport(BaseModel):
    """What `infer-advisor bench` measured. ``complete`` is False while running and after a crash."""

    model_config = ConfigDict(extra="forbid")

    metadata: BenchMetadata
    levels: list[LevelResult] = Field(default_factory=list)
    requests: list[RequestSample] = Field(default_factory=list)
    comparisons: list[PlanComparison] = Field(default_factory=list)
    predictions: list[PredictedPoint] = Field(
        default_factory=list, description="With --plan: the plan's curve over the measured concurrencies (drawn in bench.png)."
    )
    notes: list[str] = Field(default_factory=list)
    complete: bool = False
    error: str | None = Field(default=None, description="Why the run stopped early, when it did.")
