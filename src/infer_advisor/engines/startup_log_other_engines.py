"""SGLang's, llama.cpp's and TGI's start-up log lines, read into a ``StartupLog``. Each pattern is the engine's own
format string, read from its source:

- SGLang (srt/model_executor/model_runner.py, mem_cache/memory_pool.py, managers/scheduler.py): ``"Load weight end.
  elapsed=... s, type=..., dtype=..., avail mem=%.2f GB, mem usage=%.2f GB."``, ``"KV Cache is allocated. #tokens: %d,
  K size: %.2f GB, V size: %.2f GB"``, ``"Capture cuda graph end. Time elapsed: %.2f s. mem usage=%.2f GB. avail
  mem=%.2f GB."``, ``"max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d,
  max_running_requests=%d, context_len=%d, available_gpu_mem=%.2f GB"`` (GB there is bytes / 2**30).
- llama.cpp (src/llama-kv-cache.cpp, llama-context.cpp, llama-model.cpp): its buffer lines (model, KV and compute
  buffers, the KV cache's own line) through :mod:`.llamacpp_buffers`, the one reader of them for every backend;
  ``"Device %d: %s, compute capability %d.%d"``, ``"build: %d (%s)"``, ``"%s: using device %s (%s) - %zu MiB free"``
  (llama.cpp llama_model_load_from_file_impl, b4400+; later builds add the PCI id in a second pair of brackets).
- SGLang ``"Load weight begin. avail mem=%.2f GB"`` (the free memory before loading: ``pre_model_load_memory``, the base
  of ``mem_fraction_static``) and ``"Load weight end. ... avail mem=%.2f GB"`` (``available_gpu_memory`` after it).
- TGI (text-generation-inference 1.0-3.3, server/.../flash_causal_lm.py warmup and backends/v3/src/lib.rs, read at
  v3.3.7): ``"KV-cache blocks: {num_blocks}, size: {BLOCK_SIZE}"``, ``"Setting max batch total tokens to {n}"``, and the
  launcher's ``Args { ... }`` (max_total_tokens, max_batch_prefill_tokens, cuda_memory_fraction, num_shard, quantize).
"""

from __future__ import annotations

import re

from .llamacpp_buffers import CONTEXT_LINE, read_device_buffers
from .log_search import LogReader, gib
from .startup_log_record import LINE_CHARS, MIB, GIB, StartupLog


def read_sglang_log(text: str) -> StartupLog:
    r = LogReader(text, "sglang")
    log = r.log
    r.take("engine_version", r"sglang(?: version|==)\s*v?([0-9][\w.+-]*)", str, flags=re.I)
    r.take("model", r"model_path='([^']+)'", str)
    r.take("tp", r"tp_size=(\d+)", int)
    r.take("pp", r"pp_size=(\d+)", int)
    r.take("max_model_len", r"context_len=(\d+)", int)
    r.take("max_model_len", r"context_length=(\d+)", int)
    r.take("gpu_memory_utilization", r"mem_fraction_static=([\d.]+)", float)
    r.take("dtype", r"Load weight end\..*?dtype=torch\.(\w+)", str)
    r.take("weights_bytes", r"Load weight end\..*?mem usage=([\d.]+) GB", gib)
    r.take("free_at_start_bytes", r"Load weight begin\. avail mem=([\d.]+) GB", gib)
    r.take("free_after_load_bytes", r"Load weight end\..*?avail mem=([\d.]+) GB", gib)
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
    r.take("cuda_graph_bytes", r"Capture cuda graph end\..*?mem usage=([\d.]+) GB", gib)
    r.take("max_num_seqs", r"max_running_requests=(\d+)", int)
    r.take("max_num_batched_tokens", r"chunked_prefill_size=(\d+)", int)
    r.take("command", r"server_args=(ServerArgs\(.*\))", str)
    return log


def read_llamacpp_log(text: str) -> StartupLog:  # read through read_past_fit_dry_run (the fitting dry run's lines are not the run's)
    log = (r := LogReader(text, "llama.cpp")).log
    r.take("engine_version", r"build: (\d+) \(", lambda s: f"b{s}")
    r.take("gpu_name", r"Device \d+: ([^,\n]+), compute capability", lambda s: s.strip())
    m, line = r.find.first(r"using device CUDA0 \(([^()\n]+)\)(?: \([^()\n]*\))? - (\d+) MiB free", anchor="using device CUDA0")
    if m:
        log.gpu_name = log.gpu_name or m.group(1).strip()
        log.free_at_start_bytes = int(m.group(2)) * MIB
        log.lines["free_at_start_bytes"] = line[:LINE_CHARS]
    r.take("model", r"general\.name\s+str\s+=\s+([^\n]+)", lambda s: s.strip())
    read_device_buffers(r)  # the weights, KV cache and compute buffers (llamacpp_buffers)
    r.take("max_model_len", r"n_ctx_per_seq\s+=\s+(\d+)", int)
    r.take("max_model_len", CONTEXT_LINE, int)
    if log.kv_cache_tokens is None:
        r.take("kv_cache_tokens", CONTEXT_LINE, int)
    r.take("max_num_seqs", r"n_seq_max\s+=\s+(\d+)", int)
    m = r.take("gpu_layers", r"offloaded (\d+)/(\d+) layers to GPU", int)
    if m:
        log.total_layers = int(m.group(2))
    r.take("max_num_batched_tokens", r"n_batch\s+=\s+(\d+)", int)
    return log


def read_tgi_log(text: str) -> StartupLog:
    r = LogReader(text, "tgi")
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
