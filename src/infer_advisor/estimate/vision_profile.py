"""The vision encoder's part of vLLM V1's start-up profile (``data/vision_profile.yaml``).

    vision_profile(model, tp=1, act_b=2, mnbt=2048, max_num_seqs=256, context=8192)  # Qwen2.5-VL-7B: one image,
    # 65,536 patches x 27,992 B = 1.71 GiB at the encoder's peak; 16,384 x 3,584 x 2 B = 0.11 GiB of embeddings kept

Before the text model's dummy batch, vLLM encodes dummy images of the largest size the processor accepts and keeps
their embeddings while the text batch runs; the profile's peak is the larger of the encoder's forward and the text
batch's peak plus those embeddings. Only model types listed in the data file are priced (0 otherwise).
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped
from ..model_facts.facts import ModelFacts


class VisionModelType(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    max_pixels: int = Field(gt=0)
    intermediate_copies: int = Field(ge=1, le=4)
    source: str = Field(min_length=8)


class VisionProfileFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    source: str
    hidden_copies: int = Field(ge=1, le=6)
    model_types: dict[str, VisionModelType]


class VisionProfile(NamedTuple):
    items: int  # dummy images in the profile's encoder batch
    encoder_peak: float  # bytes live at the encoder forward's peak
    outputs: float  # the images' embeddings, kept in the encoder cache during the text model's dummy batch


@cache
def vision_profile_file() -> VisionProfileFile:
    return load_validated(shipped("data") / "vision_profile.yaml", VisionProfileFile)


def vision_profile(model: ModelFacts, *, tp: int, act_b: float, mnbt: int, max_num_seqs: int, context: int) -> VisionProfile | None:
    """The encoder's dummy batch for this model and these settings (None: no vision tower, or a type not in the data)."""
    v = (model.config or {}).get("vision_config") if model.multimodal else None
    if not isinstance(v, dict):  # a text model: the data file is not read
        return None
    kind = vision_profile_file().model_types.get(str((model.config or {}).get("model_type")))
    if kind is None:
        return None
    patch, merge = int(v.get("patch_size", 14)), int(v.get("spatial_merge_size", 2))
    hidden, inter = int(v.get("hidden_size", 0)), int(v.get("intermediate_size", 0))
    if not (hidden and inter):
        return None
    tokens = kind.max_pixels // (patch * merge) ** 2  # merged tokens of the largest image (qwen2_vl.py)
    budget = max(mnbt, tokens)  # compute_mm_encoder_budget: max(max_num_encoder_input_tokens, tokens per item)
    items = max(1, min(budget // tokens, max_num_seqs * max(1, context // tokens)))  # encoder_budget.py _get_max_items
    patches = items * tokens * merge**2
    pixels = int(v.get("in_channels", v.get("in_chans", 3))) * int(v.get("temporal_patch_size", 2)) * patch**2
    per_patch = (vision_profile_file().hidden_copies * hidden + kind.intermediate_copies * inter / tp + pixels) * act_b
    out_hidden = int(v.get("out_hidden_size") or model.hidden_size)
    return VisionProfile(items=items, encoder_peak=patches * per_patch, outputs=items * tokens * out_hidden * act_b)
