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
  ``"%s: %10s compute buffer size = %8.2f MiB"``, ``"Device %d: %s, compute capability %d.%d"``, ``"build: %d (%s)"``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

GIB = 2**30
MIB = 2**20

Engine = Literal["vllm", "sglang", "llama.cpp"]
# The figures whose log line is kept in a calibration file (settings such as the model name are not quoted).
FIGURES = {
    "total_gpu_memory_bytes", "gpu_memory_utilization", "weights_bytes", "non_torch_bytes", "activation_bytes", "cuda_graph_bytes",
    "kv_cache_bytes", "kv_cache_tokens", "kv_blocks", "max_concurrency",
}
LINE_CHARS = 300


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
    command: str | None = Field(default=None, description="The engine's command line or argument summary, as printed.")
    lines: dict[str, str] = Field(default_factory=dict, description="The log line each figure was read from.")


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _first(pattern: str, text: str, flags: int = 0) -> re.Match | None:
    return re.search(pattern, text, flags)


def _line(text: str, m: re.Match) -> str:
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    return text[start : end if end >= 0 else len(text)].strip()


def detect_engine(text: str) -> Engine | None:
    if re.search(r"KV Cache is allocated\. #tokens|sglang\.launch_server|ServerArgs\(|Load weight end\.", text):
        return "sglang"
    if re.search(r"llama_kv_cache|llama_model_loader|load_tensors:|llama_context:|llama_new_context_with_model", text):
        return "llama.cpp"
    if re.search(r"vLLM|vllm|GPU blocks|GPU KV cache size|Maximum concurrency for", text):
        return "vllm"
    return None


def parse_startup_log(text: str, engine: str | None = None, *, require_kv: bool = True) -> StartupLog:
    """Parse a start-up log of vLLM (V0 or V1 formats), SGLang or llama.cpp; ``engine`` overrides detection.

    ``require_kv=False`` accepts a log that stopped before the engine printed its KV-cache size (a failed start-up,
    read by ``infer-advisor doctor``)."""
    from ..errors import RequestError

    found = engine or detect_engine(text)
    if found not in ("vllm", "sglang", "llama.cpp"):
        raise RequestError(
            "This does not look like a vLLM, SGLang or llama.cpp start-up log (none of their memory lines were found); "
            "pass --engine if it is one of them."
        )
    log = {"vllm": _vllm, "sglang": _sglang, "llama.cpp": _llamacpp}[found](text)
    if require_kv and log.kv_cache_tokens is None and log.kv_cache_bytes is None:
        raise RequestError(
            f"No KV-cache size in this {found} log (e.g. 'GPU KV cache size: N tokens', '# GPU blocks: N', "
            "'KV Cache is allocated. #tokens: N', 'llama_kv_cache: size = ...'); pass the whole start-up log."
        )
    return log


class _Reader:
    """Fills a StartupLog from regular expressions, keeping the line each figure came from."""

    def __init__(self, text: str, engine: Engine):
        self.text, self.log = text, StartupLog(engine=engine)

    def take(self, key: str, pattern: str, convert, group: int = 1, flags: int = 0, skip_lines: str | None = None):
        """Set ``key`` from the first match of ``pattern`` (on a line not matching ``skip_lines``), unless already set."""
        if getattr(self.log, key) is not None:
            return None
        for m in re.finditer(pattern, self.text, flags):
            line = _line(self.text, m)
            if skip_lines and re.search(skip_lines, line):
                continue
            setattr(self.log, key, convert(m.group(group)))
            if key in FIGURES:
                self.log.lines[key] = line[:LINE_CHARS]
            return m
        return None


def _gib(s: str) -> int:
    return int(round(_num(s) * GIB))


def _vllm(text: str) -> StartupLog:
    r = _Reader(text, "vllm")
    log = r.log
    r.take("engine_version", r"vLLM API server version ([0-9][\w.+-]*)", str)
    r.take("engine_version", r"Initializing an? (?:V[01] )?LLM engine \(v([0-9][\w.+-]*)\)", str)
    r.take("engine_version", r"█\s+version\s+([0-9][\w.+-]*)", str)
    if re.search(r"Initializing a V0 LLM engine", text):
        log.generation = "V0"
    elif re.search(r"Initializing a V1 LLM engine|GPU KV cache size:|Available KV cache memory:|EngineCore", text):
        log.generation = "V1"
    elif re.search(r"# (?:GPU|CUDA|cuda) blocks:|Loading model weights took|Initializing an LLM engine", text):
        log.generation = "V0"
    r.take("model", r"(?:Initializing an? (?:V[01] )?LLM engine[^\n]*?with config: )model=['\"]([^'\"]+)['\"]", str)
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
    r.take("total_gpu_memory_bytes", r"Free memory on device \([\d.]+/([\d.]+) GiB\)", _gib)
    r.take("total_gpu_memory_bytes", r"worker init memory snapshot:.*?total_memory=([\d.]+)GiB", _gib)
    r.take("weights_bytes", r"model weights take\s*([\d.]+)\s*GiB", _gib)
    r.take("weights_bytes", r"Loading model weights took ([\d.]+) GB", _gib)
    r.take("weights_bytes", r"Model loading took ([\d.]+) GiB", _gib)
    r.take("non_torch_bytes", r"non_torch_memory(?: takes)?[\s=]+([\d.]+)\s*GiB", _gib, skip_lines=r"memory snapshot")
    r.take("activation_bytes", r"PyTorch activation peak memory(?: takes)?\s+([\d.]+)\s*GiB", _gib)
    r.take("activation_bytes", r"([\d.]+) GiB for peak activation", _gib)
    m = re.search(r"peak_torch_memory=([\d.]+)GiB", text)  # 0.6.4-0.6.5: the torch peak includes the weights
    if m and log.activation_bytes is None and log.weights_bytes is not None:
        log.activation_bytes = max(_gib(m.group(1)) - log.weights_bytes, 0)
        log.lines["activation_bytes"] = _line(text, m)[:LINE_CHARS]
    r.take("kv_cache_bytes", r"the rest of the memory reserved for KV Cache is ([\d.]+)\s*GiB", _gib)
    r.take("kv_cache_bytes", r"kv_cache_size=([\d.]+)GiB", _gib)
    r.take("kv_cache_bytes", r"available_kv_cache_memory\s+([\d.]+)\s*GiB", _gib)
    r.take("kv_cache_bytes", r"Available KV cache memory: ([\d.]+) GiB", _gib)
    r.take("kv_cache_tokens", r"GPU KV cache size: ([\d,]+) tokens", lambda s: int(_num(s)))
    r.take("kv_blocks", r"# (?:GPU|CUDA|cuda) blocks: (\d+)", int)
    r.take("max_concurrency", r"Maximum concurrency for [\d,]+ tokens per request: ([\d.]+)x", float)
    r.take("cuda_graph_bytes", r"CUDA graph pool memory: ([\d.]+) GiB \(actual\)", _gib)
    r.take("cuda_graph_bytes", r"Graph capturing finished in \d+ secs?, took ([\d.]+) GiB", _gib)
    r.take("cuda_graph_bytes", r"([\d.]+) GiB for CUDAGraph memory", _gib)
    r.take("max_num_batched_tokens", r"max_num_batched_tokens[=\s:']+(\d+)", int)
    r.take("max_num_seqs", r"max_num_seqs[=\s:']+(\d+)", int)
    r.take("max_num_seqs", r"Defaulting max_num_seqs to (\d+)", int)
    r.take("command", r"non-default args: (\{.*\})", str)
    r.take("command", r"args: (Namespace\(.*\))", str)
    r.take("gpu_name", r"GPU 0: ([^\n]+)", lambda s: s.strip())
    if log.kv_cache_tokens is None and log.kv_blocks is not None:
        block = re.search(r"block_size[=:'\s]+(\d+)", text)
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
    r.take("gpu_memory_utilization", r"mem_fraction_static=([\d.]+)", float)
    r.take("dtype", r"Load weight end\..*?dtype=torch\.(\w+)", str)
    r.take("weights_bytes", r"Load weight end\..*?mem usage=([\d.]+) GB", _gib)
    m = re.search(r"KV Cache is allocated\. #tokens: (\d+), K size: ([\d.]+) GB, V size: ([\d.]+) GB", text) or re.search(
        r"KV Cache is allocated\. #tokens: (\d+), KV size: ([\d.]+) GB()", text
    )
    if m:
        log.kv_cache_tokens = int(m.group(1))
        log.kv_cache_bytes = int(round((float(m.group(2)) + float(m.group(3) or 0)) * GIB))
        log.lines["kv_cache_tokens"] = log.lines["kv_cache_bytes"] = _line(text, m)[:LINE_CHARS]
    r.take("kv_cache_tokens", r"max_total_num_tokens=(\d+)", int)
    r.take("cuda_graph_bytes", r"Capture cuda graph end\..*?mem usage=([\d.]+) GB", _gib)
    r.take("max_num_seqs", r"max_running_requests=(\d+)", int)
    r.take("max_num_batched_tokens", r"chunked_prefill_size=(\d+)", int)
    r.take("command", r"server_args=(ServerArgs\(.*\))", str)
    return log


def _llamacpp(text: str) -> StartupLog:
    r = _Reader(text, "llama.cpp")
    log = r.log
    r.take("engine_version", r"build: (\d+) \(", lambda s: f"b{s}")
    r.take("gpu_name", r"Device \d+: ([^,\n]+), compute capability", lambda s: s.strip())
    r.take("model", r"general\.name\s+str\s+=\s+([^\n]+)", lambda s: s.strip())
    weights = [float(m.group(1)) for m in re.finditer(r"CUDA\d+ model buffer size =\s+([\d.]+) MiB", text)]
    if weights:
        log.weights_bytes = int(round(sum(weights) * MIB))
        log.lines["weights_bytes"] = _line(text, re.search(r"CUDA\d+ model buffer size", text))[:LINE_CHARS]
    m = re.search(
        r"llama_kv_cache\w*: size =\s+([\d.]+) MiB \(\s*(\d+) cells,\s+(\d+) layers,\s+(\d+)(?:/\d+)? seqs\), K \((\w+)\)", text
    )
    if m:
        log.kv_cache_bytes, log.kv_cache_tokens, log.max_num_seqs = int(round(float(m.group(1)) * MIB)), int(m.group(2)), int(m.group(4))
        log.kv_cache_dtype = m.group(5)
        log.lines["kv_cache_bytes"] = log.lines["kv_cache_tokens"] = _line(text, m)[:LINE_CHARS]
    m = re.search(r"KV self size\s+=\s+([\d.]+) MiB, K \((\w+)\)", text)  # llama_new_context_with_model (older builds)
    if m and log.kv_cache_bytes is None:
        log.kv_cache_bytes, log.kv_cache_dtype = int(round(float(m.group(1)) * MIB)), m.group(2)
        log.lines["kv_cache_bytes"] = _line(text, m)[:LINE_CHARS]
    compute = [float(m.group(1)) for m in re.finditer(r"CUDA\d+ compute buffer size =\s+([\d.]+) MiB", text)]
    if compute:
        log.activation_bytes = int(round(max(compute) * MIB))
        log.lines["activation_bytes"] = _line(text, re.search(r"CUDA\d+ compute buffer size", text))[:LINE_CHARS]
    r.take("max_model_len", r"n_ctx_per_seq\s+=\s+(\d+)", int)
    r.take("max_model_len", r"n_ctx\s+=\s+(\d+)", int)
    if log.kv_cache_tokens is None:
        r.take("kv_cache_tokens", r"n_ctx\s+=\s+(\d+)", int)
    r.take("max_num_seqs", r"n_seq_max\s+=\s+(\d+)", int)
    r.take("max_num_batched_tokens", r"n_batch\s+=\s+(\d+)", int)
    return log
