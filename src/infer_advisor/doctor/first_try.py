"""What an on-call engineer tries first when the log's figures decide nothing: the doctor's last resort.

    >>> first_try_edits(StartupError(kind="cuda_oom", line="torch.OutOfMemoryError: ..."), "vllm", None, None, 1)[0].change
    '--enforce-eager'

Used only where every other path (the memory model, the engine's printed figures, its own advice) gave no edit. Each
edit is a direction read from what failed, never a number the log does not support: a value is the engine's documented
default or the log's own setting moved one step (halved, doubled, 0.05), and every one is marked ``starts=None`` with
``confidence="first_try"`` and its reason in ``basis``. Retrospective: written after batches 1-6 (their "no edit"
entries sf05, sf06, sf18, sf23, sf27, sf33, sf65, sf72 prompted it; docs/doctor.md).
"""

from __future__ import annotations

import re

from .edits import Edit, edit_order, undecided_edit
from .startup_errors import StartupError
from ..units import GIB

DEFAULT_UTILIZATION = 0.90  # vLLM's --gpu-memory-utilization default (EngineArgs, every release 0.2-0.33)
UTILIZATION_STEP = 0.05  # the step the engine's own "No available memory ..." advice is taken by elsewhere (figures)
MAX_FIRST_TRY_UTILIZATION = 0.95  # above it the room for CUDA graphs and the CUDA context is under 5% of the GPU
# A torch OOM whose GPU has under this share free when a small allocation failed: the budget was already allocated
# (the KV cache), so what failed is allocated after it (CUDA graphs, warm-up); vllm#15598 (sf18: 448 KiB free of 44.53
# GiB, 2 MiB asked) prompted it.
FULL_GPU_SHARE = 0.01
SGLANG_FAQ_FRACTION = 0.80  # docs.sglang.io references/faq "CUDA Out of Memory": "such as 0.8 or 0.7"


def first_try_edits(error: StartupError | None, engine: str, max_model_len: int | None, utilization: float | None,
                    tp: int | None, free_note: str | None = None) -> list[Edit]:
    """The ranked first tries for ``error`` where no figure decides an edit (empty: none is a first try)."""
    if error is None:
        return []
    if error.kind == "free_memory_below_utilization" and free_note:
        return [free_gpu(error)]
    if error.kind == "nccl_error":
        return [_nccl(max_model_len)]
    if engine == "sglang" and error.kind.startswith("cuda_oom"):
        return _sglang_oom(utilization)
    if engine == "tgi" and error.kind == "cuda_oom_load":  # the shard died loading its weights, before warm-up (sf127, docfix8)
        return [_tp(tp, "the shard ran out of memory loading its weights, before TGI's warm-up: more shards split them (or a "
                    "quantized checkpoint, --quantize)", "--num-shard")]
    if engine == "tgi" and error.kind.startswith("cuda_oom"):
        return [undecided_edit("--max-batch-prefill-tokens 2048", ["--max-batch-prefill-tokens", "2048"], "half of TGI's default 4096 prefill "
                      "tokens per batch (longer prompts are split or refused)", 0.3, "TGI's warm-up is a batch of max_batch_prefill_tokens, "
                      "and its own message says to decrease it"), _tp(tp, "weights per GPU halve", "--num-shard")]
    if engine != "vllm":
        return []
    kind, u = error.kind, utilization or DEFAULT_UTILIZATION
    fit = _engine_kv_fit(error) if kind.startswith("cuda_oom") else []
    if kind in ("cuda_oom", "cuda_oom_load") and after_budget(error):
        kind = "cuda_oom_graph_capture"
    if kind == "cuda_oom_graph_capture":
        return fit + [_eager("a small allocation failed with the GPU full: what vLLM allocates after sizing the KV cache is the "
                       "CUDA-graph pool, which eager mode does not capture"), _utilization(u, -1, "leaves more of the GPU "
                       "outside the budget for what is allocated after the KV cache"), *_shorter(max_model_len, "fewer KV blocks")]
    if kind == "cuda_oom_profile" and "max_num_seqs" in error.figures:  # the engine's message names the batch it tried
        seqs = max(int(error.figures["max_num_seqs"]) // 2, 1)
        return [undecided_edit(f"--max-num-seqs {seqs}", ["--max-num-seqs", str(seqs)], f"{int(error.figures['max_num_seqs'])} -> {seqs} "
                      "sequences at once (throughput)", 0.2, "the engine's own advice in its sampler warm-up message (lower "
                      "max_num_seqs); halved, how far is not decided", max_model_len=max_model_len, confidence="engine_advice"),
                _utilization(u, -1, "the engine's message names gpu_memory_utilization as its second remedy")]
    if kind == "cuda_oom_profile":
        return [*_shorter(max_model_len, "vLLM's profile run is a batch of max_num_batched_tokens, max_model_len without "
                          "chunked prefill (V0), so its activation peak falls with it"), _max_num_seqs()]
    if kind == "cuda_oom_load":
        return [_tp(tp, "the weights do not fit one GPU: each of twice the GPUs loads half")]
    if kind == "cuda_oom":  # the phase is not in the log: the cheapest remedies of each phase, cheapest first
        return fit + [_eager("the commonest start-up OOM after the KV cache is sized is the CUDA-graph capture, which eager mode "
                       "skips (the log does not show the phase)"), _utilization(u, -1, "leaves more of the GPU outside the "
                       "budget for what is allocated after the KV cache"), *_shorter(max_model_len, "a smaller profile run and "
                       "fewer KV blocks"), _tp(tp, "if the weights do not fit one GPU, each of twice the GPUs loads half")]
    if kind == "max_len_exceeds_kv":  # docfix19 (sf311): V0's message retyped without its capacity figure (else figures decides)
        return _shorter(max_model_len or int(error.figures.get("max_model_len", 0)), "the remedy V0's own message names "
                        "(\"decreasing `max_model_len`\", worker.raise_if_cache_size_invalid); the capacity it printed is not in the text")
    if kind in ("kv_cache_check", "no_cache_blocks"):
        out = [_utilization(u, +1, "the advice of both of vLLM's KV-cache check messages (\"Try increasing "
                            "`gpu_memory_utilization`\")")] if u + UTILIZATION_STEP <= MAX_FIRST_TRY_UTILIZATION + 1e-9 else []
        return out + [*_shorter(max_model_len, "one request of max_model_len needs fewer KV blocks (and V0's profile run shrinks)"),
                      _tp(tp, "weights per GPU halve, which leaves KV room when the weights fill the budget")]
    return []


def larger_than_gpu(error: StartupError | None) -> Edit | None:
    """One allocation larger than the whole GPU (torch's "Tried to allocate X GiB. GPU 0 has a total capacity of Y GiB"
    with X > Y; docfix12, retrospective: batch 10's sf180, 80.04 of 79.10 GiB, and sf190, 1,029.51 of 79.35 GiB): no memory
    setting (utilization, context, KV type, eager mode) makes one request of that size fit, so none is offered."""
    f = error.figures if error is not None else {}
    if not ({"requested_bytes", "total_bytes"} <= f.keys() and f["requested_bytes"] > f["total_bytes"]):
        return None
    asked, total = f["requested_bytes"] / GIB, f["total_bytes"] / GIB
    return undecided_edit(f"no memory setting frees it: one allocation of {asked:,.2f} GiB is larger than the whole GPU ({total:,.2f} GiB)",
                [], cost="find what asks for it: an operation sized by the input or a setting (attention without a fused kernel over a "
                "long or image-heavy sequence, a batch of max_num_batched_tokens or chunked-prefill tokens, a wrong dtype or shape)",
                rank=1.0, basis="the figures the message printed: a single request larger than the GPU's "
                "total capacity fits under no memory fraction, context or KV type; what to change instead is not in them")


def _engine_kv_fit(error: StartupError) -> list[Edit]:
    """vLLM's own figure where its KV cache overran the requested budget before an out of memory (docfix11,
    retrospective: batch 9's sf146, 63.25 GiB in use for 61.06 GiB that fit): the cache it says fits."""
    f = error.figures
    if not ({"kv_fit_bytes", "kv_in_use_bytes"} <= f.keys() and f["kv_in_use_bytes"] > f["kv_fit_bytes"]):
        return []
    n = int(f["kv_fit_bytes"])
    return [undecided_edit(f"--kv-cache-memory-bytes {n}", ["--kv-cache-memory-bytes", str(n)], f"KV cache {f['kv_in_use_bytes'] / GIB:.2f} -> "
                  f"{n / GIB:.2f} GiB (fewer tokens at once)", 0.04, "the engine's own figure in its log (\"to fit into requested "
                  "memory\"): its KV cache overran the requested budget, which left the warm-up short; whether what remains suffices "
                  "is not printed")]


def _nccl(max_model_len: int | None) -> Edit:
    return undecided_edit("NCCL_P2P_DISABLE=1 (environment)", ["NCCL_P2P_DISABLE=1"], max_model_len=max_model_len,
                cost="all-reduce through host memory instead of peer-to-peer (slower at TP > 1)", rank=0.4,
                basis="NCCL names no cause; peer-to-peer transport between the GPUs is the usual one at start-up (a "
                "container without --ipc=host, IOMMU, a driver without P2P); run with NCCL_DEBUG=INFO to see which")


def _sglang_oom(fraction: float | None) -> list[Edit]:
    """SGLang's own advice for an out of memory (docs/references/faq: "decrease --mem-fraction-static to a smaller value,
    such as 0.8 or 0.7"; "if OOM occurs during prefill, try reducing --chunked-prefill-size to 4096 or 2048")."""
    value = round(fraction - UTILIZATION_STEP, 2) if fraction else SGLANG_FAQ_FRACTION
    out = [undecided_edit(f"--mem-fraction-static {value:.2f}", ["--mem-fraction-static", f"{value:.2f}"], "a smaller KV pool (fewer "
                 "requests at once)", 0.1, "SGLang's FAQ for an out of memory: a smaller static fraction leaves more for "
                 "activations and CUDA graphs" + ("; one step of 0.05 below the log's value" if fraction else "; the FAQ's 0.8"))]
    return out + [undecided_edit("--chunked-prefill-size 2048", ["--chunked-prefill-size", "2048"], "prefill in chunks of 2,048 tokens "
                        "(slower long prompts)", 0.3, "SGLang's FAQ for an out of memory during prefill (its 2048)")]


def after_budget(error: StartupError) -> bool:
    f = error.figures
    return {"free_bytes", "total_bytes", "requested_bytes"} <= f.keys() and f["free_bytes"] < FULL_GPU_SHARE * f["total_bytes"] \
        and f["requested_bytes"] < FULL_GPU_SHARE * f["total_bytes"]


def _eager(why: str) -> Edit:
    return undecided_edit("--enforce-eager", ["--enforce-eager"], "decode steps without CUDA graphs (slower at small batches)", 0.3, why)


def _utilization(u: float, sign: int, why: str) -> Edit:
    value = round(min(max(u + sign * UTILIZATION_STEP, 0.05), MAX_FIRST_TRY_UTILIZATION), 2)
    cost = "less memory for the KV cache" if sign < 0 else "less room outside the budget (CUDA graphs, other processes)"
    return undecided_edit(f"--gpu-memory-utilization {value:.2f}", ["--gpu-memory-utilization", f"{value:.2f}"], f"{u:.2f} -> {value:.2f}: {cost}",
                 0.05, f"{why}; one step of {UTILIZATION_STEP}, how far is not decided")


def _shorter(max_model_len: int | None, why: str) -> list[Edit]:
    """Half the context where the log or the options state it; without it no number is offered."""
    if not max_model_len or max_model_len < 2048:
        return []
    half = max_model_len // 2
    return [undecided_edit(f"--max-model-len {half}", ["--max-model-len", str(half)], f"context {max_model_len:,} -> {half:,} tokens (50% shorter)",
                  0.5, f"{why}; halved, how far is not decided", max_model_len=half)]


def _max_num_seqs() -> Edit:
    return undecided_edit("--max-num-seqs 128", ["--max-num-seqs", "128"], "half of vLLM's default 256 sequences at once (throughput)", 0.6,
                 "the profile run's sampler warm-up is a batch of max_num_seqs sequences; half of the default 256")


def _tp(tp: int | None, why: str, flag: str = "--tensor-parallel-size") -> Edit:
    n = 2 * (tp or 1)
    return undecided_edit(f"{flag} {n}", [flag, str(n)], f"{n} GPUs instead of {tp or 1}", 0.6, why)


def free_gpu(error: StartupError) -> Edit:
    held = (error.figures["total_bytes"] - error.figures["free_bytes"]) / GIB
    return undecided_edit(f"free the GPU ({held:.2f} GiB held by other processes)", [],
                cost="stop what holds it (nvidia-smi lists it) or start on another GPU", rank=1.0,
                basis="no flag starts: the free memory the engine printed holds no model; whether it then starts needs the model")


_BASIS = {
    "engine_figures": "the engine's own start-up check on the figures the log printed",
    "memory_model": "the memory model with this one setting changed; its KV error on logs it was not fitted to is in docs/accuracy.md §2",
    "engine_advice": "the direction the engine's message (or the failure) gives; how far is not decided by the log's figures",
}


def label_edits(edits: list[Edit], memory_model: bool, error: StartupError | None = None) -> list[Edit]:
    """Every edit says how sure it is and why (schema 2): an edit made without a label is decided by the memory model
    where it ran, else by the engine's own arithmetic on the printed figures (SGLang, TGI, llama.cpp), or is advice.
    Where the failure is only reported in words (docfix11), no edit is decided: what failed is the reporter's reading, and
    (docfix18) the edits of the flags the failing sentence itself names go first, by the reporter's own account of them."""
    from .startup_errors import REPORTED

    reported = error is not None and error.line.startswith(REPORTED)
    out = []
    for e in edits:
        conf = e.confidence or ("engine_advice" if e.starts is None else ("memory_model" if memory_model else "engine_figures"))
        update = {"confidence": conf, "basis": e.basis or _BASIS.get(conf)}
        if reported and e.starts is not None:
            update |= {"starts": None, "basis": f"not decided: the failure is reported in words, not by an engine line; {update['basis']}"}
        out.append(e.model_copy(update=update))
    if not reported:
        return out
    named = {f.replace("_", "-") for f in _FLAG.findall(error.line)}  # docfix18 (sf290): the flags the failing sentence names
    return sorted(out, key=lambda e: (not (e.argv[:1] and e.argv[0] in named), *edit_order(e)))


_FLAG = re.compile(r"--[a-z][a-z_-]{2,40}")


OLLAMA_NOTE = ("ollama runs llama.cpp with its own settings, not llama-server's flags: the context is the model's PARAMETER num_ctx "
               "(or OLLAMA_CONTEXT_LENGTH), the GPU layers num_gpu, a q8_0 KV cache OLLAMA_KV_CACHE_TYPE=q8_0 with "
               "OLLAMA_FLASH_ATTENTION=1; the edits below are in ollama's knobs (each argv is the runner's flag ollama passes).")


def ollama_note(text: str, engine: str) -> str | None:
    """docfix14 (batch 11's sf199, sf200, sf203, sf204): a llama.cpp failure under ollama, whose knobs are not the flags."""
    low = text[:2_000_000].lower()
    return OLLAMA_NOTE if engine == "llama.cpp" and ("ollama" in low or "llama runner process" in low) else None
