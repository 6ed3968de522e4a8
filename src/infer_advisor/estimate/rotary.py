"""The rotary embedding's cos/sin table an engine keeps on every GPU (``data/rotary_cache.yaml``).

    >>> from infer_advisor import resolve_model
    >>> model = resolve_model("google/gemma-3-4b-it", source="catalog")
    >>> rotary_cache_bytes(model, "bfloat16") / 2**20   # MiB: a 1,048,576-row linear-scaled table + 131,072
    576.0

Not in any checkpoint, but a buffer the engine allocates while it builds the model, so vLLM's 'Model loading took'
counts it. It is not split by tensor parallelism: every rank holds the whole table.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .._data import load_validated
from .._paths import shipped
from ..model_facts.facts import ModelFacts
from .formats import dtype_bytes
from .weights import text_config

Rows = Literal["max_position", "max_position_x_factor", "original_x_factor"]


class RotaryLayout(BaseModel):
    """An engine's element types for the tables (``layouts`` in the data file)."""
    model_config = ConfigDict(extra="forbid", defer_build=True)
    source: str
    float32_on_nvidia: bool = False
    model_dtype_rope_types: list[str] = []
    float32_companion_tables: dict[str, int] = {}
    mla_yarn_as: str | None = None


class RotaryCacheFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    source: str
    rows: dict[str, Rows]
    no_rope_model_types: list[str]
    local_table_model_types: list[str]
    float32_model_types: list[str]
    full_width_rope_types: list[str]
    layouts: dict[str, RotaryLayout] = {}


@cache
def rotary_cache_file() -> RotaryCacheFile:
    return load_validated(shipped("data") / "rotary_cache.yaml", RotaryCacheFile)


def _rope_settings(text: dict, local_table: bool) -> list[dict]:
    """The distinct rope settings of a text config (v4 ``rope_scaling``, plus a plain table for the sliding layers of
    ``local_table`` models; v5 ``rope_parameters`` per layer type, each with its ``layer_type``), each a dict with at
    least ``rope_type``."""
    params = text.get("rope_parameters")
    if isinstance(params, dict) and params and all(isinstance(v, dict) for v in params.values()):
        return [dict(v, layer_type=k) for k, v in params.items()]  # transformers v5: one entry per layer type
    scaling = text.get("rope_scaling") if isinstance(text.get("rope_scaling"), dict) else params if isinstance(params, dict) else None
    settings = [dict(scaling) if scaling else {"rope_type": "default"}]
    if local_table:  # Gemma 3: the sliding layers' plain table (rope_local_base_freq)
        settings.append({"rope_type": "default", "local": True})
    return settings


def _rows(setting: dict, max_position: int) -> int:
    kind = rotary_cache_file().rows.get(_rope_type(setting), "max_position")
    factor = setting.get("factor") if isinstance(setting.get("factor"), (int, float)) else 1.0
    original = setting.get("original_max_position_embeddings")
    if kind == "max_position_x_factor":
        return int(max_position * factor)
    if kind == "original_x_factor" and isinstance(original, int):
        return int(original * factor)
    return max_position


def _rope_type(setting: dict) -> str:
    return str(setting.get("rope_type") or setting.get("type") or "default")


def rotary_cache_bytes(model: ModelFacts, dtype: str, layout: str | None = None, nvidia: bool = True) -> float:
    """Bytes of the cos/sin tables one GPU holds for ``model`` (0 for a model without rotary positions in its config);
    ``layout`` names the engine's entry of the data file's ``layouts`` (its element types on an ``nvidia`` GPU or not)."""
    config = model.config or {}
    text = text_config(model)
    table = rotary_cache_file()
    no_rope = {config.get("model_type"), text.get("model_type")} & set(table.no_rope_model_types)
    if no_rope or text.get("alibi") or text.get("position_embedding_type") not in (None, "rope") or not model.max_position_embeddings:
        return 0.0
    elem = 4.0 if config.get("model_type") in table.float32_model_types else dtype_bytes(dtype)
    local = bool({config.get("model_type"), text.get("model_type")} & set(table.local_table_model_types))
    tables = {(_rows(s, model.max_position_embeddings), _width(model, text, s), str(sorted(s.items(), key=str)))
              for s in _rope_settings(text, local)}
    if layout is None:
        return float(sum(rows * width for rows, width, _ in tables) * elem)
    spec = table.layouts[layout]
    settings = {str(sorted(s.items(), key=str)): s for s in _rope_settings(text, local)}
    total = 0.0
    for rows, width, key in tables:
        kind = _rope_type(settings[key])
        if kind == "yarn" and spec.mla_yarn_as and text.get("kv_lora_rank"):
            kind = spec.mla_yarn_as  # the MLA model file builds its yarn table as this type
        own = 4.0 if spec.float32_on_nvidia and nvidia and kind not in spec.model_dtype_rope_types else elem
        total += rows * width * (own + 4.0 * spec.float32_companion_tables.get(kind, 0))
    return float(total)


def _width(model: ModelFacts, text: dict, setting: dict) -> int:
    """Elements per row of one table: the rotary dimension, or the whole head of the layers it serves for rope types
    that rotate every dimension (``full_width_rope_types``: Gemma 4's proportional rope); full-attention layers of a config
    with ``global_head_dim`` (Gemma 4) take that head size."""
    rotary_dim = text.get("qk_rope_head_dim") or text.get("rotary_dim")
    if isinstance(rotary_dim, int):
        return rotary_dim
    head = model.head_dim
    if setting.get("layer_type") == "full_attention" and isinstance(text.get("global_head_dim"), int):
        head = text["global_head_dim"]
    if str(setting.get("rope_type")) in rotary_cache_file().full_width_rope_types:
        return head
    return int(head * float(text.get("partial_rotary_factor") or 1.0))
