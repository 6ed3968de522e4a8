"""Edits the engine's own message or printed figures give, without the model: what `infer-advisor doctor` offers when
the model or GPU does not resolve, or when the log lacks the figure that decided the failure.

    >>> from infer_advisor.doctor.startup_errors import find_startup_error
    >>> log = ("ValueError: The model's max seq len (29000) is larger than the maximum number of tokens that can be "
    ...        "stored in KV cache (23648). Try increasing `gpu_memory_utilization`")
    >>> engine_figure_edits(find_startup_error(log), max_model_len=29000)[0].change
    '--max-model-len 23552'

Each edit says whether the engine's own check then passes by those figures (``starts``) or that it is not decided
(``None``); nothing here adds bytes: the numbers are the ones the engine printed.
"""

from __future__ import annotations

from .edits import Edit, edit_order, undecided_edit
from .startup_errors import StartupError
from ..engines.startup_log import StartupLog
from ..units import GIB

# A budget under 1 GiB holds no model the catalog knows: its smallest, Qwen2.5-0.5B (data/models/Qwen--Qwen2.5-0.5B.json,
# 494M parameters), takes 0.92 GiB in bf16 before activations, CUDA graphs and one KV block. Under it the start check's
# own arithmetic would pass a utilization (vllm-omni#276: 0.49 of 79.32 GiB free -> 0.00) that cannot load anything.
SMALLEST_USEFUL_BUDGET_BYTES = GIB


def engine_figure_edits(error: StartupError | None, max_model_len: int | None, utilization: float | None = None,
                        log: StartupLog | None = None) -> list[Edit]:
    """Edits read from the engine's own message (no model needed): the longest context it says fits; for an
    out-of-memory while capturing CUDA graphs, eager mode (the graphs are what the engine allocates after sizing the KV
    cache, whatever their size; a lower utilization would need the pool's size, which the model gives); for V1's
    free-memory start check, the highest utilization under the free memory it printed; for "No available memory for the
    cache blocks", the engine's own advice (a higher utilization), not decided without the model."""
    if error is not None and error.kind == "cuda_oom_graph_capture":
        return [Edit(change="--enforce-eager", argv=["--enforce-eager"], starts=True, kv_cache_tokens=None, max_concurrency=None,
                     max_model_len=max_model_len or 0, cost="decode steps without CUDA graphs (slower at small batches); from the "
                     "engine's own advice in its capture message", cost_rank=0.3, confidence="engine_advice",
                     basis="the out-of-memory came while capturing CUDA graphs, which eager mode does not do")]
    if error is not None and error.kind == "mamba_cache_blocks":  # the engine's own bound (docfix8: sf113-sf115, retrospective)
        blocks = int(error.figures["mamba_cache_blocks"])
        seqs = f"{int(error.figures['max_num_seqs']):,}" if "max_num_seqs" in error.figures else "max_num_seqs (not in the quoted text)"
        return [Edit(change=f"--max-num-seqs {blocks}", argv=["--max-num-seqs", str(blocks)], starts=True, kv_cache_tokens=None,
                     max_concurrency=blocks, max_model_len=max_model_len or 0, cost=f"{seqs} -> {blocks:,} sequences at once (one Mamba "
                     "cache block each); the engine's own bound in its message", cost_rank=0.2, confidence="engine_figures",
                     basis=f"vLLM's check max_num_seqs <= Mamba cache blocks ({blocks:,}, printed) passes")]
    if error is not None and error.kind == "free_memory_below_utilization":
        return [] if free_memory_note(error) else [_under_free_memory(error, max_model_len)]
    if error is not None and error.kind == "no_cache_blocks":
        return _utilization_advice(utilization, max_model_len, log)
    if error is None or not max_model_len:
        return []
    fits = error.figures.get("estimated_max_model_len") or (error.figures.get("kv_cache_tokens") if error.kind == "max_len_exceeds_kv" else None)
    starts, source = True, ("from the engine's own figure in its message" if not error.line.startswith("predicted from the printed lines")
                            else "from the figures the engine printed, by its own check (the message is not in the text)")
    if not fits and error.kind == "kv_needed_exceeds_available" and {"kv_needed_bytes", "kv_available_bytes"} <= error.figures.keys():
        # the message cut before its estimate: the same two figures scaled (exact where every layer's KV grows with the
        # length; a layer of fixed-size state, as in hybrid models, makes it short of what fits: not decided)
        fits = int(max_model_len * error.figures["kv_available_bytes"] / error.figures["kv_needed_bytes"])
        starts, source = None, "the message's available / needed GiB times the length (linear in the length: not decided)"
    if not fits or fits >= max_model_len:
        return []
    length = int(fits) - int(fits) % 256 if fits >= 1024 else int(fits)
    lost = 1 - length / max_model_len
    return [Edit(change=f"--max-model-len {length}", argv=["--max-model-len", str(length)], starts=starts, kv_cache_tokens=int(fits),
                 max_concurrency=1, max_model_len=length, cost=f"context {max_model_len:,} -> {length:,} tokens ({lost:.0%} shorter); "
                 f"{source}", cost_rank=lost, confidence="engine_figures" if starts else "engine_advice", basis=source)]


def printed_v0_check(log: StartupLog) -> StartupError | None:
    """vLLM V0's check after it logs "# GPU blocks: N" (llm_engine._init_cache, 0.2-0.3; the workers' initialize_cache
    later): ``max_seq_len = block_size x N``, and ``max_model_len > max_seq_len`` raises "The model's max seq len (L) is
    larger than the maximum number of tokens that can be stored in KV cache (M)". Where the log printed both lines but
    the message was cut (docfix12, retrospective: batch 10's sf175, 32,768 > 1,842 x 16), the same check on the printed
    figures (the block size the log prints, else vLLM's default 16: engines/startup_log.py), marked as predicted."""
    tokens, length = log.kv_cache_tokens, log.max_model_len
    if not (tokens and length and log.kv_blocks and length > tokens):
        return None
    return StartupError(kind="max_len_exceeds_kv", line=f"predicted from the printed lines: max_seq_len {length:,} > {log.kv_blocks:,} GPU "
                        f"blocks = {tokens:,} tokens (vLLM V0's own check after '# GPU blocks'; the message is not in the text)",
                        figures={"max_model_len": length, "kv_cache_tokens": tokens})


def free_memory_note(error: StartupError | None, edits: list[Edit] | None = None) -> str | None:
    """For V1's free-memory start check where no flag is the fix: less free than any model needs
    (:data:`SMALLEST_USEFUL_BUDGET_BYTES`), or the memory model found no edit that starts under the free memory (batch 6,
    vllm#23192: 7.34 GiB free for an 8-bit Mixtral-8x7B); the memory other processes hold is. None otherwise."""
    if error is None or error.kind != "free_memory_below_utilization":
        return None
    free, total = error.figures["free_bytes"], error.figures["total_bytes"]
    if free >= SMALLEST_USEFUL_BUDGET_BYTES and not (edits and not any(e.starts for e in edits)):
        return None
    why = "no --gpu-memory-utilization starts under 1 GiB" if free < SMALLEST_USEFUL_BUDGET_BYTES else "no edit below starts under it"
    return (f"Only {free / GIB:.2f} of {total / GIB:.2f} GiB was free when the engine started: other processes (or an earlier "
            f"instance or stage on this GPU) hold {(total - free) / GIB:.2f} GiB, and {why}; free the GPU (nvidia-smi lists "
            "what holds it) or start on another one.")


def _under_free_memory(error: StartupError, max_model_len: int | None) -> Edit:
    """vLLM V1's start check is ``utilization x total <= free at start`` (gpu_worker.init_device): the highest utilization
    in steps of 0.01 that passes it, from the two figures the message prints. Whether the smaller budget then holds a
    request of ``max_model_len`` needs the model."""
    free, total, current = error.figures["free_bytes"], error.figures["total_bytes"], error.figures["gpu_memory_utilization"]
    util = int(free / total * 100) / 100
    return Edit(change=f"--gpu-memory-utilization {util:.2f}", argv=["--gpu-memory-utilization", f"{util:.2f}"], starts=True,
                kv_cache_tokens=None, max_concurrency=None, max_model_len=max_model_len or 0,
                cost=f"budget {current:.2f} -> {util:.2f} of the GPU ({(current - util) * total / GIB:.2f} GiB less for the KV cache: "
                f"other processes hold {(total - free) / GIB:.2f} GiB); passes the engine's free-memory check by its own figures; "
                "the KV room left needs the model (--model)", cost_rank=current - util, confidence="engine_figures",
                basis="vLLM V1's start check utilization x total <= free at start, on the two figures its message printed")


def _utilization_advice(utilization: float | None, max_model_len: int | None, log: StartupLog | None = None) -> list[Edit]:
    """The engine's advice in "No available memory for the cache blocks": a higher utilization. Where the log printed
    vLLM's profile (total, weights, non-torch, activation peak), the smallest utilization whose budget leaves KV room
    above zero by those figures (``u x total - weights - non-torch - activation > 0``, the same subtraction the engine
    printed); else 0.05 up (at most 0.95). Whether one request of max_model_len then fits needs the bytes per token."""
    current = utilization or 0.90
    fixed = [getattr(log, k, None) for k in ("weights_bytes", "non_torch_bytes", "activation_bytes")]
    total = getattr(log, "total_gpu_memory_bytes", None)
    if total and all(f is not None for f in fixed):
        util = int(sum(fixed) / total * 100) / 100 + 0.01
        why = f"the smallest utilization leaving KV room by the log's own profile ({sum(fixed) / GIB:.2f} GiB of {total / GIB:.2f})"
    else:
        util, why = current + 0.05, "the engine's own advice; how far is not decided without the model (--model)"
    util = round(min(util, 0.95 if not total else 0.98), 2)
    if util <= current:
        return []
    return [undecided_edit(f"--gpu-memory-utilization {util:.2f}", ["--gpu-memory-utilization", f"{util:.2f}"],
                           f"{current:.2f} -> {util:.2f}: {why}; less room for CUDA graphs and other processes above 0.90", 0.05,
                           basis=why, confidence="engine_advice", max_model_len=max_model_len)]


def within_engine_figures(edits: list[Edit], error: StartupError | None, max_model_len: int | None) -> list[Edit]:
    """Where the engine's printed figures decide an edit, they win over the model's: V1's "estimated maximum model
    length" bounds the context (a longer one does not start: the engine said so; a shorter one passes), FP8 halves V1's
    "X GiB KV cache is needed" against its "Y GiB available", and a context at or under V0's printed capacity passes. The
    model can be far off there (hybrid, sliding-window or compressed-attention layers: vllm-backport#15 printed 856
    tokens where a linear count of the same KV memory gives 53,792). The engine's own length is offered if no context
    edit starts."""
    if error is None:
        return edits
    out = []
    for e in edits:
        verdict = _engine_verdict(e.argv, error)
        if verdict is not None and verdict != e.starts:
            e = e.model_copy(update={"starts": verdict, "cost": f"{e.cost}; {'passes' if verdict else 'fails'} the engine's own check "
                                     "on the figures it printed", "confidence": "engine_figures"})
        elif verdict is not None:  # docfix12: the model agrees, but what decides it is the engine's check on its figures
            e = e.model_copy(update={"confidence": "engine_figures"})
        out.append(e)
    printed = engine_figure_edits(error, max_model_len) if error.kind in ("max_len_exceeds_kv", "kv_needed_exceeds_available") else []
    printed = [e for e in printed if e.starts]
    if printed:  # docfix12 (batch 10's sf167): the longest context the engine printed as fitting replaces a shorter one of the model's
        longer = int(printed[0].argv[1])
        out = [e for e in out if e.argv[:1] != ["--max-model-len"] or int(e.argv[1]) > longer] + printed
    elif error.figures.get("estimated_max_model_len") and not any(e.argv[:1] == ["--max-model-len"] and e.starts for e in out):
        out += engine_figure_edits(error, max_model_len)
    return sorted(out, key=by_engine_figures_first)


def by_engine_figures_first(e: Edit) -> tuple[int, bool, float]:
    """:func:`.edits.edit_order`, with an edit the engine's printed figures show to start before one that only the
    memory model says starts (docfix12): the engine's own arithmetic on its own figures outranks our estimate."""
    bucket, cost = edit_order(e)
    return bucket, not (e.starts and e.confidence == "engine_figures"), cost


def _engine_verdict(argv: list[str], error: StartupError) -> bool | None:
    """The engine's own check on its printed figures for this edit (None: they do not decide it)."""
    f, flag = error.figures, argv[0]
    if error.kind == "kv_needed_exceeds_available":
        if flag == "--max-model-len" and f.get("estimated_max_model_len"):
            return int(argv[1]) <= f["estimated_max_model_len"]
        if flag == "--kv-cache-dtype" and argv[1].startswith("fp8") and {"kv_needed_bytes", "kv_available_bytes"} <= f.keys():
            return f["kv_needed_bytes"] / 2 <= f["kv_available_bytes"] or None  # else the model decides
    if error.kind == "max_len_exceeds_kv" and "kv_cache_tokens" in f:
        if flag == "--max-model-len":
            return int(argv[1]) <= f["kv_cache_tokens"] or None  # V0: a longer context may still start (its profile shrinks)
        if flag == "--kv-cache-dtype" and argv[1].startswith("fp8") and "max_model_len" in f:
            return 2 * f["kv_cache_tokens"] >= f["max_model_len"] or None  # FP8 doubles a 16-bit capacity
    return None
