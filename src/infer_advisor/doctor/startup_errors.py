"""The error an engine raised while starting, in its own words, with the figures the message carries.

    >>> err = find_startup_error(Path("vllm.log").read_text())
    >>> err.kind, err.figures
    ('max_len_exceeds_kv', {'max_model_len': 29000, 'kv_cache_tokens': 23648})

Each pattern is the engine's own message, read from its source (the format strings, not paraphrases):

- vLLM V0 ``worker.raise_if_cache_size_invalid`` / ``llm_engine._init_cache`` (0.2-0.7): "No available memory for the
  cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine." and "The model's max seq len
  ({max_model_len}) is larger than the maximum number of tokens that can be stored in KV cache ({max_seq_len}). ...";
  0.6.6+ prints the budget first: "the rest of the memory reserved for KV Cache is {kv}GiB." (negative when it fails).
- vLLM V1 ``v1/core/kv_cache_utils.check_enough_kv_cache_memory`` (0.8+): the same "No available memory ..." and "To
  serve at least one request with the models's max seq len ({max_model_len}), ({needed} GiB KV cache is needed, which is
  larger than the available KV cache memory ({available} GiB). Based on the available memory, the estimated maximum
  model length is {estimated}. ..." (0.11 fixed the spelling to "model's"); ``v1/worker/gpu_worker`` (0.11+): "Free
  memory on device ({free}/{total} GiB) on startup is less than desired GPU memory utilization ({util}, {desired}
  GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
- PyTorch's allocator: "CUDA out of memory. Tried to allocate {n} MiB. GPU {i} has a total capacity of {t} GiB of
  which {f} MiB is free." (older torch: "capacty"); the phase is read from the engine's lines before it (CUDA-graph
  capture, the memory profile run, or loading); vLLM V1's own "CUDA out of memory occurred when warming up sampler
  with {num_reqs} dummy requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` ..." (gpu_model_runner,
  the profile run) names the phase and the batch.
- SGLang ``model_runner.init_memory_pool`` (0.1-0.5; pool_configurator's ``MemoryPoolConfig`` later): "Not enough
  memory. Please try to increase --mem-fraction-static." (later: "... Current value: mem_fraction_static={f}"); SGLang
  ``model_runner_kv_cache_mixin._profile_available_bytes`` (2026): "Loaded weights leave no GPU memory for the KV cache
  under --mem-fraction-static={f}. Raise --mem-fraction-static above {s:.3f} (minimum viable = 1 - available/pre =
  {m:.4f})."; its CUDA-graph runner: "Capture cuda graph failed: ..." (phase of a CUDA out of memory).
- TGI ``flash_causal_lm.warmup``: "Not enough memory to handle {n} prefill tokens. You need to decrease
  `--max-batch-prefill-tokens`" and (1.0) "... {n} total tokens with {m} prefill tokens ..."; the v3 router
  (backends/v3/src/lib.rs, read at v3.3.7): "Not enough memory to handle `max_total_tokens={n}`".
- llama.cpp ``ggml_backend_cuda_buffer_type_alloc_buffer``: "allocating {n} MiB on device {d}: cudaMalloc failed: out
  of memory", then "failed to allocate buffer for kv cache" or "failed to allocate compute buffers"; ggml-alloc's
  "failed to allocate CUDA0 buffer of size {bytes}" (which buffer: the KV cache, compute buffers, or the weights).
  Read in :mod:`.llamacpp_failures`.
- NCCL (vLLM pynccl): "NCCL error: {reason}".
- A traceback that stops inside vLLM's KV-cache size check with its message cut off (V0
  ``worker.raise_if_cache_size_invalid``, V1 ``kv_cache_utils.get_kv_cache_config`` / ``check_enough_kv_cache_memory``):
  ``kv_cache_check``, one of that check's two messages ("No available memory for the cache blocks" or the max-length
  one); which, the log does not say.

Every pattern is one ``re.search`` without nested repetition, so reading a log stays linear in its length.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .llamacpp_failures import llamacpp_failure, llamacpp_phase
from .log_line import LINE_CHARS, matched_line as _line
from ..engines.startup_log import FREE_ON_DEVICE, detect_engine
from ..units import GIB, MIB

ErrorKind = Literal[
    "no_cache_blocks", "max_len_exceeds_kv", "kv_needed_exceeds_available", "free_memory_below_utilization",
    "cuda_oom_graph_capture", "cuda_oom_profile", "cuda_oom_load", "cuda_oom", "sglang_not_enough_memory",
    "tgi_prefill_tokens", "tgi_total_tokens", "cuda_oom_warmup", "llamacpp_alloc_failed", "nccl_error",
    "kv_cache_check",  # added with Diagnosis schema 2: a traceback that stops in vLLM's KV-cache size check, no message
    "mamba_cache_blocks",  # schema 4 (docfix8): vLLM's hybrid-model check, max_num_seqs above the Mamba cache blocks
    "llamacpp_refused", "host_oom_killed",  # schema 5 (docfix13): llama.cpp refusing its settings; the host's OOM killer
]


class StartupError(BaseModel):
    """One error an engine raised at start-up: its kind, the line as printed and the numbers in it."""

    model_config = ConfigDict(extra="forbid")

    kind: ErrorKind
    line: str = Field(description="The engine's message as the log printed it (shortened to 400 characters).")
    figures: dict[str, float] = Field(default_factory=dict, description="Numbers the message carries (bytes, tokens).")


_V1_NEEDED = re.compile(
    r"To serve at least one request with the models?'s max seq len \((\d+)\),\s*\(?([\d.]+) GiB KV cache is needed, "
    r"which is larger than the available KV cache memory \(([\d.]+) GiB\)"
)
_QUOTE_MARK = re.compile(r"^\s{0,8}(?:[>|\u258e\u2502]\s?){1,4}")  # a quoted or bar-marked line's prefix (docfix16)
_V1_ESTIMATED = re.compile(r"estimated maximum model length is (\d+)")
_V0_MAX_LEN = re.compile(  # "The " optional: a thread's title often quotes the message from "model's"; a title cut after
    # the length still names the error (the capacity is then not known)
    r"(?:The )?model's max seq len \((\d+)\)(?: is larger than the maximum number of tokens that can be stored in KV cache \((\d+)\))?"
)
# docfix19 (sf313, vllm/v1/worker/utils.py request_memory's f-string): a paste inside other text may drop its spaces
_FREE = re.compile(
    FREE_ON_DEVICE + r"([\d.]+)/([\d.]+) ?GiB\) on startup is less than desired GPU memory utilization ?\(([\d.]+), ?([\d.]+) ?GiB\)"
)
_NO_BLOCKS = re.compile(r"No available memory for the cache blocks")
# V0 0.6.5-0.7: "... the rest of the memory reserved for KV Cache is -X GiB"; V1 gpu_worker: "Available KV cache memory: -X GiB"
# (the engine then raises "No available memory for the cache blocks", which a pasted excerpt may leave out)
_NEGATIVE_KV = re.compile(r"(?:the rest of the memory reserved for KV Cache is|Available KV cache memory:) (-[\d.]+)\s*GiB")
# vllm-ascend worker_v1.determine_available_memory (docfix14, sf215): max(total x utilization - peak, 0) in bytes, printed
# as "Available memory: 0, total memory: N"; vLLM's check_enough_kv_cache_memory then raises "No available memory ..."
_ZERO_KV_ASCEND = re.compile(r"Available memory: 0, total memory: \d+")
_TORCH_OOM = re.compile(
    r"CUDA out of memory\. Tried to allocate ([\d.]+) (KiB|MiB|GiB)\. GPU (\d+) has a total capac(?:i)?ty of ([\d.]+) GiB "
    r"of which ([\d.]+) (KiB|MiB|GiB) is free"
)
# "CUDA OOM": a user's shorthand beside the log; torch.OutOfMemoryError (torch.cuda.OutOfMemoryError before 2.5) is the
# exception torch raises for a CUDA allocation that fails, named alone in a thread that leaves out its message
_CUDA_OOM = re.compile(r"CUDA error: out of memory|CUDA out of memory|(?i:\bcuda oom\b)|\btorch\.(?:cuda\.)?OutOfMemoryError\b"
                       r"|(?<![\w.])OutOfMemoryError\b(?!:? *Java)"  # torch's exception named bare (sf224's title; docfix14)
                       r"|\bOOM when (?:loading|starting|launching)\b")  # a thread title's shorthand (vllm#5993), capitals only
_SGLANG = re.compile(r"Not enough memory\. Please try to increase --mem-fraction-static(?:\. Current value: [\w.]{0,40}mem_fraction_static=(\d*\.?\d+))?"
                     r"|RuntimeError: Not enough memory(?=[`'\"]|\.?[ \t]*(?:$|[;|]))", re.M)  # docfix23: quoted to "memory" (not TGI's)
# SGLang 0.4.x ModelRunner.init_memory_pool: the warning, then "if self.max_total_num_tokens <= 0: raise RuntimeError('Not
# enough memory. Please try to increase --mem-fraction-static.')" (a negative profile is the same failure; sf111, docfix7)
_SGLANG_PROFILED = re.compile(r"max_total_tokens=\d{1,9} is larger than the profiled value (-\d{1,12}|0)\b")
_SGLANG_NO_KV = re.compile(
    r"Loaded weights leave no GPU memory for the KV cache\s+under\s+--mem-fraction-static=(\d*\.?\d+)\.(?:\s+Raise --mem-fraction-static\s+"
    r"above (\d*\.?\d+)(?:\s+\(minimum viable = 1 - available/pre = (\d*\.?\d+)\))?)?"
)
_TGI_PREFILL = re.compile(r"Not enough memory to handle (\d+ )?prefill tokens")  # a title may leave the number out
_TGI_TOTAL = re.compile(r"Not enough memory to handle (\d+) total tokens with (\d+) prefill tokens")
# the shard's "Method Warmup encountered an error", or the 0.9-era router's panic "Unable to warmup model: Generation(...)"
# carrying PyTorch's allocator refusal under a memory fraction ("Allocation on device 0 would exceed allowed memory.
# (out of memory)", TGI#563)
_TGI_WARMUP = re.compile(r"Method Warmup encountered an error|Unable to warmup model: [^\n]{0,200}?(?:out of memory|would exceed allowed memory)")
_TGI_MAX_TOTAL = re.compile(r"Not enough memory to handle `max_total_tokens=(\d+)`")
# vLLM (v1 hybrid models, mamba cache sizing before CUDA-graph capture): "max_num_seqs (1024) exceeds available Mamba cache
# blocks (856). ... Please lower max_num_seqs to at most 856 or increase gpu_memory_utilization."
_MAMBA_BLOCKS = re.compile(r"max_num_seqs \((\d+)\) exceeds available Mamba cache blocks \((\d+)\)")
# the same message quoted without its head (docfix12, retrospective: batch 10's sf177 "exceeds available Mamba cache
# blocks (95)... CUDA graph capture cannot proceed"): the bound is printed, the max_num_seqs it was checked against is not
_MAMBA_BLOCKS_CUT = re.compile(r"exceeds available Mamba cache blocks \((\d+)\)")
_NCCL = re.compile(r"NCCL error: ([^\n(]{1,120})")
_GRAPH_PHASE = re.compile(
    r"Capturing (?:the model for )?(?:CUDA graphs|cudagraphs)|Capturing CUDA graph|torch\.cuda\.graph\(|capture_end\(\)|cuda graph capture"
    r"|Capture cuda graph (?:begin|failed)|Capturing batches \(bs="
)
# the KV cache is sized (V1 kv_cache_utils "GPU KV cache size: N tokens", V0 "# GPU blocks: N"): what the engine
# allocates after that, before it serves, is the CUDA-graph pool (V1 compile_or_warm_up_model, V0 _warm_up_model)
_KV_SIZED = re.compile(r"GPU KV cache size: [\d,]+ tokens|# (?:GPU|cuda) blocks: [1-9]")
_EAGER = re.compile(r"enforce_eager=True|--enforce-eager")
_PROFILE_PHASE = re.compile(r"profile_run|determine_num_available_blocks|determine_available_memory|Memory profiling"
                            r"|\b_dummy_run\b(?![\s\S]{0,3000}capture_model)"  # docfix17: V1's dummy forward, not capture_model's
                            r"|\b(?:\w*vision\w*|visual)\(\s*pixel_values\b")  # docfix19 (sf306): see budget_floor
# the weights loaded (V0 "Loading model weights took", V1 "Model loading took"): an OOM after it is in the profile run
_LOADED = re.compile(r"Loading model weights took|Model loading took")
# vLLM V1 gpu_model_runner._dummy_sampler_run / _dummy_pooler_run (profile_run): "CUDA out of memory occurred when
# warming up sampler with {num_reqs} dummy requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` ..."
_SAMPLER_WARMUP = re.compile(r"CUDA out of memory occurred when warming up (?:sampler|pooler)[^\n]{0,60}? with (\d+) dummy requests")
# the frames of vLLM's KV-cache size check, in a traceback whose message the paste left out
_KV_CHECK = re.compile(r"raise_if_cache_size_invalid|check_enough_kv_cache_memory|in get_kv_cache_config|get_kv_cache_config\(")
_UNITS = {"KiB": 1024, "MiB": MIB, "GiB": GIB}


def _gib(s: str) -> float:
    return float(s) * GIB


def find_startup_error(text: str) -> StartupError | None:
    """The first start-up error of a known kind in ``text`` (the most specific message wins), else None."""
    for finder in (_vllm_kv, _free_memory, _no_blocks, _mamba, _refused, _other_engines, _oom, _nccl, _kv_check, _host_killed, _reported_oom):
        found = finder(text)
        if found is not None:
            return found
    return None


def _refused(text: str, host: bool = False) -> StartupError | None:
    """llama.cpp declining its settings, or (``host``) the host killing the process (:mod:`.startup_refusals`; docfix13)."""
    from .startup_refusals import refusal

    found = refusal(text)
    if found is None or (found[0] == "host_oom_killed") != host:
        return None
    return StartupError(kind=found[0], line=found[2], figures={"refusal": found[1]})


def _host_killed(text: str) -> StartupError | None:  # after any engine line: a GPU allocation's own message wins
    return _refused(text, host=True)


def _unwrapped(text: str) -> str:
    """``text`` with its line breaks taken out: a terminal paste wraps long lines at a fixed width, mid-word
    (SergiioB/intel-arc-pro-b70-inference-cookbook#4: "(4.26 GiB KV cach" / "e is needed"). Only for the long V1
    message, whose wording no two joined lines of another kind spell."""
    return text.replace("\r", "").replace("\n", "")


def _rejoined(text: str) -> str:
    """docfix16 (sf241, sf258): the V1 message broken at word boundaries, each line behind a quote mark ("▎ ", "> "): the
    lines joined by one space, their quote marks taken out."""
    return " ".join(_QUOTE_MARK.sub("", line).strip() for line in text.replace("\r", "").split("\n"))


def _vllm_kv(text: str) -> StartupError | None:
    m = _V1_NEEDED.search(text)
    for join in (_unwrapped, _rejoined):
        if m is None and "To serve at least one request" in text:
            m = _V1_NEEDED.search(join(text))
            text = join(text) if m else text
    if m:
        figures = {"max_model_len": int(m.group(1)), "kv_needed_bytes": _gib(m.group(2)), "kv_available_bytes": _gib(m.group(3))}
        est = _V1_ESTIMATED.search(text, m.end())
        if est:
            figures["estimated_max_model_len"] = int(est.group(1))
        return StartupError(kind="kv_needed_exceeds_available", line=_line(text, m), figures=figures)
    m = _V0_MAX_LEN.search(text)
    if m:
        figures = {"max_model_len": int(m.group(1))} | ({"kv_cache_tokens": int(m.group(2))} if m.group(2) else {})
        return StartupError(kind="max_len_exceeds_kv", line=_line(text, m), figures=figures)
    return None


def _free_memory(text: str) -> StartupError | None:
    m = _FREE.search(text)
    if not m:
        return None
    return StartupError(kind="free_memory_below_utilization", line=_line(text, m), figures={
        "free_bytes": _gib(m.group(1)), "total_bytes": _gib(m.group(2)), "gpu_memory_utilization": float(m.group(3)),
        "desired_bytes": _gib(m.group(4)),
    })


def _no_blocks(text: str) -> StartupError | None:
    m = _NO_BLOCKS.search(text)
    neg = _NEGATIVE_KV.search(text)
    zero = _ZERO_KV_ASCEND.search(text)
    if not (m or neg or zero):
        return None
    figures = {"kv_cache_bytes": _gib(neg.group(1))} if neg else ({"kv_cache_bytes": 0.0} if zero else {})
    m = m or neg or zero
    return StartupError(kind="no_cache_blocks", line=_line(text, m), figures=figures)


def _oom(text: str) -> StartupError | None:
    warm = _SAMPLER_WARMUP.search(text)
    if warm:  # the engine's own message: the profile run's sampler (or pooler) warm-up, with the batch it tried
        return StartupError(kind="cuda_oom_profile", line=_line(text, warm), figures={"max_num_seqs": int(warm.group(1))})
    m = _TORCH_OOM.search(text) or _CUDA_OOM.search(text)
    if not m:
        return None
    figures: dict[str, float] = {}
    if m.re is _TORCH_OOM:
        figures = {
            "requested_bytes": float(m.group(1)) * _UNITS[m.group(2)], "gpu_index": int(m.group(3)),
            "total_bytes": _gib(m.group(4)), "free_bytes": float(m.group(5)) * _UNITS[m.group(6)],
        }
    # the phase: the engine's last step before the error (a log may list the error before the lines that led to it)
    if _GRAPH_PHASE.search(text) or (_KV_SIZED.search(text) and not _EAGER.search(text)):
        kind = "cuda_oom_graph_capture"
    elif _PROFILE_PHASE.search(text) or _LOADED.search(text):
        kind = "cuda_oom_profile"
    elif re.search(r"Loading model weights|Starting to load model|load_weights|ShardCannotStart|Shard \d+ failed to start"
                   r"|Error when initializing model"  # TGI server.serve_inner's get_model (docfix14: sf208)
                   # docfix15 (sf239): vLLM's loader and its post-load processing (base_loader.load_model ->
                   # process_weights_after_loading, a quantization's repack for Marlin), before "Model loading took"
                   r"|process_weights_after_loading|weight_loader|Loading weights took|Loading safetensors checkpoint shards"
                   r"|_for_marlin\b|repack_\w{0,40}weight|_repack_marlin", text):
        # TGI's shard dies before the router's warm-up when its weights do not fit (sf127, docfix8: retrospective)
        kind = "cuda_oom_load"
    else:
        kind = "cuda_oom"
    return StartupError(kind=kind, line=_line(text, m), figures=figures | _kv_fit(text) | llamacpp_phase(text))


def _other_engines(text: str) -> StartupError | None:
    m = _SGLANG_NO_KV.search(text)
    if m:
        figures = {"mem_fraction_static": float(m.group(1))}
        if m.group(3) or m.group(2):  # the exact minimum, else the engine's rounded-up suggestion
            figures["minimum_mem_fraction_static"] = float(m.group(3) or m.group(2))
        return StartupError(kind="sglang_not_enough_memory", line=_line(text, m), figures=figures)
    m = _SGLANG.search(text)
    if m:
        figures = {"mem_fraction_static": float(m.group(1))} if m.group(1) else {}
        return StartupError(kind="sglang_not_enough_memory", line=_line(text, m), figures=figures)
    m = _SGLANG_PROFILED.search(text)
    if m:
        return StartupError(kind="sglang_not_enough_memory", line=_line(text, m), figures={"profiled_max_total_tokens": int(m.group(1))})
    m = _TGI_MAX_TOTAL.search(text)
    if m:
        return StartupError(kind="tgi_total_tokens", line=_line(text, m), figures={"max_total_tokens": int(m.group(1))})
    m = _TGI_TOTAL.search(text)
    if m:
        return StartupError(kind="tgi_total_tokens", line=_line(text, m),
                            figures={"max_batch_total_tokens": int(m.group(1)), "prefill_tokens": int(m.group(2))})
    m = _TGI_PREFILL.search(text)
    if m:
        figures = {"max_batch_prefill_tokens": int(m.group(1))} if m.group(1) else {}
        return StartupError(kind="tgi_prefill_tokens", line=_line(text, m), figures=figures)
    found = llamacpp_failure(text)
    if found is not None:
        m, figures = found
        return StartupError(kind="llamacpp_alloc_failed", line=_line(text, m), figures=figures)
    m = _TGI_WARMUP.search(text)
    if m:  # TGI's warmup is its memory profile (a batch of max_batch_prefill_tokens): an out of memory there
        return StartupError(kind="cuda_oom_warmup", line=_line(text, m))
    return None


# Messages only vLLM's V0 engine prints (V1 words the same check "To serve at least one request ... KV cache is
# needed"): a log that prints one and no version is read with the newest V0 memory profile, not the pinned V1 default.
V0_ONLY_KINDS = ("max_len_exceeds_kv",)
V1_FIRST = "0.8"  # vLLM 0.8.0 made the V1 engine the default (VLLM_USE_V1=1); data/engine_memory.yaml's V0 ranges end there


def _mamba(text: str) -> StartupError | None:
    m = _MAMBA_BLOCKS.search(text)
    if m is None:
        cut = _MAMBA_BLOCKS_CUT.search(text)
        return StartupError(kind="mamba_cache_blocks", line=_line(text, cut), figures={"mamba_cache_blocks": int(cut.group(1))}) if cut else None
    return StartupError(kind="mamba_cache_blocks", line=_line(text, m), figures={
        "max_num_seqs": int(m.group(1)), "mamba_cache_blocks": int(m.group(2))})


def _kv_check(text: str) -> StartupError | None:
    m = _KV_CHECK.search(text)
    return StartupError(kind="kv_cache_check", line=_line(text, m)) if m else None


def _nccl(text: str) -> StartupError | None:
    m = _NCCL.search(text)
    return StartupError(kind="nccl_error", line=_line(text, m)) if m else None


# docfix11 (retrospective, batches 7-9's "no edit" entries): a thread whose excerpt leaves the engine's own line out but
# whose words say it ran out of memory ("OOM", "out of memory"); last of all finders, so any engine line wins. The line
# is marked as the reporter's words, never the engine's; the phase only where the words name it: the CUDA-graph capture,
# or the KV pool's sizing (SGLang's "Not enough memory" check, vLLM's KV-cache check: the engine's own kinds for them).
REPORTED = "reported, not the engine's line: "
_REPORTED_OOM = re.compile(r"\bOOM(?:s|ed)?\b|\b[Oo]ut[ -]of[ -]memory\b|\bOut [Oo]f [Mm]emory\b")
_REPORTED_GRAPH = re.compile(r"(?i)graph capture|capture cuda graph|capturing cuda graph")
# docfix12 (retrospective, batch 10's sf182): vLLM's KV check told in words ("the available KV cache memory is
# insufficient to handle a single request") is the KV shortfall, whose remedy is more memory for the cache, never less
_REPORTED_KV = re.compile(r"(?i)\bKV[- ](?:pool|cache)\b[^\n]{0,30}?\b(?:allocation|budget|sizing|insufficient|not enough)")
_KV_KIND = {"sglang": "sglang_not_enough_memory", "vllm": "kv_cache_check"}


# an engine's own warning that names a risk ("... to avoid OOM", "may cause OOM") is no failure: a line with a log level,
# or a hedge before the word, is not read as the reporter's
_LOG_LEVEL = re.compile(r"\b(?:INFO|WARNING|WARN|DEBUG)\b|^\d+\.\d+\.\d+\.\d+ [IWD] ")
_HEDGE = re.compile(r"(?i)\b(?:avoid|prevent|risk|may|might|could|can|would|cause|causes|potential)\W+(?:\w+\W+){0,2}$")


def _logged_phase(text: str) -> str:
    """docfix17 (sf270, sf277): words that say "OOM" beside the engine's own lines take the phase those lines show, as
    :func:`_oom` reads it: V0's profile (llm_engine._initialize_kv_caches -> determine_num_available_blocks ->
    profile_run) or V1's (determine_available_memory -> profile_run -> _dummy_run) after the weights loaded."""
    if _GRAPH_PHASE.search(text) or (_KV_SIZED.search(text) and not _EAGER.search(text)):
        return "cuda_oom_graph_capture"
    return "cuda_oom_profile" if (_PROFILE_PHASE.search(text) or _LOADED.search(text)) else "cuda_oom"


def _reported_oom(text: str) -> StartupError | None:
    m = next((m for _, m in zip(range(50), _REPORTED_OOM.finditer(text)) if not _LOG_LEVEL.search(_line(text, m))
              and not _HEDGE.search(text[max(text.rfind("\n", 0, m.start()) + 1, m.start() - 60): m.start()])), None)
    if m is None:
        return None
    kind = "cuda_oom_graph_capture" if _REPORTED_GRAPH.search(_line(text, m)) else _logged_phase(text)
    if kind == "cuda_oom" and _REPORTED_KV.search(text):
        kind = _KV_KIND.get(detect_engine(text) or "", kind)
    return StartupError(kind=kind, line=(REPORTED + _line(text, m))[:LINE_CHARS], figures=_kv_fit(text) | llamacpp_phase(text))


# vLLM V1 gpu_worker (0.11+, with CUDA-graph memory profiling): "Replace gpu_memory_utilization config with
# `--kv-cache-memory=N` (X GiB) to fit into requested memory, ... Current kv cache memory in use is Y GiB." (later
# releases spell the flag --kv-cache-memory-bytes): where Y > X the cache overran the requested budget by Y - X
_KV_FIT = re.compile(r"`--kv-cache-memory(?:-bytes)?=(\d{1,15})` \([\d.]+ GiB\) to fit into requested memory"
                     r"[^\n]{0,200}?Current kv cache memory in use is ([\d.]+) GiB")


def _kv_fit(text: str) -> dict[str, float]:
    m = _KV_FIT.search(text)
    return {"kv_fit_bytes": float(m.group(1)), "kv_in_use_bytes": _gib(m.group(2))} if m else {}

