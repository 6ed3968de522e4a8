"""Weight formats and dtypes (``data/formats.yaml``): bytes per parameter group, nothing else."""


from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped

ParamGroup = Literal["linear", "lm_head", "embedding", "expert_linear"]


class WeightFormat(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    bits: float | None = Field(description="Bits per quantized weight; null keeps the model dtype.")
    group_size: int | None = None
    scale_bytes: float = 0
    zero_bytes: float = 0
    quantizes: list[ParamGroup] = Field(default_factory=list)
    applied_at_load: bool = Field(default=False, description="The engine quantizes an unquantized checkpoint while loading it (no quantize step).")
    converter: str | None = Field(default=None, description="The engine's own conversion tool that writes this format (run by the artifacts).")
    checkpoint_only: bool = Field(
        default=False, description="Only a published checkpoint is in this format: never chosen as a quantization to run."
    )
    expert_format: str | None = Field(
        default=None,
        description="Another format (key) the routed experts are stored in, e.g. FP4 experts in an FP8 block-scaled checkpoint; "
        "`quantizes` then describes the rest of the linear layers.",
    )
    gguf_of: str | None = Field(
        default=None,
        description="The checkpoint format (key) this GGUF file is llama.cpp's conversion of: a model published in that format "
        "is served from this file by an engine that loads only GGUF (gpt-oss's MXFP4 GGUF).",
    )
    source: str


class DType(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    bytes: float
    source: str


class ActivationModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    hidden_copies: float
    intermediate_copies: float
    logits_bytes_per_vocab_entry: float
    logits_copies: float = 1
    source: str


class FormatsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    formats: dict[str, WeightFormat]
    dtypes: dict[str, DType]
    activation: ActivationModel


@cache
def formats() -> FormatsFile:
    return load_validated(shipped("data") / "formats.yaml", FormatsFile)


def dtype_bytes(name: str) -> float:
    from ..errors import RequestError

    table = formats().dtypes
    if name not in table:
        raise RequestError(f"Unknown dtype '{name}'. Choose from {', '.join(table)}.")
    return table[name].bytes


def weight_format(name: str) -> WeightFormat:
    from ..errors import RequestError

    table = formats().formats
    if name not in table:
        raise RequestError(f"Unknown weight format '{name}'. Choose from {', '.join(table)}.")
    return table[name]
