"""Grade schema 8 (gradefix, session 9, retrospective): the figures of vLLM V1's own start checks read from the log's own
lines, and two V1 checks the grade did not apply. Used by benchmarks/doctor_grade.py's ``engine_check`` for every row alike.

- ``log_figures``: the entry's ``figures`` (the collector's keys), with the pairs V1 prints in its own words filled in where
  the entry's keys lack them: "Free memory on device (X/Y GiB) on startup is less than desired GPU memory utilization"
  (``gpu_worker.init_device``), "Available KV cache memory: X GiB" (``gpu_worker.determine_available_memory``) and
  "(X GiB KV cache is needed, which is larger than the available KV cache memory (Y GiB)" with "max seq len (N)"
  (``v1/core/kv_cache_utils.check_enough_kv_cache_memory``). The entry's own figure wins where both exist.
- ``v1_cache_blocks_check``: V1's ``available = utilization x total - non-KV memory`` (``determine_available_memory``,
  ``self.requested_memory - profile_result.non_kv_cache_memory``, requested = total x utilization) is linear in the
  utilization, and ``check_enough_kv_cache_memory`` raises "No available memory for the cache blocks" while it is <= 0.
  A fraction edit that leaves it <= 0 fails; above 0 it passes that check, and whether one request of max_model_len then
  fits needs the bytes per token, which the log does not print: not decided.
- ``v1_context_check``: where the log prints "X GiB is needed ... (Y GiB)" for max seq len N but not the engine's own
  "estimated maximum model length", a shorter context's need is at least N' / N x X (the KV need of each layer is a
  constant, sliding window, plus a part linear in the length: ``max_memory_usage_bytes``), so N' with N' / N x X > Y fails.
  Whether N' fits is not decided (full attention only would make it linear; the log does not say the layers' kinds).
  Both printed figures are rounded to 0.01 GiB (``format_gib``), so the check uses the bounds: X - 0.005 and Y + 0.005.
"""

from __future__ import annotations

import re

_FREE = re.compile(r"Free memory on device[^(]*\(\s*([\d.]+)\s*/\s*([\d.]+)\s*GiB\)")
_AVAILABLE = re.compile(r"Available KV cache memory:\s*(-?[\d.]+)\s*GiB")
_NEEDED = re.compile(r"max seq len \((\d+)\), \(([\d.]+) GiB KV cache is needed, which is larger than the available KV cache memory \((-?[\d.]+) GiB\)")
# a thread's model named as a quantized checkpoint: its weights are not the catalog entry's 16-bit shapes
_QUANTIZED_NAME = re.compile(r"awq|gptq|fp8|fp4|int4|int8|w4a|w8a|nf4|bnb|4bit|8bit|gguf|exl2|mlx|q[2-8]_|nvfp4|mxfp4", re.I)
ROUNDING_GIB = 0.005  # format_gib / "%.2f GiB": each printed GiB figure is within half a hundredth


def log_figures(f) -> dict:
    """The entry's figures, with V1's printed pairs read from its own lines where the entry's keys lack them."""
    fig = dict(f.figures)
    text = f.error_line + "\n" + f.log
    free = _FREE.search(text)
    if free and "free_memory_gib" not in fig:
        fig["free_memory_gib"] = float(free.group(1))
        fig.setdefault("total_gpu_memory_gib", float(free.group(2)))
    needed = _NEEDED.search(re.sub(r"\s+", " ", text))
    if needed and "kv_needed_gib" not in fig:
        fig.update(kv_needed_gib=float(needed.group(2)), kv_available_gib=float(needed.group(3)), kv_needed_len=float(needed.group(1)))
    elif needed:
        fig.setdefault("kv_needed_len", float(needed.group(1)))
    available = _AVAILABLE.search(text)
    if available and "kv_available_gib" not in fig:
        fig["kv_available_gib"] = float(available.group(1))
    return fig


def v1_cache_blocks_check(fig: dict, value: str, u0: float, total: float | None, gib: int) -> tuple[bool | None, str] | None:
    """A fraction edit against V1's printed "Available KV cache memory" (None: the log prints no such figure or no total)."""
    if "kv_available_gib" not in fig or "kv_needed_gib" in fig or not total:
        return None
    got = fig["kv_available_gib"] + (float(value) - u0) * total / gib
    why = f"{fig['kv_available_gib']:.2f} + ({value} - {u0}) x {total / gib:.2f} = {got:.2f} GiB available for the KV cache"
    if got + ROUNDING_GIB <= 0:
        return False, f"{why}: still <= 0, V1 raises 'No available memory for the cache blocks' (kv_cache_utils)"
    return None, f"{why}: the cache-blocks check passes; one request of max_model_len needs the bytes per token (not decided)"


def v1_context_check(fig: dict, value: str, length: int | None) -> tuple[bool | None, str] | None:
    """A shorter context against V1's printed needed/available pair where the engine's estimate is not printed."""
    length = int(fig.get("kv_needed_len") or length or 0)
    if "kv_needed_gib" not in fig or "estimated_max_model_len" in fig or not length:
        return None
    least = int(value) / length * (fig["kv_needed_gib"] - ROUNDING_GIB)
    most_available = fig["kv_available_gib"] + ROUNDING_GIB
    why = f"{value} / {length:,} x {fig['kv_needed_gib']:.2f} GiB needed >= {least:.3f} GiB vs {fig['kv_available_gib']:.2f} GiB available"
    if least > most_available:
        return False, f"{why}: over it even at the least need (kv_cache_utils.check_enough_kv_cache_memory)"
    return None, f"{why} (within it, or within the printed figures' rounding): the layers' kinds decide it, the log does not print them (not decided)"


def weights_floor(f, fig: dict) -> tuple[float, str] | None:
    """(weights per GPU in GiB, where from) where a budget under them decides V1's cache-blocks check: the log's printed
    weights ("Model loading took X GiB"), else the catalog model's own shapes in 16 bits where the entry states no
    quantization and no 8/32-bit dtype, the thread's model name names no quantized format and the catalog checkpoint is
    itself 16-bit (the checkpoint's bytes, not the memory model's fit). None: neither is known.
    V1 ``determine_available_memory``: available = utilization x total - (weights + activations + non-torch), so a
    budget under the weights alone leaves it below zero whatever the rest."""
    for key in ("weights_gib", "weights_gb"):  # vLLM's "Model loading took X GiB"; SGLang's "mem usage=X GB" (bytes / 2**30)
        if key in fig:
            return fig[key], "printed"
    s = f.settings
    if not f.catalog_model or s.quantization or (s.dtype and s.dtype not in ("bfloat16", "float16", "half", "auto")) \
            or _QUANTIZED_NAME.search(f.model) or (f.tp is None and f.gpu_count != 1):  # GPUs sharing the weights unstated
        return None
    from infer_advisor.errors import InferAdvisorError
    from infer_advisor.estimate.weights import weights_bytes
    from infer_advisor.model_facts import resolve_model

    try:
        facts = resolve_model(f.catalog_model, source="catalog")
    except (InferAdvisorError, ValueError):
        return None
    if facts.pre_quantized or facts.torch_dtype not in ("bfloat16", "float16"):  # a checkpoint shipped in 8 or 4 bits (sf40)
        return None
    weights = weights_bytes(facts, "none", facts.torch_dtype) / 2**30 / (f.tp or 1)
    return weights, f"{f.catalog_model} in 16 bits from the catalog's shapes{f' / TP {f.tp}' if (f.tp or 1) > 1 else ''}"


def v1_free_memory_check(f, fig: dict, value: str) -> tuple[bool | None, str]:
    """vLLM V1 ``gpu_worker.init_device``: utilization x total <= free at start (the start check only). Schema 8: inside the
    printed figures' rounding (0.005 GiB each) it is not decided, and a budget that passes it under the weights fails."""
    from infer_advisor.doctor.figures import SMALLEST_USEFUL_BUDGET_BYTES

    total, free, u = fig["total_gpu_memory_gib"], fig["free_memory_gib"], float(value)
    need = u * total
    if need * 2**30 < SMALLEST_USEFUL_BUDGET_BYTES:  # passes the check and loads nothing (sf65's first run: 0.00)
        return False, f"{value} x {total} = {need:.2f} GiB: passes the start check, holds no model"
    why = f"{value} x {total} = {need:.2f} GiB vs {free} GiB free"
    if u * (total + ROUNDING_GIB) > free - ROUNDING_GIB and u * (total - ROUNDING_GIB) <= free + ROUNDING_GIB:
        return None, f"{why}: within the printed figures' rounding (not decided)"
    floor = weights_floor(f, fig) if need <= free else None
    if floor and floor[0] > need:
        return False, f"{why}: passes the start check, under the weights ({floor[0]:.2f} GiB, {floor[1]}): no KV room"
    return need <= free, f"{why} (the start check only)"


def catalog_total(f) -> float | None:
    """The stated GPU's total bytes from the hardware catalog, where the doctor's memory model did not give one."""
    if not f.gpu:
        return None
    from infer_advisor.errors import InferAdvisorError
    from infer_advisor.hardware import resolve_hardware

    try:
        return float(resolve_hardware(f.gpu).gpu.memory_bytes)
    except (InferAdvisorError, AttributeError):
        return None
