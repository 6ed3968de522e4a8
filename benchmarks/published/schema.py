"""Published LLM-serving speed measurements: the schema of ``speed_points.yaml`` and its loader.

Each point is one figure someone published (a CI dashboard row, a vendor table cell, a llama-bench line,
a benchmark_serving printout) with the setup as its source states it. Fields the source does not state
are ``null`` and the notes say so; fields read from another file of the same source (a benchmark script
in the same repository) or derived from figures of the same source are listed in ``inferred``.
``source_id`` is the unit for leave-one-source-out grading: one id per publication or page.

    from benchmarks.published.schema import load_dataset
    data = load_dataset()                       # the shipped speed_points.yaml
    for p in data.points:
        print(p.id, p.engine, p.gpu, p.mode, p.metrics.value(p.primary_metric))

This module imports only pydantic and PyYAML (not infer_advisor), so the aiconfigurator worker can read
the file from its own virtual environment. Catalog checks live in tests/benchmarks/test_published_points.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

DATA_FILE = Path(__file__).with_name("speed_points.yaml")

Engine = Literal[
    "vllm",
    "sglang",
    "trtllm",
    "nim",
    "tgi",
    "llama.cpp",
    "ctranslate2",
    "mlc",
    "exllama",
    "exllamav2",
    "mistralrs",
    "transformers",
]
Mode = Literal["batch1_decode", "prefill", "static_batch", "offline_throughput", "closed_loop", "open_loop"]
Quantization = Literal[
    "none",
    "fp8",
    "nvfp4",
    "int8",
    "awq",
    "gptq",
    "exl2-4bpw",
    "exl2-8bpw",
    "mlc-q4f16_1",
    "uqff-q4",
    "uqff-q8",
    "bnb-nf4",
    "gguf-q4_0",
    "gguf-q4_k_m",
    "gguf-q8_0",
    "gguf-f16",
]
LengthDistribution = Literal["fixed", "max", "random-uniform", "sharegpt", "prompt-set"]
Stat = Literal["mean", "median", "p90", "p99", "single", "approx", "unstated"]
SourceKind = Literal["ci", "docs", "vendor", "blog", "issue", "repo", "paper"]
MetricName = Literal[
    "ttft_s",
    "tpot_s",
    "itl_s",
    "e2e_s",
    "output_tokens_per_s",
    "output_tokens_per_s_per_gpu",
    "total_tokens_per_s",
    "output_tokens_per_s_per_user",
    "requests_per_s",
    "prefill_tokens_per_s",
]
METRIC_UNITS: dict[str, str] = {
    "ttft_s": "s",
    "tpot_s": "s/token (excluding the first token)",
    "itl_s": "s between streamed tokens",
    "e2e_s": "s per request",
    "output_tokens_per_s": "generated tokens/s, all requests together",
    "output_tokens_per_s_per_gpu": "generated tokens/s divided by the GPU count, as the source reports it",
    "total_tokens_per_s": "(input + generated) tokens/s",
    "output_tokens_per_s_per_user": "generated tokens/s of one request (batch-1 speed)",
    "requests_per_s": "requests/s",
    "prefill_tokens_per_s": "prompt tokens/s",
}


class Metric(BaseModel):
    """One measured figure, converted to SI units (seconds, tokens/s); ``stat`` as the source states it."""

    model_config = ConfigDict(extra="forbid")

    value: float = Field(gt=0, description="The figure in the unit of METRIC_UNITS[name].")
    stat: Stat = Field(
        description="mean|median|p90|p99 as stated; 'single' for one run or a total; 'approx' for 'about N'; "
        "'unstated' when the source does not say."
    )


class Metrics(BaseModel):
    """The figures of one point; absent ones are None."""

    model_config = ConfigDict(extra="forbid")

    ttft_s: Metric | None = None
    tpot_s: Metric | None = None
    itl_s: Metric | None = None
    e2e_s: Metric | None = None
    output_tokens_per_s: Metric | None = None
    output_tokens_per_s_per_gpu: Metric | None = None
    total_tokens_per_s: Metric | None = None
    output_tokens_per_s_per_user: Metric | None = None
    requests_per_s: Metric | None = None
    prefill_tokens_per_s: Metric | None = None

    def present(self) -> dict[str, Metric]:
        """The metrics this point has, by name."""
        return {name: m for name in type(self).model_fields if (m := getattr(self, name)) is not None}

    def value(self, name: str) -> float | None:
        metric = getattr(self, name)
        return metric.value if metric is not None else None


class Source(BaseModel):
    """One publication or page: the unit held out in leave-one-source-out grading."""

    model_config = ConfigDict(extra="forbid")

    source_id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    url: str = Field(pattern=r"^https://")
    title: str = Field(min_length=3)
    kind: SourceKind
    date: str = Field(min_length=4, description="As stated (YYYY-MM-DD or YYYY-MM), else 'unknown' with why.")
    publisher: str = Field(min_length=2, description="Who published it (project, vendor, person).")
    notes: str | None = None


class Point(BaseModel):
    """One published measurement with its full setup as stated."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    source_id: str
    source_url: str = Field(pattern=r"^https://", description="The exact page, file at a commit, or anchor.")
    quote: str = Field(min_length=8, description="The sentence or table row the figure comes from, verbatim (whitespace aside).")
    quote_context: str | None = Field(
        default=None, description="Where the quote sits (section, table header, column): our words, not part of the quote."
    )

    engine: Engine
    engine_version: str | None = Field(description="As stated; null when the source does not say (see notes).")
    engine_backend: str | None = None

    model: str = Field(min_length=3, description="The checkpoint as stated (Hugging Face id where known).")
    catalog_model: str | None = Field(
        description="infer_advisor catalog entry with the same layer shapes (instruct/chat variants map to base)."
    )
    model_in_catalog: bool
    quantization: Quantization
    weights_checkpoint: str | None = None
    kv_cache_dtype: str | None = Field(description="auto|fp8|fp16|bf16 as stated; null when not stated.")
    dtype: Literal["bfloat16", "float16", "float32"] | None = Field(description="Activation/compute dtype.")

    gpu: str = Field(description="GPU catalog name (infer-advisor gpus) or the stated name when not in it.")
    gpu_as_stated: str
    gpu_in_catalog: bool
    gpu_nearest_catalog: str | None = Field(
        default=None, description="For a GPU missing from the catalog: the closest catalog entry (not the same)."
    )
    gpu_count: int = Field(ge=1)
    tp: int = Field(ge=1)
    pp: int = Field(ge=1, description="Pipeline stages; llama.cpp's default layer split across N GPUs is pp=N.")
    dp: int = Field(ge=1, description="Replicas.")

    mode: Mode
    batch: int | None = Field(default=None, ge=1, description="Static batch size (all start together).")
    concurrency: int | None = Field(default=None, ge=1, description="Closed-loop clients.")
    request_rate: float | None = Field(default=None, gt=0, description="Open-loop requests/s.")
    num_requests: int | None = Field(default=None, ge=1)
    input_tokens: float = Field(ge=0, description="Prompt tokens per request (fixed or mean, see length_distribution).")
    output_tokens: float = Field(ge=0, description="Generated tokens per request (fixed or mean).")
    length_distribution: LengthDistribution
    max_output_tokens: int | None = Field(
        default=None, ge=1,
        description="The generation budget per request (max_tokens) when the source states one and answers stop at EOS "
        "below it: the longest answer of the run. Null when not stated or when every answer runs to output_tokens.",
    )

    metrics: Metrics
    primary_metric: MetricName = Field(description="The figure this point is chiefly about (used for grading).")

    inferred: list[str] = Field(default_factory=list, description="Fields not read from the source directly.")
    notes: str | None = None
    doubt: str | None = Field(default=None, description="Why this figure may not mean what it seems.")

    @model_validator(mode="after")
    def _consistent(self) -> Point:
        if self.metrics.value(self.primary_metric) is None:
            raise ValueError(f"primary_metric {self.primary_metric!r} has no value in metrics")
        if not self.metrics.present():
            raise ValueError("a point needs at least one metric")
        if self.tp * self.pp * self.dp != self.gpu_count:
            raise ValueError(f"tp*pp*dp = {self.tp * self.pp * self.dp} but gpu_count = {self.gpu_count}")
        needs = {
            "static_batch": "batch",
            "closed_loop": "concurrency",
            "open_loop": "request_rate",
            "offline_throughput": "num_requests",
        }
        if self.mode in needs and getattr(self, needs[self.mode]) is None:
            raise ValueError(f"mode {self.mode} needs {needs[self.mode]}")
        if self.mode == "batch1_decode" and self.output_tokens < 1:
            raise ValueError("a batch1_decode point needs output_tokens >= 1")
        if self.mode == "prefill" and self.input_tokens < 1:
            raise ValueError("a prefill point needs input_tokens >= 1")
        if self.model_in_catalog and not self.catalog_model:
            raise ValueError("model_in_catalog is true but catalog_model is empty")
        if not self.model_in_catalog and self.catalog_model:
            raise ValueError("model_in_catalog is false but catalog_model is set")
        if self.gpu_in_catalog and self.gpu_nearest_catalog:
            raise ValueError("gpu_nearest_catalog is only for GPUs missing from the catalog")
        allowed = set(type(self).model_fields) | {f"metrics.{n}" for n in Metrics.model_fields}
        unknown = [f for f in self.inferred if f not in allowed]
        if unknown:
            raise ValueError(f"inferred names unknown fields: {unknown}")
        if self.inferred and not self.notes:
            raise ValueError("inferred fields need notes saying how they were inferred")
        return self


class Dataset(BaseModel):
    """The whole speed_points.yaml file."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1]
    description: str
    sources: list[Source] = Field(min_length=1)
    points: list[Point] = Field(min_length=1)

    @model_validator(mode="after")
    def _ids(self) -> Dataset:
        seen: set[str] = set()
        for s in self.sources:
            if s.source_id in seen:
                raise ValueError(f"duplicate source_id {s.source_id!r}")
            seen.add(s.source_id)
        ids: set[str] = set()
        for p in self.points:
            if p.id in ids:
                raise ValueError(f"duplicate point id {p.id!r}")
            ids.add(p.id)
            if p.source_id not in seen:
                raise ValueError(f"point {p.id!r}: source_id {p.source_id!r} is not in sources")
        unused = seen - {p.source_id for p in self.points}
        if unused:
            raise ValueError(f"sources without points: {sorted(unused)}")
        return self

    def source(self, source_id: str) -> Source:
        return next(s for s in self.sources if s.source_id == source_id)


def load_dataset(path: Path | str = DATA_FILE) -> Dataset:
    """Read and validate the dataset; a bad file raises ValueError naming the file and the point."""
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: invalid YAML: {err}") from None
    try:
        return Dataset.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        if first["loc"][:1] == ("points",) and len(first["loc"]) > 1 and isinstance(raw, dict):
            try:
                where += f" (id {raw['points'][first['loc'][1]]['id']})"
            except (KeyError, IndexError, TypeError):
                pass
        raise ValueError(f"{path}: {where}: {first['msg']} ({err.error_count()} error(s))") from None
