"""Published quantized checkpoints: serve what the community already quantized instead of quantizing again.

``data/published_checkpoints.yaml`` lists well-known quantized repositories per catalog model, each with its
model card as source, where the repository name was seen (``verified``) and, where known, its real size
(``size_bytes``: the safetensors index ``metadata.total_size`` or the file size its model card states, with
``size_source``). The plan's memory model uses that size instead of its format estimate
(plan/checkpoint.py picks the checkpoint). Online, :func:`hub_quantized` asks the Hub for models tagged
``base_model:quantized:<id>`` (the tag the Hub derives from a model card's ``base_model`` and
``base_model_relation: quantized``).

    find_published("meta-llama/Llama-3.3-70B-Instruct", "awq").repo
"""


from functools import cache

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._data import load_validated
from .._paths import shipped


class PublishedCheckpoint(BaseModel):
    """One published quantized repository of a base model."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    repo: str = Field(description="Hub id of the quantized repository.")
    method: str = Field(description="Weight format it is in (data/formats.yaml key, e.g. awq, fp8, gguf-q4_k_m).")
    file: str | None = Field(default=None, description="GGUF quant tag for `llama-server -hf REPO:TAG`.")
    format: str | None = Field(
        default=None, description="Checkpoint format as engines detect it (data/formats_by_platform.yaml key); required for fp8, "
        "whose repositories come as ModelOpt, compressed-tensors or plain fp8 exports.",
    )
    size_bytes: int | None = Field(
        default=None, gt=0, description="Bytes of weights: the safetensors index total_size, or the file size the model card states."
    )
    size_source: str | None = Field(default=None, description="Where size_bytes was read (required with size_bytes).")
    verified: str | None = Field(
        default=None, description="Where this repository name was seen published (a stored copy of its model card or a page naming it)."
    )
    source: str = Field(description="Where this checkpoint is listed (its model card, or the Hub's search answer).")
    note: str | None = None

    @model_validator(mode="after")
    def _size_has_a_source(self) -> "PublishedCheckpoint":
        if self.size_bytes is not None and not self.size_source:
            raise ValueError(f"{self.repo}: size_bytes needs size_source (where the size was read)")
        if self.method == "fp8" and self.format is None:
            raise ValueError(f"{self.repo}: an fp8 checkpoint needs `format` (modelopt-fp8, compressed-tensors, fp8-tensor or quark)")
        return self


class PublishedFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    checkpoints: dict[str, list[PublishedCheckpoint]]


@cache
def published() -> PublishedFile:
    return load_validated(shipped("data") / "published_checkpoints.yaml", PublishedFile)


def find_published(model: str, method: str, *, verified_only: bool = True) -> PublishedCheckpoint | None:
    """The first published checkpoint of ``model`` (exact Hub id, any case) in weight format ``method``; by default only
    a verified one (a repository name seen published), so a plan never names a repository that may not exist."""
    table = {k.lower(): v for k, v in published().checkpoints.items()}
    for ckpt in table.get(model.strip().lower(), []):
        if ckpt.method == method and (ckpt.verified or not verified_only):
            return ckpt
    return None


# Words in a quantized repository's name or tags -> the weight format it most likely holds.
_METHOD_WORDS = (("gguf", "gguf-q4_k_m"), ("awq", "awq"), ("gptq", "gptq"), ("fp8", "fp8"), ("w8a8", "int8"), ("int8", "int8"), ("w4a16", "compressed-tensors-w4a16"))


def hub_quantized(model: str, method: str, limit: int = 50) -> PublishedCheckpoint | None:
    """Ask the Hub (huggingface_hub.list_models) for the most downloaded model tagged as a quantized version of
    ``model`` whose name or tags say ``method``; None when there is none or the Hub cannot be reached."""
    from huggingface_hub import HfApi

    from .. import constants

    try:
        api = HfApi(endpoint=constants.hf_endpoint(), token=constants.hf_token() or False)
        found = api.list_models(filter=f"base_model:quantized:{model}", sort="downloads", limit=limit)
        for info in found:
            words = " ".join([info.id, *(info.tags or [])]).lower()
            guess = next((m for w, m in _METHOD_WORDS if w in words), None)
            if guess == method or (method.startswith("gguf-") and guess == "gguf-q4_k_m"):
                tag = method.removeprefix("gguf-").upper() if method.startswith("gguf-") else None
                return PublishedCheckpoint(
                    repo=info.id, method=method, file=tag,
                    source=f"{constants.hf_endpoint()}/api/models?filter=base_model:quantized:{model}",
                )
    except Exception:  # the Hub is a bonus here: offline, errors and odd answers fall back to the data file
        return None
    return None
