"""What a benchmark run is asked to do: the options of :func:`infer_advisor.bench.bench` and `infer-advisor bench`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import RequestError

MAX_REQUEST_RATE = 10_000.0  # req/s: one Python client cannot send faster than this on schedule anyway

Engine = Literal["transformers", "ctranslate2", "vllm", "openai", "triton"]
Workload = Literal["latency", "throughput"]


class BenchRequest(BaseModel):
    """Options of one benchmark run; `infer-advisor bench` derives its flags from these fields."""

    model_config = ConfigDict(extra="forbid")

    engine: Engine = Field(
        description="Where to run: transformers, ctranslate2 or vllm in this process, openai: "
        "any OpenAI-compatible server at --url (vLLM, SGLang, llama.cpp, TGI, transformers serve), or triton: Triton "
        "Inference Server's generate_stream endpoint at --url (the --stack nvidia-triton artifacts)."
    )
    model: str | None = Field(
        default=None,
        description="Model directory (a CTranslate2 folder for ctranslate2), Hub/catalog id (with --random-weights), "
        "or the served model name for openai / the Triton model for triton (default: the server's first model).",
    )
    url: str | None = Field(
        default=None, description="Base URL of the OpenAI-compatible server, e.g. http://127.0.0.1:8000."
    )
    workload: Workload = Field(
        default="latency",
        description="Profile: latency (batch 1, 200 tokens, 9 fixed prompts, 1 warm-up) or throughput "
        "(synthetic prompts of --input-tokens, concurrency 1,4,16,64).",
    )
    concurrency: list[int] | None = Field(
        default=None,
        description="Requests in flight per level, e.g. 1,4,16,64 (batched generate in-process; parallel "
        "streams for openai). Default: the profile's.",
    )
    request_rate: list[float] | None = Field(
        default=None,
        description="Open loop (--engine openai): requests per second, one level per rate, e.g. 0.5,1,2. Arrivals are "
        "Poisson (seeded by --seed) and each request is sent on schedule whether or not earlier ones have finished; "
        "bounded by --num-prompts (default 100) and --max-duration. Instead of --concurrency.",
    )
    max_duration: float | None = Field(
        default=None,
        gt=0,
        description="Open loop: seconds of arrivals per rate; no request is scheduled later (default: no limit "
        "beyond --num-prompts). Requests in flight then finish.",
    )
    input_tokens: int | None = Field(
        default=None,
        gt=0,
        description="Synthetic prompt length in tokens (default: the profile's fixed prompts for latency).",
    )
    output_tokens: int | None = Field(
        default=None, gt=0, description="Tokens to generate per request (default: the profile's)."
    )
    num_prompts: int | None = Field(
        default=None,
        gt=0,
        description="Requests per level (default: max(prompts in the profile, concurrency); open loop: 100).",
    )
    warmup: int | None = Field(
        default=None,
        ge=0,
        description="Warm-up rounds run at each concurrency level before it is measured; a round is that level's "
        "concurrency of requests in flight (default: the profile's, 1).",
    )
    seed: int = Field(default=0, ge=0, le=2**31 - 1, description="Seed for synthetic prompts and sampling.")
    ignore_eos: bool = Field(
        default=True,
        description="Generate exactly --output-tokens (min_new_tokens / min_tokens + ignore_eos) so lengths compare.",
    )
    random_weights: bool = Field(
        default=False,
        description="transformers only: build the model's architecture with random weights from its config "
        "(no weight download); the report is marked.",
    )
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = Field(
        default="auto", description="Weights dtype for transformers (auto: the config's on GPU, float32 on CPU)."
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        default="auto", description="Device for in-process engines (auto: cuda if present)."
    )
    out: Path | None = Field(default=None, description="Folder for bench.json, bench.csv, requests.csv and bench.png.")
    force: bool = Field(default=False, description="Replace an earlier benchmark's files in --out.")
    plan: Path | None = Field(
        default=None,
        description="A plan JSON (`infer-advisor plan --json`) whose predictions are compared with the measurements.",
    )


def check_request(req: BenchRequest) -> None:
    """Option combinations a single field cannot judge; each problem is one RequestError line naming the fix."""
    if req.concurrency is not None:
        if not req.concurrency:
            raise RequestError("--concurrency: give at least one level, e.g. 1,4,16.")
        bad = [c for c in req.concurrency if c < 1]
        if bad:
            raise RequestError(f"--concurrency: levels must be positive integers, got {bad[0]} (e.g. 1,4,16).")
    if req.request_rate is not None:
        if req.concurrency is not None:
            raise RequestError("--request-rate (open loop) and --concurrency (closed loop) exclude each other; give one.")
        if req.engine != "openai":
            raise RequestError("--request-rate needs --engine openai: open-loop arrivals are sent to a server at --url.")
        if not req.request_rate:
            raise RequestError("--request-rate: give at least one rate in requests per second, e.g. 0.5,1,2.")
        bad = [r for r in req.request_rate if not (math.isfinite(r) and 0 < r <= MAX_REQUEST_RATE)]
        if bad:
            raise RequestError(
                f"--request-rate: rates are requests per second above 0 and at most {MAX_REQUEST_RATE:g}, got {bad[0]:g}."
            )
    elif req.max_duration is not None:
        raise RequestError("--max-duration bounds an open-loop level; use it with --request-rate.")
    if req.engine in ("openai", "triton") and not req.url:
        raise RequestError(f"--url is required for --engine {req.engine}, e.g. --url http://127.0.0.1:8000.")
    if req.engine not in ("openai", "triton") and not req.model:
        raise RequestError(f"--model is required for --engine {req.engine}.")
    if req.random_weights and req.engine != "transformers":
        raise RequestError("--random-weights works with --engine transformers only.")
