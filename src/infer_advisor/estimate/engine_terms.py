"""The engine memory profile's terms in the budget: the KV dtype, the start-up profile batch, the overheads
(CUDA context, non-torch memory, communication buffers, CUDA graphs) and the budget itself, by accounting.

Called by :func:`infer_advisor.estimate.memory.estimate_memory` only (the memory model adds the bytes up).
"""

from __future__ import annotations

from ..engines.memory import EngineMemoryProfile
from .formats import dtype_bytes

CALIBRATED = "calibrated (log)"


def budget_bytes(engine, mp, reserve, fixed, gpu_memory_bytes, fraction, on_gpu, tp, pp, interconnect) -> float:
    """What the engine may use: the reservation (reserve), fixed + a fraction of the rest (reserve-free), or all (peak)."""
    if engine.memory_accounting == "reserve-free":  # the KV cache gets a fraction of what is free after the rest
        return fixed + max(gpu_memory_bytes - fixed, 0.0) * fraction
    if reserve:
        base = gpu_memory_bytes
        if mp.budget_base == "free_at_start" and on_gpu:  # SGLang: the fraction of what is free after context + NCCL
            base -= mp.cuda_context_bytes + mp.comm_bytes(tp, pp, interconnect)
        return base * fraction
    return gpu_memory_bytes


def kv_dtype_bytes(mp: EngineMemoryProfile, dtype: str, kv_cache_dtype: str) -> float:
    if kv_cache_dtype in ("fp8", "fp8_e4m3", "fp8_e5m2"):  # the 8-bit KV cache: FP8 in vLLM/SGLang/TGI, q8_0 in llama.cpp
        return dtype_bytes(mp.kv_8bit_dtype)
    if kv_cache_dtype != "auto":
        return dtype_bytes(kv_cache_dtype)
    return dtype_bytes("float16") if mp.kv_cache_dtype == "float16" else dtype_bytes(dtype)


def profile_batch(mp, engine, reserve, context, concurrency, prompt, max_num_batched_tokens, max_num_seqs) -> tuple[int, int]:
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


def cuda_graph_pool_bytes(mp: EngineMemoryProfile, layers_per_stage: int, max_num_seqs: int, num_speculative_tokens: int,
                          max_num_batched_tokens: int | None) -> int:
    """The CUDA-graph pool of this engine version for these settings (its fixed figure where it has no scaling)."""
    scaling = mp.cuda_graph_scaling
    if scaling is None or not mp.cuda_graph_bytes:  # a profile with no pool (--enforce-eager: doctor sets it to 0) has none
        return mp.cuda_graph_bytes
    mnbt = max_num_batched_tokens or mp.batch_tiers[-1].max_num_batched_tokens
    return scaling.pool_bytes(layers_per_stage=layers_per_stage, max_num_seqs=max_num_seqs,
                              num_speculative_tokens=num_speculative_tokens, max_num_batched_tokens=mnbt)


def moe_workspace_bytes(model, tokens: int, tp: int, act_b: float) -> float:
    """vLLM's fused-MoE workspace for one ``tokens`` batch (0 for a dense model): TritonExperts.workspace_shapes (0.19.0
    read) asks M x topk x max(I/tp, H) (shared with the M x H output) and M x topk x max(2 I/tp, H) elements of the
    activation dtype, from a WorkspaceManager buffer that stays allocated after the forward (0.14.0, 0.19.0 read; 0.11.0
    kept persistent SharedResizableBuffers, 0.10.1 allocated them per call)."""
    if not model.num_experts or not model.num_experts_per_token:
        return 0.0
    inter, hidden = model.intermediate_size / tp, model.hidden_size
    if model.weight_format == "mxfp4-experts":  # OAITritonExperts (gpt-oss): no first workspace, M x topk x I/tp, M x H out
        return tokens * (hidden + model.num_experts_per_token * inter) * act_b
    return tokens * model.num_experts_per_token * (max(inter, hidden) + max(2 * inter, hidden)) * act_b


def overheads_bytes(mp: EngineMemoryProfile, *, on_gpu: bool, tp: int, pp: int, interconnect: str, sources: dict[str, str],
                    graph_bytes: int | None = None, compute_capability: float | None = None):
    """(in the budget, outside it): CUDA context, non-torch memory, communication buffers, CUDA graphs (``graph_bytes``:
    the pool for this setup, :func:`cuda_graph_pool_bytes`; default the profile's fixed figure)."""
    if not on_gpu:
        return {"non_torch": 0, "cuda_graphs": 0, "nccl": 0}, {}
    graphs = mp.cuda_graph_bytes if graph_bytes is None else graph_bytes
    comm = mp.comm_bytes(tp, pp, interconnect, compute_capability)
    inside = {
        "cuda_context": mp.cuda_context_bytes if (mp.context_in_budget and mp.budget_base == "total") else 0,
        "non_torch": mp.non_torch_bytes,
        "cuda_graphs": graphs if mp.cuda_graphs_in_budget else 0,
        "nccl": comm if (mp.comm_in_budget and mp.budget_base == "total") else 0,
    }
    outside = {
        "cuda_graphs": 0 if mp.cuda_graphs_in_budget else graphs,
        "nccl": 0 if (mp.comm_in_budget or not comm) else comm,
        "cuda_context": 0 if mp.context_in_budget else mp.cuda_context_bytes,
    }
    for key in inside:
        sources[key] = f"engine profile ({mp.label})"
    if mp.cuda_graph_scaling is not None:
        sources["cuda_graphs"] = f"engine profile ({mp.label}): by captured sizes x layers"
    return inside, outside


def apply_calibrated_overheads(cal, mp: EngineMemoryProfile, tp: int, pp: int, overheads: dict[str, int], sources: dict[str, str]) -> None:
    """A log's measured non-torch memory (context, NCCL and the rest, as the engine counted it) for its TP size."""
    if cal.non_torch_bytes is not None and cal.tp == tp * pp:
        overheads.update(cuda_context=0, nccl=0, non_torch=cal.non_torch_bytes)
        for key in ("cuda_context", "nccl", "non_torch"):
            sources[key] = CALIBRATED
    if cal.cuda_graph_bytes is not None and mp.cuda_graphs_in_budget:
        overheads["cuda_graphs"], sources["cuda_graphs"] = cal.cuda_graph_bytes, CALIBRATED
