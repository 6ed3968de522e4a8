"""The doctor for SGLang, TGI and llama.cpp: each engine's own start-up arithmetic on the figures its log printed.

For an SGLang log ``text`` whose weights left no room for the KV cache (tests/doctor/test_doctor_engines.py has one)::

    found = engine_findings(parse_startup_log(text, require_kv=False), find_startup_error(text))
    found.binding, found.edits[0].change  # ('weights', '--mem-fraction-static 0.92')

Each engine sizes its KV cache its own way (read at the versions named; the same rules as data/engine_memory.yaml):

- **SGLang** (0.1-0.5 ``model_runner.profile_max_num_token``; ``model_runner_kv_cache_mixin.profile_max_num_token`` /
  ``init_memory_pool`` read at sgl-project/sglang 226149ac; 2026 ``_profile_available_bytes``):
  ``rest = available_after_load - pre_model_load x (1 - mem_fraction_static)``; ``max_total_num_tokens = rest / cell``;
  ``rest <= 0`` raises "Not enough memory" (later "Loaded weights leave no GPU memory for the KV cache ... minimum viable
  = 1 - available/pre"). Activations and CUDA graphs live in the ``(1 - mem_fraction_static) x pre`` headroom.
- **TGI** (flash_causal_lm.warmup and the v3 router, read at v3.3.7): a warm-up batch of ``max_batch_prefill_tokens``
  ("Not enough memory to handle N prefill tokens" when it runs out), then ``KV-cache blocks: B, size: S`` from the memory
  left, and the router refuses a ``max_total_tokens`` above ``B x S`` ("Not enough memory to handle `max_total_tokens=N`").
- **llama.cpp** (src/llama-kv-cache.cpp read at ggml-org/llama.cpp 3514e9f6, llama-context.cpp, llama.cpp's
  ``llama_model_load_from_file_impl`` "using device ... MiB free"): weights, then a KV buffer of ``n_ctx`` cells (all ``--parallel``
  slots together), then compute buffers, each one ``cudaMalloc`` that must fit in the memory free at start.

Edits are written in the engine's own flags (data/doctor_flags.yaml). ``starts`` is decided by that arithmetic where
the log printed the figures it needs, else None (the engine's own advice, not decided).
"""

from __future__ import annotations

import math

from .edits import Edit, LedgerLine, edit_order
from .engine_flags import ROUND_TOKENS, EngineFlags, Findings, engine_edit as _edit, engine_flags
from .llamacpp import llamacpp_findings
from .startup_errors import StartupError
from ..engines.startup_log import StartupLog
from ..units import GIB, MIB

__all__ = ["EngineFlags", "Findings", "engine_findings", "engine_flags", "in_engine_flags"]

# The smallest prefill chunk and graph batch SGLang's own reserve counts (server_args._handle_gpu_memory_settings:
# 512 MiB + max(chunked_prefill_size, 2048) x 1.5 MiB + cuda_graph_max_bs x 2 MiB + tp x 128 MiB, data/engine_memory.yaml;
# summed by engines.memory.sglang_reserved_mib)
SGLANG_MIN_CHUNK, SGLANG_MIN_GRAPH_BS = 2048, 8

_KNOB = {"--gpu-memory-utilization": "memory_fraction", "--max-model-len": "context", "--max-num-seqs": "max_seqs",
         "--tensor-parallel-size": "tp"}


def in_engine_flags(edits: list[Edit], engine: str, *, context_slots: int = 1, max_input_tokens: int | None = None) -> list[Edit]:
    """The memory model's edits (spelled as vLLM flags by :mod:`.edits`) in ``engine``'s own flags; an edit whose
    knob the engine lacks (LoRA slots outside vLLM, a utilization for llama.cpp) is left out, and so is a batch-size
    edit where the engine's batch limit is not a memory knob (TGI's router limit; llama.cpp's slots share ``-c``).
    ``context_slots``: llama.cpp's ``-c`` holds that many slots of the context; ``max_input_tokens``: TGI's, which
    must stay under ``--max-total-tokens``; a fraction is divided by the engine's scale (TGI's wiggle room)."""
    from ..engines.command_line import engine_cli

    flags = engine_flags(engine)
    scale = engine_cli(engine).memory_fraction_scale
    out = []
    for e in edits:
        flag = e.argv[0]
        if flag == "--kv-cache-dtype":
            argv = list(flags.kv_8bit)
        elif flag == "--enforce-eager":
            argv = list(flags.eager) if flags.eager else None
        elif flag == "--max-num-seqs" and engine in ("tgi", "llama.cpp"):
            argv = None
        elif flag == "--gpu-memory-utilization" and flags.memory_fraction:
            value = math.ceil(float(e.argv[1]) / scale * 100 - 1e-9) / 100
            argv = [flags.memory_fraction, f"{value:.2f}"] if value <= 1.0 else None
        elif flag == "--max-model-len":
            length = int(e.argv[1]) * context_slots
            argv = [flags.context, str(length)]
            if max_input_tokens is not None and max_input_tokens >= length:
                argv += ["--max-input-tokens", str(length - 1)]
        elif flag in _KNOB and getattr(flags, _KNOB[flag]):
            argv = [getattr(flags, _KNOB[flag]), *e.argv[1:]]
        else:
            argv = None
        if argv:
            update = {"argv": argv, "change": " ".join(argv)}
            if flag == "--max-model-len" and context_slots > 1:
                update["cost"] = f"{e.cost} a slot; {flags.context} holds all {context_slots} slots"
            if flag == "--kv-cache-dtype" and engine == "llama.cpp":
                update["cost"] = "KV cache in q8_0 (a small accuracy cost; a quantized V cache needs flash attention: -fa on or auto)"
            out.append(e.model_copy(update=update))
    return out


def engine_findings(log: StartupLog, error: StartupError | None, *, kv_bytes_per_token: float | None = None,
                    gpu_memory_bytes: int | None = None) -> Findings:
    """The engine's arithmetic on ``log``; ``kv_bytes_per_token`` (per GPU) and ``gpu_memory_bytes`` from the memory
    model / catalog where the log does not print them (the findings' sources say so)."""
    found = {"sglang": _sglang, "tgi": _tgi, "llama.cpp": llamacpp_findings}[log.engine](log, error, kv_bytes_per_token, gpu_memory_bytes)
    found.edits.sort(key=edit_order)
    return found


def _per_token(log: StartupLog, model_figure: float | None) -> tuple[float | None, str]:
    if log.kv_cache_bytes and log.kv_cache_tokens:
        return log.kv_cache_bytes / log.kv_cache_tokens, "logged"
    return model_figure, "memory model (model facts)"


# --- SGLang -------------------------------------------------------------------------------------------------------


def _sglang(log: StartupLog, error: StartupError | None, model_cell: float | None, total: int | None) -> Findings:
    out = Findings()
    f = log.gpu_memory_utilization or (error.figures.get("mem_fraction_static") if error else None)
    pre, post = log.free_at_start_bytes, log.free_after_load_bytes
    cell, cell_source = _per_token(log, model_cell)
    if error is not None and "minimum_mem_fraction_static" in error.figures and not (pre and post):
        minimum = error.figures["minimum_mem_fraction_static"]
        out.binding = "weights"
        out.edits.append(_edit([engine_flags("sglang").memory_fraction, f"{math.ceil(minimum * 100 + 1e-9) / 100:.2f}"], True,
                               f"the engine's own minimum ({minimum:.4f}, from its message); leaves {1 - minimum:.2f} of the free "
                               "memory for activations and CUDA graphs", 0.05))
        return out
    if pre and post and not f and error is not None and error.kind == "sglang_not_enough_memory":
        return _sglang_minimum(out, error, pre, post)
    if not (pre and post and f):
        out.notes.append("The log does not print SGLang's 'Load weight begin/end ... avail mem' lines and mem_fraction_static: "
                         "the engine's own remedy only.")
        if error is not None and error.kind == "sglang_not_enough_memory":
            from .sglang_fraction import sglang_default_fraction

            default = sglang_default_fraction(total, (log.tp or 1) * (log.pp or 1), log.engine_version)
            value = min(max(default, (f or 0.0) + 0.05), 0.95)
            out.binding = "weights"
            out.edits.append(_edit([engine_flags("sglang").memory_fraction, f"{value:.2f}"], None,
                                   f"the engine's own advice (raise the fraction), to SGLang's default for this GPU ({default:.2f}) or "
                                   "0.05 above the current value; not decided without the log's 'avail mem' lines", 0.05))
        return _sglang_graph_edits(out, log, error, f, pre)
    rest = post - pre * (1 - f)
    weights = pre - post
    out.gpu_memory_bytes, out.budget_bytes, out.budget_base = int(pre), int(f * pre), "free before loading"
    out.kv_cache_tokens = int(rest // cell) if (cell and rest > 0) else (0 if rest <= 0 else None)
    out.ledger = [
        LedgerLine(term="weights and load buffers (avail mem before - after loading)", bytes_per_gpu=int(weights), in_budget=True,
                   source="logged", logged_bytes=log.weights_bytes, line=log.lines.get("free_after_load_bytes")),
        LedgerLine(term="KV cache (rest = after - before x (1 - mem_fraction_static))", bytes_per_gpu=int(rest), in_budget=True,
                   source="engine arithmetic (log)", logged_bytes=log.kv_cache_bytes, line=log.lines.get("kv_cache_bytes")),
        LedgerLine(term="headroom (1 - mem_fraction_static) x before: activations, CUDA graphs", bytes_per_gpu=int((1 - f) * pre),
                   in_budget=False, source="engine arithmetic (log)", line=log.lines.get("free_at_start_bytes")),
    ]
    if rest <= 0:
        out.binding, out.starts = "weights", False
        out.edits += _sglang_fraction_edits(log, pre, post, f, cell, cell_source, total)
    else:
        out.binding = "KV cache"
        out.starts = error is None
    return _sglang_graph_edits(out, log, error, f, pre)


def _sglang_minimum(out: Findings, error: StartupError, pre: float, post: float) -> Findings:
    """The fraction is not printed: SGLang's pool is rest = after - before x (1 - fraction) (ModelRunner.profile_max_num_token,
    0.4.x-0.5.x), above zero from 1 - after / before whatever the run used. Not decided where the engine printed a
    negative profile: memory may have been lower at profiling than after loading (sf111, docfix7)."""
    minimum = 1 - post / pre
    value = math.ceil(minimum * 100 + 1e-9) / 100
    out.binding, out.starts = "weights", False
    out.gpu_memory_bytes, out.budget_base = int(pre), "free before loading"
    profiled = error.figures.get("profiled_max_total_tokens")
    why = (f"above SGLang's minimum {minimum:.4f} = 1 - {post / GIB:.2f} / {pre / GIB:.2f} GB (after / before loading); leaves "
           f"{1 - value:.2f} of it for activations and CUDA graphs")
    if profiled is not None:
        why += (f"; the engine printed a profile of {profiled:,} tokens with a fraction the log does not show: if that run was already "
                "above this value, memory was lower at profiling than after loading, so not decided")
    out.edits.append(_edit([engine_flags("sglang").memory_fraction, f"{value:.2f}"], None if profiled is not None else value < 1, why, 0.05))
    return out


def _sglang_reserve(log: StartupLog, gpu: float, chunk: int | None, graph_bs: int | None) -> float:
    """SGLang's own reserve in bytes (the planner's, engines.memory.sglang_reserved_mib) on a GPU of ``gpu`` bytes at the
    log's ranks, by the log's version where its profile has the 0.5.3+ sum (the pinned version's otherwise); ``chunk`` and
    ``graph_bs`` None: that version's defaults for the GPU (the graph batch doubled from TP 4). Without SGLang's 10 GiB
    floor: the edits set --mem-fraction-static, and SGLang floors only the fraction it picks itself."""
    from ..engines.memory import memory_profile, sglang_reserved_mib
    from .sglang_fraction import sglang_profile

    prof = sglang_profile(log.engine_version)[0]
    prof = prof if prof.sglang_fraction is not None else memory_profile("sglang")
    ranks = (log.tp or 1) * (log.pp or 1)
    return sglang_reserved_mib(prof, driver_memory_bytes=int(gpu), ranks=ranks, chunk=chunk, graph_bs=graph_bs,
                               floor=False) * MIB


def _sglang_fraction_edits(log: StartupLog, pre: float, post: float, f: float, cell: float | None, cell_source: str,
                           total: int | None) -> list[Edit]:
    """Raise mem_fraction_static to the smallest value that leaves one request of the context (or, without the cell
    size, any KV), keeping SGLang's own reserve for activations and CUDA graphs (on the GPU's ``total``, else the memory
    free before loading); halve the weights with TP."""
    flags = engine_flags("sglang")
    need = (log.max_model_len or 0) * cell if cell else 0.0
    target = math.ceil((1 - (post - need) / pre) * 100 + 1e-9) / 100
    edits: list[Edit] = []
    tp = (log.tp or 1) * (log.pp or 1)
    default_reserve = _sglang_reserve(log, total or pre, log.max_num_batched_tokens, None)
    small_reserve = _sglang_reserve(log, total or pre, SGLANG_MIN_CHUNK, SGLANG_MIN_GRAPH_BS)
    rest = post - pre * (1 - target)
    tokens = int(rest // cell) if cell else None
    what = f"one request of {log.max_model_len:,} tokens ({cell_source} KV size)" if need else "a KV pool above zero"
    headroom = (1 - target) * pre
    if target < 1 and headroom >= default_reserve:
        edits.append(_edit([flags.memory_fraction, f"{target:.2f}"], True, f"room for {what}; headroom {headroom / GIB:.2f} GiB for "
                           "activations and CUDA graphs", 0.05, tokens=tokens, length=log.max_model_len))
    elif target < 1 and headroom >= small_reserve:
        argv = [flags.memory_fraction, f"{target:.2f}", flags.prefill_tokens, str(SGLANG_MIN_CHUNK), flags.graph_bs, str(SGLANG_MIN_GRAPH_BS)]
        edits.append(_edit(argv, True, f"room for {what}; headroom {headroom / GIB:.2f} GiB is enough only with a 2,048-token "
                           "prefill chunk and CUDA graphs up to batch 8 (SGLang's own reserve formula)", 0.25, tokens=tokens,
                           length=log.max_model_len))
    else:
        edits.append(_edit([flags.memory_fraction, f"{min(target, 0.99):.2f}"], False, f"would leave {max(headroom, 0) / GIB:.2f} GiB "
                           f"of headroom, under SGLang's smallest reserve ({small_reserve / GIB:.2f} GiB)", 0.9, tokens=tokens))
    half = post + (pre - post) / 2  # weights per GPU halve with twice the GPUs
    rest2 = half - pre * (1 - f)
    edits.append(_edit([flags.tp, str(2 * tp)], rest2 > need, f"{2 * tp} GPUs instead of {tp} (weights per GPU halve)", 0.6,
                       tokens=int(rest2 // cell) if (cell and rest2 > 0) else None))
    return edits


def _sglang_graph_edits(out: Findings, log: StartupLog, error: StartupError | None, f: float | None, pre: float | None) -> Findings:
    if error is None or error.kind != "cuda_oom_graph_capture":
        return out
    flags = engine_flags("sglang")
    out.binding, out.starts = "CUDA graphs", False
    out.edits.append(_edit([flags.graph_bs, str(SGLANG_MIN_GRAPH_BS)], None, "CUDA graphs only up to batch 8 (larger batches run "
                           "without them); the engine's own advice in its capture message", 0.1))
    if f:
        out.edits.append(_edit([flags.memory_fraction, f"{f - 0.05:.2f}"], None, f"KV pool {0.05 * pre / GIB:.2f} GiB smaller" if pre
                               else "a smaller KV pool; the engine's own advice", 0.15))
    out.edits.append(_edit(list(flags.eager), True, "no CUDA graphs: decode steps slower at small batches", 0.3))
    return out


# --- TGI ----------------------------------------------------------------------------------------------------------


def _tgi(log: StartupLog, error: StartupError | None, cell: float | None, _total: int | None) -> Findings:
    flags = engine_flags("tgi")
    out = Findings(kv_cache_tokens=log.kv_cache_tokens)
    if log.kv_cache_tokens and cell:
        out.ledger.append(LedgerLine(term="KV cache (KV-cache blocks x block size)", bytes_per_gpu=int(log.kv_cache_tokens * cell),
                                     in_budget=True, source="logged tokens x the memory model's bytes per token", line=log.lines.get("kv_cache_tokens")))
    if error is None:
        out.starts = True if log.kv_cache_tokens else None
        return out
    out.starts = False
    figures = error.figures
    if error.kind == "tgi_total_tokens" and "max_total_tokens" in figures:
        wanted = int(figures["max_total_tokens"])
        out.binding = "KV cache"
        cap = log.kv_cache_tokens
        if cap:
            length = cap - cap % ROUND_TOKENS if cap >= 4 * ROUND_TOKENS else cap
            out.edits.append(_edit([flags.context, str(length)], length <= cap, f"context {wanted:,} -> {length:,} tokens "
                                   f"({1 - length / wanted:.0%} shorter); the warm-up found room for {cap:,}", 1 - length / wanted,
                                   tokens=cap, length=length, concurrency=1))
        else:
            out.edits.append(_edit([flags.context, str(wanted // 2)], None, "a shorter context; the log does not print 'KV-cache blocks'", 0.5))
        out.edits.append(_edit(list(flags.kv_8bit), None, "KV cache in FP8 (a small accuracy cost)", 0.15))
        return out
    if error.kind == "tgi_total_tokens":  # TGI 1.0: the warm-up ran max_batch_total_tokens of KV with a prefill batch
        total = int(figures["max_batch_total_tokens"])
        out.binding = "KV cache"
        out.edits.append(_edit(["--max-batch-total-tokens", str(total // 2)], None, "half the batch's KV tokens (the engine's advice; "
                               "TGI 0.9.4+ sizes it from free memory when the flag is left out)", 0.2))
        return out
    if error.kind in ("tgi_prefill_tokens", "cuda_oom_warmup"):
        tokens = int(figures.get("max_batch_prefill_tokens") or log.max_num_batched_tokens or 4096)
        out.binding = "activation peak"
        half = max(tokens // 2, 1)
        argv = [flags.prefill_tokens, str(half)]
        if log.max_model_len and log.max_model_len > half:
            argv += ["--max-input-tokens", str(half - 1)] if half > 1 else []
        out.edits.append(_edit(argv, None, f"warm-up batch {tokens:,} -> {half:,} tokens (the engine's advice: prefill batches are "
                               "smaller, so long prompts are chunked or refused)", 0.2))
        out.edits.append(_edit([flags.tp, str(2 * (log.tp or 1))], None, "twice the GPUs (the activation peak and weights split)", 0.6))
    return out
