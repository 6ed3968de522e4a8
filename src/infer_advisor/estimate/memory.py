"""The memory model: the only place where bytes are added up.

    >>> est = estimate_memory(model, gpu_memory_bytes=80 * 2**30, engine=engine_profile("vllm"),
    ...                       context=4096, concurrency=8)
    >>> est.kv_cache_tokens, est.fits

Per GPU, under tensor parallelism ``tp`` and pipeline parallelism ``pp``:

- weights: decoder blocks split ``tp x pp`` ways; the embedding and lm_head split ``tp`` ways and, with
  ``pp > 1``, held by the first and last stage (the larger of the two counts).
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
- activation peak over ``max_num_batched_tokens`` tokens (or a whole batch's prompts for engines without
  chunked prefill), plus fp32 logits for the sampled rows.
- overheads from the engine's memory profile for its version (``data/engine_memory.yaml``, see
  :mod:`infer_advisor.engines.memory`): the CUDA context, other non-torch memory, communication buffers under
  TP/PP (by interconnect), CUDA graphs. Each is counted in the KV budget only where that engine version counts
  it (vLLM V0 and V1 before 0.20 capture CUDA graphs after sizing the KV cache; 0.33 takes NCCL out of the
  budget; SGLang keeps activations and graphs in its 1 - mem_fraction_static headroom).
- a memory calibration from the engine's own start-up log (``infer-advisor calibrate --from-log``) replaces the
  figures it measured; they are then marked ``calibrated (log)`` in ``figure_sources``.

Three accountings (engine profile ``memory_accounting``):

- ``reserve`` (vLLM, SGLang, TGI): the engine takes ``memory_fraction x total``; the KV cache gets what is
  left after weights, activations and overheads. ``kv_cache_tokens`` is the capacity vLLM prints as
  'GPU KV cache size: N tokens'. ``total_bytes_per_gpu`` is the reservation.
- ``peak`` (transformers, CTranslate2, llama.cpp, ExLlamaV2, mistral.rs): the KV cache is what
  ``concurrency x context`` needs; ``total_bytes_per_gpu`` is the expected peak.
- ``reserve-free`` (TensorRT-LLM): weights, activations and overheads first, then the KV cache takes
  ``memory_fraction x`` the memory still free (``free_gpu_memory_fraction``).

Speculative decoding adds the draft head's weights (``draft_params`` in the model dtype, split over TP
like the target) and its KV cache (``draft_kv_elements_per_token`` per token) to the same budget.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from ..engines.memory import EngineMemoryProfile, memory_profile, profile_from_engine
from ..engines.profiles import EngineProfile
from ..model_facts.facts import ModelFacts
from .formats import dtype_bytes, formats, weight_format

if TYPE_CHECKING:
    from .calibration import MemoryCalibration

CALIBRATED = "calibrated (log)"


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
        default_factory=dict, description="Memory the engine takes outside its KV budget (e.g. CUDA graphs captured after the KV cache)."
    )
    figure_sources: dict[str, str] = Field(
        default_factory=dict,
        description="Where each figure comes from: estimated, catalog/probe, calibrated (log), engine profile, published checkpoint.",
    )
    weights_origin: str = Field(
        default="estimated",
        description="'estimated' (parameter counts x the format's bytes) or 'published checkpoint' (the published "
        "repository's stated size, split over the same parameter groups).",
    )


def _bytes_per_param(fmt, group: str, base: float, group_size: int | None) -> float:
    if fmt.bits is not None and group in fmt.quantizes:
        per = fmt.bits / 8
        g = group_size or fmt.group_size
        if g:
            per += (fmt.scale_bytes + fmt.zero_bytes) / g
        return per
    return base


def _group_bytes(
    model: ModelFacts, fmt_name: str, dtype: str, group_size: int | None, checkpoint_bytes: int | None = None
) -> dict[str, float]:
    """Bytes of each parameter group (embedding, lm_head, linear, other) in the chosen format; with ``checkpoint_bytes``
    (a published checkpoint's real size) the same groups scaled to add up to it."""
    fmt = weight_format(fmt_name)
    expert_fmt = weight_format(fmt.expert_format) if fmt.expert_format else None
    base = dtype_bytes(dtype)
    p = model.params
    counts = {"embedding": p.embedding, "lm_head": p.lm_head, "linear": p.linear, "other": p.other}
    out: dict[str, float] = {}
    if expert_fmt is not None or ("expert_linear" in fmt.quantizes and "linear" not in fmt.quantizes):
        counts["linear"] = p.linear - p.expert_linear  # the routed experts apart (MXFP4 gpt-oss, FP4 DeepSeek-V4 experts)
        counts["expert_linear"] = p.expert_linear
    for group, n in counts.items():
        if group == "expert_linear" and expert_fmt is not None:
            out[group] = n * _bytes_per_param(expert_fmt, group, base, None)
        else:
            out[group] = n * _bytes_per_param(fmt, group, base, group_size)
    if "expert_linear" in out:  # fold back: callers see the four groups
        out["linear"] += out.pop("expert_linear")
    if checkpoint_bytes:
        scale = checkpoint_bytes / sum(out.values())
        out = {group: b * scale for group, b in out.items()}
    return out


def weight_bytes_by_group(
    model: ModelFacts, quantization: str = "none", dtype: str = "bfloat16", group_size: int | None = None,
    checkpoint_bytes: int | None = None,
) -> dict[str, float]:
    """Bytes of the whole model's ``embedding``, ``lm_head``, ``linear`` and ``other`` parameters in a weight format
    (``checkpoint_bytes``: a published checkpoint's real size, split over the same groups).

    The speed model reads the bytes a step moves from here, so weights are added up in one place only.
    """
    return _group_bytes(model, quantization, dtype, group_size, checkpoint_bytes)


def weights_bytes(
    model: ModelFacts, quantization: str = "none", dtype: str = "bfloat16", group_size: int | None = None,
    checkpoint_bytes: int | None = None,
) -> int:
    """All weight bytes of ``model`` in format ``quantization`` with unquantized parts in ``dtype``."""
    total = sum(_group_bytes(model, quantization, dtype, group_size, checkpoint_bytes).values())
    return int(round(total)) if checkpoint_bytes else int(total)


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


def _kv_bytes_for(full: float, sliding: float, window: int | None, context: int, sequences: int, state: float = 0.0) -> float:
    held = min(context, window) if window else context
    return sequences * (context * full + held * sliding + state)


def estimate_memory(
    model: ModelFacts,
    *,
    gpu_memory_bytes: int,
    engine: EngineProfile,
    quantization: str = "none",
    dtype: str = "bfloat16",
    kv_cache_dtype: str = "auto",
    tp: int = 1,
    pp: int = 1,
    context: int,
    concurrency: int = 1,
    request_tokens: int | None = None,
    input_tokens: int | None = None,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    memory_fraction: float | None = None,
    group_size: int | None = None,
    on_gpu: bool = True,
    draft_params: int = 0,
    draft_kv_elements_per_token: int = 0,
    memory: EngineMemoryProfile | None = None,
    interconnect: str = "nvlink",
    calibration: MemoryCalibration | None = None,
    gpu_memory_source: str = "given",
    engine_version: str | None = None,
    checkpoint_bytes: int | None = None,
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
    ``interconnect``: nvlink or pcie (communication buffers under TP); ``calibration``: a memory calibration
    already matched to this engine version, GPU and layout.
    """
    mp = memory or _default_profile(engine)
    sources: dict[str, str] = {"gpu_memory_bytes": gpu_memory_source}
    cal = calibration
    if cal is not None and cal.gpu_memory_bytes and on_gpu:
        gpu_memory_bytes, sources["gpu_memory_bytes"] = cal.gpu_memory_bytes, CALIBRATED
    max_num_seqs = max_num_seqs or mp.batch_tiers[-1].max_num_seqs
    request_tokens = min(request_tokens or context, context)
    if engine.kv_preallocated:  # every slot gets the full context at start-up
        request_tokens = context
        concurrency = min(concurrency, max_num_seqs)
    groups = _group_bytes(model, quantization, dtype, group_size, checkpoint_bytes)
    total_weights = sum(groups.values())
    blocks = groups["linear"] + groups["other"]
    ends = max(groups["embedding"], groups["lm_head"]) if pp > 1 else groups["embedding"] + groups["lm_head"]
    weights_gpu = blocks / (tp * pp) + ends / tp
    if checkpoint_bytes:  # the published repository's stated size, split over the same groups
        sources["weights"] = "published checkpoint"
    if cal is not None and cal.weights_bytes and cal.model == model.name and cal.tp == tp:
        weights_gpu, sources["weights"] = cal.weights_bytes, CALIBRATED
    draft_gpu = draft_params * dtype_bytes(dtype) / tp  # a speculative draft head, never in a log's target weights
    weights_gpu += draft_gpu

    kv_b = _kv_dtype_bytes(mp, dtype, kv_cache_dtype)
    full_tok, slide_tok = kv_bytes_per_token_per_gpu(model, kv_b, tp, pp)
    full_tok += draft_kv_elements_per_token * kv_b / tp
    window = model.sliding_window if mp.sliding_window_kv == "window" else None  # V0: full-length KV for sliding layers
    state = recurrent_state_bytes_per_sequence(model, dtype, tp, pp)

    reserve = engine.memory_accounting in ("reserve", "reserve-free")
    prompt = min(input_tokens or request_tokens, request_tokens)
    tokens, sampled_rows = _profile_batch(mp, engine, reserve, context, concurrency, prompt, max_num_batched_tokens, max_num_seqs)
    act = formats().activation
    act_b = dtype_bytes(dtype)
    routed = (model.num_experts_per_token + model.num_shared_experts) if model.num_experts else 1
    hidden_copies = mp.activation_hidden_copies or act.hidden_copies
    intermediate_copies = mp.activation_intermediate_copies or act.intermediate_copies
    split = tp if mp.activation_split_by_tp else 1  # vLLM gathers full-vocab logits on every rank: its peak does not shrink with TP
    per_token = (hidden_copies * model.hidden_size + intermediate_copies * routed * model.intermediate_size / split) * act_b
    logits_row = model.vocab_size * act.logits_bytes_per_vocab_entry * act.logits_copies / split
    scale = mp.activation_scale
    sources["activation"] = f"estimated x {scale:g} ({mp.label})" if scale != 1 else "estimated"
    if cal is not None and cal.activation_scale:
        scale, sources["activation"] = cal.activation_scale, CALIBRATED
    activation = (tokens * per_token + sampled_rows * logits_row) * scale
    decode_activation = concurrency * per_token + concurrency * logits_row

    overheads, outside = _overheads(mp, on_gpu=on_gpu, tp=tp, pp=pp, interconnect=interconnect, sources=sources)
    if cal is not None and on_gpu:
        _apply_calibrated_overheads(cal, mp, tp, pp, overheads, sources)
    activation_in_budget = activation if (mp.activation_in_budget or not reserve) else 0.0
    if not activation_in_budget and activation:
        outside["activation"] = int(activation)
    fixed = weights_gpu + activation_in_budget + sum(overheads.values())
    fraction = memory_fraction if memory_fraction is not None else mp.memory_fraction
    if engine.memory_accounting == "reserve-free":  # the KV cache gets a fraction of what is free after the rest
        budget = fixed + max(gpu_memory_bytes - fixed, 0.0) * fraction
    elif reserve:
        base = gpu_memory_bytes
        if mp.budget_base == "free_at_start" and on_gpu:  # SGLang: the fraction of what is free after context + NCCL
            base -= mp.cuda_context_bytes + mp.comm_bytes(tp, pp, interconnect)
        budget = base * fraction
    else:
        budget = gpu_memory_bytes
    required_tokens = max(concurrency * request_tokens, context)
    per_seq_at_context = _kv_bytes_for(full_tok, slide_tok, window, context, 1, state=state)
    kv_needed = max(_kv_bytes_for(full_tok, slide_tok, window, request_tokens, concurrency, state=state), per_seq_at_context)
    residual = cal.residual_bytes if (cal is not None and cal.residual_bytes and on_gpu) else 0
    if residual:
        sources["residual"] = CALIBRATED

    if reserve:
        kv_space = max(budget - fixed + residual, 0.0)
        total = budget
        need = fixed - residual + kv_needed
    else:
        # The peak is at the end of prefill (big activations, KV of the prompts only) or at the end of
        # decode (full KV, one token's activations per sequence), whichever is larger.
        base_bytes = weights_gpu + sum(overheads.values())
        kv_prompt = _kv_bytes_for(full_tok, slide_tok, window, prompt, concurrency, state=state)
        kv_space = kv_needed
        need = base_bytes + max(activation + kv_prompt, kv_needed + decode_activation)
        total = need
    free_for_kv = max(budget - fixed + residual, 0.0)
    if not reserve:  # peak engines hold the full KV at the end of decode, next to one token's activations per sequence
        free_for_kv = max(budget - (weights_gpu + sum(overheads.values()) + decode_activation) + residual, 0.0)

    # Capacity in tokens at this context (vLLM rounds down to whole blocks).
    per_token_at_context = per_seq_at_context / context if context else full_tok
    block = mp.block_size if reserve else 1
    if engine.kv_preallocated:
        # n_ctx cells for `concurrency` slots of `context` tokens are allocated at load: that is the cache,
        # whatever else is free, and it holds exactly those slots.
        slots = concurrency if kv_needed <= free_for_kv else int(free_for_kv // per_seq_at_context) if per_seq_at_context else 0
        capacity, max_concurrency = slots * context, slots
        kv_space = slots * per_seq_at_context
    else:
        capacity = int(free_for_kv // per_token_at_context) if per_token_at_context > 0 else 0
        capacity -= capacity % block
        max_concurrency = int(free_for_kv // per_seq_at_context) if per_seq_at_context > 0 else 0
    # Longest context at the requested concurrency (solve the piecewise-linear KV size).
    sharing = concurrency if request_tokens >= context else 1  # typical requests shorter than context leave it to one
    per_seq_budget = max(free_for_kv - (0 if sharing > 1 else _kv_bytes_for(full_tok, slide_tok, window, request_tokens, concurrency - 1, state=state)), 0.0) / max(sharing, 1)
    per_seq_budget = max(per_seq_budget - state, 0.0)  # the recurrent state comes first, whatever the context
    if window and context > window:
        extra = per_seq_budget - window * slide_tok
        max_ctx = int(extra // full_tok) if full_tok > 0 else model.max_position_embeddings
    else:
        max_ctx = int(per_seq_budget // (full_tok + slide_tok)) if (full_tok + slide_tok) > 0 else model.max_position_embeddings
    max_ctx = max(0, min(max_ctx, model.max_position_embeddings))

    fits = need <= budget
    shortfall = 0 if fits else int(math.ceil(need - budget))

    return MemoryEstimate(
        accounting=engine.memory_accounting,
        gpu_memory_bytes=int(gpu_memory_bytes),
        budget_bytes_per_gpu=int(budget),
        weights_bytes=int(round(total_weights)) if checkpoint_bytes else int(total_weights),  # the stated size, exactly
        weights_bytes_per_gpu=int(weights_gpu),
        kv_cache_bytes_per_token=model.kv_cache_elements_per_token * kv_b,
        kv_cache_bytes_per_token_per_gpu=full_tok,
        activation_bytes_per_gpu=int(activation),
        overhead_bytes_per_gpu=overheads,
        kv_cache_bytes_per_gpu=int(kv_space),
        kv_cache_tokens=capacity,
        draft_weights_bytes_per_gpu=int(draft_gpu),
        required_kv_tokens=required_tokens,
        total_bytes_per_gpu=int(total),
        max_concurrency=max_concurrency,
        max_context=max_ctx,
        fits=fits,
        shortfall_bytes_per_gpu=shortfall,
        needed_bytes_per_gpu=int(need),
        recurrent_state_bytes_per_sequence_per_gpu=state,
        engine_version=engine_version or engine.version,
        memory_profile=mp.label,
        activation_tokens=int(tokens),
        sampled_rows=int(sampled_rows),
        outside_budget_bytes_per_gpu={k: int(v) for k, v in outside.items() if v},
        figure_sources=sources,
        source=CALIBRATED if any(v == CALIBRATED for v in sources.values()) else "estimated",
        weights_origin="published checkpoint" if checkpoint_bytes else "estimated",
    )


def _default_profile(engine: EngineProfile) -> EngineMemoryProfile:
    from ..engines.profiles import engine_profiles

    if engine.name in engine_profiles() and engine_profiles()[engine.name] == engine:
        return memory_profile(engine.name)
    return profile_from_engine(engine)  # a hand-made profile (tests, tools): its own figures


def _kv_dtype_bytes(mp: EngineMemoryProfile, dtype: str, kv_cache_dtype: str) -> float:
    if kv_cache_dtype == "fp8":  # the engine's 8-bit KV cache: FP8 E4M3 in vLLM/SGLang/TGI, q8_0 in llama.cpp
        return dtype_bytes(mp.kv_8bit_dtype)
    if kv_cache_dtype != "auto":
        return dtype_bytes(kv_cache_dtype)
    return dtype_bytes("float16") if mp.kv_cache_dtype == "float16" else dtype_bytes(dtype)


def _profile_batch(mp, engine, reserve, context, concurrency, prompt, max_num_batched_tokens, max_num_seqs) -> tuple[int, int]:
    """(tokens, fp32 logits rows) of the forward pass behind the activation figure."""
    if reserve and mp.activation_tokens == "max_model_len" and not max_num_batched_tokens:
        # vLLM V0: one batch as long as max_model_len (at least the tier's floor), or the chunk when chunked prefill is on
        floor = mp.batch_tiers[-1].max_num_batched_tokens
        chunked = mp.chunked_prefill_above is not None and context > mp.chunked_prefill_above
        tokens = mp.chunked_prefill_tokens if chunked else max(context, floor)
        return tokens, min(max_num_seqs, tokens)
    if reserve or engine.max_num_batched_tokens:
        tokens = max_num_batched_tokens or mp.batch_tiers[-1].max_num_batched_tokens
        # vLLM's profile run samples max_num_seqs dummy rows; peak engines with chunking sample their batch
        rows = min(max_num_seqs, tokens) if reserve else min(concurrency, max_num_seqs)
        return tokens, rows
    return concurrency * prompt, concurrency  # no chunked prefill: the whole batch's prompts in one forward


def _overheads(mp: EngineMemoryProfile, *, on_gpu: bool, tp: int, pp: int, interconnect: str, sources: dict[str, str]):
    """(in the budget, outside it): CUDA context, non-torch memory, communication buffers, CUDA graphs."""
    if not on_gpu:
        return {"non_torch": 0, "cuda_graphs": 0, "nccl": 0}, {}
    comm = mp.comm_bytes(tp, pp, interconnect)
    inside = {
        "cuda_context": mp.cuda_context_bytes if (mp.context_in_budget and mp.budget_base == "total") else 0,
        "non_torch": mp.non_torch_bytes,
        "cuda_graphs": mp.cuda_graph_bytes if mp.cuda_graphs_in_budget else 0,
        "nccl": comm if (mp.comm_in_budget and mp.budget_base == "total") else 0,
    }
    outside = {
        "cuda_graphs": 0 if mp.cuda_graphs_in_budget else mp.cuda_graph_bytes,
        "nccl": 0 if (mp.comm_in_budget or not comm) else comm,
        "cuda_context": 0 if mp.context_in_budget else mp.cuda_context_bytes,
    }
    for key in inside:
        sources[key] = f"engine profile ({mp.label})"
    return inside, outside


def _apply_calibrated_overheads(cal, mp: EngineMemoryProfile, tp: int, pp: int, overheads: dict[str, int], sources: dict[str, str]) -> None:
    """A log's measured non-torch memory (context, NCCL and the rest, as the engine counted it) for its TP size."""
    if cal.non_torch_bytes is not None and cal.tp == tp * pp:
        overheads.update(cuda_context=0, nccl=0, non_torch=cal.non_torch_bytes)
        for key in ("cuda_context", "nccl", "non_torch"):
            sources[key] = CALIBRATED
    if cal.cuda_graph_bytes is not None and mp.cuda_graphs_in_budget:
        overheads["cuda_graphs"], sources["cuda_graphs"] = cal.cuda_graph_bytes, CALIBRATED
