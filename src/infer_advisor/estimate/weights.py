"""Weight bytes: each parameter group in its stored format, and what one GPU holds under tensor / pipeline parallelism.

    >>> from infer_advisor import resolve_model
    >>> model = resolve_model("openai/gpt-oss-120b", source="catalog")
    >>> weight_bytes_by_group(model, "mxfp4-experts", "bfloat16")["linear"]
    62825103360.0

- Groups: ``embedding``, ``lm_head``, ``linear`` (decoder blocks; routed experts apart where a format quantizes only
  them) and ``other`` (norms, biases, router, sinks). Native block-scaled formats add one scale per block
  (``data/formats.yaml``); a published checkpoint's real size scales the same groups (``checkpoint_bytes``).
- Expert padding: an engine may store routed experts in a padded layout (vLLM's MXFP4 MoE kernels round the hidden and
  per-rank intermediate sizes up, e.g. 2880 -> 3072 / 2944 for gpt-oss under Marlin); the engine memory profile names
  the multiples (``expert_padding`` in ``data/engine_memory.yaml``) and the routed experts' bytes grow by the same ratio.
- Per GPU: decoder blocks split ``tp x pp`` ways; the embedding and lm_head split ``tp`` ways (vocab-parallel) and, with
  ``pp > 1``, held by the first and last stage (the larger of the two counts).
"""

from __future__ import annotations

import functools
import math

from ..model_facts.facts import ModelFacts
from .formats import dtype_bytes, weight_format


def _bytes_per_param(fmt, group: str, base: float, group_size: int | None) -> float:
    if fmt.bits is not None and group in fmt.quantizes:
        per = fmt.bits / 8
        g = group_size or fmt.group_size
        if g:
            per += (fmt.scale_bytes + fmt.zero_bytes) / g
        return per
    return base


def expert_padding_ratio(model: ModelFacts, padding, tp: int) -> float:
    """How much larger the routed experts are in the engine's padded layout: (padded hidden x padded intermediate per
    rank) / (hidden x intermediate per rank); 1.0 without padding or experts."""
    if padding is None or not model.num_experts:
        return 1.0
    hidden, inter = model.hidden_size, model.intermediate_size / max(tp, 1)
    if inter <= 0:
        return 1.0
    h_pad = math.ceil(hidden / padding.hidden) * padding.hidden if padding.hidden else hidden
    i_pad = math.ceil(inter / padding.intermediate) * padding.intermediate if padding.intermediate else inter
    return (h_pad * i_pad) / (hidden * inter)


def group_bytes(
    model: ModelFacts, fmt_name: str, dtype: str, group_size: int | None, checkpoint_bytes: int | None = None,
    expert_ratio: float = 1.0, split_experts: bool = False,
) -> dict[str, float]:
    """Bytes of each parameter group (embedding, lm_head, linear, other) in the chosen format; with ``checkpoint_bytes``
    (a published checkpoint's real size) the same groups scaled to add up to it; ``expert_ratio`` the engine's padding."""
    fmt = weight_format(fmt_name)
    expert_fmt = weight_format(fmt.expert_format) if fmt.expert_format else None
    base = dtype_bytes(dtype)
    p = model.params
    counts = {"embedding": p.embedding, "lm_head": p.lm_head, "linear": p.linear, "other": p.other}
    out: dict[str, float] = {}
    if split_experts or expert_fmt is not None or ("expert_linear" in fmt.quantizes and "linear" not in fmt.quantizes):
        counts["linear"] = p.linear - p.expert_linear  # the routed experts apart (MXFP4 gpt-oss, FP4 DeepSeek-V4 experts)
        counts["expert_linear"] = p.expert_linear
    own_checkpoint = fmt_name == model.weight_format and "linear" in fmt.quantizes
    if p.kept_linear and own_checkpoint:
        counts["linear"] -= p.kept_linear  # what the checkpoint keeps unquantized (its modules_to_not_convert)
        counts["kept_linear"] = p.kept_linear
    if p.fp8_linear and own_checkpoint:
        counts["linear"] -= p.fp8_linear  # a MIXED_PRECISION checkpoint's FP8 token mixers
        counts["fp8_linear"] = p.fp8_linear
    for group, n in counts.items():
        if group == "expert_linear" and expert_fmt is not None:
            out[group] = n * _bytes_per_param(expert_fmt, group, base, None)
        elif group == "fp8_linear":
            out[group] = n * _bytes_per_param(weight_format("fp8"), "linear", base, None)
        elif group == "lm_head" and p.quantized_lm_head and own_checkpoint:  # MIXED_PRECISION's 4-bit lm_head
            out[group] = n * _bytes_per_param(fmt, "linear", base, group_size)
        else:
            out[group] = n * _bytes_per_param(fmt, group, base, group_size)
    if checkpoint_bytes:
        scale = checkpoint_bytes / sum(out.values())
        out = {group: b * scale for group, b in out.items()}
    for part in ("kept_linear", "fp8_linear"):  # in the model dtype / FP8, but a part of the blocks' linear weights for every caller
        if part in out:
            out["linear"] += out.pop(part)
    if "expert_linear" in out:  # the engine's layout
        out["expert_linear"] *= expert_ratio
        if not split_experts:  # fold back: callers see the four groups
            out["linear"] += out.pop("expert_linear")
    return out


def weight_bytes_by_group(
    model: ModelFacts, quantization: str = "none", dtype: str = "bfloat16", group_size: int | None = None,
    checkpoint_bytes: int | None = None, split_experts: bool = False,
) -> dict[str, float]:
    """Bytes of the whole model's ``embedding``, ``lm_head``, ``linear`` and ``other`` parameters in a weight format
    (``checkpoint_bytes``: a published checkpoint's real size, split over the same groups); ``split_experts`` keeps
    the routed experts' bytes apart as ``expert_linear`` (``linear`` is then the rest).

    The speed model reads the bytes a step moves from here, so weights are added up in one place only.
    """
    return group_bytes(model, quantization, dtype, group_size, checkpoint_bytes, split_experts=split_experts)


def weights_bytes(
    model: ModelFacts, quantization: str = "none", dtype: str = "bfloat16", group_size: int | None = None,
    checkpoint_bytes: int | None = None,
) -> int:
    """All weight bytes of ``model`` in format ``quantization`` with unquantized parts in ``dtype``."""
    total = sum(group_bytes(model, quantization, dtype, group_size, checkpoint_bytes).values())
    return int(round(total)) if checkpoint_bytes else int(total)


def vision_tower_params(model: ModelFacts) -> int:
    """Parameters of a multimodal checkpoint's vision encoder and projector, from its config.json ``vision_config``
    (ViT layers: attention 4 h^2, MLP 2 or 3 h x intermediate (gated for silu), biases and norms; patch and position
    embeddings (``image_size`` / patch squared, or Qwen3-VL's ``num_position_embeddings`` table); a merger / projector to
    the text width, and Qwen3-VL's DeepStack mergers, one per ``deepstack_visual_indexes`` entry, each a merger with
    biases and a LayerNorm over the merged width: transformers Qwen3VLVisionModel, vLLM qwen3_vl.py 0.18.0 / 0.27.1
    ``deepstack_merger_list`` of ``Qwen3_VisionPatchMerger(use_postshuffle_norm=True)``). 0 for a text-only model or an unfamiliar vision config. The
    model facts count the text decoder only (``multimodal``); engines that serve the checkpoint load both."""
    v = (model.config or {}).get("vision_config") if model.multimodal else None
    if not isinstance(v, dict):
        return 0
    v = _moonvit_keys(v)
    h = v.get("hidden_size") or v.get("embed_dim")
    layers = v.get("num_hidden_layers") or v.get("depth")
    if not isinstance(h, int) or not isinstance(layers, int) or h <= 0 or layers <= 0:
        return 0
    inter = v.get("intermediate_size") if isinstance(v.get("intermediate_size"), int) else 4 * h
    mlp = 3 if str(v.get("hidden_act", "")).lower() in ("silu", "swiglu") else 2
    per_layer = 4 * h * h + 4 * h + mlp * h * inter + inter + 5 * h
    patch = v.get("patch_size") if isinstance(v.get("patch_size"), int) else 14
    channels = v.get("num_channels") or v.get("in_channels") or 3
    temporal = v.get("temporal_patch_size") if isinstance(v.get("temporal_patch_size"), int) else 1
    image, table = v.get("image_size"), v.get("num_position_embeddings")
    positions = (image // patch) ** 2 * h if isinstance(image, int) and patch > 0 else 0
    positions = table * h if isinstance(table, int) and table > 0 else positions  # Qwen3-VL's learned pos_embed table
    merge = v.get("spatial_merge_size") if isinstance(v.get("spatial_merge_size"), int) else 1
    out = v.get("out_hidden_size") if isinstance(v.get("out_hidden_size"), int) else model.hidden_size
    merged = h * merge * merge
    projector = merged * merged + merged * out if merge > 1 else h * out
    deepstack = v.get("deepstack_visual_indexes")  # Qwen3-VL: one more merger per tapped layer, LayerNorm over the merged width
    extra_mergers = len(deepstack) * (projector + merged + out + 2 * merged) if isinstance(deepstack, list) else 0
    return int(layers * per_layer + channels * temporal * patch * patch * h + h + positions + 2 * h + projector + extra_mergers)


def _moonvit_keys(v: dict) -> dict:
    """Kimi-K2.5's MoonViT ``vision_config`` in the common keys: ``vt_hidden_size`` / ``vt_num_hidden_layers`` /
    ``vt_intermediate_size``, ``merge_kernel_size`` [2, 2] as the spatial merge, ``text_hidden_size`` as the projector's
    output, and the learned (``init_pos_emb_height`` x ``init_pos_emb_width``) position table (SGLang 0.5.12
    models/kimi_k25.py: MoonViT3dPretrainedModel, Learnable2DInterpPosEmbDivided_fixed, K2VLMultiModalProjector; the
    time table is a fixed sin-cos buffer). Other configs unchanged."""
    if "vt_hidden_size" not in v:
        return v
    merge = v.get("merge_kernel_size")
    rows, cols = v.get("init_pos_emb_height"), v.get("init_pos_emb_width")
    return {**v, "hidden_size": v.get("vt_hidden_size"), "num_hidden_layers": v.get("vt_num_hidden_layers"),
            "intermediate_size": v.get("vt_intermediate_size"), "out_hidden_size": v.get("text_hidden_size"),
            "spatial_merge_size": merge[0] if isinstance(merge, list) and merge else None,
            "num_position_embeddings": rows * cols if isinstance(rows, int) and isinstance(cols, int) else None}


def text_config(model: ModelFacts) -> dict:
    """The language model's part of ``model``'s config.json: a multimodal checkpoint's ``text_config``, else the whole."""
    cfg = model.config or {}
    return cfg["text_config"] if isinstance(cfg.get("text_config"), dict) else cfg


def config_count(model: ModelFacts, key: str) -> int:
    """A positive integer of the text config (:func:`text_config`), 0 where it is absent or not one."""
    value = text_config(model).get(key)
    return value if isinstance(value, int) and value > 0 else 0


def replicated_bytes(model: ModelFacts, fmt_name: str, dtype: str, group_size: int | None) -> float:
    """Bytes vLLM and SGLang keep whole on every tensor-parallel rank (models/deepseek_v2.py, vLLM 0.10.1 / 0.19.0 and
    SGLang 0.4.6.post5 / 0.5.8.post1 / 0.5.12 read): MLA's down-projections (``kv_a_proj_with_mqa``, fused with
    ``q_a_proj`` where ``q_lora_rank`` is set: ReplicatedLinear / MergedReplicatedLinear, in the weight format) and the
    MoE router (``gate``: ReplicatedLinear, unquantized) of every MoE layer. The whole-model total counts them once; one GPU at TP n holds them n times over.
    Where the checkpoint's own quantization_config leaves the down-projections unquantized (its ignore list covers
    ``self_attn``: Moonshot's Kimi-K2.5 INT4, NVIDIA's GLM-5 NVFP4), that share is in the model dtype: the engine's
    ReplicatedLinear takes the quant_config and its ignore list gives it the unquantized method."""
    num = functools.partial(config_count, model)
    out = 0.0
    if model.attention == "mla":
        fmt, act = linear_bytes_per_param(fmt_name, dtype, group_size), dtype_bytes(dtype)
        widths = {"kv_a_proj_with_mqa": num("kv_lora_rank") + num("qk_rope_head_dim"), "q_a_proj": num("q_lora_rank")}
        for module, width in widths.items():
            kept = kept_share(model, fmt_name, module) if width else 0.0
            out += model.hidden_size * width * model.num_layers * (kept * act + (1 - kept) * fmt)
    if model.num_experts:
        moe_layers = max(model.num_layers - num("first_k_dense_replace"), 0)
        out += model.hidden_size * model.num_experts * moe_layers * dtype_bytes(dtype)
    return out


def kept_share(model: ModelFacts, fmt_name: str, module: str) -> float:
    """The share of the layers' ``self_attn.<module>`` that the checkpoint's own quantization_config leaves
    unquantized (0.0 for another format or a config without an ignore list)."""
    qc = (model.config or {}).get("quantization_config") or text_config(model).get("quantization_config")
    if fmt_name != model.weight_format or not isinstance(qc, dict):
        return 0.0
    from ..model_facts.unconverted import covered_share  # only for a quantized MLA checkpoint (cold-start imports)

    return covered_share(qc, [f"model.layers.{i}.self_attn.{module}" for i in range(model.num_layers)])


def mistral_format_vision(model: ModelFacts, quantization: str) -> bool:
    """The checkpoint is a mistralai repository with a Pixtral vision encoder, as published (bf16): vLLM reads such a repo
    in Mistral format (``is_mistral_model_repo``: consolidated*.safetensors). A quantized copy comes from another
    publisher in the HF layout (inferred), so it is not."""
    v = (model.config or {}).get("vision_config") if model.multimodal else None
    return quantization == "none" and model.name.startswith("mistralai/") and isinstance(v, dict) and v.get("model_type") == "pixtral"


def weights_per_gpu(groups: dict[str, float], tp: int, pp: int) -> float:
    """What one GPU holds: blocks split tp x pp ways, embedding and lm_head vocab-parallel over tp (first/last stage)."""
    blocks = groups["linear"] + groups["other"]
    ends = max(groups["embedding"], groups["lm_head"]) if pp > 1 else groups["embedding"] + groups["lm_head"]
    return blocks / (tp * pp) + ends / tp


def linear_bytes_per_param(fmt_name: str, dtype: str, group_size: int | None) -> float:
    """Bytes one decoder-block Linear weight takes in format ``fmt_name`` (scales included), e.g. an MTP layer's."""
    return _bytes_per_param(weight_format(fmt_name), "linear", dtype_bytes(dtype), group_size)
