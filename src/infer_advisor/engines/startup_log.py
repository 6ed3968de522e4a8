"""Read an engine's start-up log: the memory figures it printed while sizing its KV cache.

    >>> text = ("INFO 05-01 12:00:01 [api_server.py:1043] vLLM API server version 0.19.0\\n"
    ...         "INFO 05-01 12:00:30 [kv_cache_utils.py:634] GPU KV cache size: 476,016 tokens")
    >>> log = parse_startup_log(text)
    >>> log.engine, log.engine_version, log.kv_cache_tokens, log.lines["kv_cache_tokens"]
    ('vllm', '0.19.0', 476016, 'INFO ... GPU KV cache size: 476,016 tokens')

Each pattern below is the engine's own ``logger.info`` format string, read from its source:

The patterns are each engine's own ``logger.info`` format strings, read from its source, listed beside its reader:
``startup_log_vllm`` (vLLM V0 and V1), ``startup_log_other_engines`` (SGLang, llama.cpp, TGI); the record is
``startup_log_record.StartupLog`` and the line searches ``log_search``.
"""

from __future__ import annotations

import re

from .llamacpp_fit_dry_run import read_past_fit_dry_run
from .startup_log_other_engines import read_llamacpp_log, read_sglang_log, read_tgi_log
from .startup_log_record import FIGURES, GIB, LINE_CHARS, MIB, Engine, StartupLog
from .startup_log_vllm import FREE_ON_DEVICE, read_vllm_log

__all__ = ["FIGURES", "FREE_ON_DEVICE", "GIB", "LINE_CHARS", "MIB", "Engine", "StartupLog", "detect_engine", "parse_startup_log"]

# vLLM V1's process prefixes (docfix14, sf209/sf214/sf215): "(EngineCore_DP0 pid=7291)", "(Worker_TP0 pid=6528)", "(VllmWorker rank=0 pid=..)"
_VLLM_V1_PREFIX = re.compile(r"\((?:EngineCore(?:_DP\d+)?|Worker(?:_[TDP]P\d+)*|VllmWorker(?: rank=\d+)?|APIServer) pid=\d+\)")
# names that say which engine a pasted text came from when none of its memory lines is there (docfix14: batch 11's
# sf204 ollama's runner, sf217 llama-box, sf212 llama-cpp-python, sf222 the lmsysorg/sglang image); after every log line
_PRODUCT_NAMES = (("llama.cpp", ("llama runner process", "ollama run ", "ollama serve", "ollama/ollama", "llama-box", "llama_cpp",
                                 "llama-cpp-python", "llama-server", "llama-cli",
                                 # docfix21 (sf337): ggml's CUDA/HIP backend source path, printed by its CUDA_CHECK ("current device: N,
                                 # in function F at .../ggml-cuda/common.cuh"), and ollama's systemd journal prefix "ollama[PID]:"
                                 "/ggml-cuda/", "ggml-cuda.cu:", " ollama[")), ("sglang", ("lmsysorg/sglang", "sglang.launch_server")))
_TGI_SHARD = re.compile(r"\bShard \d{1,3}\b|\bshard=\d{1,3}\b")  # TGI's Rust launcher: "Shard 0 ready", "... shard=0"
# docfix17 (retrospective, batch 14's sf275/sf287): each engine's own log-line format decides over words in the text.
# vLLM's logger (vllm/logger.py _FORMAT "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s", datefmt
# "%m-%d %H:%M:%S"; V0 releases without the brackets) and V0's worker processes "(VllmWorkerProcess pid=N)";
# SGLang's scheduler processes (srt/utils.py configure_logger: "[%(asctime)s{prefix}] %(message)s", prefix " TP{rank}")
_ENGINE_LINES = (("vllm", re.compile(r"\b(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?\w+\.py:\d+\]"
                                     r"|\(VllmWorker(?:Process)?\b")),
                 ("sglang", re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [DPE]P\d+)* TP\d+(?: [DPE]P\d+)*\]")))
# an engine's own identifiers in a pasted call or message, where no line of any engine is there: SGLang's ServerArgs
# field and ModelRunner attribute, vLLM's EngineArgs keyword (SGLang and TGI spell the share mem_fraction_static and
# cuda_memory_fraction)
_IDENTIFIERS = (("sglang", re.compile(r"\bmem_fraction_static\b|\bmax_total_num_tokens\b")),
                ("vllm", re.compile(r"\bgpu_memory_utilization\s*=")))


def detect_engine(text: str) -> Engine | None:
    def has(*literals: str) -> bool:
        return any(lit in text for lit in literals)

    by_lines = {engine for engine, pattern in _ENGINE_LINES if pattern.search(text[:2_000_000])}
    if len(by_lines) == 1 and not _other_engine_lines(text):
        return by_lines.pop()
    if has("KV Cache is allocated. #tokens", "sglang.launch_server", "ServerArgs(", "Load weight end.", "/sglang/srt/", "sglang serve",
           "--mem-fraction-static", "Capture cuda graph failed", "sglang is using nccl"):  # CudaGraphRunner (sf122); nccl (sf154)
        return "sglang"
    if has("llama_kv_cache", "llama_model_loader", "load_tensors:", "llama_context:", "llama_new_context_with_model", "llama_model_load:",
           "ggml_cuda_init:", "ggml_backend_sycl_", "llm_load_print_meta:", "llm_load_tensors:", "source=memory.go",
           "source=sched.go", 'msg="offload to', 'msg="system memory"',  # docfix16: ollama's own lines (llm/memory.go, server)
           "ggml_backend_", "common_params_fit", "common_fit_params"):  # docfix23 (sf347): ggml's allocator, common/ --fit
        return "llama.cpp"
    if has("text_generation_launcher", "text_generation_router", "text_generation_server", "text-generation-inference",
           "text-generation-launcher", "shard-manager", "Starting shard", "Waiting for shard") or _TGI_SHARD.search(text[:2_000_000]):
        return "tgi"
    if has("vLLM", "vllm", "VLLM_", "(EngineCore pid=", "[gpu_worker.py:", "[gpu_model_runner.py:", "GPU blocks", "exceeds available Mamba cache blocks", "GPU KV cache size", "Maximum concurrency for", "Loading model weights took", "Model loading took"):
        return "vllm"
    if _VLLM_V1_PREFIX.search(text[:2_000_000]):
        return "vllm"
    for engine, names in _PRODUCT_NAMES:
        if has(*names):
            return engine
    found = {engine for engine, pattern in _IDENTIFIERS if pattern.search(text[:2_000_000])}
    return found.pop() if len(found) == 1 else None


def _other_engine_lines(text: str) -> bool:
    """llama.cpp's or TGI's own lines, which no vLLM or SGLang log prints (a wrapper around them may print both)."""
    return any(lit in text for lit in ("llama_model_loader", "llama_new_context_with_model", "text_generation_launcher", "source=server.go"))


# docfix16 (sf264): a commented-out flag of a pasted command or YAML list ('# "--quantization=fp8",', '# --enforce-eager') is
# not set; a line whose '#' opens a log figure (V0's "# GPU blocks: N") is not a flag and stays
COMMENTED_FLAG = re.compile(r"^[ \t]{0,40}#[ \t]{0,8}[\"']?--[^\n]{0,400}$", re.M)


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
    read = {"vllm": read_vllm_log, "sglang": read_sglang_log, "llama.cpp": lambda t: read_past_fit_dry_run(t, read_llamacpp_log),
            "tgi": read_tgi_log}[found]
    log = read(COMMENTED_FLAG.sub("", text))
    if require_kv and log.kv_cache_tokens is None and log.kv_cache_bytes is None:
        raise RequestError(
            f"No KV-cache size in this {found} log (e.g. 'GPU KV cache size: N tokens', '# GPU blocks: N', "
            "'KV Cache is allocated. #tokens: N', 'llama_kv_cache: size = ...'); pass the whole start-up log."
        )
    return log
