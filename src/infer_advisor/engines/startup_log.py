"""Read an engine's start-up log: the memory figures it printed while sizing its KV cache.

    >>> log = parse_startup_log(Path("vllm.log").read_text())
    >>> log.engine, log.engine_version, log.kv_cache_tokens, log.lines["kv_cache_tokens"]
    ('vllm', '0.19.0', 476016, 'GPU KV cache size: 476,016 tokens')

Each pattern below is the engine's own ``logger.info`` format string, read from its source:

- vLLM V0 (0.2-0.7): ``"# GPU blocks: %d, # CPU blocks: %d"`` (executor / llm_engine), ``"Loading model weights took
  %.4f GB"`` (model_runner; the figure is bytes / 2**30), 0.6.4-0.6.5 ``"Memory profiling results: total_gpu_memory=%.2fGiB
  ... peak_torch_memory=... non_torch_memory=... kv_cache_size=... gpu_memory_utilization=..."``, 0.6.6-0.7
  ``"Memory profiling takes %.2f seconds\\nthe current vLLM instance can use total_gpu_memory (%.2fGiB) x
  gpu_memory_utilization (%.2f) = %.2fGiB\\nmodel weights take %.2fGiB; non_torch_memory takes %.2fGiB; PyTorch
  activation peak memory takes %.2fGiB; the rest of the memory reserved for KV Cache is %.2fGiB."`` (worker.py),
  ``"Maximum concurrency for %s tokens per request: %.2fx"``, and the engine line ``"Initializing an LLM engine (v%s) with
  config: ..."`` (0.7: ``"Initializing a V0 LLM engine (v%s) ..."``; 0.2: no version).
- vLLM V1 (0.8+): ``"Model loading took %.4f GiB and %.6f seconds"`` / ``"Model loading took %s GiB memory and %.6f
  seconds"`` (gpu_model_runner), ``"Available KV cache memory: %.2f GiB"`` (gpu_worker), ``"GPU KV cache size: %s
  tokens"`` and ``"Maximum concurrency for %s tokens per request: %.2fx"`` (kv_cache_utils), ``"Graph capturing
  finished in %.0f secs, took %.2f GiB"``, 0.11+ ``"Free memory on device (%s/%s GiB) on startup. Desired GPU memory
  utilization is (%s, %s GiB). Actual usage is %s GiB for consumed memory (weights + non-torch), %s GiB for peak
  activation, and %s GiB for CUDAGraph memory. ..."`` and the debug ``"worker init memory snapshot: ...
  total_memory=%sGiB"``; the engine line ``"Initializing a V1 LLM engine (v%s) with config: %s"``.
- SGLang (srt/model_executor/model_runner.py, mem_cache/memory_pool.py, managers/scheduler.py): ``"Load weight end.
  elapsed=... s, type=..., dtype=..., avail mem=%.2f GB, mem usage=%.2f GB."``, ``"KV Cache is allocated. #tokens: %d,
  K size: %.2f GB, V size: %.2f GB"``, ``"Capture cuda graph end. Time elapsed: %.2f s. mem usage=%.2f GB. avail
  mem=%.2f GB."``, ``"max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d,
  max_running_requests=%d, context_len=%d, available_gpu_mem=%.2f GB"`` (GB there is bytes / 2**30).
- llama.cpp (src/llama-kv-cache.cpp, llama-context.cpp, llama-model.cpp): ``"%s: size = %7.2f MiB (%6u cells, %3d
  layers, %2u/%u seqs), K (%s): %7.2f MiB, V (%s): %7.2f MiB"``, ``"%s: %10s model buffer size = %8.2f MiB"``,
  ``"%s: %10s compute buffer size = %8.2f MiB"``, ``"Device %d: %s, compute capability %d.%d"``, ``"build: %d (%s)"``,
  ``"%s: using device %s (%s) - %zu MiB free"`` (llama.cpp llama_model_load_from_file_impl, b4400+; later builds add the PCI
  id in a second pair of brackets) and ``"%s: %10s KV buffer size = %8.2f MiB"`` (llama_kv_cache, the buffer per device).
- SGLang ``"Load weight begin. avail mem=%.2f GB"`` (the free memory before loading: ``pre_model_load_memory``, the base
  of ``mem_fraction_static``) and ``"Load weight end. ... avail mem=%.2f GB"`` (``available_gpu_memory`` after it).
- TGI (text-generation-inference 1.0-3.3, server/.../flash_causal_lm.py warmup and backends/v3/src/lib.rs, read at
  v3.3.7): ``"KV-cache blocks: {num_blocks}, size: {BLOCK_SIZE}"``, ``"Setting max batch total tokens to {n}"``, and the
  launcher's ``Args { ... }`` (max_total_tokens, max_batch_prefill_tokens, cuda_memory_fraction, num_shard, quantize).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel, Field

from .llamacpp_fit_dry_run import KV_LINE, kv_line_figures, read_past_fit_dry_run

GIB = 2**30
MIB = 2**20

Engine = Literal["vllm", "sglang", "llama.cpp", "tgi"]
# The figures whose log line is kept in a calibration file (settings such as the model name are not quoted).
FIGURES = {
    "total_gpu_memory_bytes", "gpu_memory_utilization", "weights_bytes", "non_torch_bytes", "activation_bytes", "cuda_graph_bytes",
    "kv_cache_bytes", "kv_cache_tokens", "kv_blocks", "max_concurrency", "free_at_start_bytes", "free_after_load_bytes",
}
LINE_CHARS = 300
# vLLM V1's start check names the device since vllm/v1/worker/utils.py (f"Free memory on device {init_snapshot.device_} ("
# -> "... cuda:1 (19.77/22.05 GiB) on startup"); 0.11's gpu_worker "Free memory on device (", a fork f"device {rank}(": its head
FREE_ON_DEVICE = r"Free memory on device(?: ?[\w:]+)? ?\("
# Figures a single start-up prints one value of: a second, different value means two runs were concatenated.
_ONE_VALUE = {"engine_version", "kv_cache_tokens", "kv_blocks", "gpu_name", "max_model_len"}
# Longest stretch of a line a pattern is tried on: vLLM's "Initializing a V1 LLM engine ... with config:" line, the
# longest one read, is ~3,000 characters. With at most _TRIES_PER_LINE attempts per line, parsing is linear in the
# log's size whatever it holds (the old whole-text searches backtracked: 1.1 MB of "llama_kv_cache" took 169 s).
MAX_LINE_CHARS = 4096
_TRIES_PER_LINE = 16
# Lines holding a pattern's literal that are tried before the pattern is given up: a start-up log names each figure
# within its first few hundred lines; 1 MB of "model=\n" would otherwise cost a Python step per line per pattern.
_CANDIDATE_LINES = 5000
_TGI_SHARD = re.compile(r"\bShard \d{1,3}\b|\bshard=\d{1,3}\b")  # TGI's Rust launcher: "Shard 0 ready", "... shard=0"
# The literal a pattern starts with (escapes undone), used to jump to candidate lines with str.find.
_LEAD = re.compile(r"(?:[^\\\[\](){}.*+?^$|]|\\[.()\[\]{}#=' /:-])+")


class StartupLog(BaseModel):
    """What one start-up log printed (per GPU where the engine prints per-GPU figures); None: not printed."""

    engine: Engine
    engine_version: str | None = None
    generation: Literal["V0", "V1"] | None = Field(default=None, description="vLLM engine generation the log's format shows.")
    model: str | None = None
    gpu_name: str | None = None
    tp: int | None = None
    pp: int | None = None
    max_model_len: int | None = None
    dtype: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    total_gpu_memory_bytes: int | None = None
    weights_bytes: int | None = None
    non_torch_bytes: int | None = None
    activation_bytes: int | None = None
    cuda_graph_bytes: int | None = None
    kv_cache_bytes: int | None = None
    kv_cache_tokens: int | None = None
    kv_blocks: int | None = None
    max_concurrency: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    free_at_start_bytes: int | None = Field(default=None, description="Free device memory before the weights loaded (SGLang, llama.cpp).")
    free_after_load_bytes: int | None = Field(default=None, description="Free device memory after the weights loaded (SGLang).")
    gpu_layers: int | None = Field(default=None, description="Layers offloaded to the GPU (llama.cpp 'offloaded N/M layers to GPU').")
    total_layers: int | None = Field(default=None, description="Layers of the model (llama.cpp 'offloaded N/M layers to GPU').")
    command: str | None = Field(default=None, description="The engine's command line or argument summary, as printed.")
    speculative_config: str | None = Field(default=None, description="vLLM's speculative config as the log's args print it (dict or JSON text).")
    prefix_caching: bool | None = Field(default=None, description="Prefix caching as the log's args set it; None: the engine's default.")
    language_model_only: bool | None = Field(default=None, description="vLLM's --language-model-only: a multimodal checkpoint's encoder not loaded.")
    enforce_eager: bool | None = Field(default=None, description="vLLM's enforce_eager as the log prints it (no CUDA graphs); None: not printed.")
    sampler: Literal["flashinfer", "pytorch"] | None = Field(
        default=None, description="vLLM's top-k/top-p sampler as its log names it (v1/sample/ops/topk_topp_sampler.py); None: not printed.")
    linear_kernel: Literal["machete", "marlin"] | None = Field(
        default=None, description="vLLM's mixed-precision linear kernel as its log names it ('Using MacheteLinearKernel for "
        "AWQMarlinLinearMethod', model_executor/kernels/linear/mixed_precision); None: not printed.")
    lines: dict[str, str] = Field(default_factory=dict, description="The log line each figure was read from.")


def _num(text: str) -> float:
    return float(text.replace(",", ""))


@functools.cache
def _compiled(pattern: str, flags: int, anchor: str | None) -> tuple[re.Pattern, str, bool]:
    """The compiled pattern, the literal to find candidate lines by, and whether the match starts at that literal."""
    rx = re.compile(pattern, flags)
    if anchor is not None:
        return rx, anchor, False
    m = _LEAD.match(pattern.removeprefix("\\b"))
    lead = re.sub(r"\\(.)", r"\1", m.group(0)) if m else ""
    if not lead:
        raise ValueError(f"pattern {pattern!r} needs a leading literal or an anchor")
    return rx, lead.lower() if flags & re.I else lead, True


class _Lines:
    """Pattern searches over a log, one line at a time, linear in the log's size: candidate lines are found with
    ``str.find`` of a literal, each line is cut at MAX_LINE_CHARS and tried at most _TRIES_PER_LINE times."""

    def __init__(self, text: str):
        self.text = text

    @functools.cached_property
    def lower(self) -> str:
        return self.text.lower()

    def matches(self, pattern: str, flags: int = 0, anchor: str | None = None) -> Iterator[tuple[re.Match, str]]:
        """(match, its whole line stripped) for each line that matches, in order."""
        rx, lit, leading = _compiled(pattern, flags, anchor)
        text = self.lower if flags & re.I else self.text
        pos, budget = text.find(lit), _CANDIDATE_LINES
        while pos >= 0 and budget > 0:
            budget -= 1
            start = text.rfind("\n", 0, pos) + 1
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            line = self.text[start : min(end, start + MAX_LINE_CHARS)]
            m = None
            if leading:
                at, tries = pos - start, 0
                while 0 <= at < len(line) and tries < _TRIES_PER_LINE and m is None:
                    m = rx.match(line, at)
                    at, tries = (text.find(lit, start + at + 1, start + len(line)) - start), tries + 1
            else:
                m = rx.search(line)
            if m is not None:
                yield m, self.text[start:end].strip()
            pos = text.find(lit, end)

    def first(self, pattern: str, flags: int = 0, anchor: str | None = None) -> tuple[re.Match, str] | tuple[None, None]:
        return next(self.matches(pattern, flags, anchor), (None, None))

    def has(self, *literals: str) -> bool:
        return any(lit in self.text for lit in literals)


def detect_engine(text: str) -> Engine | None:
    def has(*literals: str) -> bool:
        return any(lit in text for lit in literals)

    if has("KV Cache is allocated. #tokens", "sglang.launch_server", "ServerArgs(", "Load weight end.", "/sglang/srt/", "sglang serve",
           "--mem-fraction-static", "Capture cuda graph failed", "sglang is using nccl"):  # CudaGraphRunner (sf122); nccl (sf154)
        return "sglang"
    if has("llama_kv_cache", "llama_model_loader", "load_tensors:", "llama_context:", "llama_new_context_with_model", "llama_model_load:",
           "ggml_cuda_init:", "ggml_backend_sycl_"):
        return "llama.cpp"
    if has("text_generation_launcher", "text_generation_router", "text_generation_server", "text-generation-inference",
           "text-generation-launcher", "shard-manager", "Starting shard", "Waiting for shard") or _TGI_SHARD.search(text[:2_000_000]):
        return "tgi"
    if has("vLLM", "vllm", "VLLM_", "(EngineCore pid=", "[gpu_worker.py:", "[gpu_model_runner.py:", "GPU blocks", "exceeds available Mamba cache blocks", "GPU KV cache size", "Maximum concurrency for", "Loading model weights took", "Model loading took"):
        return "vllm"
    return None


def parse_startup_log(text: str, engine: str | None = None, *, require_kv: bool = True) -> StartupLog:
    """Parse a start-up log of vLLM (V0 or V1 formats), SGLang or llama.cpp; ``engine`` overrides detection.

    ``require_kv=False`` accepts a log that stopped before the engine printed its KV-cache size (a failed start-up,
    read by ``infer-advisor doctor``)."""
    from ..errors import RequestError

    found = engine or detect_engine(text)
    if found not in ("vllm", "sglang", "llama.cpp", "tgi"):
        raise RequestError(
            "This does not look like a vLLM, SGLang, TGI or llama.cpp start-up log (none of their memory lines were found); "
            "pass --engine if it is one of them."
        )
    read = {"vllm": _vllm, "sglang": _sglang, "llama.cpp": lambda t: read_past_fit_dry_run(t, _llamacpp), "tgi": _tgi}[found]
    log = read(text)
    if require_kv and log.kv_cache_tokens is None and log.kv_cache_bytes is None:
        raise RequestError(
            f"No KV-cache size in this {found} log (e.g. 'GPU KV cache size: N tokens', '# GPU blocks: N', "
            "'KV Cache is allocated. #tokens: N', 'llama_kv_cache: size = ...'); pass the whole start-up log."
        )
    return log


class _Reader:
    """Fills a StartupLog from regular expressions, keeping the line each figure came from."""

    def __init__(self, text: str, engine: Engine):
        self.text, self.log, self.find = text, StartupLog(engine=engine), _Lines(text)

    def take(self, key: str, pattern: str, convert, group: int = 1, flags: int = 0, skip_lines: str | None = None,
             anchor: str | None = None):
        """Set ``key`` from the first match of ``pattern`` (on a line without ``skip_lines``), unless already set."""
        if getattr(self.log, key) is not None:
            return None
        found = self.find.matches(pattern, flags, anchor)
        for m, line in found:
            if skip_lines and skip_lines in line:
                continue
            try:
                value = convert(m.group(group))
            except ValueError:  # a figure that does not parse ('0.88.' at a sentence's end): not this line
                continue
            setattr(self.log, key, value)
            if key in FIGURES:
                self.log.lines[key] = line[:LINE_CHARS]
            if key in _ONE_VALUE:
                self._refuse_second_value(key, value, line, found, group, convert, skip_lines)
            return m
        return None

    def _refuse_second_value(self, key, value, line, rest, group, convert, skip_lines) -> None:
        """Two different values of a figure that has one per start-up: the log holds two runs (or another GPU's)."""
        from ..errors import RequestError

        for m, other in rest:
            if skip_lines and skip_lines in other:
                continue
            try:
                second = convert(m.group(group))
            except ValueError:
                continue
            if second != value:
                raise RequestError(
                    f"The log gives two different {key} values ({value!r} in '{line[:80]}' and {second!r} in "
                    f"'{other[:80]}'): it holds more than one start-up; pass the log of one run."
                )


def _gib(s: str) -> int:
    return int(round(_num(s) * GIB))


def _vllm(text: str) -> StartupLog:
    r = _Reader(text, "vllm")
    log = r.log
    r.take("engine_version", r"vLLM API server version ([0-9][\w.+-]*)", str)
    r.take("engine_version", r"Initializing an? (?:V[01] )?LLM engine \(v([0-9][\w.+-]*)\)", str)
    r.take("engine_version", r"█\s+version\s+([0-9][\w.+-]*)", str)
    has = r.find.has
    if has("Initializing a V0 LLM engine"):
        log.generation = "V0"
    elif has("Initializing a V1 LLM engine", "GPU KV cache size:", "Available KV cache memory:", "EngineCore"):
        log.generation = "V1"
    elif has("# GPU blocks:", "# CUDA blocks:", "# cuda blocks:", "Loading model weights took", "Initializing an LLM engine"):
        log.generation = "V0"
    r.take("model", r"Initializing an? (?:V[01] )?LLM engine[^\n]*?with config: model=['\"]([^'\"]+)['\"]", str)
    r.take("model", r"'model': '([^']+)'", str)
    r.take("model", r"\bmodel=['\"]([^'\"]+)['\"]", str)
    r.take("model", r"█\s+model\s+(\S+)", str)
    r.take("tp", r"tensor_parallel_size=(\d+)", int)
    r.take("tp", r"'tensor_parallel_size': (\d+)", int)
    r.take("pp", r"pipeline_parallel_size=(\d+)", int)
    r.take("max_model_len", r"max_seq_len=(\d+)", int)
    r.take("max_model_len", r"Using max model len (\d+)", int)
    r.take("max_model_len", r"Maximum concurrency for ([\d,]+) tokens per request", lambda s: int(_num(s)))
    r.take("dtype", r"\bdtype=torch\.(\w+)", str)
    r.take("quantization", r"\bquantization=(\w+)", lambda s: None if s == "None" else s)
    r.take("kv_cache_dtype", r"\bkv_cache_dtype=(\w+)", str)
    r.take("gpu_memory_utilization", r"gpu_memory_utilization[\s=(:']+([01](?:\.\d+)?)", float)
    r.take("gpu_memory_utilization", r"Desired GPU memory utilization is \(([\d.]+),", float)
    r.take("total_gpu_memory_bytes", r"total_gpu_memory[\s=(]+([\d.]+)\s*GiB", _gib)
    r.take("total_gpu_memory_bytes", FREE_ON_DEVICE + r"[\d.]+/([\d.]+) GiB\)", _gib)
    r.take("total_gpu_memory_bytes", r"worker init memory snapshot:.*?total_memory=([\d.]+)GiB", _gib)
    r.take("weights_bytes", r"model weights take\s*([\d.]+)\s*GiB", _gib)
    r.take("weights_bytes", r"Loading model weights took ([\d.]+) GB", _gib)
    r.take("weights_bytes", r"Model loading took ([\d.]+) GiB", _gib)
    r.take("non_torch_bytes", r"non_torch_memory(?: takes)?[\s=]+([\d.]+)\s*GiB", _gib, skip_lines="memory snapshot")
    r.take("activation_bytes", r"PyTorch activation peak memory(?: takes)?\s+([\d.]+)\s*GiB", _gib)
    r.take("activation_bytes", r"([\d.]{1,20}) GiB for peak activation", _gib, anchor=" GiB for peak activation")
    m, line = r.find.first(r"peak_torch_memory=([\d.]+)GiB")  # 0.6.4-0.6.5: the torch peak includes the weights
    if m and log.activation_bytes is None and log.weights_bytes is not None:
        log.activation_bytes = max(_gib(m.group(1)) - log.weights_bytes, 0)
        log.lines["activation_bytes"] = line[:LINE_CHARS]
    r.take("kv_cache_bytes", r"the rest of the memory reserved for KV Cache is ([\d.]+)\s*GiB", _gib)
    r.take("kv_cache_bytes", r"kv_cache_size=([\d.]+)GiB", _gib)
    r.take("kv_cache_bytes", r"available_kv_cache_memory\s+([\d.]+)\s*GiB", _gib)
    r.take("kv_cache_bytes", r"Available KV cache memory: ([\d.]+) GiB", _gib)
    r.take("kv_cache_tokens", r"GPU KV cache size: ([\d,]+) tokens", lambda s: int(_num(s)))
    r.take("kv_blocks", r"# (?:GPU|CUDA|cuda) blocks: (\d+)", int)
    r.take("max_concurrency", r"Maximum concurrency for [\d,]+ tokens per request: ([\d.]+)x", float)
    r.take("cuda_graph_bytes", r"CUDA graph pool memory: ([\d.]+) GiB \(actual\)", _gib)
    r.take("cuda_graph_bytes", r"Graph capturing finished in \d+ secs?, took ([\d.]+) GiB", _gib)
    r.take("cuda_graph_bytes", r"([\d.]{1,20}) GiB for CUDAGraph memory", _gib, anchor=" GiB for CUDAGraph memory")
    r.take("max_num_batched_tokens", r"max_num_batched_tokens[=\s:']+(\d+)", int)
    r.take("max_num_seqs", r"max_num_seqs[=\s:']+(\d+)", int)
    r.take("max_num_seqs", r"Defaulting max_num_seqs to (\d+)", int)
    r.take("command", r"non-default args: (\{.*\})", str)
    r.take("command", r"args: (Namespace\(.*\))", str)
    r.take("speculative_config", r"'speculative_config': (\{[^{}]{1,2000}\})", str)
    r.take("speculative_config", r"--speculative[-_]config[=\s]+'?(\{[^{}]{1,2000}\})", str)
    r.take("prefix_caching", r"'enable_prefix_caching': (True|False)", lambda v: v == "True")
    r.take("prefix_caching", r"--(no-)?enable-prefix-caching\b", lambda v: v != "no-")
    r.take("language_model_only", r"'language_model_only': (True|False)", lambda v: v == "True")
    r.take("language_model_only", r"--language-model-only\b()", lambda v: True)
    # not V0's hint "set 'enforce_eager=True' or use '--enforce-eager'" (quoted): the setting or the command only
    r.take("enforce_eager", r"(?<!')enforce_eager=(True|False)(?!')", lambda v: v == "True", anchor="enforce_eager=")
    r.take("enforce_eager", r"'enforce_eager': (True|False)", lambda v: v == "True")
    r.take("enforce_eager", r"(?<!')--enforce-eager\b(?!')()", lambda v: True, anchor="--enforce-eager")
    r.take("sampler", r"Using FlashInfer for top-p & top-k sampling()", lambda v: "flashinfer")
    r.take("sampler", r"Falling back to the PyTorch-native implementation of top-p & top-k sampling()", lambda v: "pytorch")
    r.take("sampler", r"FlashInfer top-p/top-k sampling is available but disabled()", lambda v: "pytorch")
    r.take("linear_kernel", r"Using (Machete|Marlin)LinearKernel for", str.lower)
    r.take("gpu_name", r"GPU 0: ([^\n]+)", lambda s: s.strip())
    if log.kv_cache_tokens is None and log.kv_blocks is not None:
        block, _ = r.find.first(r"block_size[=:'\s]+(\d+)")
        log.kv_cache_tokens = log.kv_blocks * (int(block.group(1)) if block else 16)
        log.lines["kv_cache_tokens"] = log.lines["kv_blocks"]
    return log


def _sglang(text: str) -> StartupLog:
    r = _Reader(text, "sglang")
    log = r.log
    r.take("engine_version", r"sglang(?: version|==)\s*v?([0-9][\w.+-]*)", str, flags=re.I)
    r.take("model", r"model_path='([^']+)'", str)
    r.take("tp", r"tp_size=(\d+)", int)
    r.take("pp", r"pp_size=(\d+)", int)
    r.take("max_model_len", r"context_len=(\d+)", int)
    r.take("max_model_len", r"context_length=(\d+)", int)
    r.take("gpu_memory_utilization", r"mem_fraction_static=([\d.]+)", float)
    r.take("dtype", r"Load weight end\..*?dtype=torch\.(\w+)", str)
    r.take("weights_bytes", r"Load weight end\..*?mem usage=([\d.]+) GB", _gib)
    r.take("free_at_start_bytes", r"Load weight begin\. avail mem=([\d.]+) GB", _gib)
    r.take("free_after_load_bytes", r"Load weight end\..*?avail mem=([\d.]+) GB", _gib)
    r.take("gpu_memory_utilization", r"--mem-fraction-static[= ](\d*\.?\d+)", float)
    if log.free_at_start_bytes is None and log.free_after_load_bytes is not None and log.weights_bytes is not None:
        # "mem usage" at "Load weight end" is the free memory before loading minus after it (model_runner.load_model)
        log.free_at_start_bytes = log.free_after_load_bytes + log.weights_bytes
        log.lines["free_at_start_bytes"] = log.lines.get("free_after_load_bytes", "")
    m, line = r.find.first(r"KV Cache is allocated\. (?:dtype: [\w.]{1,30}, )?#tokens: (\d+), K size: ([\d.]+) GB, V size: ([\d.]+) GB")
    if m is None:
        m, line = r.find.first(r"KV Cache is allocated\. (?:dtype: [\w.]{1,30}, )?#tokens: (\d+), KV size: ([\d.]+) GB()")
    if m:
        log.kv_cache_tokens = int(m.group(1))
        log.kv_cache_bytes = int(round((float(m.group(2)) + float(m.group(3) or 0)) * GIB))
        log.lines["kv_cache_tokens"] = log.lines["kv_cache_bytes"] = line[:LINE_CHARS]
    r.take("kv_cache_tokens", r"max_total_num_tokens=(\d+)", int)
    r.take("cuda_graph_bytes", r"Capture cuda graph end\..*?mem usage=([\d.]+) GB", _gib)
    r.take("max_num_seqs", r"max_running_requests=(\d+)", int)
    r.take("max_num_batched_tokens", r"chunked_prefill_size=(\d+)", int)
    r.take("command", r"server_args=(ServerArgs\(.*\))", str)
    return log


def _llamacpp(text: str) -> StartupLog:  # read through read_past_fit_dry_run (the fitting dry run's lines are not the run's)
    log = (r := _Reader(text, "llama.cpp")).log
    r.take("engine_version", r"build: (\d+) \(", lambda s: f"b{s}")
    r.take("gpu_name", r"Device \d+: ([^,\n]+), compute capability", lambda s: s.strip())
    m, line = r.find.first(r"using device CUDA0 \(([^()\n]+)\)(?: \([^()\n]*\))? - (\d+) MiB free", anchor="using device CUDA0")
    if m:
        log.gpu_name = log.gpu_name or m.group(1).strip()
        log.free_at_start_bytes = int(m.group(2)) * MIB
        log.lines["free_at_start_bytes"] = line[:LINE_CHARS]
    r.take("model", r"general\.name\s+str\s+=\s+([^\n]+)", lambda s: s.strip())
    # "CUDA0 model buffer size" (load_tensors, 2024-10+) or the older "CUDA0 buffer size" (llm_load_tensors)
    found = [(m, line) for m, line in r.find.matches(r"CUDA\d+ (?:model )?buffer size =\s+([\d.]+) MiB", anchor=" buffer size =")
             if float(m.group(1)) > 0]  # 0.00 MiB: the dry run of common_fit_params (no_alloc), not the weights
    if found:
        log.weights_bytes = int(round(sum(float(m.group(1)) for m, _ in found) * MIB))
        log.lines["weights_bytes"] = found[0][1][:LINE_CHARS]
    m, line = r.find.first(KV_LINE)
    if m:
        log.kv_cache_bytes, log.kv_cache_tokens, log.max_num_seqs, log.kv_cache_dtype = kv_line_figures(m, MIB, r.find)
        log.lines["kv_cache_bytes"] = log.lines["kv_cache_tokens"] = line[:LINE_CHARS]
    m, line = r.find.first(r"KV self size\s+=\s+([\d.]+) MiB, K \((\w+)\)")  # llama_new_context_with_model (older builds)
    if m and log.kv_cache_bytes is None:
        log.kv_cache_bytes, log.kv_cache_dtype = int(round(float(m.group(1)) * MIB)), m.group(2)
        log.lines["kv_cache_bytes"] = line[:LINE_CHARS]
    found = list(r.find.matches(r"CUDA\d+ compute buffer size =\s+([\d.]+) MiB", anchor=" compute buffer size ="))
    if found:
        log.activation_bytes = int(round(max(float(m.group(1)) for m, _ in found) * MIB))
        log.lines["activation_bytes"] = found[0][1][:LINE_CHARS]
    found = list(r.find.matches(r"CUDA0 KV buffer size =\s+([\d.]+) MiB", anchor="CUDA0 KV buffer size"))
    if found and (log.kv_cache_bytes is None or "KV self size" in log.lines.get("kv_cache_bytes", "")):  # device 0's share wins
        log.kv_cache_bytes = int(round(float(found[0][0].group(1)) * MIB))
        log.lines["kv_cache_bytes"] = found[0][1][:LINE_CHARS]
    r.take("max_model_len", r"n_ctx_per_seq\s+=\s+(\d+)", int)
    r.take("max_model_len", r"n_ctx\s+=\s+(\d+)", int)
    if log.kv_cache_tokens is None:
        r.take("kv_cache_tokens", r"n_ctx\s+=\s+(\d+)", int)
    r.take("max_num_seqs", r"n_seq_max\s+=\s+(\d+)", int)
    m = r.take("gpu_layers", r"offloaded (\d+)/(\d+) layers to GPU", int)
    if m:
        log.total_layers = int(m.group(2))
    r.take("max_num_batched_tokens", r"n_batch\s+=\s+(\d+)", int)
    return log


def _tgi(text: str) -> StartupLog:
    r = _Reader(text, "tgi")
    log = r.log

    def some(name: str, convert, key: str) -> None:  # the launcher's Args: `name: Some(4096)` or `name: 4096`
        r.take(key, rf"\b{name}: (?:Some\()?\"?([\w.:/-]+?)\"?\)?[,}}]", convert)

    some("model_id", str, "model")
    some("num_shard", int, "tp")
    some("max_total_tokens", int, "max_model_len")
    some("max_batch_prefill_tokens", int, "max_num_batched_tokens")
    some("cuda_memory_fraction", float, "gpu_memory_utilization")
    some("quantize", lambda s: None if s == "None" else s.lower(), "quantization")
    some("dtype", lambda s: None if s == "None" else s.lower(), "dtype")
    some("max_concurrent_requests", int, "max_num_seqs")
    r.take("engine_version", r"text-generation-inference:([0-9][\w.+-]*)", str)
    m = r.take("kv_blocks", r"KV-cache blocks: (\d+), size: (\d+)", int)
    if m:
        log.kv_cache_tokens = int(m.group(1)) * int(m.group(2))
        log.lines["kv_cache_tokens"] = log.lines["kv_blocks"]
    r.take("kv_cache_tokens", r"Setting max batch total tokens to (\d+)", int)
    return log
