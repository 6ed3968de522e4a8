"""Measure what batched LoRA adds to a decoder layer's linear layers on one GPU, for the LoRA speed term.

Run on the lent H200 (about 60-80 s; needs only torch):

    python3 benchmarks/gpu/lora_kernels.py            # writes $OUT/lora_kernels.json (OUT defaults to /tmp/out)
    python3 benchmarks/gpu/lora_kernels.py --smoke    # tiny shapes on any device (CPU: eager timing, no graphs)

Shapes: one Llama-3.1-8B decoder layer as vLLM wraps it for LoRA (tp 1, bf16): qkv_proj (4096 -> 4096|1024|1024,
three output slices), o_proj (4096 -> 4096), gate_up_proj (4096 -> 14336|14336, two slices), down_proj
(14336 -> 4096). vLLM keeps, per wrapped layer and slice, ``lora_a_stacked`` (slots x rank x in) and
``lora_b_stacked`` (slots x out x rank) and runs per layer one *shrink* (x @ A over every slice: tokens x rank
per slice) and one *expand* (that @ B added into the base output), each as one Triton kernel over all slices and
all adapters of the batch (vllm/lora/ops/triton_ops/lora_shrink_op.py, lora_expand_op.py; tokens sorted by
adapter, one program per adapter x token tile x output tile: SGMV-style). No vLLM or punica kernel is available on
the lent machine, so four stand-ins run:

- ``triton_sgmv``: this file's own Triton kernels written the same way (not vLLM's code): per wrapped module, the
  fp32 shrink buffer zeroed, one split-K shrink (grid: split-K x token tiles x rank tiles, slices, adapters; atomic
  adds) and one expand adding into the base output (grid: token tiles x output tiles, slices, adapters), tokens
  grouped by adapter: 3 launches per module, as vLLM V1. Checked against per-adapter matmuls on tiny shapes first
  (``triton_sgmv_check_rel_error``). Needs Triton (bundled with torch's CUDA wheels); a CPU smoke runs it under
  ``TRITON_INTERPRET=1`` in float16.

- ``grouped_mm``: ``torch._grouped_mm`` over the adapters' segments, one shrink over all slices and one expand per
  slice (closest to SGMV: one launch for all adapters). Segments are padded to 16 rows, as the Triton kernels'
  token tiles (BLOCK_M >= 16) are.
- ``segment_loop``: per adapter, one matmul for the shrink and one ``addmm_`` per slice for the expand (launches
  grow with the adapters in the batch: what an SGMV kernel avoids).
- ``gathered_bmm``: per token, its adapter's A and B gathered (``index_select``) and ``bmm`` (BGMV-style, as vLLM
  V0's decode path; the gather writes the weights once more than the real kernel reads them). Only where the
  gathered copy stays under 1 GiB.

Each case is timed as CUDA-graph replays of the layer's four base GEMMs with and without the LoRA kernels, the
layer rotating over two copies of its weights and adapter buffers so that the L2 does not keep them; the figure
used is the increment (with - without) per layer, which is what a graph-capturing engine pays per layer and step.
Tokens are spread evenly over the distinct adapters (cases with more adapters than tokens are skipped). Ranks 8 to
128; tokens per batch 1, 4, 16, 64, 256 (decode) and 2048 (prefill-like); distinct adapters 1 to 64.

Also: the bytes of the stacked adapter buffers of the whole model (32 layers) for a few slot counts and ranks,
computed from the shapes and measured with ``torch.cuda.memory_allocated``, as a check on estimate/lora.py.

Cases run in priority order (a coarse grid first) until ``--budget-s``; those not reached are listed as skipped.
Needs only torch; nothing from infer_advisor.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from lora_sgmv import sgmv_module, triton  # beside this script; triton is None without Triton

# Llama-3.1-8B (data/models/meta-llama--Llama-3.1-8B.json): hidden 4096, 32 query heads and 8 KV heads of 128,
# MLP 14336, 32 layers.
FULL = {"hidden": 4096, "q": 4096, "kv": 1024, "inter": 14336, "layers": 32}
TINY = {"hidden": 64, "q": 64, "kv": 32, "inter": 128, "layers": 2}
RANKS = [8, 16, 32, 64, 128]
TOKENS = [1, 4, 16, 64, 256, 2048]
ADAPTERS = [1, 2, 4, 8, 16, 32, 64]
COARSE = {"rank": {8, 64}, "tokens": {1, 16, 256, 2048}, "adapters": {1, 8, 64}}
SEGMENT_ROWS = 16  # grouped_mm segments padded to the Triton kernels' smallest token tile
GATHER_LIMIT_BYTES = 1 << 30
DTYPE = [torch.bfloat16]  # float16 for a CPU smoke under TRITON_INTERPRET=1 (numpy has no bfloat16)
COPIES = 2  # layer copies rotated through: base weights alone are 436 MB per copy, far above the 60 MB L2


def modules(s: dict) -> list[tuple[str, int, list[int]]]:
    """(name, input width, output slice widths) of the LoRA-wrapped linear layers of one decoder layer at tp 1."""
    h, q, kv, i = s["hidden"], s["q"], s["kv"], s["inter"]
    return [("qkv_proj", h, [q, kv, kv]), ("o_proj", q, [h]), ("gate_up_proj", h, [i, i]), ("down_proj", i, [h])]


def elements_per_slot_per_rank(s: dict) -> int:
    """A and B elements of one adapter slot of rank 1 in one layer: every slice has its own A (in) and B (out)."""
    return sum(len(outs) * n_in + sum(outs) for _, n_in, outs in modules(s))


class Timer:
    """Seconds per call of ``fn``: CUDA-graph replays on a GPU (median of 3 rounds), wall clock on a CPU."""

    def __init__(self, cuda: bool):
        self.cuda = cuda

    def _eager(self, fn, n: int) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if self.cuda:
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n

    def __call__(self, fn) -> float:
        fn()
        est = self._eager(fn, 2)
        if not self.cuda:
            return est
        inner = max(1, min(16, round(1.5e-3 / max(est, 1e-7))))
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(inner):
                fn()
        g.replay()
        torch.cuda.synchronize()
        per_graph = self._graph_seconds(g, 1)
        replays = max(1, min(50, round(4e-3 / max(per_graph, 1e-7))))
        rounds = [self._graph_seconds(g, replays) / inner for _ in range(3)]
        del g
        return statistics.median(rounds)

    @staticmethod
    def _graph_seconds(g, replays: int) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            g.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / replays


class Layer:
    """One copy of a decoder layer's base weights and its stacked LoRA buffers (``slots`` adapters of ``rank``)."""

    def __init__(self, s: dict, rank: int, slots: int, dev: str, sgmv: bool = False):
        bf = dict(device=dev, dtype=DTYPE[0])
        self.mods = modules(s)
        self.w = [torch.randn(sum(outs), n_in, **bf) * 0.02 for _, n_in, outs in self.mods]
        # A of every slice side by side (one shrink reads them all), B per slice: (slots, rank, out)
        self.a = [column_major(torch.randn(slots, n_in, len(outs) * rank, **bf) * 0.02) for _, n_in, outs in self.mods]
        self.b = [[column_major(torch.randn(slots, rank, o, **bf) * 0.02) for o in outs] for _, _, outs in self.mods]
        self.rank = rank
        # the SGMV kernels' layout: A (slices, slots, in, rank); B (slices, slots, rank, widest slice), columns masked
        self.a_all = [torch.randn(len(outs), slots, n_in, rank, **bf) * 0.02 for _, n_in, outs in self.mods] if sgmv else []
        self.b_all = [torch.randn(len(outs), slots, rank, max(outs), **bf) * 0.02 for _, _, outs in self.mods] if sgmv else []


def base(layer: Layer, x: torch.Tensor, xd: torch.Tensor) -> list[torch.Tensor]:
    """The four base GEMMs (attention and activation left out: they do not change with LoRA)."""
    return [F.linear(xd if name == "down_proj" else x, w) for (name, _, _), w in zip(layer.mods, layer.w)]


def lora_grouped_mm(layer: Layer, xs: list[torch.Tensor], ys: list[torch.Tensor], offs: torch.Tensor, d: int) -> None:
    r = layer.rank
    for (_, _, outs), x, y, a, bs in zip(layer.mods, xs, ys, layer.a, layer.b):
        h = torch._grouped_mm(x, a[:d], offs=offs)
        col = 0
        for j, (o, b) in enumerate(zip(outs, bs)):
            y[:, col:col + o] += torch._grouped_mm(h[:, j * r:(j + 1) * r].contiguous(), b[:d], offs=offs)
            col += o


def lora_triton_sgmv(layer: Layer, xs: list[torch.Tensor], ys: list[torch.Tensor], meta: dict, d: int) -> None:
    for k, (x, y) in enumerate(zip(xs, ys)):
        sgmv_module(x, layer.a_all[k], layer.b_all[k], y, meta["h"][k], meta["start"], meta["len"], meta["col"][k],
                    meta["width"][k], d, layer.rank)


def lora_segment_loop(layer: Layer, xs: list[torch.Tensor], ys: list[torch.Tensor], bounds: list[tuple[int, int]]) -> None:
    r = layer.rank
    for (_, _, outs), x, y, a, bs in zip(layer.mods, xs, ys, layer.a, layer.b):
        for k, (t0, t1) in enumerate(bounds):
            h = x[t0:t1] @ a[k]
            col = 0
            for j, (o, b) in enumerate(zip(outs, bs)):
                y[t0:t1, col:col + o].addmm_(h[:, j * r:(j + 1) * r], b[k])
                col += o


def lora_gathered(layer: Layer, xs: list[torch.Tensor], ys: list[torch.Tensor], idx: torch.Tensor) -> None:
    r = layer.rank
    for (_, _, outs), x, y, a, bs in zip(layer.mods, xs, ys, layer.a, layer.b):
        h = torch.bmm(x.unsqueeze(1), a.index_select(0, idx))
        col = 0
        for j, (o, b) in enumerate(zip(outs, bs)):
            y[:, col:col + o] += torch.bmm(h[:, :, j * r:(j + 1) * r], b.index_select(0, idx)).squeeze(1)
            col += o


def grouped_mm_works(dev: str) -> bool:
    """Whether ``torch._grouped_mm`` runs here on bf16 with 16-row segments (some builds want B column-major:
    ``Layer`` then stores it so, see ``column_major``)."""
    if not hasattr(torch, "_grouped_mm"):
        return False
    x = torch.randn(32, 64, device=dev, dtype=DTYPE[0])
    offs = torch.tensor([16, 32], device=dev, dtype=torch.int32)
    for major in (False, True):
        try:
            torch._grouped_mm(x, column_major(torch.randn(2, 64, 16, device=dev, dtype=DTYPE[0]), major), offs=offs)
            COLUMN_MAJOR[0] = major
            return True
        except Exception:  # noqa: BLE001 - this build cannot; the other two methods still run
            continue
    return False


COLUMN_MAJOR = [False]


def column_major(t: torch.Tensor, major: bool | None = None) -> torch.Tensor:
    """``t`` with its last two dimensions stored column-major when this build's grouped GEMM wants it."""
    return t.transpose(-2, -1).contiguous().transpose(-2, -1) if (COLUMN_MAJOR[0] if major is None else major) else t


def spread(tokens: int, d: int) -> list[int]:
    return [tokens // d + (1 if k < tokens % d else 0) for k in range(d)]


def case_op(method: str, layers: list[Layer], s: dict, tokens: int, d: int, dev: str):
    """A callable running one layer (rotating over the copies) with ``method``'s LoRA, or the base GEMMs alone."""
    bf = dict(device=dev, dtype=DTYPE[0])
    per = spread(tokens, d)
    if method == "grouped_mm":
        rows = [-(-p // SEGMENT_ROWS) * SEGMENT_ROWS for p in per]
        offs = torch.tensor([sum(rows[:k + 1]) for k in range(d)], device=dev, dtype=torch.int32)
        n = sum(rows)
    else:
        n = tokens
    x, xd = torch.randn(n, s["hidden"], **bf), torch.randn(n, s["inter"], **bf)
    bounds = [(sum(per[:k]), sum(per[:k + 1])) for k in range(d)]
    idx = torch.tensor([t % d for t in range(tokens)], device=dev, dtype=torch.long)
    meta = sgmv_meta(layers[0], per, n, dev) if method == "triton_sgmv" else {}
    state = {"c": 0}

    def op():
        layer = layers[state["c"] % len(layers)]
        state["c"] += 1
        ys = base(layer, x, xd)
        xs = [xd if name == "down_proj" else x for name, _, _ in layer.mods]
        if method == "grouped_mm":
            lora_grouped_mm(layer, xs, ys, offs, d)
        elif method == "segment_loop":
            lora_segment_loop(layer, xs, ys, bounds)
        elif method == "gathered_bmm":
            lora_gathered(layer, xs, ys, idx)
        elif method == "triton_sgmv":
            lora_triton_sgmv(layer, xs, ys, meta, d)

    return op, n


def sgmv_meta(layer: Layer, per: list[int], n: int, dev: str) -> dict:
    """Segment starts and lengths per adapter, slice column offsets and widths per module, fp32 shrink buffers."""
    i32 = dict(device=dev, dtype=torch.int32)
    outs = [o for _, _, o in layer.mods]
    return {"start": torch.tensor([sum(per[:k]) for k in range(len(per))], **i32), "len": torch.tensor(per, **i32),
            "col": [torch.tensor([sum(o[:j]) for j in range(len(o))], **i32) for o in outs],
            "width": [torch.tensor(o, **i32) for o in outs],
            "h": [torch.empty(len(o), n, layer.rank, device=dev, dtype=torch.float32) for o in outs]}


def check_sgmv(dev: str) -> float:
    """Largest difference, relative to the largest output, between the Triton SGMV kernels and per-adapter matmuls on
    the same weights (tiny shapes, 3 adapters of uneven segments): the kernels compute what they stand for."""
    layer = Layer(TINY, 16, 3, dev, sgmv=True)
    for k, (_, _, outs) in enumerate(layer.mods):  # the same weights in the segment loop's layout
        a_all, b_all = layer.a_all[k], layer.b_all[k]
        layer.a[k] = a_all.permute(1, 2, 0, 3).reshape(a_all.shape[1], a_all.shape[2], -1).contiguous()
        layer.b[k] = [b_all[j, :, :, :o].contiguous() for j, o in enumerate(outs)]
    per = [5, 1, 10]
    n = sum(per)
    x, xd = torch.randn(n, TINY["hidden"], device=dev, dtype=DTYPE[0]), torch.randn(n, TINY["inter"], device=dev, dtype=DTYPE[0])
    xs = [xd if name == "down_proj" else x for name, _, _ in layer.mods]
    ys_ref, ys = base(layer, x, xd), base(layer, x, xd)
    lora_segment_loop(layer, xs, ys_ref, [(sum(per[:k]), sum(per[:k + 1])) for k in range(3)])
    lora_triton_sgmv(layer, xs, ys, sgmv_meta(layer, per, n, dev), 3)
    scale = max(float(r.float().abs().max()) for r in ys_ref)
    return max(float((a.float() - b.float()).abs().max()) for a, b in zip(ys, ys_ref)) / scale


def launches(method: str, s: dict, d: int) -> int:
    """Kernels the torch stand-in launches for LoRA per layer (vLLM's Triton path: 2 per wrapped layer, 8 per layer)."""
    slices = sum(len(outs) for _, _, outs in modules(s))
    if method == "grouped_mm":
        return len(modules(s)) + 3 * slices  # shrink, then per slice: contiguous copy, grouped expand, add
    if method == "segment_loop":
        return d * (len(modules(s)) + slices)
    if method == "triton_sgmv":
        return 3 * len(modules(s))  # as vLLM V1: buffer zeroing, shrink, expand per module
    return 2 * len(modules(s)) + 4 * slices  # gathers and bmm for shrink and each slice's expand, plus the add


def cases(ranks, tokens_list, adapters_list) -> list[tuple[int, int, int]]:
    """(rank, tokens, adapters) with adapters <= tokens, the coarse grid first."""
    all_cases = [(r, t, d) for r in ranks for t in tokens_list for d in adapters_list if d <= t]
    coarse = [c for c in all_cases if c[0] in COARSE["rank"] and c[1] in COARSE["tokens"] and c[2] in COARSE["adapters"]]
    return coarse + [c for c in all_cases if c not in coarse]


def measure_cases(s: dict, dev: str, timer: Timer, grid: list, deadline: float, have_grouped: bool,
                  have_triton: bool) -> tuple[list, list, dict]:
    rows, skipped, base_s = [], [], {}
    max_slots = max(d for _, _, d in grid)
    by_rank: dict[int, list[Layer]] = {}
    eps = elements_per_slot_per_rank(s)
    for rank, tokens, d in grid:
        if time.monotonic() > deadline:
            skipped.append({"rank": rank, "tokens": tokens, "adapters": d, "why": "time budget"})
            continue
        if rank not in by_rank:
            by_rank.clear()
            if dev.startswith("cuda"):
                torch.cuda.empty_cache()
            by_rank[rank] = [Layer(s, rank, max_slots, dev, sgmv=have_triton) for _ in range(COPIES)]
        layers = by_rank[rank]
        if tokens not in base_s:
            op, _ = case_op("base", layers, s, tokens, 1, dev)
            base_s[tokens] = timer(op)
        for method in ("triton_sgmv", "grouped_mm", "segment_loop", "gathered_bmm"):
            row = {"method": method, "rank": rank, "tokens": tokens, "adapters": d}
            if (method == "grouped_mm" and not have_grouped) or (method == "triton_sgmv" and not have_triton):
                continue
            gathered = tokens * rank * max(max(n_in, max(outs)) for _, n_in, outs in modules(s)) * 2
            if method == "gathered_bmm" and gathered > GATHER_LIMIT_BYTES:
                continue
            try:
                op, n = case_op(method, layers, s, tokens, d, dev)
                with_lora = timer(op)
            except Exception as err:  # noqa: BLE001 - record why, keep going
                rows.append({**row, "error": repr(err)[:300]})
                continue
            base_n = base_s[tokens] if n == tokens else timer(case_op("base", layers, s, n, 1, dev)[0])
            rows.append({**row, "rows_run": n, "base_s": base_n, "with_lora_s": with_lora,
                         "lora_s": with_lora - base_n, "launches_per_layer": launches(method, s, d),
                         "adapter_bytes_read": d * rank * eps * 2,
                         "lora_flops": 2 * tokens * rank * eps})
    return rows, skipped, {str(t): v for t, v in sorted(base_s.items())}


def buffer_memory(s: dict, dev: str, settings: list[tuple[int, int]]) -> list[dict]:
    """Stacked adapter buffers of the whole model: bytes from the shapes and as allocated."""
    out = []
    eps = elements_per_slot_per_rank(s)
    for slots, rank in settings:
        computed = s["layers"] * slots * rank * eps * 2
        row = {"slots": slots, "rank": rank, "computed_bytes": computed, "computed_gib": computed / 2**30}
        if dev.startswith("cuda"):
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            before = torch.cuda.memory_allocated()
            bufs = []
            for _ in range(s["layers"]):
                for _, n_in, outs in modules(s):
                    for o in outs:  # vLLM: one A (slots, 1, rank, in) and one B (slots, 1, out, rank) per slice
                        bufs.append(torch.empty(slots, 1, rank, n_in, device=dev, dtype=torch.bfloat16))
                        bufs.append(torch.empty(slots, 1, o, rank, device=dev, dtype=torch.bfloat16))
            row["allocated_bytes"] = torch.cuda.memory_allocated() - before
            del bufs
        out.append(row)
    return out


def table(rows: list[dict], shapes: str) -> str:
    """LoRA increment per layer in microseconds: one line per method, rank and tokens; columns are adapters."""
    ok = [r for r in rows if "lora_s" in r]
    adapters = sorted({r["adapters"] for r in ok})
    lines = [f"LoRA increment per decoder layer, us ({shapes} shapes, bf16); columns: distinct adapters",
             f"{'method':<13}{'rank':>5}{'tok':>6}{'base':>8} | " + "".join(f"{d:>8}" for d in adapters)]
    keys = sorted({(r["method"], r["rank"], r["tokens"]) for r in ok})
    for m, rk, t in keys:
        cells = {r["adapters"]: r for r in ok if (r["method"], r["rank"], r["tokens"]) == (m, rk, t)}
        base_us = next(iter(cells.values()))["base_s"] * 1e6
        lines.append(f"{m:<13}{rk:>5}{t:>6}{base_us:>8.1f} | "
                     + "".join(f"{cells[d]['lora_s'] * 1e6:>8.1f}" if d in cells else f"{'':>8}" for d in adapters))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="tiny shapes, any device (CPU: eager timing)")
    p.add_argument("--out", default=None, help="JSON path (default $OUT/lora_kernels.json, OUT=/tmp/out)")
    p.add_argument("--budget-s", type=float, default=65.0, help="stop starting new cases after this many seconds")
    args = p.parse_args(argv)
    t_start = time.monotonic()
    cuda = torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"
    s = TINY if args.smoke else FULL
    ranks, tokens_list, adapters_list = ([8, 16], [1, 4, 16], [1, 2, 4]) if args.smoke else (RANKS, TOKENS, ADAPTERS)
    interpret = os.environ.get("TRITON_INTERPRET") == "1"
    have_triton = triton is not None and (cuda or (args.smoke and interpret))
    if interpret and not cuda:
        DTYPE[0] = torch.float16
    have_grouped = grouped_mm_works(dev)
    out_path = Path(args.out or os.path.join(os.environ.get("OUT", "/tmp/out"), "lora_kernels.json"))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "script": "benchmarks/gpu/lora_kernels.py", "smoke": args.smoke, "shapes": s,
        "modules": [{"name": n, "in": i, "out_slices": o} for n, i, o in modules(s)],
        "elements_per_slot_per_rank_per_layer": elements_per_slot_per_rank(s),
        "device": torch.cuda.get_device_name() if cuda else platform.processor() or "cpu",
        "torch": torch.__version__, "cuda": torch.version.cuda, "grouped_mm": have_grouped,
        "triton": getattr(triton, "__version__", None) if have_triton else None,
        "timing": "CUDA-graph replay, median of 3 rounds" if cuda else "eager wall clock (smoke)",
        "segment_rows": SEGMENT_ROWS, "copies": COPIES,
    }
    if have_triton:
        try:
            result["triton_sgmv_check_rel_error"] = check_sgmv(dev)
        except Exception as err:  # noqa: BLE001 - record why; the method is then not trusted
            result["triton_sgmv_check_error"] = repr(err)[:300]
            have_triton = False
    result["buffer_memory"] = buffer_memory(s, dev, [(1, 8), (4, 16), (4, 64), (16, 64), (8, 128)])
    grid = cases(ranks, tokens_list, adapters_list)
    rows, skipped, base_s = measure_cases(s, dev, Timer(cuda), grid, t_start + args.budget_s, have_grouped, have_triton)
    result.update({"base_layer_s_by_tokens": base_s, "rows": rows, "skipped": skipped,
                   "wall_s": time.monotonic() - t_start})
    out_path.write_text(json.dumps(result, indent=1))
    print(table(rows, "tiny" if args.smoke else "Llama-3.1-8B"))
    print(f"buffers (computed GiB / allocated): "
          + ", ".join(f"{m['slots']}x r{m['rank']}: {m['computed_gib']:.3f}/{m.get('allocated_bytes', 0) / 2**30:.3f}"
                      for m in result["buffer_memory"]))
    print(f"{len(rows)} rows, {len(skipped)} skipped, {result['wall_s']:.1f} s -> {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
