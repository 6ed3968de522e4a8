"""The doctor for llama.cpp: its start-up arithmetic on the figures its log printed (read at ggml-org/llama.cpp 3514e9f6,
src/llama-kv-cache.cpp, llama-context.cpp, llama.cpp's ``llama_model_load_from_file_impl`` "using device ... MiB free"):
weights, then a KV buffer of ``n_ctx`` cells (all ``--parallel`` slots together), then compute buffers, each one
allocation that must fit in the memory free at start, with llama.cpp's own fit margin kept free for what it does not
reserve (the cuBLAS workspace and other runtime allocations).

    >>> found = llamacpp_findings(parse_startup_log(text, require_kv=False), find_startup_error(text), None, None)
"""

from __future__ import annotations

from .edits import Edit, LedgerLine, undecided_edit
from .engine_flags import ROUND_TOKENS, Findings, engine_edit as _edit, engine_flags
from .llamacpp_compute import compute_bound, flash_floor
from .llamacpp_context import context_within_figures
from .llamacpp_failures import LLAMACPP_BUFFERS
from .refusal_edits import refusal_findings
from .startup_errors import StartupError
from .startup_errors_llamacpp import LLAMACPP_DEFAULT_UBATCH
from ..engines.startup_log import StartupLog
from ..units import GIB, MIB

Q8_0_RATIO = 34 / 64  # a q8_0 block stores 32 values in 34 bytes (32 int8 + an fp16 scale); f16 takes 64 (ggml-common.h block_q8_0)
# llama.cpp's own margin when it fits layers and context to free memory (common/common.h: fit_params_target defaults to
# 1024 MiB per device, --fit-target; common_fit_params prints "cannot meet free memory target of 1024 MiB" in the H200
# trials' logs): kept free for what llama.cpp does not reserve (the cuBLAS workspace and other runtime allocations: the
# H200 trial b-ctx-1.3M-8slots left ~100 MiB and failed at its first matmul, docfix9). Every edit here keeps it.
LLAMACPP_FIT_MARGIN = 1024 * MIB
_FULL_KV_TYPES = ("f16", "bf16", "f32")
_FEWER_LAYERS_COST = ("layers on the CPU run at the CPU's memory bandwidth (much slower); how many fit needs the free memory and "
                      "the layer count, which the log does not print")


def llamacpp_findings(log: StartupLog, error: StartupError | None, model_cell: float | None, total: int | None) -> Findings:
    from ..engines.memory import memory_profile

    out = Findings()
    flags = engine_flags("llama.cpp")
    buffer = LLAMACPP_BUFFERS[int(error.figures["buffer"])] if (error and "buffer" in error.figures) else None
    failed = int(error.figures["requested_bytes"]) if (error and "requested_bytes" in error.figures) else None
    kv = failed if buffer == "kv" else log.kv_cache_bytes
    compute = failed if buffer == "compute" else log.activation_bytes
    host = bool(error and error.figures.get("host"))  # ggml's CPU buffer: host RAM, which no GPU figure sizes (sf159, sf160)
    free, free_source = (log.free_at_start_bytes, "logged") if (log.free_at_start_bytes and not host) else (
        (None, "") if host else (total, "GPU catalog (inferred)"))
    weights = failed if (buffer == "weights" and (log.weights_bytes or 0) < (failed or 0)) else log.weights_bytes
    cells = log.kv_cache_tokens or log.max_model_len
    reserve = compute if compute is not None else memory_profile("llama.cpp").cuda_context_bytes
    reserve_source = "logged" if compute is not None else "engine profile (llama.cpp compute buffers and context)"
    for term, value, src in (("weights (model buffer)", weights, "logged"), ("KV cache (n_ctx cells)", kv, "logged"),
                             ("compute buffers", reserve, reserve_source)):
        if value is not None:
            out.ledger.append(LedgerLine(term=term, bytes_per_gpu=int(value), in_budget=True, source=src))
    if free:
        out.gpu_memory_bytes = out.budget_bytes = int(free)
        out.budget_base = "free at start" if free_source == "logged" else "total (catalog)"
        out.notes.append(f"Free memory at start: {free / GIB:.2f} GiB ({free_source}).")
    if error is None:
        out.starts, out.binding = True, None
        out.kv_cache_tokens = cells
        return out
    if error.kind == "llamacpp_refused":  # docfix13: the engine declined its settings before allocating (set g's miss)
        found = refusal_findings(error)
        out.starts, out.binding, out.edits, out.notes = False, None, found.edits, out.notes + found.notes
        return out
    out.starts, out.binding = False, {"kv": "KV cache", "compute": "activation peak", "weights": "weights", None: None}[buffer]
    if buffer == "weights":
        return _weights_failed(out, log, free, weights, reserve, kv or 0, cells)
    per_token = kv / cells if (kv and cells) else model_cell
    quantized = _kv_quantized(log, kv, cells, model_cell)
    if buffer == "compute":  # the room a compute buffer has beside the printed weights and KV (None: a figure is missing)
        room = (free - weights - kv - LLAMACPP_FIT_MARGIN - (0 if free_source == "logged" else memory_profile("llama.cpp").cuda_context_bytes)
                if (free and weights is not None and kv is not None and not host) else None)
        out.edits.append(_smaller_ubatch(error, failed, room))
        if "flash_attn_off" in error.figures:
            raw = room + LLAMACPP_FIT_MARGIN if room is not None else None  # the margin is a target, not a need: a floor uses none
            out.edits.append(_flash_attention(error, failed, room, raw))
    if buffer is None and not host:  # docfix15: nothing says which buffer failed (a bare Vulkan/Metal/ROCm allocation line)
        out.edits += _unknown_buffer(error, failed)
    if host:
        out.notes.append("The failed buffer is host RAM (ggml's CPU backend: a CPU-only run, or layers kept on the CPU), whose free "
                         "size the log does not print: a shorter context shrinks the KV cache in proportion; not decided.")
    if not (free and weights is not None and per_token):
        out.notes.append("The log lacks the free memory, the model buffer or the KV size: the engine's own remedies, not decided.")
        bounded = context_within_figures(log, cells, per_token, buffer)  # docfix17 (sf281-sf283): not a fixed halving
        raised_ubatch = buffer is None and error.figures.get("n_ubatch", 0) > LLAMACPP_DEFAULT_UBATCH  # sf226: the micro-batch first
        if bounded is not None:
            out.edits.insert(0, bounded.model_copy(update={"cost_rank": 0.5}) if raised_ubatch else bounded)
        else:
            out.edits.append(_edit([flags.context, str(max((cells or 8192) // 2, ROUND_TOKENS))], None, "half the context (the compute "
                                   "buffer's attention scores and the KV cache both scale with it)" if buffer == "compute" else "half the context",
                                   0.1 if (buffer == "compute" or host) else 0.5))
        if buffer != "compute" and not quantized:  # q8_0 KV shrinks the KV cache, not a compute buffer (sf162, docfix9)
            out.edits.append(_edit(list(flags.kv_8bit), None, "KV cache in q8_0 (needs flash attention, -fa)", 0.15))
        return out
    context_bytes = memory_profile("llama.cpp").cuda_context_bytes if (free_source != "logged" and compute is not None) else 0
    room = free - weights - reserve - context_bytes  # a catalog total still holds the CUDA context, which the free line excludes
    kv_room = room - LLAMACPP_FIT_MARGIN  # the runtime's own allocations beyond llama.cpp's reserve (b-ctx-1.3M-8slots, docfix9)
    slots = log.max_num_seqs or 1
    n_ctx = int(kv_room // per_token) if kv_room > 0 else 0
    n_ctx -= n_ctx % ROUND_TOKENS if n_ctx >= 4 * ROUND_TOKENS else 0
    if cells and n_ctx < cells and n_ctx >= slots * ROUND_TOKENS:
        out.edits.append(_edit([flags.context, str(n_ctx)], True, f"context {cells:,} -> {n_ctx:,} cells ({1 - n_ctx / cells:.0%} shorter; "
                               f"{n_ctx // slots:,} per slot over {slots} slot(s))", 1 - n_ctx / cells, tokens=n_ctx, length=n_ctx // slots))
    if kv and cells and buffer != "compute" and not quantized:  # never the KV type the run already had (b-held90-ctx-900k-q8kv)
        q8 = kv * Q8_0_RATIO
        fits = True if q8 <= kv_room else (None if q8 <= room else False)  # inside the margin: not decided (b-held128-ctx-64k)
        out.edits.append(_edit(list(flags.kv_8bit), fits, f"KV cache in q8_0: {q8 / GIB:.2f} GiB for {kv_room / GIB:.2f} GiB of "
                               "room, llama.cpp's 1,024 MiB fit margin kept free (needs flash attention, -fa)", 0.15, tokens=cells))
    out.edits += _fewer_layers(log, free - reserve - context_bytes - LLAMACPP_FIT_MARGIN, weights, kv or 0, cells)
    return out


def _unknown_buffer(error: StartupError, failed: int | None) -> list[Edit]:
    """A failed allocation whose buffer no line names (docfix15, retrospective: batch 12's sf226, sf228; ggml-vulkan's
    ggml_vk_create_buffer prints "ggml_vulkan: Device memory allocation of size N failed." for every buffer alike). Where the
    run's micro-batch is above llama.cpp's default, the compute buffer, which grows with it (llamacpp_compute), is
    the one that changed from a default run: the micro-batch first. Fewer layers on the GPU shrinks every buffer the GPU
    holds (the offloaded layers' weights and their KV cells; llama.cpp keeps a CPU layer's KV on the host)."""
    edits = [_smaller_ubatch(error, failed)] if (error.figures.get("n_ubatch") or 0) > LLAMACPP_DEFAULT_UBATCH else []
    edits.append(undecided_edit("fewer layers on the GPU (-ngl below the model's layers)", [], _FEWER_LAYERS_COST, 0.5,
                      confidence="engine_advice", basis="which buffer failed is not printed: each layer moved to the CPU takes its "
                      "weights and its KV cells off the GPU, so every buffer the GPU holds shrinks"))
    return edits


def _kv_quantized(log: StartupLog, kv: float | None, cells: int | None, model_cell: float | None) -> bool:
    """The run's KV cache is already below 16 bits: by the type the log printed ("K (q8_0)"), else by the failed
    allocation's bytes per cell against the memory model's f16 cell (q8_0 holds 34/64 of it)."""
    if log.kv_cache_dtype:
        return log.kv_cache_dtype.lower() not in _FULL_KV_TYPES
    return bool(kv and cells and model_cell and kv / cells <= (1 + Q8_0_RATIO) / 2 * model_cell)


def _smaller_ubatch(error: StartupError | None, failed: int | None, room: float | None = None) -> Edit:
    """A compute buffer grows with the micro-batch (without flash attention its attention scores are n_ubatch x n_ctx
    per head): half of -ub, with -b no larger (llama.cpp takes n_ubatch = min(n_batch, n_ubatch)). Not decided: the
    buffer is not exactly linear in it, and a backend's own limit (Vulkan's per-allocation maximum) is not printed.
    docfix12: above the default 512, back to it, decided where the bound on the printed figures fits the room
    (:mod:`.llamacpp_compute`)."""
    flags = engine_flags("llama.cpp")
    figures = error.figures if error else {}
    ubatch = int(figures.get("n_ubatch") or LLAMACPP_DEFAULT_UBATCH)
    bound = compute_bound(figures, failed, flash="flash_attn_off" not in figures, ubatch=LLAMACPP_DEFAULT_UBATCH) \
        if ubatch > LLAMACPP_DEFAULT_UBATCH else None
    if bound is not None and room is not None and bound <= room and not figures.get("allocation_limit"):
        n = str(LLAMACPP_DEFAULT_UBATCH)
        return _edit([flags.prefill_tokens, n, flags.ubatch, n], True, f"micro-batch {ubatch} -> {n} (llama.cpp's default): the "
                     f"compute buffer at most {bound / MIB:,.0f} MiB in {room / MIB:,.0f} MiB of room, the whole context kept; prompt "
                     "processing somewhat slower", 0.05).model_copy(update={"confidence": "engine_figures", "basis": _BOUND_BASIS})
    half = max(ubatch // 2, 1)
    size = f" ({failed / MIB:,.0f} MiB -> about {failed / 2 / MIB:,.0f} MiB)" if failed else ""
    limit = "; under a backend's per-allocation limit (Vulkan: about 4 GiB, lower on some drivers) a buffer must fit in one allocation" \
        if figures.get("allocation_limit") else ""
    return _edit([flags.prefill_tokens, str(half), flags.ubatch, str(half)], None, f"micro-batch {ubatch} -> {half}: the compute buffer "
                 f"about halves{size}, prompt processing somewhat slower{limit}", 0.12)


_BOUND_BASIS = ("the free memory, model and KV buffers the log printed, and an upper bound on the compute buffer from the "
                "failed one it printed (llama.cpp's attention graph: llamacpp_compute), less llama.cpp's 1,024 MiB fit margin")


def _flash_attention(error: StartupError, failed: int | None, room: float | None = None, raw_room: float | None = None) -> Edit:
    """The compute buffer failed with flash attention off (docfix11, retrospective: the H200 set e's e-fa-off and
    e-held110): without it the buffer holds the n_ubatch x n_ctx attention scores of every head in f32, which grow with
    the context (97,812 MiB at 500,224 cells and -ub 2048 there); with it they are computed in tiles and the context is
    kept. Not decided: the flash-attention buffer is not printed, and the GPU and backend must support it."""
    argv = ["--flash-attn", "on"] if error.figures["flash_attn_off"] else ["--flash-attn"]  # the older builds' -fa took no value
    bound = compute_bound(error.figures, failed, flash=True)
    if bound is not None and room is not None and bound <= room and "cuda" in error.line.lower():  # docfix12: decided (CUDA)
        return _edit(argv, True, f"the whole context kept: with flash attention the compute buffer is at most {bound / MIB:,.0f} MiB "
                     f"(was {failed / MIB:,.0f} MiB) in {room / MIB:,.0f} MiB of room; the GPU and backend must support it", 0.02
                     ).model_copy(update={"confidence": "engine_figures", "basis": _BOUND_BASIS})
    floor = flash_floor(error.figures)
    if floor is not None and raw_room is not None and floor > raw_room:  # docfix14 (set h's h-held90): decided, it fails
        return _edit(argv, False, f"the whole context kept, but with flash attention the compute buffer still holds its f16 mask, "
                     f"at least {floor / MIB:,.0f} MiB (n_ctx x n_ubatch x 2 B), and only {max(raw_room, 0) / MIB:,.0f} MiB is left beside "
                     "the printed weights and KV cache", 0.02).model_copy(update={"confidence": "engine_figures", "basis": (
                         "the free memory, model and KV buffers the log printed, against the least the flash-attention compute buffer holds")})
    size = f" (the failed {failed / MIB:,.0f} MiB is mostly those scores)" if failed else ""
    return _edit(argv, None, "the whole context kept: flash attention computes the attention scores in tiles instead of an "
                 f"n_ubatch x n_ctx matrix per head{size}; not decided, the flash-attention compute buffer is not printed", 0.02)


def _weights_failed(out: Findings, log: StartupLog, free: float | None, weights: float | None, reserve: float, kv: float,
                    cells: int | None) -> Findings:
    """The model buffer (load_tensors / llama_model_load, before any KV or compute buffer) did not fit: no KV setting
    frees anything (docfix8, retrospective: the H200 trial held128-weights and batch 8's sf129-sf131). Fewer layers on
    the GPU, as many as fit the free memory less the compute buffers and llama.cpp's own fit margin, each bringing its
    weights and its KV cells at the run's context; or a smaller quantized GGUF."""
    out.binding = "weights"
    out.notes.append("The failing allocation is the model buffer (weights), before the KV cache: KV settings and a shorter context "
                     "free nothing here. Builds with --fit (on by default since llama.cpp#16653) fit the layers to the free memory "
                     "themselves when -ngl is not forced ('common_fit_params: ... n_gpu_layers already set by user' means it was): "
                     "leaving -ngl out lets such a build start with layers on the CPU.")
    if free and weights:
        out.ledger.append(LedgerLine(term="free memory at start (the weights must fit in it)", bytes_per_gpu=int(free), in_budget=False,
                                     source="logged" if log.free_at_start_bytes else "GPU catalog (inferred)"))
    edits = _fewer_layers(log, (free or 0) - reserve - LLAMACPP_FIT_MARGIN, weights or 0, kv, cells) if (free and weights) else []
    if not edits:
        edits.append(undecided_edit("fewer layers on the GPU (-ngl below the model's layers)", [], _FEWER_LAYERS_COST, 0.5, confidence=None))
    edits.append(undecided_edit("a smaller quantized GGUF (Q8_0 about 53% of f16's bytes, Q4_K_M about 30%)", [],
                                "a small accuracy cost; every layer stays on the GPU", 0.7, confidence=None))
    out.edits += edits
    return out


def _fewer_layers(log: StartupLog, room: float, weights: float, kv: float, cells: int | None) -> list[Edit]:
    """--n-gpu-layers: each offloaded layer brings its weights and its KV cells to the GPU; the layers that fit the room,
    by the per-layer average of what the log printed (the output layer counted as an average one: estimated)."""
    layers = log.gpu_layers
    if not layers or room <= 0:
        return []
    per_layer = (weights + kv) / layers
    fit = min(int(room // per_layer), layers - 1)
    if fit < 1:
        return []
    return [_edit([engine_flags("llama.cpp").gpu_layers, str(fit)], True, f"{layers - fit} of {log.total_layers or layers} layers on the CPU "
                  f"(at the CPU's memory bandwidth: much slower); {per_layer / MIB:,.0f} MiB a layer (weights and KV cells at this "
                  f"context), from the log's averages, in {room / MIB:,.0f} MiB of room", 0.5 + (1 - fit / layers), tokens=cells)
            .model_copy(update={"confidence": "engine_figures", "basis": "the free memory, model, KV and compute buffers the log printed "
                                "(a layer's share averaged over the offloaded layers), less llama.cpp's own 1,024 MiB fit margin"})]
