"""Failing engine start-ups from public issue threads: the schema of ``startup_failures.yaml`` and its loader.

    from benchmarks.published.startup_failures import load_failures
    data = load_failures()
    for f in data.failures:
        print(f.id, f.engine, f.error, f.held_out, f.fix.kind if f.fix else None)

Each entry keeps the thread's URL, the log lines verbatim, the setup as stated and the fix that worked where the
thread says. A third is held out by a fixed rule (``held_out_rule``: id number divisible by 3), checked on load, so
the split cannot drift after the doctor is tuned. Imports only pydantic and PyYAML.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

DATA_FILE = Path(__file__).with_name("startup_failures.yaml")

ErrorKind = Literal[
    "no_cache_blocks",  # vLLM: "No available memory for the cache blocks" (or a negative KV line before it)
    "max_len_exceeds_kv",  # vLLM V0: "The model's max seq len (N) is larger than the maximum number of tokens ... (M)"
    "kv_needed_exceeds_available",  # vLLM V1: "To serve at least one request ... X GiB KV cache is needed ... (Y GiB)"
    "free_memory_below_utilization",  # vLLM V1: "Free memory on device (X/Y GiB) on startup is less than desired ..." (added with batch 4)
    "cuda_oom_graph_capture",  # CUDA out of memory while capturing CUDA graphs
    "cuda_oom_warmup",  # TGI warmup / profile-run OOM
    "sglang_not_enough_memory",  # SGLang: "Not enough memory. Please try to increase --mem-fraction-static"
    "tgi_prefill_tokens",  # TGI: "Not enough memory to handle N prefill tokens"
    "tgi_total_tokens",  # TGI: "Not enough memory to handle N total tokens"
    "llamacpp_alloc_failed",  # llama.cpp: cudaMalloc failed for the KV cache or compute buffers
    "nccl_error",  # NCCL initialisation failure
    "other",
]
FixKind = Literal[
    "max_model_len", "gpu_memory_utilization_up", "gpu_memory_utilization_down", "kv_cache_dtype", "max_num_seqs",
    "cudagraph_capture_sizes", "enforce_eager", "tensor_parallel", "quantize", "free_gpu", "other",
]


class Fix(BaseModel):
    """What made it start, as the thread says."""

    model_config = ConfigDict(extra="forbid")

    kind: FixKind
    value: str = Field(min_length=1, description="The setting as the thread gives it.")
    by: Literal["reporter", "maintainer", "contributor", "commenter"]
    confirmed: bool = Field(description="The thread shows it started with the fix (not only a suggestion).")
    quote: str = Field(min_length=8)


class Settings(BaseModel):
    """Engine settings as the log or command states them (None: not stated)."""

    model_config = ConfigDict(extra="forbid")

    max_model_len: int | None = Field(default=None, ge=1)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    max_batch_prefill_tokens: int | None = Field(default=None, ge=1)
    max_batch_total_tokens: int | None = Field(default=None, ge=1)
    kv_cache_dtype: str | None = None
    dtype: str | None = None
    quantization: str | None = None
    enforce_eager: bool | None = None


class GpusPresent(BaseModel):
    """The GPUs the machine has, where the thread states the count (docfix7)."""

    model_config = ConfigDict(extra="forbid")

    count: int = Field(ge=1)
    quote: str = Field(min_length=3, description="The thread's words that state it (as in gpu_as_stated).")
    how: str | None = Field(default=None, description="Where the count follows from the words (an instance type's GPUs).")


class Failure(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^sf\d{2,3}$")
    held_out: bool = False
    batch: Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20] = Field(default=1, description="1: gathered before the doctor existed (sf01-sf33); 2: gathered after the "
                                          "SGLang/TGI/llama.cpp doctor was written, graded prospectively as a whole (sf34-sf46); 3: after batch "
                                          "2's changes (sf47); 4: after batch 3's changes (sf48-sf62), graded prospectively; 5: after batch 4's "
                                          "changes (sf63-sf77), graded prospectively; 6: after batch 5's changes (sf78-sf81); 7: "
                                          "gathered before docfix6's freeze (sf82-sf112), graded prospectively; 8: gathered before "
                                          "docfix7's freeze (sf113-sf140), graded prospectively; 9: gathered "
                                          "before docfix8's freeze (sf141-sf166), graded prospectively; 10: "
                                          "gathered before docfix11's freeze (sf167-sf196), graded prospectively; 11: "
                                          "gathered before docfix12's freeze (sf197-sf225), graded prospectively; 12: "
                                          "gathered before docfix14's freeze (sf226-sf240), graded prospectively; 13: "
                                          "gathered before docfix15's freeze (sf241-sf267), graded prospectively; 14: "
                                          "gathered before docfix16's freeze (sf268-sf287), graded prospectively; 15: "
                                          "gathered before docfix17's freeze (sf288-sf303), graded prospectively; 16: "
                                          "gathered before docfix18's freeze (sf304-sf320), graded prospectively; 17: "
                                          "gathered before docfix19's freeze (sf321-sf332), graded prospectively; 18: "
                                          "gathered before docfix20's freeze (sf333-sf337), graded prospectively; 19: "
                                          "gathered before docfix21's freeze (sf338-sf347), graded prospectively; 20: "
                                          "gathered before docfix22's freeze (sf348-sf349), graded prospectively.")
    url: str = Field(pattern=r"^https://github\.com/")
    engine: Literal["vllm", "sglang", "tgi", "llama.cpp"]
    engine_version: str | None
    version_note: str | None = None
    gpu_as_stated: str | None
    gpu: str | None = Field(description="GPU catalog name (infer-advisor gpus), null when not stated or not in it.")
    gpu_count: int | None = Field(ge=1, description="GPUs the run used.")
    gpus_present: GpusPresent | None = Field(default=None, description="GPUs the machine has, where the thread states it.")
    tp: int | None = Field(ge=1)
    model: str = Field(min_length=3)
    catalog_model: str | None
    command: str | None
    settings: Settings
    error: ErrorKind
    error_line: str = Field(min_length=8, description="The engine's words, verbatim.")
    error_line_where: str | None = Field(default=None, description="Where the error line is in the thread when it is not among the log lines (title, text).")
    log: str = Field(min_length=8, description="Lines verbatim from the thread.")
    figures: dict[str, float] = Field(description="What the log prints, in its units (GiB, tokens, blocks, MiB).")
    fix: Fix | None
    notes: str | None = None

    @property
    def number(self) -> int:
        return int(self.id[2:])

    @model_validator(mode="after")
    def _consistent(self) -> Failure:
        if self.gpus_present is not None and self.gpus_present.quote not in (self.gpu_as_stated or "") + self.log:
            raise ValueError("gpus_present.quote is not in gpu_as_stated or the log lines")
        if self.engine_version is None and not self.version_note:
            raise ValueError("engine_version null needs a version_note saying what is known")
        words = re.sub(r"\s+", " ", self.log)
        if re.sub(r"\s+", " ", self.error_line)[:30] not in words and not self.error_line_where:
            raise ValueError("error_line is not among the log lines: quote it there, or say where it is (error_line_where)")
        return self


class FailureSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1]
    held_out_rule: Literal["id number divisible by 3"]
    failures: list[Failure] = Field(min_length=30)

    @model_validator(mode="after")
    def _rule(self) -> FailureSet:
        seen: set[str] = set()
        for f in self.failures:
            if f.id in seen:
                raise ValueError(f"duplicate id {f.id}")
            seen.add(f.id)
            if f.held_out != (f.number % 3 == 0):
                raise ValueError(f"{f.id}: held_out must be {f.number % 3 == 0} by the rule '{self.held_out_rule}'")
        return self

    def held_out(self) -> list[Failure]:
        return [f for f in self.failures if f.held_out]

    def tuning(self) -> list[Failure]:
        return [f for f in self.failures if not f.held_out]


def load_failures(path: Path | str = DATA_FILE) -> FailureSet:
    """Read and validate the file; a bad entry raises ValueError naming the file and the entry."""
    import yaml

    path = Path(path)
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    try:
        return FailureSet.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        if first["loc"][:1] == ("failures",) and len(first["loc"]) > 1:
            try:
                where += f" (id {raw['failures'][first['loc'][1]]['id']})"
            except (KeyError, IndexError, TypeError):
                pass
        raise ValueError(f"{path}: {where}: {first['msg']}") from None
