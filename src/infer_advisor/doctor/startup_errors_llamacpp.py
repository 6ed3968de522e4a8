"""What a llama.cpp allocation failure's fix needs besides the failure itself, read from the rest of the text: a host
(CPU backend) buffer, a backend's per-allocation limit, the micro-batch, flash attention, the model's shapes (moved out
of :mod:`.startup_errors` by docfix15, which added the micro-batch read from the run's -ub/-b flags).

    >>> llamacpp_extra("... -ub 8192 -b 8192 ...", None, host=False, vulkan=False)
    {'n_ubatch': 8192.0}
"""

from __future__ import annotations

import re

# ggml-vulkan.cpp: where one buffer passes the device's maxMemoryAllocationSize, "Requested buffer size exceeds device
# memory allocation limit" (sf161)
_VULKAN_LIMIT = re.compile(r"exceeds device memory allocation limit")
_UBATCH = re.compile(r"\bn_ubatch\s+=\s+(\d+)")
# docfix15 (retrospective, batch 12's sf226): where the log does not print n_ubatch, the run's -ub/-b as the text gives them
# (common/arg.cpp "-ub, --ubatch-size", "-b, --batch-size"); llama_context takes n_ubatch = min(n_batch, n_ubatch)
_UBATCH_FLAG = re.compile(r"(?<![\w-])(?:-ub|--ubatch-size)[ =](\d{1,6})\b")
_BATCH_FLAG = re.compile(r"(?<![\w-])(?:-b|--batch-size)[ =](\d{1,6})\b")
LLAMACPP_DEFAULT_UBATCH = 512  # common/common.h n_ubatch's default (n_batch's is 2048)
# llama_context's own line (src/llama-context.cpp): "flash_attn = disabled" (on/off/auto builds) or "= 0" (older)
_FLASH_OFF = re.compile(r"llama_context: flash_attn\s+=\s+(?:auto -> )?(disabled|0)\b")
_FLASH_ON = re.compile(r"llama_context: flash_attn\s+=\s+(?:auto -> )?(?:enabled|1)\b")
# the model's shapes (print_info, llm_load_print_meta in older builds) and the context per sequence (llama_context): a
# per-layer array ("n_head = [32, 32, ...]") does not match, and the arithmetic then decides nothing
_LLAMACPP_SHAPE = {name: re.compile(rf"(?:print_info|llm_load_print_meta): {name}\s+=\s+(\d+)\s*$", re.M)
                   for name in ("n_head", "n_ff", "n_vocab", "n_embd")} | {
                   "n_ctx_seq": re.compile(r"llama_context: n_ctx_seq\s+=\s+(\d+)\b")}


def _ubatch(text: str) -> float | None:
    if ub := _UBATCH.search(text):
        return float(ub.group(1))
    ub_flag, b_flag = _UBATCH_FLAG.search(text), _BATCH_FLAG.search(text)
    if not (ub_flag or b_flag):
        return None
    ub_value = int(ub_flag.group(1)) if ub_flag else LLAMACPP_DEFAULT_UBATCH
    return float(min(ub_value, int(b_flag.group(1))) if b_flag else ub_value)


def llamacpp_extra(text: str, m: re.Match | None, *, host: bool, vulkan: bool) -> dict[str, float]:
    """What else the fix needs: a host (CPU backend) buffer, a backend's per-allocation limit, the micro-batch."""
    extra = {"host": 1.0} if host else {}
    if m and vulkan and _VULKAN_LIMIT.search(text, m.end(), m.end() + 400):
        extra["allocation_limit"] = 1.0
    if (ub := _ubatch(text)) is not None:
        extra["n_ubatch"] = ub
    if fa := _FLASH_OFF.search(text):  # 1: "disabled" (the -fa on|off|auto builds), 0: "0" (the older boolean -fa)
        extra["flash_attn_off"] = 1.0 if fa.group(1) == "disabled" else 0.0
    elif _FLASH_ON.search(text):
        extra["flash_attn_on"] = 1.0
    for name, pattern in _LLAMACPP_SHAPE.items():  # what the compute buffer's arithmetic needs (llamacpp_compute)
        if shape := pattern.search(text):
            extra[name] = float(shape.group(1))
    return extra
