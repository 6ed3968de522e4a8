"""Start-up refusals that are not memory: an engine declining the settings a command line gave it, in its own words,
and a process killed by the host (docfix13, retrospective: the H200 set g's g-ctx-200k-q8kv-fa-off, batch 10's sf191).

    >>> refusal("E llama_init_from_model: quantized V cache requires flash_attn to be enabled")
    ('llamacpp_refused', 0, 'E llama_init_from_model: quantized V cache requires flash_attn to be enabled')

llama.cpp's refusals, read in ``llama_init_from_model`` and the ``llama_context`` constructor (src/llama-context.cpp
at the pinned build, the one the H200 sets ran; older wordings from the releases that printed them):

0. "quantized V cache requires flash_attn to be enabled": ``-ctv`` quantized with ``-fa off`` (the ``on|off|auto``
   builds; with ``auto`` the engine turns flash attention on itself, "enabling flash_attn since it is required for
   quantized V cache");
1. "V cache quantization requires flash_attn": the same check in the builds whose ``-fa`` took no value (to ~b6200);
2. "quantized V cache was requested, but this requires Flash Attention": ``auto`` resolved flash attention to off
   (the device or model does not support it: "flash_attn not supported, set to disabled"), in the constructor;
3. "K cache type {t} with block size {b} does not divide n_embd_head_k={n}" and 4. the same for V: a quantized type
   whose block does not divide the head size (checked with flash attention on);
5. "model does not support different K ({k}) and V ({v}) cache types": an MLA model (or DeepSeek-V4) with ``-ctk``
   and ``-ctv`` apart;
6. "n_seq_max must be <= {n}": ``-np`` above LLAMA_MAX_SEQ (256), thrown by the constructor;
7. "n_batch and n_ubatch cannot both be zero";
8. "SPLIT_MODE_TENSOR requires flash_attn to be enabled": ``-sm tensor`` with ``-fa off``;
9-11. common/arg.cpp's refusals of a value, before the model is read: ``-np 0`` ("invalid value for n_parallel"), a cache
   type it does not know ("Unsupported cache type: {t}"), a ``-fa`` value other than on/off/auto.

A host kill: "exit code 137" / "SIGKILL" / "Killed" beside out-of-memory words is the kernel's (or a container's)
out-of-memory killer ending the process for host RAM, not a GPU allocation that failed (HOST_KILL).
Every pattern is one ``re.search`` without nested repetition.
"""

from __future__ import annotations

import re

from .log_line import matched_line as _line

LLAMACPP_REFUSALS = (
    re.compile(r"quantized V cache requires flash_attn to be enabled"),
    re.compile(r"V cache quantization requires flash_attn"),
    re.compile(r"quantized V cache was requested, but this requires Flash Attention"),
    re.compile(r"K cache type (\w{1,16}) with block size (\d{1,6}) does not divide n_embd_head_k=(\d{1,6})"),
    re.compile(r"V cache type (\w{1,16}) with block size (\d{1,6}) does not divide n_embd_head_v=(\d{1,6})"),
    re.compile(r"model does not support different K \((\w{1,16})\) and V \((\w{1,16})\) cache types"),
    re.compile(r"n_seq_max must be <= (\d{1,6})"),
    re.compile(r"n_batch and n_ubatch cannot both be zero"),
    re.compile(r"SPLIT_MODE_TENSOR requires flash_attn to be enabled"),
    # common/arg.cpp, before the model is read: 'error while handling argument "-np": error: invalid value for n_parallel'
    re.compile(r"invalid value for n_parallel"),
    re.compile(r"error while handling argument \"(-ctk|-ctv|--cache-type-k|--cache-type-v)\": Unsupported cache type: (\w{1,16})"),
    re.compile(r"unknown value for --flash-attn: '([^'\n]{0,20})'"),
)
# exit code 137 = 128 + SIGKILL (9): the host's OOM killer (or a container's memory limit); the words "OOM"/"out of memory"
# or the kernel's "Killed process" must be there too, so an operator's own kill is not read as one
HOST_KILL = 99
# docfix15 (retrospective, batch 12's sf240): the kernel's own line (mm/oom_kill.c __oom_kill_process: "%s: Killed process
# %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, shmem-rss:%lukB ..." with "Out of memory" as its message) is
# read with or without its pid (a paste that drops it: "Killed process (VLLM::Worker_TP)"), and by its rss fields alone
_HOST_KILL = re.compile(r"exit(?:ed)? (?:with )?(?:exit )?code 137\b|\bSIGKILL\b|Killed process (?:\d+ )?\(|Killed process \d+"
                        r"|\btotal-vm:\d+kB,? anon-rss:\d+kB|oom-kill(?:er)?\b|OOMKilled")
_MEMORY_WORDS = re.compile(r"(?i)\bOOM\b|out of memory|oom-kill|OOMKilled|Killed process")


def refusal(text: str) -> tuple[str, int, str] | None:
    """(kind, which refusal, the line) for the first llama.cpp refusal in ``text``, else a host kill, else None."""
    for code, pattern in enumerate(LLAMACPP_REFUSALS):
        m = pattern.search(text)
        if m:
            return "llamacpp_refused", code, _line(text, m)
    m = _HOST_KILL.search(text)
    if m and _MEMORY_WORDS.search(text):
        return "host_oom_killed", HOST_KILL, _line(text, m)
    return None
