"""The memory model: the only place where bytes are added up.

    >>> est = estimate_memory(model, gpu_memory_bytes=80 * 2**30, engine=engine_profile("vllm"),
    ...                       context=4096, concurrency=8)
    >>> est.kv_cache_tokens, est.fits

Per GPU, under tensor parallelism ``tp`` and pipeline parallelism ``pp``:
- weights: decoder blocks split ``tp x pp`` ways; the embedding and lm_head split ``tp`` ways and, with ``pp > 1``, held by the first and last stage (the larger of the two counts).
- KV cache per token: full-attention layers split over ``pp`` stages and KV heads over ``tp`` ranks (a
  rank holds at least one KV head, so ``tp > kv_heads`` replicates); MLA's latent is replicated on every
  TP rank, as vLLM does. Sliding-window and chunked-attention layers hold at most ``sliding_window`` tokens
  per sequence. Attention sinks (gpt-oss) are per-head parameters and add no KV entry.
- recurrent state per SEQUENCE (Mamba-2 and gated-DeltaNet layers): conv state in the model dtype plus the
  SSM state in its own dtype (float32 where the config says so), split over ``tp`` and ``pp`` like the heads;
  it does not grow with the context (:func:`recurrent_state_bytes_per_sequence`).
- weights of native block-scaled checkpoints (MXFP4 experts, NVFP4, FP8 with 128x128 block scales) take their
  format's bits plus one scale per block (``data/formats.yaml``); formats that quantize only ``expert_linear``
  keep attention and dense layers in the model dtype, and a format with an ``expert_format`` (DeepSeek-V4's FP8
  checkpoint with FP4 experts) stores the routed experts in that other format.
- a published checkpoint whose size is known (``checkpoint_bytes``: its safetensors index ``total_size`` or the
  size its model card states, ``data/published_checkpoints.yaml``) replaces the format's estimate of the weights:
  the same four groups, scaled so they add up to the real size (``weights_origin`` 'published checkpoint').
- activation peak over ``max_num_batched_tokens`` tokens (a whole batch's prompts without chunked prefill), plus fp32 logits.
- overheads from the engine's memory profile for its version (``data/engine_memory.yaml``, :mod:`infer_advisor.engines.memory`):
  the CUDA context, other non-torch memory, communication buffers under TP/PP (by interconnect), CUDA graphs, vLLM's
  LoRA slots (:mod:`.lora`), each in the KV budget only where that engine version counts it (vLLM V0 and V1 before
  0.20 capture CUDA graphs after sizing the KV cache; 0.33 takes NCCL out of the budget; SGLang keeps activations and
  graphs in its 1 - mem_fraction_static headroom; V0's profiler misses LoRA buffers).
- a memory calibration from a start-up log (``calibrate --from-log``) replaces the figures it measured (``calibrated (log)``).
- the KV space, capacity, concurrency and longest context from what is left: :mod:`.kv_capacity`.

Three accountings (engine profile ``memory_accounting``):

- ``reserve`` (vLLM, SGLang, TGI): the engine takes ``memory_fraction x total``; the KV cache gets what is
  left after weights, activations and overheads. ``kv_cache_tokens`` is the capacity vLLM prints as
  'GPU KV cache size: N tokens'. ``total_bytes_per_gpu`` is the reservation.
- ``peak`` (transformers, CTranslate2, llama.cpp, ExLlamaV2, mistral.rs): the KV cache is what
  ``concurrency x context`` needs; ``total_bytes_per_gpu`` is the expected peak.
- ``reserve-free`` (TensorRT-LLM): weights, activations and overheads first, then the KV cache takes
  ``memory_fraction x`` the memory still free (``free_gpu_memory_fraction``).

Speculative decoding adds the draft head's weights (``draft_params`` in the model dtype, split over TP like the target)
and its KV cache (``draft_kv_elements_per_token`` per token) to the same budget; a ``--speculative-config`` draft
(``speculative``, :mod:`.draft`) adds its weights, its own attention layers to the engine's KV groups
(:mod:`.engine_kv`) and ``num_speculative_tokens`` state pages and conv rows to each Mamba / DeltaNet layer.
"""


import math
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from .._field_defaults import empty_dict

from ..engines.kv_report import kv_report
from ..engines.memory import EngineMemoryProfile, memory_profile, profile_from_engine
from ..engines.profiles import EngineProfile
from ..model_facts.facts import ModelFacts
from .draft import draft_kv_bytes_per_token_per_layer, draft_weight_bytes, state_with_speculation
from .engine_kv import DraftLayers, EngineKV, engine_kv_figures
from .engine_terms import (
    CALIBRATED, apply_calibrated_overheads, budget_bytes, cuda_graph_pool_bytes, kv_dtype_bytes, moe_workspace_bytes, overheads_bytes,
    profile_batch,
)
from .formats import dtype_bytes, formats, weight_format
from .kv_capacity import kv_fit, max_context
from .lora import add_lora_term
from .vision_profile import vision_profile
from .weights import expert_padding_ratio, group_bytes, weight_bytes_by_group, weights_bytes, weights_per_gpu
from .weights_engine import engine_layout_bytes, expert_bias_bytes

__all__ = ["MemoryEstimate", "estimate_memory", "kv_bytes_per_token_per_gpu", "weight_bytes_by_group", "weights_bytes"]

if TYPE_CHECKING:
    from ..engines.draft_shape import DraftShape
    from .calibration import MemoryCalibration



class MemoryEstimate(BaseModel):
    """Bytes per GPU for one layout; every figure here is ``estimated`` by this model unless ``figure_sources`` says
    otherwise: weights taken from a published checkpoint's stated size (also ``weights_origin``), figures a memory
    calibration measured in the engine's log."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    source: str = Field(default="estimated", description="Where these figures came from.")
    accounting: str = Field(description="reserve (engine pre-allocates a fraction) or peak (grows as needed).")
    gpu_memory_bytes: int = Field(description="Total memory of one GPU (or the host RAM on CPU).")
    budget_bytes_per_gpu: int = Field(description="What the engine may use: memory_fraction x total for reserve engines.")
    weights_bytes: int = Field(description="All weights of the model in the chosen format.")
    weights_bytes_per_gpu: int
    kv_cache_bytes_per_token: float = Field(description="KV bytes per token for the whole model (full-attention layers).")
    kv_cache_bytes_per_token_per_gpu: float
    activation_bytes_per_gpu: int = Field(description="Activation/workspace peak of one forward pass.")
    overhead_bytes_per_gpu: dict[str, int] = Field(description="Non-torch memory, CUDA graphs, NCCL.")
    kv_cache_bytes_per_gpu: int = Field(description="Reserve: left for KV after the rest. Peak: needed for concurrency x context.")
    kv_cache_tokens: int = Field(description="KV capacity in tokens (whole model) at the chosen context.")
    draft_weights_bytes_per_gpu: int = Field(default=0, description="Weights of a speculative-decoding draft head, when the plan uses one.")
    required_kv_tokens: int = Field(description="KV tokens the plan needs: concurrency x typical request tokens, at least one full context.")
    total_bytes_per_gpu: int = Field(description="Reserve: the engine's reservation. Peak: the expected peak.")
    max_concurrency: int = Field(description="Requests of the full context that fit at once.")
    needed_bytes_per_gpu: int = Field(default=0, description="Weights + activations + overheads + the KV the plan needs.")
    recurrent_state_bytes_per_sequence_per_gpu: float = Field(
        default=0.0, description="Mamba / linear-attention state one sequence holds on one GPU, whatever its length."
    )
    max_context: int = Field(description="Longest context that fits at the requested concurrency (capped by the model).")
    fits: bool = Field(description="Weights and overheads fit, and the KV cache holds concurrency x context.")
    shortfall_bytes_per_gpu: int = Field(default=0, description="How much more memory per GPU a fit would need.")
    # Added fields (append-only).
    engine_version: str | None = Field(default=None, description="Engine version whose memory profile was used.")
    memory_profile: str | None = Field(default=None, description="The engine memory profile (data/engine_memory.yaml range) used.")
    activation_tokens: int = Field(default=0, description="Tokens of the start-up profile run (or the batch's prompts) behind the activation figure.")
    sampled_rows: int = Field(default=0, description="Rows of fp32 logits in the activation figure.")
    outside_budget_bytes_per_gpu: dict[str, int] = Field(
        default_factory=empty_dict, description="Memory the engine takes outside its KV budget (e.g. CUDA graphs captured after the KV cache)."
    )
    figure_sources: dict[str, str] = Field(
        default_factory=empty_dict,
        description="Where each figure comes from: estimated, catalog/probe, calibrated (log), engine profile, published checkpoint.",
    )
    weights_origin: str = Field(
        default="estimated",
        description="'estimated' (parameter counts x the format's bytes) or 'published checkpoint' (the published "
        "repository's stated size, split over the same parameter groups).",
    )
    # Added for issue 23 (append-only): the figures the engine itself prints, beside the effective ones above.
    engine_kv_cache_tokens: int | None = Field(
        default=None,
        description="KV capacity as the engine's start-up log (and /metrics) will print it: vLLM 'GPU KV cache size: N tokens', "
        "SGLang '#tokens', llama.cpp cells. vLLM 0.9-0.20 counts every layer slot of a hybrid or sliding-window model as if it "
        "kept every token, 0.21+ prints max_concurrency x max_model_len (engine_kv_rule); kv_cache_tokens is the effective capacity.",
    )
    engine_max_concurrency: float | None = Field(
        default=None, description="'Maximum concurrency for <context> tokens per request' as the engine prints it (2 decimals)."
    )
    engine_kv_rule: str | None = Field(
        default=None, description="How this engine version counts its printed KV tokens: all_layers, layer_slots, concurrency, pool_tokens (data/engine_kv_report.yaml)."
    )
    engine_starts: bool | None = Field(
        default=None, description="Whether the engine starts with these settings unchanged (one request of the full context fits its KV check)."
    )
    engine_refusal: str | None = Field(
        default=None, description="The engine's own error text when it would refuse to start (copied from its source at that version)."
    )
    kv_bytes_per_request_per_gpu: float = Field(
        default=0.0, description="KV bytes one request of the full context takes on one GPU, as the engine checks it at start-up."
    )


def kv_bytes_per_token_per_gpu(model: ModelFacts, kv_bytes: float, tp: int, pp: int) -> tuple[float, float]:
    """(full-attention, sliding-window) KV bytes per token on one GPU."""
    if model.attention == "mla":
        share = 1.0  # the latent is replicated on every TP rank
    else:
        per_rank_heads = max(model.num_kv_heads // tp, 1)
        share = per_rank_heads / model.num_kv_heads
    full = model.kv_cache_elements_per_token * kv_bytes * share / pp
    sliding = model.sliding_kv_elements_per_token * kv_bytes * share / pp
    return full, sliding


def recurrent_state_bytes_per_sequence(model: ModelFacts, dtype: str, tp: int, pp: int) -> float:
    """Mamba / gated-DeltaNet state of one sequence on one GPU: conv state in ``dtype``, SSM state in the
    config's state dtype (``recurrent_state_dtype``, else ``dtype``); heads split over ``tp``, layers over ``pp``."""
    if not (model.recurrent_state_conv_elements or model.recurrent_state_ssm_elements):
        return 0.0
    ssm_dtype = model.recurrent_state_dtype if model.recurrent_state_dtype in formats().dtypes else dtype
    total = model.recurrent_state_conv_elements * dtype_bytes(dtype) + model.recurrent_state_ssm_elements * dtype_bytes(ssm_dtype)
    return total / (tp * pp)


def estimate_memory(
    model: ModelFacts,
    *,
    gpu_memory_bytes: int,
    engine: EngineProfile,
    quantization: str = "none",
    dtype: str = "bfloat16",
    kv_cache_dtype: str = "auto",
    tp: int = 1, pp: int = 1, context: int, concurrency: int = 1,
    request_tokens: int | None = None, input_tokens: int | None = None,
    max_num_batched_tokens: int | None = None, max_num_seqs: int | None = None,
    memory_fraction: float | None = None, group_size: int | None = None, on_gpu: bool = True,
    draft_params: int = 0, draft_kv_elements_per_token: int = 0,
    memory: EngineMemoryProfile | None = None,
    interconnect: str = "nvlink", compute_capability: float | None = None, sampler: str | None = None, linear_kernel: str | None = None,
    calibration: "MemoryCalibration | None" = None,
    gpu_memory_source: str = "given", engine_version: str | None = None,
    checkpoint_bytes: int | None = None, lora_slots: int = 0, lora_rank: int = 0,
    speculative: "DraftShape | None" = None, prefix_caching: bool = False, language_model_only: bool = False,
) -> MemoryEstimate:
    """Estimate per-GPU memory for one layout. See the module docstring for the accounting.

    ``context`` is the longest request (max_model_len); ``request_tokens`` the tokens a typical request
    holds (default: ``context``). A fit needs room for one request of ``context`` tokens and for
    ``concurrency`` requests of ``request_tokens``; engines that pre-allocate per-slot context
    (llama.cpp) need ``concurrency x context``. ``draft_params`` / ``draft_kv_elements_per_token``: a
    speculative-decoding draft head's parameters and KV elements per token (0 without one). ``checkpoint_bytes``:
    the real size of the published checkpoint the plan serves, when known; it replaces the format's estimate
    (``figure_sources['weights']`` 'published checkpoint', unless a calibration measured the weights).

    ``memory``: the engine version's memory profile (default: the profile of ``engine`` at its pinned version);
    ``max_num_batched_tokens`` / ``max_num_seqs``: the engine's settings (default: the profile's first tier, i.e.
    the caller resolves per-GPU defaults with :func:`infer_advisor.engines.memory.batch_defaults`);
    ``interconnect``: nvlink or pcie (communication buffers under TP; ``compute_capability`` < 9: pre-Hopper NCCL);
    ``sampler``: the top-k/top-p sampler a log names (flashinfer, pytorch; None: the version's); ``linear_kernel``: the
    mixed-precision kernel a log names (machete, marlin; None: the version's rule for AWQ's zero points); ``calibration``: a
    memory calibration matched to this engine version, GPU and layout; ``lora_slots`` x ``lora_rank``: LoRA buffers (:mod:`.lora`).
    ``speculative``: a speculative decoder's shape (``--speculative-config``, :mod:`infer_advisor.engines.draft_shape`): its
    weights, KV layers and state pages (:mod:`.draft`); ``prefix_caching``: on (a hybrid's Mamba layers hold more pages);
    ``language_model_only``: vLLM's --language-model-only (the vision encoder is not loaded).
    """
    mp = memory or _default_profile(engine)
    version = engine_version or engine.version
    sources: dict[str, str] = {"gpu_memory_bytes": gpu_memory_source}
    cal = calibration
    if cal is not None and cal.gpu_memory_bytes and on_gpu:
        gpu_memory_bytes, sources["gpu_memory_bytes"] = cal.gpu_memory_bytes, CALIBRATED
    max_num_seqs = max_num_seqs or mp.batch_tiers[-1].max_num_seqs
    request_tokens = min(request_tokens or context, context)
    if engine.kv_preallocated:  # every slot gets the full context at start-up
        request_tokens = context
        concurrency = min(concurrency, max_num_seqs)
    vision_mp = mp.model_copy(update={"loads_vision_tower": False}) if language_model_only else mp
    w = _weights(model, vision_mp, version, quantization, dtype, group_size, checkpoint_bytes, tp, pp, cal, (draft_params, speculative), sources, (compute_capability, linear_kernel))
    kv = _kv_shape(model, mp, dtype, kv_cache_dtype, tp, pp, draft_kv_elements_per_token, speculative)
    reserve = engine.memory_accounting in ("reserve", "reserve-free")
    prompt = min(input_tokens or request_tokens, request_tokens)
    act = _activation(model, vision_mp, engine, reserve, dtype, tp, context, concurrency, prompt, max_num_batched_tokens, max_num_seqs, cal, sources, sampler)
    graphs = cuda_graph_pool_bytes(mp, math.ceil(model.num_layers / pp), max_num_seqs, speculative.num_speculative_tokens if speculative else 0,
                                   max_num_batched_tokens)
    overheads, outside = overheads_bytes(mp, on_gpu=on_gpu, tp=tp, pp=pp, interconnect=interconnect, sources=sources, graph_bytes=graphs,
                                        compute_capability=compute_capability)
    add_lora_term(model, engine, engine_version, lora_slots, lora_rank, dtype_bytes(dtype), tp, pp, overheads, outside, sources)
    if cal is not None and on_gpu:
        apply_calibrated_overheads(cal, mp, tp, pp, overheads, sources)
    activation_in_budget = act["activation"] if (mp.activation_in_budget or not reserve) else 0.0
    if not activation_in_budget and act["activation"]:
        outside["activation"] = int(act["activation"])
    fixed = w["per_gpu"] + activation_in_budget + sum(overheads.values())
    fraction = memory_fraction if memory_fraction is not None else mp.memory_fraction
    budget = budget_bytes(engine, mp, reserve, fixed, gpu_memory_bytes, fraction, on_gpu, tp, pp, interconnect)
    residual = cal.residual_bytes if (cal is not None and cal.residual_bytes and on_gpu) else 0
    if residual:
        sources["residual"] = CALIBRATED
    fit = kv_fit(engine, mp, reserve, kv, w["per_gpu"] + sum(overheads.values()), fixed, budget, residual, act,
                 context, concurrency, request_tokens, prompt, kv_report(engine.name, version))
    max_ctx = max_context(model, kv, fit["free_for_kv"], concurrency, request_tokens, context)
    engine_figs = _engine_figures(model, engine, mp, version, reserve, fit, kv, pp, context, max_num_batched_tokens, prefix_caching)
    return _result(engine, mp, model, gpu_memory_bytes, budget, w, kv, act, overheads, outside, fit, max_ctx, engine_figs,
                   concurrency, request_tokens, context, version, sources, checkpoint_bytes)


def _engine_figures(model, engine, mp, version, reserve, fit, kv, pp, context, max_num_batched_tokens, prefix_caching) -> EngineKV:
    """What the engine version will print and whether it starts (data/engine_kv_report.yaml, estimate/engine_kv.py)."""
    report = kv_report(engine.name, version)
    spec = kv["speculative"]
    return engine_kv_figures(
        model, report, free_bytes=fit["free_for_kv"] if reserve else fit["kv_space"],
        full_tok=kv["full"] - kv["draft_tok"], slide_tok=kv["slide"], state=kv["state"], pp=pp, context=context,
        mnbt=max_num_batched_tokens or mp.batch_tiers[-1].max_num_batched_tokens, block=mp.block_size if reserve else 1,
        capacity_tokens=fit["capacity"],
        draft=DraftLayers(spec.kv_layers, kv["draft_layer_tok"], spec.same_spec_as_target) if kv["draft_layer_tok"] else None,
        state_pages=report.state_pages(prefix_caching, spec.num_speculative_tokens if spec else 0), version=version,
    )


def _weights(model, mp, version, quantization, dtype, group_size, checkpoint_bytes, tp, pp, cal, draft, sources, kernel=(None, None)) -> dict:
    """Whole-model and per-GPU weight bytes in the engine's layout; a calibration's measured figure wins."""
    fmt = weight_format(quantization)
    pad = mp.expert_padding_for((quantization, fmt.expert_format or quantization), version, kernel[0])
    ratio = expert_padding_ratio(model, pad, tp)
    groups = group_bytes(model, quantization, dtype, group_size, checkpoint_bytes)
    per_gpu = weights_per_gpu(group_bytes(model, quantization, dtype, group_size, checkpoint_bytes, ratio), tp, pp)
    extra, whole_model = engine_layout_bytes(model, mp, version, quantization, dtype, group_size, tp, pp, checkpoint_bytes, sources, *kernel)
    per_gpu += extra  # what the engine keeps whole on every rank or builds while loading (estimate/weights_engine.py)
    groups["other"] += whole_model
    if checkpoint_bytes:  # the published repository's stated size, split over the same groups
        sources["weights"] = "published checkpoint"
    if ratio != 1.0:
        sources["weights_layout"] = f"routed experts padded x{ratio:.3f} ({mp.label})"
    biases = expert_bias_bytes(model, pad, dtype, tp, pp)
    if biases:  # the experts' biases as the MoE kernel keeps them (fp32 under Triton MXFP4), the down bias on every rank
        per_gpu += biases
        sources["weights_expert_bias"] = f"routed experts' biases {biases / 2**20:+.0f} MiB per GPU ({mp.label})"
    if cal is not None and cal.weights_bytes and cal.model == model.name and cal.tp == tp:
        per_gpu, sources["weights"] = cal.weights_bytes, CALIBRATED
    params, shape = draft  # a published head's parameters (model dtype) and/or a --speculative-config draft (estimate/draft.py)
    draft = params * dtype_bytes(dtype) / tp + draft_weight_bytes(shape, quantization=quantization, dtype=dtype, group_size=group_size, tp=tp)
    return {"total": sum(groups.values()), "per_gpu": per_gpu + draft, "draft": draft}


def _kv_shape(model, mp, dtype, kv_cache_dtype, tp, pp, draft_kv_elements_per_token, speculative) -> dict:
    """KV bytes per token on one GPU (full-attention and windowed layers, a draft's layers counted in ``full`` and
    apart in ``draft_tok``), the window held, the recurrent state (with a speculative decoder's extra conv rows)."""
    kv_b = kv_dtype_bytes(mp, dtype, kv_cache_dtype)
    full, slide = kv_bytes_per_token_per_gpu(model, kv_b, tp, pp)
    draft_layer = draft_kv_bytes_per_token_per_layer(speculative, kv_b, tp)
    draft_tok = draft_layer * (speculative.kv_layers if speculative else 0)
    full += draft_kv_elements_per_token * kv_b / tp  # a published head's KV (plan's latency goal), lumped with the target's
    window = model.sliding_window if mp.sliding_window_kv == "window" else None  # V0: full-length KV for sliding layers
    state = recurrent_state_bytes_per_sequence(model, dtype, tp, pp)
    conv = model.recurrent_state_conv_elements * dtype_bytes(dtype) / (tp * pp)
    if speculative is not None:  # the conv state grows by the speculative tokens (draft_shape imported only then)
        from ..engines.draft_shape import conv_kernel

        state = state_with_speculation(state, conv, conv_kernel(model), speculative)
    return {"kv_b": kv_b, "full": full + draft_tok, "slide": slide, "window": window, "state": state,
            "draft_tok": draft_tok, "draft_layer_tok": draft_layer, "speculative": speculative}


def _activation(model, mp, engine, reserve, dtype, tp, context, concurrency, prompt, max_num_batched_tokens, max_num_seqs, cal, sources,
                sampler=None) -> dict:
    """The start-up profile's activation peak (tokens x per-token tensors + fp32 logits rows) and one decode step's."""
    tokens, sampled_rows = profile_batch(mp, engine, reserve, context, concurrency, prompt, max_num_batched_tokens, max_num_seqs)
    act = formats().activation
    act_b = dtype_bytes(dtype)
    routed = (model.num_experts_per_token + model.num_shared_experts) if model.num_experts else 1
    hidden_copies = mp.activation_hidden_copies or act.hidden_copies
    intermediate_copies = mp.activation_intermediate_copies or act.intermediate_copies
    split = tp if mp.activation_split_by_tp else 1  # vLLM gathers full-vocab logits on every rank: its peak does not shrink with TP
    per_token = (hidden_copies * model.hidden_size + intermediate_copies * routed * model.intermediate_size / split) * act_b
    term = mp.sampler_peak(sampler)
    copies = term.logits_copies if term is not None else (mp.activation_logits_copies or act.logits_copies)
    gathered = term is not None and term.after_forward  # the sampler sees the whole vocabulary on every rank (logits gathered)
    logits_row = model.vocab_size * act.logits_bytes_per_vocab_entry * copies / (1 if gathered else split)
    scale = mp.activation_scale
    sources["activation"] = f"estimated x {scale:g} ({mp.label})" if scale != 1 else "estimated"
    if cal is not None and cal.activation_scale:
        scale, sources["activation"] = cal.activation_scale, CALIBRATED
    # after_forward: the forward's intermediates are freed before the sampler runs; the hidden states (and a kept MoE workspace) stay
    kept = tokens * model.hidden_size * act_b + (moe_workspace_bytes(model, tokens, tp, act_b) if mp.moe_workspace_persists else 0.0)
    peak = max(tokens * per_token, kept + sampled_rows * logits_row) if gathered else tokens * per_token + sampled_rows * logits_row
    vision = vision_profile(model, tp=tp, act_b=act_b, mnbt=tokens, max_num_seqs=max_num_seqs, context=context) if (
        reserve and mp.profiles_vision_encoder and mp.loads_vision_tower) else None
    if vision is not None:  # dummy images encoded first, their embeddings kept through the text batch (estimate/vision_profile.py)
        peak = max(vision.encoder_peak, peak + vision.outputs)
        sources["activation_vision"] = f"vision encoder's profile: {vision.items} image(s) of the largest size ({mp.label})"
    return {
        "activation": peak * scale,
        "decode": concurrency * per_token + concurrency * logits_row, "tokens": tokens, "rows": sampled_rows,
    }


def _result(engine, mp, model, gpu_memory_bytes, budget, w, kv, act, overheads, outside, fit, max_ctx, figs: EngineKV,
            concurrency, request_tokens, context, version, sources, checkpoint_bytes) -> MemoryEstimate:
    fits = fit["fits"]
    return MemoryEstimate(
        accounting=engine.memory_accounting,
        gpu_memory_bytes=int(gpu_memory_bytes),
        budget_bytes_per_gpu=int(budget),
        weights_bytes=int(round(w["total"])) if checkpoint_bytes else int(w["total"]),  # the stated size, exactly
        weights_bytes_per_gpu=int(w["per_gpu"]),
        kv_cache_bytes_per_token=model.kv_cache_elements_per_token * kv["kv_b"],
        kv_cache_bytes_per_token_per_gpu=kv["full"],
        activation_bytes_per_gpu=int(act["activation"]),
        overhead_bytes_per_gpu=overheads,
        kv_cache_bytes_per_gpu=int(fit["kv_space"]),
        kv_cache_tokens=fit["capacity"],
        draft_weights_bytes_per_gpu=int(w["draft"]),
        required_kv_tokens=fit["required"],
        total_bytes_per_gpu=int(fit["total"]),
        max_concurrency=fit["max_concurrency"],
        max_context=max_ctx,
        fits=fits,
        shortfall_bytes_per_gpu=0 if fits else int(math.ceil(fit["need"] - budget)),
        needed_bytes_per_gpu=int(fit["need"]),
        recurrent_state_bytes_per_sequence_per_gpu=kv["state"],
        engine_version=version,
        memory_profile=mp.label,
        activation_tokens=int(act["tokens"]),
        sampled_rows=int(act["rows"]),
        outside_budget_bytes_per_gpu={k: int(v) for k, v in outside.items() if v},
        figure_sources=sources,
        source=CALIBRATED if any(v == CALIBRATED for v in sources.values()) else "estimated",
        weights_origin="published checkpoint" if checkpoint_bytes else "estimated",
        engine_kv_cache_tokens=figs.tokens,
        engine_max_concurrency=round(figs.max_concurrency, 2),
        engine_kv_rule=kv_report(engine.name, version).printed_tokens,
        engine_starts=figs.starts,
        engine_refusal=figs.refusal,
        kv_bytes_per_request_per_gpu=figs.request_bytes,
    )


def _default_profile(engine: EngineProfile) -> EngineMemoryProfile:
    from ..engines.profiles import engine_profiles

    if engine.name in engine_profiles() and engine_profiles()[engine.name] == engine:
        return memory_profile(engine.name)
    return profile_from_engine(engine)  # a hand-made profile (tests, tools): its own figures


