"""The doctor's memory ledger for one setup, the term that binds, and the error the engine will raise, in its words.

For the memory model's estimate ``est`` of a vLLM setup ``setup`` and its log ``log`` (tests/doctor/test_doctor.py runs
recorded logs through it)::

    lines = ledger(est, log, None)
    binding(est, StartRule(), None), vllm_error(est, setup, "V1").kind  # ('KV cache', 'kv_needed_exceeds_available')

The ledger lists the memory model's terms (:func:`infer_advisor.estimate.memory.estimate_memory`) next to the
figures the log printed; nothing is added up here. A predicted error is the engine's own message (read at the
versions :mod:`.startup_errors` names) filled with the memory model's figures.
"""

from __future__ import annotations

from .edits import LedgerLine, StartRule, room_outside_budget
from .startup_errors import StartupError
from ..engines.startup_log import StartupLog
from ..units import GIB, MIB

# vLLM's own messages, filled with the memory model's figures when the error is predicted rather than logged
# (V0: worker.py / llm_engine.py; V1: v1/core/kv_cache_utils.py; see startup_errors for the versions read)
_WORDS = {
    "no_cache_blocks": "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
    "max_len_exceeds_kv": "The model's max seq len ({L}) is larger than the maximum number of tokens that can be stored in KV cache ({T}). "
    "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
    "kv_needed_exceeds_available": "To serve at least one request with the models's max seq len ({L}), ({need:.2f} GiB KV cache is needed, "
    "which is larger than the available KV cache memory ({avail:.2f} GiB). Based on the available memory, the estimated maximum model "
    "length is {M}. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
    "cuda_oom_graph_capture": "torch.OutOfMemoryError: CUDA out of memory. (while capturing CUDA graphs: {need:.2f} GiB outside the "
    "budget, {room:.2f} GiB left)",
    # SGLang model_runner_kv_cache_mixin.init_memory_pool (sglang 226149ac)
    "sglang_not_enough_memory": "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
    "self.server_args.mem_fraction_static={f}",
}

_WORDS.update({
    # TGI flash_causal_lm.warmup and backends/v3/src/lib.rs (text-generation-inference v3.3.6)
    "tgi_prefill_tokens": "RuntimeError: Not enough memory to handle {n} prefill tokens. You need to decrease `--max-batch-prefill-tokens`",
    "tgi_total_tokens": "Not enough memory to handle `max_total_tokens={n}`",
    # llama.cpp ggml-cuda.cu ggml_backend_cuda_buffer_type_alloc_buffer, llama-kv-cache.cpp, llama-context.cpp
    "llamacpp_alloc_failed": "ggml_backend_cuda_buffer_type_alloc_buffer: allocating {mib:.2f} MiB on device 0: cudaMalloc failed: out of "
    "memory ... llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache",
})

def ledger(est, log: StartupLog, error: StartupError | None) -> list[LedgerLine]:
    src = est.figure_sources
    lines = [LedgerLine(term="weights", bytes_per_gpu=est.weights_bytes_per_gpu, in_budget=True, source=src.get("weights", "estimated"),
                        logged_bytes=log.weights_bytes, line=log.lines.get("weights_bytes"))]
    act_in = "activation" not in est.outside_budget_bytes_per_gpu
    lines.append(LedgerLine(term="activation peak", bytes_per_gpu=est.activation_bytes_per_gpu, in_budget=act_in,
                            source=src.get("activation", "estimated"), logged_bytes=log.activation_bytes, line=log.lines.get("activation_bytes")))
    non_torch = sum(est.overhead_bytes_per_gpu.get(k, 0) for k in ("cuda_context", "non_torch", "nccl"))
    lines.append(LedgerLine(term="non-torch (CUDA context, NCCL, workspaces)", bytes_per_gpu=non_torch, in_budget=True,
                            source=src.get("non_torch", "estimated"), logged_bytes=log.non_torch_bytes, line=log.lines.get("non_torch_bytes")))
    graphs_in = est.overhead_bytes_per_gpu.get("cuda_graphs", 0)
    graphs_out = est.outside_budget_bytes_per_gpu.get("cuda_graphs", 0)
    lines.append(LedgerLine(term="CUDA graphs", bytes_per_gpu=graphs_in or graphs_out, in_budget=bool(graphs_in),
                            source=src.get("cuda_graphs", "estimated"), logged_bytes=log.cuda_graph_bytes, line=log.lines.get("cuda_graph_bytes")))
    lora_in, lora_out = est.overhead_bytes_per_gpu.get("lora", 0), est.outside_budget_bytes_per_gpu.get("lora", 0)
    if lora_in or lora_out:
        lines.append(LedgerLine(term="LoRA slots (max_loras x max_lora_rank buffers)", bytes_per_gpu=lora_in or lora_out, in_budget=bool(lora_in),
                                source=src.get("lora", "estimated")))
    for term in ("cuda_context", "nccl"):
        if est.outside_budget_bytes_per_gpu.get(term):
            lines.append(LedgerLine(term=f"{term.replace('_', ' ')} (outside the budget)", bytes_per_gpu=est.outside_budget_bytes_per_gpu[term],
                                    in_budget=False, source=src.get(term, "estimated")))
    if error is not None and error.kind == "free_memory_below_utilization":
        used = int(error.figures["total_bytes"] - error.figures["free_bytes"])
        lines.append(LedgerLine(term="other processes (used at start)", bytes_per_gpu=used, in_budget=False, source="logged", line=error.line))
    lines.append(LedgerLine(term="KV cache", bytes_per_gpu=est.kv_cache_bytes_per_gpu, in_budget=True, source=src.get("residual", "estimated (what is left)"),
                            logged_bytes=log.kv_cache_bytes, line=log.lines.get("kv_cache_bytes") or log.lines.get("kv_cache_tokens")))
    return lines


def binding(est, rule: StartRule, error: StartupError | None) -> str:
    if (error is not None and error.kind == "free_memory_below_utilization") or (
            rule.max_budget_bytes is not None and est.budget_bytes_per_gpu > rule.max_budget_bytes):
        return "other processes"
    if room_outside_budget(est) < rule.min_room_bytes:
        return "CUDA graphs"
    if est.kv_cache_bytes_per_gpu <= 0:
        return "weights" if est.weights_bytes_per_gpu >= est.activation_bytes_per_gpu else "activation peak"
    return "KV cache"


def sglang_error(est, setup: dict, generation: str | None) -> StartupError:
    """SGLang: no room for its KV pool at --mem-fraction-static; else the check vLLM would fail (:func:`vllm_error`)."""
    if est.kv_cache_bytes_per_gpu <= 0 or est.kv_cache_tokens <= 0:
        return StartupError(kind="sglang_not_enough_memory", line=_WORDS["sglang_not_enough_memory"].format(f=setup["memory_fraction"]))
    return vllm_error(est, setup, generation)


def tgi_error(est, setup: dict, generation: str | None) -> StartupError:
    if est.kv_cache_bytes_per_gpu <= 0 or est.kv_cache_tokens <= 0 or est.max_concurrency < 1:
        return _other_engine_error(est, setup, "tgi")
    return vllm_error(est, setup, generation)


def llamacpp_error(est, setup: dict, generation: str | None) -> StartupError:
    if est.kv_cache_bytes_per_gpu <= 0 or est.kv_cache_tokens <= 0 or est.max_concurrency < setup.get("concurrency", 1):
        return _other_engine_error(est, setup, "llama.cpp")
    return vllm_error(est, setup, generation)


def vllm_error(est, setup: dict, generation: str | None) -> StartupError:
    length = setup["context"]
    if est.kv_cache_bytes_per_gpu <= 0 or est.kv_cache_tokens <= 0:
        return StartupError(kind="no_cache_blocks", line=_WORDS["no_cache_blocks"])
    if est.max_concurrency < 1:
        need = length * est.kv_cache_bytes_per_token_per_gpu / GIB
        if generation == "V0":
            return StartupError(kind="max_len_exceeds_kv", line=_WORDS["max_len_exceeds_kv"].format(L=length, T=est.kv_cache_tokens),
                                figures={"max_model_len": length, "kv_cache_tokens": est.kv_cache_tokens})
        words = _WORDS["kv_needed_exceeds_available"].format(L=length, need=need, avail=est.kv_cache_bytes_per_gpu / GIB, M=est.max_context)
        return StartupError(kind="kv_needed_exceeds_available", line=words, figures={"max_model_len": length})
    outside = sum(est.outside_budget_bytes_per_gpu.values())
    room = est.gpu_memory_bytes - est.budget_bytes_per_gpu
    return StartupError(kind="cuda_oom_graph_capture", line=_WORDS["cuda_oom_graph_capture"].format(need=outside / GIB, room=room / GIB))


def _other_engine_error(est, setup: dict, engine: str) -> StartupError:
    """TGI: no room for the warm-up batch (no KV left) or for one request of --max-total-tokens (the router's check);
    llama.cpp: the KV buffer of n_ctx cells does not fit (its cudaMalloc fails)."""
    if engine == "tgi":
        if est.kv_cache_bytes_per_gpu <= 0 or est.kv_cache_tokens <= 0:
            n = setup.get("max_num_batched_tokens") or 0
            return StartupError(kind="tgi_prefill_tokens", line=_WORDS["tgi_prefill_tokens"].format(n=n), figures={"max_batch_prefill_tokens": n})
        n = setup["context"]
        return StartupError(kind="tgi_total_tokens", line=_WORDS["tgi_total_tokens"].format(n=n), figures={"max_total_tokens": n})
    need = setup["context"] * setup.get("concurrency", 1) * est.kv_cache_bytes_per_token_per_gpu
    return StartupError(kind="llamacpp_alloc_failed", line=_WORDS["llamacpp_alloc_failed"].format(mib=need / MIB),
                        figures={"buffer": 0, "requested_bytes": need})


def logged_only(log: StartupLog) -> list[LedgerLine]:
    """The log's own figures, when the memory model cannot be run."""
    terms = [("weights", "weights_bytes"), ("activation peak", "activation_bytes"), ("non-torch (CUDA context, NCCL, workspaces)", "non_torch_bytes"),
             ("CUDA graphs", "cuda_graph_bytes"), ("KV cache", "kv_cache_bytes")]
    return [LedgerLine(term=t, bytes_per_gpu=getattr(log, k), in_budget=t != "CUDA graphs", source="logged", logged_bytes=getattr(log, k),
                       line=log.lines.get(k)) for t, k in terms if getattr(log, k) is not None]
