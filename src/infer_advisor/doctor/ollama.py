"""ollama's own memory lines: its plan, its host-memory check and its scheduler (docfix16, retrospective: batch 13's sf248,
sf250, sf257, which the doctor did not read).

    >>> ollama_plan('... msg="system memory" total="31.7 GiB" free="23.4 GiB" free_swap="24.1 GiB" ...')["host_free"] / GIB
    23.4

Read at ollama's source: llm/memory.go logs its estimate as ``msg="offload to <library>" layers.requested=..
layers.model=.. layers.offload=.. memory.available="[..]" memory.required.full=".." memory.required.partial=".."
memory.required.kv=".." memory.weights.total=".."``; llm/server.go logs ``msg="system memory" total=".." free=".."
free_swap=".."`` and refuses a model whose part kept in host memory (``estimate.TotalSize - estimate.VRAMSize``) is over
``free + free swap``: "model requires more system memory (%s) than is available (%s)"; server/sched.go logs
``msg="new model will fit in available VRAM, loading" ... parallel=N required=".."`` and multiplies the context by the
parallel requests (``opts.NumCtx = opts.NumCtx * numParallel``), so each parallel slot holds a context's KV. A load that
then dies ("llama runner exited, you may not have enough available memory to run this model", "llama runner process has
terminated") names no figure. ollama's knobs are its own (PARAMETER num_ctx / num_gpu, OLLAMA_NUM_PARALLEL), not
llama-server's flags; every edit here is an action (``argv`` empty) and none is decided (``starts`` None).
"""

from __future__ import annotations

import re

from .edits import Edit, undecided_edit
from ..engines.llamacpp_buffers import N_CTX
from ..units import GIB

_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
_SIZE = r"([\d.]+ (?:[KMGT]i?B|B))"
_SYSTEM = re.compile(rf'msg="system memory" total="{_SIZE}" free="{_SIZE}"(?: free_swap="{_SIZE}")?')
_OFFLOAD = re.compile(r'msg="offload to (\w+)" layers\.requested=(-?\d+) layers\.model=(\d+) layers\.offload=(\d+)')
_FIELD = {key: re.compile(rf'{re.escape(key)}="{_SIZE}"') for key in (
    "memory.required.full", "memory.required.partial", "memory.required.kv", "memory.weights.total", "memory.graph.full",
    "memory.weights.repeating")}
_AVAILABLE = re.compile(r'memory\.available="\[([^\]]{0,200})\]"')
_PARALLEL = re.compile(r'(?:\bparallel=|--parallel )(\d{1,3})\b')
_REFUSED = re.compile(rf"model requires more system memory \({_SIZE}\) than is available(?: \({_SIZE}\))?")
# ollama's pull progress (cmd/cmd.go): one line per blob, "pulling <digest prefix>: 100% ... <size>"; the largest is the GGUF
_PULLED = re.compile(r"pulling [0-9a-f]{12}: +100%[^\n]{0,120}?([\d.]+ (?:[KMGT]?B))[ \t]*$", re.M)
_EXITED = re.compile(r'llama runner (?:exited, you may not have enough available memory[^\n]{0,40}|process has terminated[^\n"]{0,60})')
_MODEL_SIZE = re.compile(r"model size\s+=\s+([\d.]+) GiB")


def _bytes(size: str) -> float:
    value, unit = size.split()
    return float(value) * _UNITS[unit]


def ollama_plan(text: str) -> dict:
    """The figures ollama's own lines print (empty: none)."""
    text, out = text[:2_000_000], {}
    if m := _SYSTEM.search(text):
        out |= {"host_total": _bytes(m.group(1)), "host_free": _bytes(m.group(2))} | ({"swap_free": _bytes(m.group(3))} if m.group(3) else {})
    if m := _OFFLOAD.search(text):
        out |= {"layers_model": int(m.group(3)), "layers_offload": int(m.group(4))}
    for key, pattern in _FIELD.items():
        if m := pattern.search(text):
            out[key.split(".", 1)[1]] = _bytes(m.group(1))
    if m := _AVAILABLE.search(text):
        out["gpu_available"] = sum(_bytes(s.strip()) for s in re.findall(r"[\d.]+ (?:[KMGT]i?B|B)", m.group(1)))
    if m := _PARALLEL.search(text):
        out["parallel"] = int(m.group(1))
    if m := _REFUSED.search(text):
        out["refused_required"] = _bytes(m.group(1))
        if m.group(2):  # docfix20 (sf322-sf324): the message's own "available" (free + free swap), no "system memory" line
            out["refused_available"] = _bytes(m.group(2))
    if pulled := _PULLED.findall(text):
        out["pulled_weights"] = max(_bytes(size) for size in pulled)
    if m := _MODEL_SIZE.search(text):
        out["model_size"] = float(m.group(1)) * GIB
    return out


def _host_short(p: dict) -> tuple[float, float] | None:
    """(host memory ollama's check needs, host memory + swap free) where its check fails by the printed figures."""
    if "host_free" not in p and "refused_available" not in p:
        return None
    need = None  # this run's own plan first (a quoted message may be another machine's), then the message's figure
    if "required.full" in p and "required.partial" in p and p.get("layers_offload", 0) < p.get("layers_model", 0):
        need = p["required.full"] - p["required.partial"]  # the layers not offloaded stay in host memory
    need = need or p.get("refused_required")
    avail = p["host_free"] + p.get("swap_free", 0.0) if "host_free" in p else p["refused_available"]
    return (need, avail) if need and need > avail else None


def ollama_edits(text: str) -> tuple[list[Edit], list[str]]:
    """The edits and notes ollama's own lines give (both empty where the text has none of them)."""
    p, exited = ollama_plan(text), _EXITED.search(text[:2_000_000])
    if not p and not exited:
        return [], []
    edits, notes = [], []
    short = _host_short(p)
    if short:
        need, avail = short
        reach = avail + p.get("gpu_available", 0.0)
        edits.append(undecided_edit(f"a smaller model or quantization (ollama's host-memory check: {need / GIB:,.1f} GiB needed in host memory, "
                             f"{avail / GIB:,.1f} GiB free with swap)", [], "another model or quantization", 0.1,
                             f"ollama's llm/server.go refuses a model whose part kept in host memory is over free memory + free swap; "
                             f"RAM, swap and GPUs here reach {reach / GIB:,.1f} GiB"))
        edits.append(undecided_edit("more host memory or swap", [], "a larger machine or swap file (swap makes the layers on the CPU slow)", 0.3,
                             "the same check counts free swap"))
        notes.append(f"ollama's own check failed: the model's part kept in host memory ({need / GIB:,.1f} GiB) is over the free host "
                     f"memory and swap ({avail / GIB:,.1f} GiB; llm/server.go \"model requires more system memory\").")
        edits += _host_context_edit(p, need, avail)
    if p.get("parallel", 1) > 1:
        n = p["parallel"]
        kv = f" (memory.required.kv {p['required.kv'] / GIB:,.1f} GiB -> about {p['required.kv'] / n / GIB:,.1f})" if "required.kv" in p else ""
        edits.append(undecided_edit(f"OLLAMA_NUM_PARALLEL=1 (ollama's environment){kv}", [], f"1 request at a time instead of {n}", 0.2,
                             f"ollama's scheduler multiplies the context by the parallel requests (server/sched.go, parallel={n} "
                             "printed): one slot holds a 1/{n} of the KV cache and a smaller compute graph".replace("{n}", str(n))))
    if (exited or p.get("layers_offload")) and not short and p.get("layers_offload") == 0:
        edits.append(_all_on_host_edit(p))  # docfix23 (sf346): no layer on the GPU, no num_gpu to lower
    elif (exited or p.get("layers_offload")) and not short:  # short of host memory: fewer GPU layers would put more there
        layers = p.get("layers_offload")
        edits.append(undecided_edit("PARAMETER num_gpu lower than ollama's own choice" + (f" ({layers} layers offloaded of {p['layers_model']})"
                             if layers else ""), [], "layers on the CPU decode slower", 0.4,
                             "fewer layers on the GPU leave room for the KV cache and compute buffers that ollama's estimate "
                             "under-counts; the layer count that fits is not printed"))
        edits.append(undecided_edit("PARAMETER num_ctx smaller (or OLLAMA_CONTEXT_LENGTH)", [], "shorter context", 0.5,
                             "the KV cache and compute graph shrink with the context"))
    if exited:
        notes.append(f"ollama's runner died while loading ('{exited.group(0)[:90]}'): ollama names no figure; its plan lines "
                     "(msg=\"offload to ...\", msg=\"system memory\") say what it expected to fit.")
    return sorted(edits, key=lambda e: e.cost_rank), notes


def _all_on_host_edit(p: dict) -> Edit:
    """docfix23 (retrospective, batch 19's sf346): ollama's plan placed no layer on the GPU (layers.offload=0: llm/memory.go
    EstimateGPULayers found none that fit, and llm/server.go passes that count as the runner's --n-gpu-layers), so the
    runner keeps every layer, with its K/V cache, in host memory (llama.cpp puts a layer's cache on that layer's buffer
    type); fewer GPU layers frees nothing. The KV cache (memory.required.kv, num_ctx x the parallel requests,
    server/sched.go) is what shrinks: a smaller context, fewer parallel requests."""
    kv = f" (memory.required.kv {p['required.kv'] / GIB:,.1f} GiB" if "required.kv" in p else ""
    kv += f", {p['host_free'] / GIB:,.1f} GiB host memory free)" if kv and "host_free" in p else (")" if kv else "")
    return undecided_edit(f"{_NUM_CTX}, and OLLAMA_NUM_PARALLEL=1{kv}", [], "shorter context, 1 request at a time", 0.3,
                          "ollama placed no layer on the GPU (layers.offload=0), so the runner holds the whole KV cache in host "
                          "memory and num_gpu has nothing to lower; the KV cache grows with num_ctx x the parallel requests "
                          "(server/sched.go)")


def _host_context_edit(p: dict, need: float, avail: float) -> list[Edit]:
    """docfix20 (retrospective, batch 17's sf322-sf324): the part ollama's check counts (v0.3-v0.9 llm/server.go NewLlamaServer:
    estimate.TotalSize - estimate.VRAMSize; v0.17 verifyLayout: input weights + CPU graph + the layers not on a GPU) holds
    that part's KV cache and graph, which grow with num_ctx x the parallel requests (server/sched.go), and the default
    context grew (4096 at v0.9; 4k/32k/256k by total VRAM at v0.17, server/routes.go). Where the weights the log prints
    (runner "model size", memory.weights.total, or the largest blob ollama pulled) are alone over what is available, no
    context helps and a smaller model stays first; otherwise a smaller context comes first."""
    weights = p.get("model_size") or p.get("weights.total") or p.get("pulled_weights")
    if weights and weights > avail:
        return []
    shown = f"the weights {weights / GIB:,.1f} GiB fit the {avail / GIB:,.1f} GiB; " if weights else ""
    return [undecided_edit(f"{_NUM_CTX}, and OLLAMA_NUM_PARALLEL=1", [], "shorter context, 1 request at a time", 0.05,
                           f"{shown}ollama's host-memory check counts the KV cache and graph of the part kept in host memory, "
                           f"which grow with num_ctx x the parallel requests (server/sched.go; default context 4096 at v0.9, "
                           f"4k/32k/256k by total VRAM at v0.17, server/routes.go); {need / GIB:,.1f} GiB needed of {avail / GIB:,.1f}")]


def ollama_first(diag, text: str) -> None:
    """Where the doctor found no edit of its own for an ollama run (llama.cpp under ollama), ollama's own lines give them."""
    from .first_try import ollama_note

    if any(e.starts for e in diag.edits):  # llama.cpp only (its passes, engine_passes)
        return
    if not (ollama_note(text, diag.engine) or _SYSTEM.search(text[:2_000_000]) or _OFFLOAD.search(text[:2_000_000])):
        return  # llama-server's own log: its flags, not ollama's knobs
    edits, notes = ollama_edits(text)
    if edits and (not diag.edits or _host_short(ollama_plan(text))):
        diag.edits = edits + [e for e in diag.edits if e.argv]
    diag.notes += notes
    if ollama_note(text, diag.engine):
        diag.edits = in_ollama_knobs(diag.edits, diag.error, text)


# docfix18 (retrospective, batch 15's sf298): ollama's knobs, read at ollama's source (v0.1.40, v0.1.48, v0.4.5 tags):
# llm/server.go passes the runner "--ctx-size" opts.NumCtx, "--batch-size" opts.NumBatch and "--n-gpu-layers" opts.NumGPU,
# where NumGPU -1 (api/types.go DefaultOptions: "set dynamically") becomes its own estimate's layers (estimate.Layers);
# server/sched.go multiplies NumCtx by the parallel requests (defaultParallel 4); NumCtx defaults to 2048 (api/types.go
# at v0.1.40-v0.4.5; envconfig OLLAMA_CONTEXT_LENGTH, from v0.5.13, 2048 at v0.5.13 and v0.6.4, 4096 at v0.9.0 and v0.12.0,
# by VRAM at the snapshot read); OLLAMA_KV_CACHE_TYPE exists from v0.5.0.
_GPU_BUFFER = re.compile(r"cudaMalloc|hipMalloc|\b(?:CUDA|ROCm|Vulkan|SYCL)\d|CUBLAS_STATUS_ALLOC|on device \d|Metal")


def _ollama_spelling(e: Edit, printed_ctx: int | None) -> Edit | None:
    """One llama-server flag edit in ollama's knob (None: said by num_gpu, or a context not known to be above the number)."""
    flag = e.argv[0] if e.argv else None
    if flag == "--ctx-size":
        n = int(e.argv[1])
        if printed_ctx is None or n >= printed_ctx:  # the runner's context not printed: ollama's default may be under n
            return None
        return e.model_copy(update={"change": f"PARAMETER num_ctx x OLLAMA_NUM_PARALLEL at most {n} (OLLAMA_CONTEXT_LENGTH from ollama "
                                              f"0.5.13; the runner's --ctx-size {n})"})
    if flag == "--cache-type-k":
        return e.model_copy(update={"change": "OLLAMA_KV_CACHE_TYPE=q8_0 with OLLAMA_FLASH_ATTENTION=1 (ollama 0.5.0+; the runner's "
                                              "--cache-type-k/-v q8_0)"})
    if flag in ("--batch-size", "--ubatch-size"):
        return e.model_copy(update={"change": f"PARAMETER num_batch {e.argv[1]} (the runner's --batch-size; its micro-batch is at most it)"})
    if flag == "--n-gpu-layers" or e.change.startswith("fewer layers on the GPU"):
        return None
    return e


_NUM_CTX = "PARAMETER num_ctx smaller (or OLLAMA_CONTEXT_LENGTH)"


def in_ollama_knobs(edits: list[Edit], error, text: str) -> list[Edit]:
    """Under ollama, llama-server's flags in ollama's knobs, each in its place: fewer GPU layers is ollama's num_gpu, and a
    context number the runner's printed context does not show to be smaller gives way to num_gpu where a GPU buffer failed
    (ollama placed its own estimate's layers there), else to num_ctx without a number."""
    printed = [int(m) for m in N_CTX.findall(text[:2_000_000])]
    gpu_failed = error is not None and bool(_GPU_BUFFER.search(error.line or ""))
    num_gpu = next((e for e in edits if e.change.startswith("PARAMETER num_gpu")), None) or undecided_edit(
        "PARAMETER num_gpu lower than ollama's own choice", [], "layers on the CPU decode slower", 0.4,
        "ollama puts its own estimate's layers on the GPU (llm/server.go, num_gpu unset) and a buffer failed after them; fewer "
        "layers leave room for it; the layer count that fits is not printed")
    num_ctx = next((e for e in edits if e.change.startswith(_NUM_CTX)), None) or undecided_edit(
        _NUM_CTX, [], "shorter context", 0.5, "the runner's context is not printed (ollama's default: 2048 up to 0.6, 4096 at 0.9-0.12, "
        "by VRAM later, times the parallel requests); the KV cache and compute graph shrink with it")
    num_gpu = _num_gpu_value(num_gpu, ollama_plan(text), error) if gpu_failed else num_gpu
    out = []
    for e in edits:
        said = _ollama_spelling(e, max(printed) if printed else None)
        if said is None:
            said = num_gpu if (gpu_failed or e.argv[:1] != ["--ctx-size"]) else num_ctx
        if all(said.change != x.change for x in out):
            out.append(said)
    return out


def _num_gpu_value(edit: Edit, p: dict, error) -> Edit:
    """docfix22 (retrospective: the grade audit's first edits that state no value): where ollama's plan prints its layers
    (layers.offload of layers.model) and their bytes (memory.weights.repeating + memory.required.kv: llm/memory.go sizes
    each layer as its block's weights plus its share of the KV cache) and the failed GPU buffer prints its size, the
    layers to move off the GPU free at least that buffer: num_gpu = offload - ceil(failed / per layer). Not decided
    (the device's free memory at the failure is not printed; the compute buffer may change with the split)."""
    import math

    failed = error.figures.get("requested_bytes") if error is not None else None
    if not (failed and p.get("layers_offload") and p.get("layers_model") and "weights.repeating" in p):
        return edit
    per_layer = (p["weights.repeating"] + p.get("required.kv", 0.0)) / p["layers_model"]
    n = p["layers_offload"] - math.ceil(failed / per_layer)
    if n < 0:
        return edit
    return edit.model_copy(update={
        "change": f"PARAMETER num_gpu {n} (ollama chose {p['layers_offload']} of {p['layers_model']} layers)",
        "basis": f"not decided: {math.ceil(failed / per_layer)} layers of {per_layer / 2**20:,.0f} MiB each (memory.weights.repeating + "
                 f"memory.required.kv over {p['layers_model']} layers, ollama's llm/memory.go) free at least the failed "
                 f"{failed / 2**20:,.0f} MiB buffer; the device's free memory at the failure is not printed"})
