"""Grouped MoE GEMMs by weight format on the GPU: bf16, fp8 (rowwise scales) and MXFP4 dequantised to bf16.

    python benchmarks/gpu/moe_formats.py --out moe_formats.json      # H200, about 60 s
    python benchmarks/gpu/moe_formats.py --smoke                     # the MXFP4 dequantisation checked on CPU

Issue 20, item 6: the expert matmuls of one MoE layer at the routed batch sizes, in the three weight formats the
speed model knows for MoE experts on Hopper. Shapes, routing and timing as ``moe_gemm.py`` (gpt-oss-120b and
Qwen3-30B-A3B experts, uniform top-k routing, CUDA events around replays, weights rotated over copies so that L2
does not serve them):

- ``bf16``: ``torch._grouped_mm`` (one kernel over all experts, as vLLM's and SGLang's fused MoE do).
- ``fp8``: ``torch._scaled_grouped_mm`` with e4m3 weights and activations and rowwise scales (per routed row and per
  expert output column), each expert's rows padded to 16 as the kernel needs (vLLM's ``moe_align_block_size`` pads to
  its block the same way).
- ``mxfp4-dequant``: the experts' weights stored as OCP MXFP4 (two e2m1 values per byte, one e8m0 scale per 32
  values), the touched experts dequantised to bf16 with torch ops, then the bf16 grouped GEMM. This is an UPPER BOUND
  on what Hopper pays for MXFP4 experts: vLLM's Triton/Marlin kernels dequantise in registers inside the GEMM instead
  of writing bf16 weights back to memory; the result says so in ``kernel``.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from moe_gemm import SHAPES, _time  # same folder: the shapes and the CUDA-event timer of the bf16 measurement

TOKENS = [1, 4, 16, 64, 256, 1024, 4096]
FP4_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]  # OCP e2m1
MX_BLOCK = 32
ALIGN = 16


def mxfp4_pack(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(E, N, K) float -> (packed uint8 (E, N, K/2), e8m0 scales uint8 (E, N, K/32)): round to the nearest e2m1."""
    e, n, k = w.shape
    blocks = w.float().reshape(e, n, k // MX_BLOCK, MX_BLOCK)
    amax = blocks.abs().amax(-1, keepdim=True).clamp_min(2.0**-126)
    exp = torch.floor(torch.log2(amax)) - 2  # largest e2m1 magnitude is 6 = 1.5 * 2^2
    scaled = (blocks / torch.exp2(exp)).reshape(e, n, k)
    lut = torch.tensor(FP4_VALUES[:8], device=w.device)
    codes = (scaled.abs().unsqueeze(-1) - lut).abs().argmin(-1).to(torch.uint8)
    codes |= (scaled < 0).to(torch.uint8) << 3
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
    scales = (exp.squeeze(-1) + 127).clamp(0, 254).to(torch.uint8)
    return packed, scales


def mxfp4_dequant(packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """(E, N, K/2) packed + (E, N, K/32) scales -> (E, N, K) bf16, e2m1 decoded arithmetically (no lookup gather)."""
    e, n, half = packed.shape
    codes = torch.stack((packed & 0xF, packed >> 4), dim=-1).reshape(e, n, half * 2)
    exp = ((codes >> 1) & 3).to(torch.bfloat16)
    mant = (codes & 1).to(torch.bfloat16)
    mag = torch.where(exp == 0, mant * 0.5, torch.exp2(exp - 1) * (1 + mant * 0.5))
    mag = torch.where((codes & 8) > 0, -mag, mag).reshape(e, n, -1, MX_BLOCK)
    return (mag * torch.exp2(scales.to(torch.bfloat16) - 127).unsqueeze(-1)).reshape(e, n, half * 2)


def mxfp4_random(e: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random MXFP4 weights packed one expert at a time (the float intermediate of a whole layer would not fit)."""
    parts = [mxfp4_pack(torch.randn(1, n, k, device="cuda") * 0.02) for _ in range(e)]
    return torch.cat([p for p, _ in parts]), torch.cat([s for _, s in parts])


def _route(shape: dict, tokens: int, gen: torch.Generator, align: int = 1) -> tuple[torch.Tensor, int, torch.Tensor]:
    """(offsets over all experts, routed rows, indices of the experts touched)."""
    e, k = shape["experts"], shape["top_k"]
    choice = torch.stack([torch.randperm(e, generator=gen)[:k] for _ in range(tokens)]).flatten()
    counts = torch.bincount(choice, minlength=e)
    padded = ((counts + align - 1) // align) * align
    return torch.cumsum(padded, 0).to(torch.int32).cuda(), int(padded.sum()), torch.nonzero(counts).flatten()


def _fp8_weights(e: int, kdim: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    w = (torch.randn(e, n, kdim, device="cuda") * 0.02).to(torch.float8_e4m3fn)
    return w.transpose(-2, -1), torch.full((e, n), 0.02, device="cuda")  # (E, K, N) column-major, as the kernel needs


def layer(shape: dict, tokens: int, fmt: str, gen: torch.Generator, copies: int = 3) -> dict:
    e, h, i = shape["experts"], shape["hidden"], shape["inter"]
    offs, rows, idx = _route(shape, tokens, gen, ALIGN if fmt == "fp8" else 1)
    touched = int(idx.numel())
    state = {"n": 0}
    if fmt == "fp8":
        ws = [(_fp8_weights(e, h, 2 * i), _fp8_weights(e, i, h)) for _ in range(copies)]
        x = (torch.randn(rows, h, device="cuda") * 0.5).to(torch.float8_e4m3fn)
        y = (torch.randn(rows, i, device="cuda") * 0.5).to(torch.float8_e4m3fn)
        sx, sy = torch.ones(rows, device="cuda"), torch.ones(rows, device="cuda")
        kind, wbytes = "torch._scaled_grouped_mm (e4m3, rowwise scales)", 1.0

        def run():
            (up, su), (down, sd) = ws[state["n"] % copies]
            state["n"] += 1
            torch._scaled_grouped_mm(x, up, sx, su, offs=offs, out_dtype=torch.bfloat16)
            torch._scaled_grouped_mm(y, down, sy, sd, offs=offs, out_dtype=torch.bfloat16)
    else:
        x = torch.randn(rows, h, device="cuda", dtype=torch.bfloat16)
        y = torch.randn(rows, i, device="cuda", dtype=torch.bfloat16)
        if fmt == "bf16":
            ws = [(torch.randn(e, h, 2 * i, device="cuda", dtype=torch.bfloat16) * 0.02,
                   torch.randn(e, i, h, device="cuda", dtype=torch.bfloat16) * 0.02) for _ in range(copies)]
            kind, wbytes = "torch._grouped_mm", 2.0

            def run():
                up, down = ws[state["n"] % copies]
                state["n"] += 1
                torch._grouped_mm(x, up, offs=offs)
                torch._grouped_mm(y, down, offs=offs)
        else:
            ws = [(mxfp4_random(e, 2 * i, h), mxfp4_random(e, h, i)) for _ in range(copies)]
            counts = torch.diff(offs, prepend=torch.zeros(1, dtype=offs.dtype, device="cuda"))
            offs_t = torch.cumsum(counts[idx.cuda()], 0).to(torch.int32)
            sel = idx.cuda()
            kind = "torch dequant of the touched experts to bf16 + torch._grouped_mm (upper bound)"
            wbytes = 0.5 + 1 / MX_BLOCK

            def run():
                (pu, su), (pd, sd) = ws[state["n"] % copies]
                state["n"] += 1
                up = mxfp4_dequant(pu.index_select(0, sel), su.index_select(0, sel))
                down = mxfp4_dequant(pd.index_select(0, sel), sd.index_select(0, sel))
                torch._grouped_mm(x, up.transpose(-2, -1), offs=offs_t)
                torch._grouped_mm(y, down.transpose(-2, -1), offs=offs_t)

    t = _time(run, reps=15, warm=4)
    params_touched = touched * (h * 2 * i + i * h)
    flops = 2 * rows * (h * 2 * i + i * h)
    return {"format": fmt, "tokens": tokens, "routed_rows": rows, "experts_touched": touched, "seconds": t,
            "weight_bytes_touched": params_touched * wbytes, "achieved_bytes_per_s": params_touched * wbytes / t,
            "flops": flops, "achieved_flops": flops / t, "kernel": kind}


def smoke() -> None:
    w = torch.randn(2, 4, 64) * 0.02
    packed, scales = mxfp4_pack(w)
    back = mxfp4_dequant(packed, scales).float()
    rel = ((back - w).norm() / w.norm()).item()
    assert packed.shape == (2, 4, 32) and scales.shape == (2, 4, 2), (packed.shape, scales.shape)
    assert rel < 0.2, rel  # e2m1 keeps about one significant bit and a half
    print(f"mxfp4 round trip: relative error {rel:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="moe_formats.json")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--budget-s", type=float, default=75.0)
    args = ap.parse_args()
    if args.smoke:
        smoke()
        return
    t0 = time.time()
    gen = torch.Generator().manual_seed(0)
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "points": {}, "errors": []}
    for name, shape in SHAPES.items():
        for fmt in ("bf16", "fp8", "mxfp4-dequant"):
            for tokens in TOKENS:
                if time.time() - t0 > args.budget_s:
                    res["errors"].append(f"{name} {fmt} T={tokens}: skipped, over the time budget")
                    continue
                try:
                    p = layer(shape, tokens, fmt, gen)
                except Exception as exc:  # an unsupported format on this torch/GPU: recorded, the rest still runs
                    res["errors"].append(f"{name} {fmt} T={tokens}: {type(exc).__name__}: {str(exc)[:200]}")
                    continue
                res["points"].setdefault(name, []).append(p)
                print(f"{name:14s} {fmt:14s} T={tokens:5d} touched {p['experts_touched']:3d} {p['seconds'] * 1e6:9.1f} us "
                      f"{p['achieved_bytes_per_s'] / 1e12:5.2f} TB/s {p['achieved_flops'] / 1e12:6.1f} TF/s", flush=True)
                torch.cuda.empty_cache()
    res["wall_s"] = time.time() - t0
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    for err in res["errors"]:
        print("not measured:", err)


if __name__ == "__main__":
    main()
