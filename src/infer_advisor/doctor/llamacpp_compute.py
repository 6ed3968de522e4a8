"""llama.cpp's compute buffer, worked on the figures its log printed: whether flash attention, or the default micro-batch,
makes a failed compute buffer fit while keeping the whole context (docfix12, retrospective: the H200 sets e and f).

For a llama.cpp compute-buffer failure ``error`` and the buffer ``failed`` (tests/doctor/test_doctor_docfix12.py has the
H200 logs)::

    bound = compute_bound(error.figures, failed, flash=True)   # bytes, or None where the log lacks a figure

The graph (llama.cpp ``llm_graph_context::build_attn_mha``, ``build_attn_inp_kv``): without flash attention every layer
forms ``kq = mul_mat(k, q)``, an f32 tensor of ``n_kv x n_ubatch x n_head``, beside the f32 mask input of ``n_kv x
n_ubatch``; with flash attention no ``kq`` is formed and the mask is also cast to f16 (``ggml_cast(mask, F16)``). So of
the buffer the log printed, ``n_kv x n_ubatch`` pairs take ``4 x (n_head + 1)`` bytes each without flash attention and
6 bytes with it; the rest (the remainder) is what the attention step holds besides. The H200 logs fit this to the MiB:
e-fa-off (500,224 cells, -ub 2048, 24 heads) 97,812 MiB printed, 97,701 by the pairs; e-held128 (flash attention,
32,768 cells, -ub 8192) 1,568 MiB printed, 1,536 by the pairs.

An upper bound, never an estimate: the pairs at the new setting, plus the printed remainder (each tensor of the graph
grows with n_ubatch, so a smaller micro-batch's remainder is no larger), plus an allowance for the steps where the
attention tensors are not live (the feed-forward's three ``n_ff x n_ubatch`` f32 tensors, the output's ``n_vocab x
n_ubatch`` logits, four ``n_embd x n_ubatch`` residual tensors), which the printed peak need not include. Where any
figure is not printed (n_head, n_ff, n_vocab, n_embd, n_ubatch, the context per sequence) nothing is decided.
"""

from __future__ import annotations

FLASH_PAIR_BYTES = 6  # the f32 mask and its f16 cast, per (KV cell, micro-batch token) pair
MASK_PAIR_BYTES = 4  # the f32 mask alone (no flash attention)
KQ_BYTES = 4  # kq is f32 (ggml_mul_mat_set_prec(kq, GGML_PREC_F32))
FFN_TENSORS, RESIDUAL_TENSORS = 3, 4  # up, gate and their product; the residual stream, its norm, the attention output, a spare
MASK_F16_BYTES = 2  # the flash-attention mask, f16 (the pinned build makes it so directly; older ones also hold an f32 copy)
_NEEDED = ("n_head", "n_ff", "n_vocab", "n_embd", "n_ctx_seq")


def _pair_bytes(figures: dict, flash: bool) -> int:
    return FLASH_PAIR_BYTES if flash else KQ_BYTES * int(figures["n_head"]) + MASK_PAIR_BYTES


def compute_bound(figures: dict, failed: float | None, *, flash: bool, ubatch: int | None = None) -> float | None:
    """An upper bound on the compute buffer with flash attention ``flash`` and micro-batch ``ubatch`` (default: the run's),
    from the failed buffer the log printed at the run's own setting (flash attention off where ``flash_attn_off``)."""
    if failed is None or not all(k in figures for k in (*_NEEDED, "n_ubatch")):
        return None
    if "flash_attn_off" in figures:
        ran_flash = False
    elif "flash_attn_on" in figures:
        ran_flash = True
    else:  # the log does not say whether the run used it
        return None
    if ran_flash and not flash:
        return None
    ub0, ub = int(figures["n_ubatch"]), int(ubatch or figures["n_ubatch"])
    n_kv = int(figures["n_ctx_seq"])
    remainder = failed - n_kv * ub0 * _pair_bytes(figures, ran_flash)
    if remainder < 0 or ub > ub0:  # the pairs do not explain the printed buffer: another graph than this arithmetic's
        return None
    allowance = 4 * ub * (FFN_TENSORS * int(figures["n_ff"]) + int(figures["n_vocab"]) + RESIDUAL_TENSORS * int(figures["n_embd"]))
    return n_kv * ub * _pair_bytes(figures, flash) + remainder + allowance


def flash_floor(figures: dict) -> float | None:
    """A lower bound on the compute buffer with flash attention on (docfix14, retrospective: set h's h-held90): its f16
    mask of ``n_ctx_seq x n_ubatch`` pairs must be on the device in every build (2 bytes a pair; set g's and h's fixed
    logs print more: 1,525 MiB at 1,500,160 cells, 945 MiB at 900,096, both -ub 512). None where a figure is not printed."""
    if not all(k in figures for k in ("n_ctx_seq", "n_ubatch")):
        return None
    return float(figures["n_ctx_seq"]) * float(figures["n_ubatch"]) * MASK_F16_BYTES
