"""The shape of a speculative decoder as vLLM holds it in memory: draft layers in the KV pool, draft weights, extra
recurrent state (``methods:`` and ``draft_models:`` in ``data/speculative.yaml``). The bytes are added up in
:mod:`infer_advisor.estimate.memory`; this module only says what there is.

    >>> spec = parse_speculative_config('{"method": "mtp", "num_speculative_tokens": 3}')
    >>> from infer_advisor import resolve_model
    >>> shape = draft_shape(spec, resolve_model("deepseek-ai/DeepSeek-V3", source="catalog"))   # the target's ModelFacts
    >>> shape.kv_layers, shape.same_spec_as_target
    (1, True)
"""


import ast
import json
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import RequestError
from ..model_facts.facts import ModelFacts
from ..model_facts.unconverted import unquantized_mtp
from .speculative import DraftModel, SpecMethod, speculative_data

# vLLM's SpeculativeConfig normalises model-specific MTP method names to "mtp" (config/speculative.py, 0.20.1).
_MTP_ALIASES = ("mtp", "deepseek_mtp", "qwen3_next_mtp", "qwen3_5_mtp", "glm4_moe_mtp", "mimo_mtp", "ernie_mtp",
                "longcat_flash_mtp", "openpangu_mtp", "step3p5_mtp", "exaone_moe_mtp", "nemotron_h_mtp")


class SpeculativeConfig(BaseModel):
    """vLLM's ``--speculative-config`` (the fields that size memory; the rest is ignored)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)
    method: str | None = None
    model: str | None = Field(default=None, description="The draft model's path or Hub id (separate drafts).")
    num_speculative_tokens: int = Field(default=1, ge=1, le=64)


@dataclass(frozen=True)
class DraftShape:
    """What a speculative decoder adds, whole-model figures (the memory model splits them over TP)."""

    method: str
    num_speculative_tokens: int
    kv_layers: int  # draft attention layers with KV in the pool
    kv_heads: int  # their KV heads (split over TP like the target's)
    kv_elements_per_token_per_layer: int  # 2 x kv_heads x head_dim
    same_spec_as_target: bool  # MTP: the target's own full-attention spec, so the layers join its group
    params_split: int  # weights sharded over TP
    params_replicated: int  # weights every TP rank holds whole (DFlash's fc)
    in_target_format: bool  # MTP layers take the target's weight format; a separate draft its own dtype
    dtype: str
    source: str
    engines: tuple[str, ...] = ("vllm",)  # engines this memory behaviour was read in (data/speculative.yaml)
    draft_model: str | None = None  # the separate draft's Hub id (None: the target's own MTP layers)

    @property
    def params(self) -> int:
        return self.params_split + self.params_replicated


def parse_speculative_config(text: str | dict) -> SpeculativeConfig:
    """The ``--speculative-config`` JSON of a command line, or the dict a vLLM log prints in its non-default args."""
    return SpeculativeConfig.model_validate(_as_dict(text))


def speculative_config_json(text: str | dict) -> str:
    """The config as the JSON word vLLM's parser takes (ASCII-only: every control or line-separator character escaped)."""
    parse_speculative_config(text)
    return json.dumps(_as_dict(text), separators=(",", ":"), ensure_ascii=True)


def _as_dict(text: str | dict) -> dict:
    data = text
    if isinstance(text, str):
        try:
            data = json.loads(text)
        except ValueError:
            try:
                data = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise RequestError(f"--speculative-config is neither JSON nor a Python dict: {text[:80]!r}") from None
    if not isinstance(data, dict):
        raise RequestError("--speculative-config must be a JSON object, e.g. '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'")
    try:
        SpeculativeConfig.model_validate(data)
    except ValidationError as err:
        raise RequestError(f"--speculative-config: {err.errors()[0]['loc'][0]}: {err.errors()[0]['msg']}") from None
    return data


def _method(spec: SpeculativeConfig) -> SpecMethod | None:
    name = (spec.method or "").lower()
    name = "mtp" if name in _MTP_ALIASES else name
    if not name and spec.model and "dflash" in spec.model.lower():
        name = "dflash"  # vLLM infers the method from the draft's name (config/speculative.py)
    return next((m for m in speculative_data().methods if m.method == name), None)


def draft_model(name: str | None) -> DraftModel | None:
    """A draft model of data/speculative.yaml by Hub id, alias or the last part of a local path (case-insensitive)."""
    if not name:
        return None
    want = name.rstrip("/").lower()
    tail = want.rsplit("/", 1)[-1]
    for d in speculative_data().draft_models:
        keys = {d.name.lower(), *(a.lower() for a in d.aliases)}
        if want in keys or tail in keys or tail == d.name.lower().rsplit("/", 1)[-1]:
            return d
    return None


def mtp_layers(model: ModelFacts) -> int:
    """MTP layers the target's config declares (Qwen3.5 ``mtp_num_hidden_layers``, DeepSeek-V3 ``num_nextn_predict_layers``)."""
    cfg = model.config or {}
    for c in (cfg.get("text_config") or {}, cfg):
        for key in ("mtp_num_hidden_layers", "num_nextn_predict_layers"):
            if isinstance(c.get(key), int) and c[key] > 0:
                return c[key]
    return 0


def conv_kernel(model: ModelFacts) -> int:
    """The convolution width of the Mamba / gated-DeltaNet layers (their conv state holds kernel - 1 rows)."""
    cfg = model.config or {}
    for c in (cfg.get("text_config") or {}, cfg):
        for key in ("linear_conv_kernel_dim", "conv_kernel", "mamba_d_conv"):
            if isinstance(c.get(key), int) and c[key] > 1:
                return c[key]
    return 4


def _mtp_layer_params(model: ModelFacts) -> int:
    """One MTP block: a full-attention decoder layer of the target, its MLP, and the 2h -> h input fc (norms aside)."""
    cfg = model.config or {}
    text = cfg.get("text_config") or cfg
    h, hd, heads, kv = model.hidden_size, model.head_dim, model.num_attention_heads, model.num_kv_heads
    gate = 2 if text.get("attn_output_gate") else 1
    attention = h * heads * hd * gate + 2 * h * kv * hd + heads * hd * h
    experts = model.num_experts or 0
    mlp = 3 * h * model.intermediate_size * (experts + model.num_shared_experts if experts else 1)
    return attention + mlp + 2 * h * h


def draft_shape(spec: SpeculativeConfig, model: ModelFacts) -> DraftShape:
    """What ``spec`` adds to serving ``model`` on vLLM; bad input (an unknown method, a draft whose shape is not known,
    MTP on a model without MTP layers) is one clear error."""
    method = _method(spec)
    if method is None:
        known = ", ".join(m.method for m in speculative_data().methods)
        raise RequestError(f"speculative method {spec.method!r} has no memory model; known: {known} (data/speculative.yaml)")
    n = spec.num_speculative_tokens
    if method.draft == "mtp":
        layers = mtp_layers(model)
        if not layers:
            raise RequestError(f"{model.name} declares no MTP layers (mtp_num_hidden_layers / num_nextn_predict_layers): method 'mtp' needs them")
        in_format = not unquantized_mtp(_quantization_config(model), model.num_layers)  # exports that keep MTP in bf16
        return DraftShape("mtp", n, layers, model.num_kv_heads, model.kv_cache_elements_per_token // max(_full_layers(model), 1),
                          True, layers * _mtp_layer_params(model), 0, in_format, model.torch_dtype or "bfloat16", method.source,
                          tuple(method.engines))
    d = draft_model(spec.model)
    if d is None:
        raise RequestError(f"the {method.method} draft {spec.model!r} is not in data/speculative.yaml draft_models: its size is unknown")
    h = d.hidden_size
    layer = h * d.num_attention_heads * d.head_dim * 2 + 2 * h * d.num_kv_heads * d.head_dim + 3 * h * d.intermediate_size
    fc = d.fc_in * h * h
    return DraftShape(method.method, n, d.layers, d.num_kv_heads, 2 * d.num_kv_heads * d.head_dim, False,
                      d.layers * layer + (0 if d.fc_replicated else fc), fc if d.fc_replicated else 0, False, d.dtype,
                      f"{method.source}; draft shape: {d.source}", tuple(method.engines), d.name)


def _quantization_config(model: ModelFacts) -> dict | None:
    cfg = model.config or {}
    qc = cfg.get("quantization_config") or (cfg.get("text_config") or {}).get("quantization_config")
    return qc if isinstance(qc, dict) else None


def _full_layers(model: ModelFacts) -> int:
    lc = model.layer_counts or {"full": model.num_layers}
    return lc.get("full", 0) or model.num_layers
