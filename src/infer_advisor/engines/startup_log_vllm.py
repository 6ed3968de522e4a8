"""vLLM's start-up log lines, read into a ``StartupLog``. Each pattern is the engine's own ``logger.info`` format
string, read from its source:

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
"""

from __future__ import annotations

import re

from .log_search import LogReader, gib, num
from .startup_log_record import LINE_CHARS, StartupLog

# vLLM V1's start check names the device since vllm/v1/worker/utils.py (f"Free memory on device {init_snapshot.device_} ("
# -> "... cuda:1 (19.77/22.05 GiB) on startup"); 0.11's gpu_worker "Free memory on device (", a fork f"device {rank}(": its head
FREE_ON_DEVICE = r"Free memory on device(?: ?[\w:]+)? ?\("


def read_vllm_log(text: str) -> StartupLog:
    r = LogReader(text, "vllm")
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
    r.take("max_model_len", r"Maximum concurrency for ([\d,]+) tokens per request", lambda s: int(num(s)))
    r.take("dtype", r"\bdtype=torch\.(\w+)", str)
    r.take("quantization", r"\bquantization=[\"']?(\w+)", lambda s: None if s == "None" else s)  # docfix21: quoted (sf305)
    r.take("kv_cache_dtype", r"\bkv_cache_dtype=(\w+)", str)
    r.take("gpu_memory_utilization", r"gpu_memory_utilization[\s=(:']+([01](?:\.\d+)?)", float)
    r.take("gpu_memory_utilization", r"Desired GPU memory utilization is \(([\d.]+),", float)
    r.take("total_gpu_memory_bytes", r"total_gpu_memory[\s=(]+([\d.]+)\s*GiB", gib)
    r.take("total_gpu_memory_bytes", FREE_ON_DEVICE + r"[\d.]+/([\d.]+) ?GiB\)", gib)
    r.take("total_gpu_memory_bytes", r"worker init memory snapshot:.*?total_memory=([\d.]+)GiB", gib)
    r.take("weights_bytes", r"model weights take\s*([\d.]+)\s*GiB", gib)
    r.take("weights_bytes", r"Loading model weights took ([\d.]+) GB", gib)
    r.take("weights_bytes", r"Model loading took ([\d.]+) GiB", gib)
    r.take("non_torch_bytes", r"non_torch_memory(?: takes)?[\s=]+([\d.]+)\s*GiB", gib, skip_lines="memory snapshot")
    r.take("activation_bytes", r"PyTorch activation peak memory(?: takes)?\s+([\d.]+)\s*GiB", gib)
    r.take("activation_bytes", r"([\d.]{1,20}) GiB for peak activation", gib, anchor=" GiB for peak activation")
    m, line = r.find.first(r"peak_torch_memory=([\d.]+)GiB")  # 0.6.4-0.6.5: the torch peak includes the weights
    if m and log.activation_bytes is None and log.weights_bytes is not None:
        log.activation_bytes = max(gib(m.group(1)) - log.weights_bytes, 0)
        log.lines["activation_bytes"] = line[:LINE_CHARS]
    r.take("kv_cache_bytes", r"the rest of the memory reserved for KV Cache is ([\d.]+)\s*GiB", gib)
    r.take("kv_cache_bytes", r"kv_cache_size=([\d.]+)GiB", gib)
    r.take("kv_cache_bytes", r"available_kv_cache_memory\s+([\d.]+)\s*GiB", gib)
    r.take("kv_cache_bytes", r"Available KV cache memory: ([\d.]+) GiB", gib)
    r.take("kv_cache_tokens", r"GPU KV cache size: ([\d,]+) tokens", lambda s: int(num(s)))
    r.take("kv_blocks", r"# (?:GPU|CUDA|cuda) blocks: (\d+)", int)
    r.take("max_concurrency", r"Maximum concurrency for [\d,]+ tokens per request: ([\d.]+)x", float)
    r.take("cuda_graph_bytes", r"CUDA graph pool memory: ([\d.]+) GiB \(actual\)", gib)
    r.take("cuda_graph_bytes", r"Graph capturing finished in \d+ secs?, took ([\d.]+) GiB", gib)
    r.take("cuda_graph_bytes", r"([\d.]{1,20}) GiB for CUDAGraph memory", gib, anchor=" GiB for CUDAGraph memory")
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
    # not V0's hint "set 'enforce_eager=True' or use '--enforce-eager'" (quoted): the setting or the command only;
    # docfix16 (sf264): nor a commented-out "# --enforce-eager" in a pasted command
    r.take("enforce_eager", r"(?<!')enforce_eager=(True|False)(?!')", lambda v: v == "True", anchor="enforce_eager=")
    r.take("enforce_eager", r"'enforce_eager': (True|False)", lambda v: v == "True")
    r.take("enforce_eager", r"(?<!')(?<!#)(?<!# )(?<!# \")(?<!#\")--enforce-eager\b(?!')()", lambda v: True, anchor="--enforce-eager")
    r.take("sampler", r"Using FlashInfer for top-p & top-k sampling()", lambda v: "flashinfer")
    r.take("sampler", r"Falling back to the PyTorch-native implementation of top-p & top-k sampling()", lambda v: "pytorch")
    r.take("sampler", r"FlashInfer top-p/top-k sampling is available but disabled()", lambda v: "pytorch")
    r.take("linear_kernel", r"Using (Machete|Marlin)LinearKernel for", str.lower)
    r.take("gpu_name", r"GPU 0: ([^\n]+)", lambda s: s.strip())
    # logger.info_once(f"Using Marlin backend for WNA16 MoE (group_size={group_size}, num_bits={num_bits})"); -1 (channelwise): not kept
    r.take("quantization_group_size", r"Using Marlin backend for WNA16 MoE \(group_size=(\d+), num_bits=\d+\)", int)
    _ranks_from_workers(text, log)
    if log.kv_cache_tokens is None and log.kv_blocks is not None:
        block, _ = r.find.first(r"block_size[=:'\s]+(\d+)")
        log.kv_cache_tokens = log.kv_blocks * (int(block.group(1)) if block else 16)
        log.lines["kv_cache_tokens"] = log.lines["kv_blocks"]
    return log


# V1's worker processes are named by their ranks (vllm/v1/executor/multiproc_executor.py WorkerProc
# setup_proc_title_and_log_prefix: "Worker" + "_DP{r}" + "_PP{r}" (pp > 1) + "_PCP{r}" + "_TP{r}" (tp > 1) ...): where no
# config line states the sizes, the highest rank printed + 1 is a lower bound of each (docfix15: batch 12's sf239)
_WORKER_RANKS = re.compile(r"\bWorker(?:_DP\d{1,4})?(?:_PP(\d{1,4}))?(?:_PCP\d{1,4})?(?:_TP(\d{1,4}))?\b")


def worker_ranks(text: str) -> tuple[int | None, int | None]:
    """(TP, PP) lower bounds from the worker names printed (None where no name shows a rank of that kind above 0)."""
    pps, tps = [0], [0]
    for m in _WORKER_RANKS.finditer(text):
        pps.append(int(m.group(1) or 0))
        tps.append(int(m.group(2) or 0))
    return (max(tps) + 1 if max(tps) else None), (max(pps) + 1 if max(pps) else None)


def _ranks_from_workers(text: str, log: StartupLog) -> None:
    tp, pp = worker_ranks(text)
    log.tp, log.pp = log.tp or tp, log.pp or pp
