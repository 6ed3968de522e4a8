"""What `quantize` is asked (:class:`QuantizeRequest`) and what it answers (:class:`QuantizeResult`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .methods import DEFAULT_GROUP_SIZE, backend_names, method_names

# Calibration samples used by default: enough for AWQ's per-channel scales on small models while keeping a
# CPU run short (AutoAWQ and llm-compressor examples use 128-512; the built-in set has a few hundred lines).
DEFAULT_NUM_SAMPLES = 64


class QuantizeRequest(BaseModel):
    """The options of :func:`infer_advisor.quantize.quantize`; the CLI flags are derived from these fields."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="Local model directory (with config.json) or a Hub id (only when online).")
    method: str = Field(description=f"Quantization method: {', '.join(method_names())}.")
    out: Path = Field(description="Output directory; written beside it in a temp dir and renamed on success.")
    backend: str | None = Field(
        default=None,
        description=f"Backend for the method ({', '.join(backend_names())}); default: the method's first. "
        "AWQ: llmcompressor (compressed-tensors for vLLM/SGLang) or autoawq (GEMM for CTranslate2/TGI; deprecated).",
    )
    group_size: int = Field(
        default=DEFAULT_GROUP_SIZE,
        gt=0,
        description="Input columns per quantization group (awq, w4a16); must divide every quantized layer's input size.",
    )
    calibration: Path | None = Field(
        default=None,
        description="Calibration text: .txt (one sample per paragraph, or per line without blank lines) or .jsonl "
        "(a 'text' field); default: the built-in set.",
    )
    num_samples: int = Field(default=DEFAULT_NUM_SAMPLES, gt=0, description="Calibration samples to use at most.")
    force: bool = Field(default=False, description="Replace --out if it exists (only after the new one is complete).")
    evaluate: bool = Field(
        default=False, description="Also measure perplexity before and after on the calibration text."
    )
    progress: bool = Field(default=True, description="Show progress on stderr.")


class QuickCheck(BaseModel):
    """Reloading the output with its runtime and generating a few tokens (and perplexity with evaluate)."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["passed", "failed", "skipped"] = Field(
        description="passed: loaded and generated; failed: the runtime could not load or run it; "
        "skipped: no runtime for it on this machine (see detail)."
    )
    loaded: bool = Field(description="True when the runtime loaded the output.")
    runtime: str = Field(default="", description="Runtime, version and device used, e.g. 'ctranslate2 4.8.5 (cpu)'.")
    prompt: str = Field(default="", description="The prompt given.")
    sample_text: str = Field(default="", description="The text generated greedily (measured).")
    tokens_generated: int = Field(default=0, description="Tokens generated (measured).")
    perplexity_before: float | None = Field(
        default=None, description="Perplexity of the source model on the evaluation text (measured; evaluate only)."
    )
    perplexity_after: float | None = Field(
        default=None, description="Perplexity of the output on the same text (measured; evaluate only)."
    )
    eval_tokens: int = Field(default=0, description="Tokens scored for perplexity.")
    detail: str = Field(default="", description="Why it failed or was skipped, or what else was verified.")


class QuantizeResult(BaseModel):
    """What one quantization run produced. Sizes and time are measured on this machine."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(description="The method, e.g. awq.")
    backend: str = Field(description="The backend that wrote it.")
    format: str = Field(description="The on-disk format and who loads it.")
    bits: int = Field(description="Bits per quantized weight.")
    group_size: int | None = Field(default=None, description="Group size used; None when it does not apply.")
    source: Path = Field(description="The model directory that was read.")
    output: Path = Field(description="The directory written.")
    input_bytes: int = Field(description="Bytes of weight files in the source (measured).")
    output_bytes: int = Field(description="Bytes of weight files in the output (measured).")
    ratio: float = Field(description="output_bytes / input_bytes (measured).")
    seconds: float = Field(description="Wall time of the quantization itself (measured).")
    calibration_samples: int = Field(default=0, description="Calibration samples given to the backend.")
    check: QuickCheck = Field(description="Reload-and-generate check of the output.")
    notes: list[str] = Field(default_factory=list, description="What the backend and the run want you to know.")

    def summary(self) -> str:
        """One line: sizes, ratio and time, each marked as measured."""
        from ..formatting import human_bytes

        return (
            f"{self.method} ({self.backend}): {human_bytes(self.input_bytes)} -> {human_bytes(self.output_bytes)} "
            f"({self.ratio:.2f}x) in {self.seconds:.1f} s (measured) -> {self.output}"
        )
