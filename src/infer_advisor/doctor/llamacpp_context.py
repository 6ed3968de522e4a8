"""llama.cpp's context edit where the log prints the KV buffer but not the memory it had to fit (docfix17,
retrospective: batch 14's sf281, n_ctx 10,240,000 on a 1,048,576-token model, and sf282, 163,840 cells of DeepSeek-V2 in a
750 GiB KV buffer, were each offered half their context, still ten to a thousand times too large).

For a llama.cpp log ``log`` that printed its KV buffer but not the free memory (tests/doctor/test_doctor_docfix17.py
runs sf281's and sf282's)::

    context_within_figures(log, 163840, 805306368032 / 163840, "kv").argv  # ['--ctx-size', '4096']

The context goes to the largest the printed figures allow, never a fixed fraction of what failed:

* the model's trained context where the log prints it (``llm_load_print_meta: n_ctx_train = N`` / ``print_info:
  n_ctx_train = N``, llama.cpp's model loader) and the run asked for more: llama.cpp itself warns that a context above
  n_ctx_train is beyond what the model was trained on (llama-context.cpp ``n_ctx_per_seq > n_ctx_train``);
* otherwise 4096 cells, the context llama.cpp's own memory fit goes down to (common/common.h ``int32_t
  fit_params_min_ctx = 4096; // minimum context size to set when trying to reduce memory use`` in the source vendored
  by llama-cpp-python 0.3.36; its default ``n_ctx`` there is 0, the trained context, as before PR #10136 made it 4096
  for a while), where the KV buffer at that context is what the printed bytes per cell give.

It goes first among the engine's remedies. Not decided (``starts`` None): the log prints no free memory for the buffer (host RAM, or a GPU it does not name).
"""

from __future__ import annotations

import re

from .edits import Edit
from .engine_flags import engine_edit, engine_flags
from ..engines.startup_log import StartupLog
from ..units import GIB, MIB

LLAMACPP_DEFAULT_CONTEXT = 4096  # common/common.h fit_params_min_ctx: the floor of llama.cpp's own memory fit (0.3.36 source)
_N_CTX_TRAIN = re.compile(r"n_ctx_train\s*=\s*(\d+)")


def context_within_figures(log: StartupLog, cells: int | None, per_token: float | None, buffer: str | None) -> Edit | None:
    """The context edit bounded by the log's figures (None: no printed figure bounds it; the caller halves)."""
    if not cells or buffer == "compute":
        return None
    m = _N_CTX_TRAIN.search(" ".join(str(v) for v in log.lines.values()))
    trained = int(m.group(1)) if m else None
    if trained and cells > trained:
        target, why = trained, f"the model's trained context (n_ctx_train {trained:,} in the log); {cells:,} is beyond it"
    elif cells >= 2 * LLAMACPP_DEFAULT_CONTEXT:
        target, why = LLAMACPP_DEFAULT_CONTEXT, "llama.cpp's own default context (common.h, PR #10136)"
    else:
        return None
    kv = f"; the KV cache {per_token * cells / GIB:,.1f} GiB -> {per_token * target / MIB:,.0f} MiB at the log's bytes per cell" if per_token else ""
    flag = engine_flags("llama.cpp").context
    return engine_edit([flag, str(target)], None, f"context {cells:,} -> {target:,} cells: {why}{kv}", 0.1)
