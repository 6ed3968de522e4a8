"""What one GPU holds beyond its shard of the checkpoint, by engine version: the parts an engine keeps whole on every
tensor-parallel rank, the tables and matrices it builds while loading (counted in its 'Model loading took' figure).

    >>> from infer_advisor import resolve_model
    >>> model = resolve_model("deepseek-ai/DeepSeek-V3", source="catalog")
    >>> from infer_advisor.engines.memory import memory_profile
    >>> sources = {}
    >>> engine_layout_bytes(model, memory_profile("vllm", "0.7.1"), "0.7.1", "none", "bfloat16", None, tp=8, pp=1,
    ...                     checkpoint_bytes=None, sources=sources)   # (bytes per GPU, whole-model bytes)
    (10714169344.0, 0.0)
    >>> sorted(sources)
    ['weights_mla_absorbed', 'weights_replicated', 'weights_rotary']

- A multimodal checkpoint's vision encoder (unquantized; split over TP, or whole on every GPU where the engine reads a
  mistralai Pixtral repository in Mistral format).
- MLA down-projections and the MoE router, ReplicatedLinear in vLLM and SGLang (:func:`.weights.replicated_bytes`); DSA's lightning
  indexer, whole on every rank (:func:`indexer_bytes`).
- The rotary cos/sin tables (:mod:`.rotary`).
- MLA's absorbed matrices (vLLM V0 0.7.1-0.7.3, :func:`mla_absorbed_bytes`).
- SGLang's w_kc / w_vc copies of MLA's kv_b_proj (:func:`split_kv_b_bytes`).
- Zero points a kernel keeps in the scales' dtype (vLLM's Machete on Hopper for AWQ, :func:`expanded_zero_point_bytes`).
- Block-FP8 scales as Marlin keeps them on GPUs without FP8 units (:func:`marlin_scale_bytes`).
- Routed experts' biases as the MoE kernel keeps them (gpt-oss under vLLM's MXFP4 kernels, :func:`expert_bias_bytes`).
"""

from __future__ import annotations

import functools

from ..errors import ModelConfigError
from ..model_facts.facts import ModelFacts
from .formats import dtype_bytes, weight_format
from .rotary import rotary_cache_bytes
from .weights import (
    config_count, kept_share, linear_bytes_per_param, mistral_format_vision, replicated_bytes, vision_tower_params,
)
from ..units import GIB


def mla_absorbed_bytes(model: ModelFacts, absorption, quantization: str, dtype: str, tp: int, pp: int = 1) -> float:
    """Bytes one GPU holds in MLA's absorbed matrices (``absorption``: the engine profile's ``mla_absorption``; data in
    data/engine_memory.yaml with its source): per layer of the stage, with the rank's heads (``num_heads / tp``),
    W_Q_UK (q_in x heads x kv_lora_rank) and W_UV_O (heads x kv_lora_rank x hidden), one byte each for formats the
    engine requantizes (fp8) else the model dtype, and W_QR (q_in x heads x qk_rope_head_dim) in the model dtype;
    ``q_in`` is ``q_lora_rank`` or, without one, the hidden size. 0 for a model without MLA."""
    if absorption is None or model.attention != "mla":
        return 0.0
    num = functools.partial(config_count, model)
    heads = max(model.num_attention_heads // max(tp, 1), 1)
    q_in = num("q_lora_rank") or model.hidden_size
    lora, rope = num("kv_lora_rank"), num("qk_rope_head_dim")
    act = dtype_bytes(dtype)
    absorbed = 1.0 if quantization in absorption.requantized_formats else act
    per_layer = (q_in * heads * lora + heads * lora * model.hidden_size) * absorbed + q_in * heads * rope * act
    return per_layer * model.num_layers / max(pp, 1)


def expanded_zero_point_bytes(model: ModelFacts, quantization: str, dtype: str, group_size: int | None, tp: int, pp: int) -> float:
    """Bytes one GPU gains when a kernel keeps each group's zero point in the scales' dtype (the model dtype) instead of
    the checkpoint's packed integers: one per group of quantized decoder weights (vLLM machete.py ``transform_w_zp``:
    ``-w_s * zp`` in ``w_s.dtype``)."""
    fmt = weight_format(quantization)
    group = group_size or fmt.group_size
    if not group or not fmt.zero_bytes or "linear" not in fmt.quantizes:
        return 0.0
    quantized = model.params.linear - (model.params.kept_linear if quantization == model.weight_format else 0)
    return quantized / group * (dtype_bytes(dtype) - fmt.zero_bytes) / (max(tp, 1) * max(pp, 1))


def marlin_scale_bytes(model: ModelFacts, quantization: str, dtype: str, group_k: int, tp: int, pp: int) -> float:
    """Bytes one GPU gains when Marlin replaces a block-FP8 checkpoint's fp32 block scales by one scale per ``group_k``
    inputs per output in the model dtype (vLLM marlin_utils_fp8.py: ``scales.repeat_interleave(block_n, ...)`` then
    ``marlin_permute_scales``, dense and MoE layers alike)."""
    fmt = weight_format(quantization)
    quantized = model.params.linear - (model.params.kept_linear if quantization == model.weight_format else 0)
    stored = fmt.scale_bytes / fmt.group_size if fmt.group_size else 0.0
    return quantized * (dtype_bytes(dtype) / group_k - stored) / (max(tp, 1) * max(pp, 1))


def expert_bias_bytes(model: ModelFacts, padding, dtype: str, tp: int, pp: int) -> float:
    """Bytes one GPU gains from the routed experts' biases (``model.params.expert_other``) in the engine's layout
    ``padding`` (:class:`~infer_advisor.engines.memory.ExpertPadding`) over what the even split in the model dtype
    counts: the gate_up bias (2 x intermediate) is split over TP, the down bias (hidden) is whole on every rank (vLLM
    gpt_oss.py loads ``w2_bias`` unsplit and zeroes it on ranks > 0), both in ``padding.bias_bytes`` (fp32 under the
    Triton MXFP4 kernels) or the model dtype. 0 without expert biases or a padded layout."""
    n = model.params.expert_other
    if padding is None or not n:
        return 0.0
    up, down = 2 * model.intermediate_size, model.hidden_size
    per_rank = n * (up / max(tp, 1) + down) / (up + down) / max(pp, 1)
    act = dtype_bytes(dtype)
    return per_rank * (padding.bias_bytes or act) - n * act / (max(tp, 1) * max(pp, 1))


def indexer_bytes(model: ModelFacts, quantization: str, dtype: str, group_size: int | None, tp: int, pp: int) -> float:
    """Bytes one GPU gains because vLLM keeps DeepSeek sparse attention's lightning indexer whole on every rank, over
    the even split in the weight format that the parameter count gives it (model_executor/models/deepseek_v2.py
    ``Indexer``, 0.19.0 and 0.20.0 read: ``wq_b`` ReplicatedLinear with the checkpoint's quant_config, in the model
    dtype where the checkpoint's ignore list covers it; ``wk`` and ``weights_proj`` unquantized and unsplit (0.20.0
    ``wk_weights_proj`` MergedColumnParallelLinear with quant_config=None and disable_tp=True; 0.19.0 keeps ``wk`` in
    the format, 0.8 MB per layer). Layers: those that run their own indexer (Arch.indexer_layers)."""
    config = model.config or {}
    if "index_n_heads" not in config and "index_n_heads" not in (config.get("text_config") or {}):
        return 0.0  # no indexer: a warm plan of any other model never reads the architecture (tests/cli/test_cold_start.py)
    from ..model_facts.arch import read_arch
    from ..model_facts.unconverted import covered_share

    try:
        layers = read_arch(config, where=model.name).indexer_layers()
    except (ModelConfigError, TypeError, ValueError):
        return 0.0
    if not layers:
        return 0.0
    num = functools.partial(config_count, model)
    q = num("q_lora_rank") * num("index_n_heads") * num("index_head_dim")  # wq_b
    k = model.hidden_size * (num("index_head_dim") + num("index_n_heads"))  # wk, weights_proj
    act, fmt = dtype_bytes(dtype), linear_bytes_per_param(quantization, dtype, group_size)
    qc = (model.config or {}).get("quantization_config") if quantization == model.weight_format else None
    kept = covered_share(qc, [f"model.layers.{i}.self_attn.indexer.wq_b" for i in range(model.num_layers)])
    whole = (q * (kept * act + (1 - kept) * fmt) + k * act) * layers / max(pp, 1)
    return whole - (q + k) * fmt * layers / (max(tp, 1) * max(pp, 1))


def split_kv_b_bytes(model: ModelFacts, quantization: str, dtype: str, tp: int, pp: int, compute_capability: float | None) -> float:
    """Bytes one GPU holds in the ``w_kc`` / ``w_vc`` copies SGLang makes of MLA's ``kv_b_proj`` and keeps beside it
    (models/deepseek_common/deepseek_weight_loader.py ``post_load_weights``, 0.5.8.post1 and 0.5.12; deepseek_v2.py in
    0.4.6.post5): the rank's heads x (qk_nope_head_dim + v_head_dim) x kv_lora_rank per layer, in the model dtype
    (``block_quant_dequant`` of a 128x128 block-FP8 ``kv_b_proj`` on CUDA; a bf16 one as it is) or one byte where an
    FP8 one is requantized per tensor: block-FP8 off CUDA (``block_quant_to_tensor_quant``; compute capability 0.0: not
    NVIDIA), per-channel FP8 anywhere (``channel_quant_to_tensor_quant``). 0 for a model without MLA."""
    if model.attention != "mla":
        return 0.0
    num = functools.partial(config_count, model)
    heads = max(model.num_attention_heads // max(tp, 1), 1)
    per_layer = heads * (num("qk_nope_head_dim") + num("v_head_dim")) * num("kv_lora_rank")
    kept = _kept_kv_b(model, quantization)
    fp8 = quantization.startswith("fp8") and (compute_capability == 0.0 or not quantization.startswith("fp8-block"))
    per_param = kept * dtype_bytes(dtype) + (1 - kept) * (1.0 if fp8 else dtype_bytes(dtype))
    return per_layer * per_param * model.num_layers / max(pp, 1)


def _kept_kv_b(model: ModelFacts, quantization: str) -> float:
    """The share of the layers' ``kv_b_proj`` the checkpoint leaves in the model dtype (1.0 for an unquantized one)."""
    if quantization in ("none", None) or not quantization.startswith("fp8"):
        return 1.0
    return kept_share(model, quantization, "kv_b_proj")


def engine_layout_bytes(
    model: ModelFacts, mp, version: str | None, quantization: str, dtype: str, group_size: int | None, tp: int, pp: int,
    checkpoint_bytes: int | None, sources: dict[str, str], compute_capability: float | None = None, linear_kernel: str | None = None,
) -> tuple[float, float]:
    """(bytes one GPU holds beyond its shard, bytes the whole model gains) under the engine memory profile ``mp`` at
    ``version`` (``linear_kernel``: the mixed-precision kernel a start-up log names, which decides the zero points
    over the version's rule); each term that applies names itself in ``sources``. The whole-model figure is the vision encoder
    (in no text-only count); the replicated parts are counted once there, and the built tables in no checkpoint."""
    per_gpu = whole_model = 0.0
    vision = vision_tower_params(model) * dtype_bytes(dtype) if (mp.loads_vision_tower and not checkpoint_bytes) else 0.0
    if vision:  # the checkpoint's vision encoder, unquantized, sharded over TP (a published size already holds it)
        whole = mp.replicates_mistral_vision and mistral_format_vision(model, quantization)  # plain nn.Linear: on every GPU
        whole_model += vision
        per_gpu += vision if whole else vision / tp
        sources["weights_vision"] = f"vision encoder {vision / GIB:.2f} GiB from config.json vision_config ({mp.label})"
    replicated = replicated_bytes(model, quantization, dtype, group_size) if (mp.replicates_mla_and_router and tp > 1) else 0.0
    if replicated:  # counted once in the total, held by every rank of a stage
        per_gpu += replicated / pp * (1 - 1 / tp)
        sources["weights_replicated"] = f"MLA down-projections and router {replicated / GIB:.2f} GiB whole on every rank ({mp.label})"
    indexer = indexer_bytes(model, quantization, dtype, group_size, tp, pp) if mp.replicates_mla_and_router else 0.0
    if indexer:  # the lightning indexer, whole on every rank (its wk / weights_proj unquantized)
        per_gpu += indexer
        sources["weights_indexer"] = f"DSA indexer whole on every rank {indexer / GIB:+.2f} GiB per GPU ({mp.label})"
    nvidia = compute_capability is None or compute_capability > 0  # the catalog gives a non-NVIDIA GPU 0.0
    rotary = rotary_cache_bytes(model, dtype, mp.rotary_cache_layout, nvidia) if mp.keeps_rotary_cache else 0.0
    if rotary:  # the engine's cos/sin tables, whole on every GPU (not in the checkpoint, so not in the total)
        per_gpu += rotary
        sources["weights_rotary"] = f"rotary cos/sin tables {rotary / 2**20:.0f} MiB per GPU (data/rotary_cache.yaml, {mp.label})"
    split = split_kv_b_bytes(model, quantization, dtype, tp, pp, compute_capability) if mp.splits_mla_kv_b else 0.0
    if split:  # SGLang's w_kc / w_vc, copies of kv_b_proj built after loading (in no checkpoint)
        per_gpu += split
        sources["weights_mla_kv_b_split"] = f"MLA w_kc / w_vc copies of kv_b_proj {split / GIB:.2f} GiB per GPU ({mp.label})"
    absorbed = mla_absorbed_bytes(model, mp.absorbs_mla(version), quantization, dtype, tp, pp)
    if absorbed:  # built after loading beside the raw projections (in no checkpoint)
        per_gpu += absorbed
        sources["weights_mla_absorbed"] = f"MLA absorbed matrices {absorbed / GIB:.2f} GiB per GPU (data/engine_memory.yaml, {mp.label})"
    if mp.expands_zero_points(quantization, version, compute_capability, linear_kernel):
        zeros = expanded_zero_point_bytes(model, quantization, dtype, group_size, tp, pp)
        per_gpu += zeros
        sources["weights_zero_points"] = f"zero points in the scales' dtype +{zeros / GIB:.2f} GiB per GPU (data/engine_memory.yaml, {mp.label})"
    marlin = mp.marlin_fp8_for(quantization, compute_capability)
    if marlin is not None:
        scales = marlin_scale_bytes(model, quantization, dtype, marlin.group_k, tp, pp)
        per_gpu += scales
        sources["weights_marlin_scales"] = f"Marlin FP8 scales +{scales / GIB:.2f} GiB per GPU (data/engine_memory.yaml, {mp.label})"
    return per_gpu, whole_model
