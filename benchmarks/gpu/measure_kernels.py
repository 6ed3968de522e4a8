"""Measure the kernels a decode or prefill step is built from, on one GPU, for the operator-level speed model.

Run on the lent H200 (benchmarks/results/README.md has the exact command):

    python3 benchmarks/gpu/measure_kernels.py --out $OUT/kernels_h200.json --budget-s 480

Sections (each writes into the JSON as soon as it finishes; a section past the time budget is skipped and
says so):

1. ``ceilings``: device-to-device copy bandwidth (bytes read + written) and dense matrix rates (bf16
   ``torch.matmul``, fp8 ``torch._scaled_mm``) at 8192^3 on random data.
2. ``gemm``: ``y = x @ W^T`` for the weight shapes of catalog models (Llama-3.1-8B, Llama-3.1-70B at TP 1/2/4/8,
   Qwen2.5-32B, Qwen3-30B-A3B experts, lm_heads) at M (tokens in the step) from 1 to 16384, in bf16 and fp8.
   Timed as CUDA-graph replays of ``reps`` products that rotate through enough weight copies to defeat the
   60 MB L2 (in a model every layer's weights differ), so each figure is what a graph-capturing engine gets.
3. ``attention``: ``scaled_dot_product_attention`` (GQA, bf16) for decode (one query token per sequence
   against a KV cache of L tokens, batch B) and causal prefill (B=1, L tokens), graph-replayed like the GEMMs.
4. ``grouped_gemm``: MoE experts through ``torch._grouped_mm`` (Qwen3-30B-A3B: 128 experts of 2048x768, top 8)
   at 1 to 8192 routed tokens, when this torch has it.
5. ``decode_step``: a whole model's decode step in plain PyTorch (RMSNorm, RoPE, GQA attention over a static
   KV cache, SwiGLU MLP, lm_head, greedy sample), captured in one CUDA graph and replayed, at batch 1 to 256
   and context 1024 (and 4096 at small batch): the floor that vLLM, SGLang and TensorRT-LLM build on.
   Models: Llama-3.1-8B and Qwen2.5-32B from the catalog configs, random bf16 weights.
6. ``prefill_step``: the same models' eager forward over one prompt of 512 to 8192 tokens (compute bound).

Needs only torch (and the catalog JSON files); nothing from infer_advisor. ``--smoke`` runs tiny shapes on
any device (CPU included, no graphs) so the script itself can be tested without a GPU.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

CATALOG = Path(__file__).resolve().parents[2] / "src" / "infer_advisor" / "data" / "models"
L2_DEFEAT_BYTES = 512 * 2**20  # rotate weights through at least this many bytes (H200 L2 is 60 MB)
M_VALUES = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384]


def load_config(name: str) -> dict:
    path = CATALOG / (name.replace("/", "--") + ".json")
    cfg = json.loads(path.read_text())["config"]
    return cfg.get("text_config", cfg)


class Timer:
    """Times ``fn`` by CUDA-graph replay (GPU) or wall clock (CPU smoke)."""

    def __init__(self, device: str, smoke: bool):
        self.cuda = device.startswith("cuda")
        self.smoke = smoke

    def _eager(self, fn, n: int) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if self.cuda:
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n

    def __call__(self, fn, copies: int = 1, inner: int | None = None) -> float:
        """Seconds per call of ``fn``, median of 5 rounds of graph replays.

        The graph holds ``inner`` back-to-back calls (enough to cover every rotated weight copy for short
        kernels, about 1 ms of work otherwise) and each round replays it for about 10 ms.
        """
        fn()
        if not self.cuda:
            return self._eager(fn, 3)
        est = self._eager(fn, 3)
        if inner is None:
            inner = max(1, min(64, round(1e-3 / max(est, 1e-7))))
            if est < 1e-4:
                inner = max(inner, min(copies, 64))
        replays = max(1, min(20, round(10e-3 / max(inner * est, 1e-7))))
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(inner):
                fn()
        g.replay()
        torch.cuda.synchronize()
        rounds = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(replays):
                g.replay()
            end.record()
            end.synchronize()
            rounds.append(start.elapsed_time(end) / 1e3 / (replays * inner))
        del g
        return statistics.median(rounds)


def ceilings(dev: str, timer: Timer, smoke: bool) -> dict:
    out: dict = {}
    n = (1 << 20) if smoke else (1 << 30)  # 2 GiB of bf16 per buffer on the GPU
    a = torch.randn(n, device=dev, dtype=torch.bfloat16)
    b = torch.empty_like(a)
    t = timer(lambda: b.copy_(a))
    out["copy_bytes_read_plus_written_per_s"] = 2 * a.numel() * a.element_size() / t
    del a, b
    s = 256 if smoke else 8192
    x = torch.randn(s, s, device=dev, dtype=torch.bfloat16)
    w = torch.randn(s, s, device=dev, dtype=torch.bfloat16)
    t = timer(lambda: torch.matmul(x, w.t()))
    out["bf16_matmul_flops_per_s"] = 2 * s**3 / t
    out["bf16_matmul_shape"] = [s, s, s]
    if timer.cuda:
        try:
            xf, wf = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
            one = torch.ones((), device=dev, dtype=torch.float32)
            t = timer(lambda: torch._scaled_mm(xf, wf.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
            out["fp8_scaled_mm_flops_per_s"] = 2 * s**3 / t
        except Exception as err:  # noqa: BLE001 - record why, keep going
            out["fp8_error"] = repr(err)[:300]
    return out


def copy_eager(dev: str, smoke: bool) -> dict:
    """Device-to-device copy timed eagerly with events (cross-check of the graph-replayed copy)."""
    n = (1 << 20) if smoke else (1 << 30)
    a = torch.randn(n, device=dev, dtype=torch.bfloat16)
    b = torch.empty_like(a)
    out = {}
    if not dev.startswith("cuda"):
        return {"skipped": "needs CUDA"}
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        b.copy_(a)
    end.record()
    end.synchronize()
    t = start.elapsed_time(end) / 1e3 / 10
    out["copy_bytes_read_plus_written_per_s"] = 2 * a.numel() * a.element_size() / t
    return out


def gemm_shapes(smoke: bool) -> list[dict]:
    """(name, K, N) of y = x W^T, W: N x K, for catalog layer shapes."""
    if smoke:
        return [{"name": "tiny.qkv", "k": 64, "n": 96}, {"name": "tiny.down", "k": 128, "n": 64}]
    shapes = []
    l8 = load_config("meta-llama/Llama-3.1-8B")
    h, i, hd = l8["hidden_size"], l8["intermediate_size"], l8["hidden_size"] // l8["num_attention_heads"]
    q, kv = l8["num_attention_heads"] * hd, l8["num_key_value_heads"] * hd
    shapes += [
        {"name": "llama3.1-8b.qkv", "k": h, "n": q + 2 * kv},
        {"name": "llama3.1-8b.o", "k": q, "n": h},
        {"name": "llama3.1-8b.gate_up", "k": h, "n": 2 * i},
        {"name": "llama3.1-8b.down", "k": i, "n": h},
        {"name": "llama3.1-8b.lm_head", "k": h, "n": l8["vocab_size"]},
    ]
    l70 = load_config("meta-llama/Llama-3.1-70B")
    h, i, hd = l70["hidden_size"], l70["intermediate_size"], l70["hidden_size"] // l70["num_attention_heads"]
    q, kv = l70["num_attention_heads"] * hd, l70["num_key_value_heads"] * hd
    for tp in (1, 4, 8):
        shapes += [
            {"name": f"llama3.1-70b.tp{tp}.qkv", "k": h, "n": (q + 2 * kv) // tp},
            {"name": f"llama3.1-70b.tp{tp}.o", "k": q // tp, "n": h},
            {"name": f"llama3.1-70b.tp{tp}.gate_up", "k": h, "n": 2 * i // tp},
            {"name": f"llama3.1-70b.tp{tp}.down", "k": i // tp, "n": h},
        ]
    q32 = load_config("Qwen/Qwen2.5-32B")
    h, i = q32["hidden_size"], q32["intermediate_size"]
    shapes += [{"name": "qwen2.5-32b.gate_up", "k": h, "n": 2 * i}, {"name": "qwen2.5-32b.down", "k": i, "n": h}]
    moe = load_config("Qwen/Qwen3-30B-A3B")
    shapes += [
        {"name": "qwen3-30b-a3b.expert.gate_up", "k": moe["hidden_size"], "n": 2 * moe["moe_intermediate_size"]},
        {"name": "qwen3-30b-a3b.expert.down", "k": moe["moe_intermediate_size"], "n": moe["hidden_size"]},
    ]
    return shapes


def gemm(dev: str, timer: Timer, smoke: bool, deadline: float, dtypes: list[str]) -> list[dict]:
    rows: list[dict] = []
    m_values = [1, 4, 16, 64] if smoke else M_VALUES
    for shape in gemm_shapes(smoke):
        k, n = shape["k"], shape["n"]
        w_bytes = k * n * 2
        copies = 1 if smoke else max(2, math.ceil(L2_DEFEAT_BYTES / w_bytes))
        weights = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
        for dtype in dtypes:
            if dtype == "fp8" and not timer.cuda:
                continue
            ws = weights if dtype == "bf16" else [w.to(torch.float8_e4m3fn) for w in weights]
            one = torch.ones((), device=dev, dtype=torch.float32)
            for m in m_values:
                if time.monotonic() > deadline:
                    rows.append({"shape": shape["name"], "skipped": "time budget"})
                    return rows
                mm = m if dtype == "bf16" else max(16, math.ceil(m / 16) * 16)  # _scaled_mm wants multiples of 16
                x = torch.randn(mm, k, device=dev, dtype=torch.bfloat16)
                xs = x if dtype == "bf16" else x.to(torch.float8_e4m3fn)
                idx = [0]

                def op(ws=ws, xs=xs, dtype=dtype, one=one, idx=idx):
                    w = ws[idx[0] % len(ws)]
                    idx[0] += 1
                    if dtype == "bf16":
                        return torch.matmul(xs, w.t())
                    return torch._scaled_mm(xs, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

                try:
                    t = timer(op, copies=len(ws))
                except Exception as err:  # noqa: BLE001
                    rows.append({"shape": shape["name"], "dtype": dtype, "m": m, "error": repr(err)[:200]})
                    continue
                wb = k * n * (2 if dtype == "bf16" else 1)
                rows.append({
                    "shape": shape["name"], "dtype": dtype, "m": m, "m_run": mm, "k": k, "n": n, "seconds": t,
                    "weight_bytes": wb, "flops": 2 * m * k * n,
                    "bytes_per_s": (wb + (m * k + m * n) * 2) / t, "flops_per_s": 2 * mm * k * n / t,
                })
            del ws
        del weights
        if timer.cuda:
            torch.cuda.empty_cache()
    return rows


def attention(dev: str, timer: Timer, smoke: bool, deadline: float) -> list[dict]:
    rows: list[dict] = []
    hq, hkv, d = (4, 2, 16) if smoke else (32, 8, 128)
    decode = [(1, 256), (4, 256)] if smoke else [
        (b, L) for b in (1, 8, 32, 128) for L in (512, 2048, 8192, 32768) if b * L <= 128 * 8192
    ]
    for b, L in decode:
        if time.monotonic() > deadline:
            rows.append({"kind": "decode", "skipped": "time budget"})
            break
        copies = 1 if smoke else max(2, math.ceil(L2_DEFEAT_BYTES / (2 * b * hkv * L * d * 2)))
        qs = torch.randn(b, hq, 1, d, device=dev, dtype=torch.bfloat16)
        ks = [torch.randn(b, hkv, L, d, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
        vs = [torch.randn(b, hkv, L, d, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
        idx = [0]

        def op(qs=qs, ks=ks, vs=vs, idx=idx):
            j = idx[0] % len(ks)
            idx[0] += 1
            return F.scaled_dot_product_attention(qs, ks[j], vs[j], enable_gqa=True)

        try:
            t = timer(op, copies=copies)
            kv_bytes = 2 * b * hkv * L * d * 2
            rows.append({"kind": "decode", "batch": b, "context": L, "heads_q": hq, "heads_kv": hkv, "head_dim": d,
                         "seconds": t, "kv_bytes": kv_bytes, "bytes_per_s": kv_bytes / t})
        except Exception as err:  # noqa: BLE001
            rows.append({"kind": "decode", "batch": b, "context": L, "error": repr(err)[:200]})
        del ks, vs
    prefill = [64, 128] if smoke else [256, 512, 1024, 2048, 4096, 8192, 16384]
    for L in prefill:
        if time.monotonic() > deadline:
            rows.append({"kind": "prefill", "skipped": "time budget"})
            break
        q = torch.randn(1, hq, L, d, device=dev, dtype=torch.bfloat16)
        k = torch.randn(1, hkv, L, d, device=dev, dtype=torch.bfloat16)
        v = torch.randn(1, hkv, L, d, device=dev, dtype=torch.bfloat16)
        try:
            t = timer(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True))
            flops = 4 * hq * d * L * (L + 1) / 2  # QK^T and AV over the causal half
            rows.append({"kind": "prefill", "batch": 1, "context": L, "heads_q": hq, "heads_kv": hkv, "head_dim": d,
                         "seconds": t, "flops": flops, "flops_per_s": flops / t})
        except Exception as err:  # noqa: BLE001
            rows.append({"kind": "prefill", "context": L, "error": repr(err)[:200]})
    return rows


def grouped_gemm(dev: str, timer: Timer, smoke: bool, deadline: float) -> list[dict]:
    if not hasattr(torch, "_grouped_mm") or not timer.cuda:
        return [{"skipped": "torch._grouped_mm unavailable or not on CUDA"}]
    moe = load_config("Qwen/Qwen3-30B-A3B")
    e, k_top, h, inter = moe["num_experts"], moe["num_experts_per_tok"], moe["hidden_size"], moe["moe_intermediate_size"]
    w1 = torch.randn(e, h, 2 * inter, device=dev, dtype=torch.bfloat16) * 0.02  # gate_up, (E, K, N)
    w2 = torch.randn(e, inter, h, device=dev, dtype=torch.bfloat16) * 0.02
    rows = []
    for tokens in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192):
        if time.monotonic() > deadline:
            rows.append({"skipped": "time budget"})
            break
        routed = tokens * k_top
        touched = min(e, routed)
        # balanced routing over `touched` experts; group offsets must be multiples of 16 rows for the kernel
        per = [routed // touched + (1 if j < routed % touched else 0) for j in range(touched)] + [0] * (e - touched)
        per_pad = [math.ceil(p / 16) * 16 if p else 0 for p in per]
        offs = torch.tensor(list(itertools_accumulate(per_pad)), device=dev, dtype=torch.int32)
        x = torch.randn(sum(per_pad), h, device=dev, dtype=torch.bfloat16)
        try:
            def op(x=x, offs=offs):
                y = torch._grouped_mm(x, w1, offs=offs)
                return torch._grouped_mm(y[:, :inter].contiguous(), w2, offs=offs)

            try:
                t = timer(op)
            except RuntimeError:  # some builds want the expert matrices column-major
                w1 = w1.transpose(-2, -1).contiguous().transpose(-2, -1)
                w2 = w2.transpose(-2, -1).contiguous().transpose(-2, -1)
                t = timer(op)
            wbytes = touched * (h * 2 * inter + inter * h) * 2
            rows.append({"tokens": tokens, "routed": routed, "experts_touched": touched, "rows_run": sum(per_pad),
                         "seconds": t, "weight_bytes": wbytes, "flops": 2 * routed * 3 * h * inter,
                         "bytes_per_s": wbytes / t, "flops_per_s": 2 * routed * 3 * h * inter / t})
        except Exception as err:  # noqa: BLE001
            rows.append({"tokens": tokens, "error": repr(err)[:300]})
            break
    return rows


def itertools_accumulate(values):
    total = 0
    for v in values:
        total += v
        yield total


# ---------------------------------------------------------------- a whole model in plain PyTorch


class StaticLlama:
    """A Llama/Qwen2-style decoder with random bf16 weights and a static KV cache (one tensor per layer)."""

    def __init__(self, cfg: dict, dev: str, batch: int, max_len: int, layers: int | None = None):
        self.h = cfg["hidden_size"]
        self.nh = cfg["num_attention_heads"]
        self.nkv = cfg.get("num_key_value_heads", self.nh)
        self.d = cfg.get("head_dim") or self.h // self.nh
        self.inter = cfg["intermediate_size"]
        self.vocab = cfg["vocab_size"]
        self.n_layers = layers or cfg["num_hidden_layers"]
        self.bias = bool(cfg.get("attention_bias", cfg.get("model_type") == "qwen2"))
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        dt = torch.bfloat16
        q, kv = self.nh * self.d, self.nkv * self.d

        def rnd(*shape):
            return torch.randn(*shape, device=dev, dtype=dt) * 0.02

        self.embed = rnd(self.vocab, self.h)
        self.lm_head = rnd(self.vocab, self.h)
        self.norm = torch.ones(self.h, device=dev, dtype=dt)
        self.layers = []
        for _ in range(self.n_layers):
            self.layers.append({
                "ln1": torch.ones(self.h, device=dev, dtype=dt), "ln2": torch.ones(self.h, device=dev, dtype=dt),
                "qkv": rnd(q + 2 * kv, self.h), "qkv_b": rnd(q + 2 * kv) if self.bias else None,
                "o": rnd(self.h, q), "gate_up": rnd(2 * self.inter, self.h), "down": rnd(self.h, self.inter),
                "k": torch.zeros(batch, self.nkv, max_len, self.d, device=dev, dtype=dt),
                "v": torch.zeros(batch, self.nkv, max_len, self.d, device=dev, dtype=dt),
            })
        inv = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, self.d, 2, device=dev, dtype=torch.float32) / self.d))
        pos = torch.arange(max_len, device=dev, dtype=torch.float32)
        freqs = torch.outer(pos, inv)
        self.cos, self.sin = freqs.cos().to(dt), freqs.sin().to(dt)

    def weight_bytes(self) -> int:
        n = self.embed.numel() + self.lm_head.numel()
        for L in self.layers:
            n += sum(L[k].numel() for k in ("qkv", "o", "gate_up", "down"))
        return 2 * n

    def _rms(self, x, w):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + self.eps)).to(x.dtype) * w

    def _rope(self, x, pos0: int, n: int):
        c, s = self.cos[pos0:pos0 + n], self.sin[pos0:pos0 + n]
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)

    def forward(self, tokens, pos0: int):
        """tokens: (B, T) at positions pos0..pos0+T-1; returns the greedy next token per sequence."""
        b, t = tokens.shape
        x = self.embed[tokens]
        q_w, kv_w = self.nh * self.d, self.nkv * self.d
        for L in self.layers:
            hdn = self._rms(x, L["ln1"])
            qkv = hdn @ L["qkv"].t()
            if L["qkv_b"] is not None:
                qkv = qkv + L["qkv_b"]
            q, k, v = qkv.split([q_w, kv_w, kv_w], dim=-1)
            q = self._rope(q.view(b, t, self.nh, self.d).transpose(1, 2), pos0, t)
            k = self._rope(k.view(b, t, self.nkv, self.d).transpose(1, 2), pos0, t)
            L["k"][:, :, pos0:pos0 + t] = k
            L["v"][:, :, pos0:pos0 + t] = v.view(b, t, self.nkv, self.d).transpose(1, 2)
            ctx = pos0 + t
            a = F.scaled_dot_product_attention(q, L["k"][:, :, :ctx], L["v"][:, :, :ctx], is_causal=t > 1, enable_gqa=True)
            x = x + a.transpose(1, 2).reshape(b, t, q_w) @ L["o"].t()
            hdn = self._rms(x, L["ln2"])
            gu = hdn @ L["gate_up"].t()
            g, u = gu.chunk(2, dim=-1)
            x = x + (F.silu(g) * u) @ L["down"].t()
        last = self._rms(x[:, -1], self.norm)
        return (last @ self.lm_head.t()).argmax(-1)


def decode_step(dev: str, timer: Timer, smoke: bool, deadline: float, models: list[str]) -> list[dict]:
    rows = []
    for name in models:
        cfg = load_config(name)
        layers = 2 if smoke else None
        if smoke:
            cfg = {**cfg, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "head_dim": 16}
        plan = [(1, 128), (2, 128)] if smoke else [
            (b, c) for c in (1024, 4096) for b in (1, 2, 4, 8, 16, 32, 64, 128, 256) if not (c == 4096 and b > 64)
        ]
        if timer.cuda:  # keep weights + static KV cache under 80% of the card
            hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
            kv_tok = 2 * cfg["num_hidden_layers"] * cfg.get("num_key_value_heads", cfg["num_attention_heads"]) * hd * 2
            h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
            w = 2 * (2 * v * h + cfg["num_hidden_layers"] * (4 * h * h + 3 * h * i))
            cap = 0.8 * torch.cuda.get_device_properties(0).total_memory
            dropped = [(b, c) for b, c in plan if w + kv_tok * b * (c + 8) > cap]
            plan = [(b, c) for b, c in plan if (b, c) not in dropped]
            if dropped:
                rows.append({"model": name, "skipped_points": dropped, "why": "weights + static KV over 80% of the card"})
        model = None
        built_for = None
        for batch, context in plan:
            if time.monotonic() > deadline:
                rows.append({"model": name, "skipped": "time budget"})
                break
            need = (batch, context + 8)
            if built_for is None or built_for[0] < need[0] or built_for[1] < need[1]:
                model = None
                if timer.cuda:
                    torch.cuda.empty_cache()
                max_b = max(b for b, c in plan if c == context)
                try:
                    model = StaticLlama(cfg, dev, max_b, context + 8, layers)
                except torch.OutOfMemoryError:
                    rows.append({"model": name, "batch": batch, "context": context, "error": "out of memory building"})
                    model, built_for = None, None
                    break
                built_for = (max_b, context + 8)
            tokens = torch.randint(0, model.vocab, (max(built_for[0], batch), 1), device=dev)[:batch]
            # Views of the first `batch` rows of each static cache: what one step at this batch reads.
            full = [(L["k"], L["v"]) for L in model.layers]
            for L in model.layers:
                L["k"], L["v"] = L["k"][:batch], L["v"][:batch]
            try:
                t = timer(lambda: model.forward(tokens, context - 1), inner=1)
                kv_bytes = 2 * model.n_layers * batch * model.nkv * context * model.d * 2
                rows.append({"model": name, "batch": batch, "context": context, "seconds": t,
                             "weight_bytes": model.weight_bytes(), "kv_bytes_read": kv_bytes,
                             "tokens_per_s": batch / t, "layers": model.n_layers})
            except Exception as err:  # noqa: BLE001
                rows.append({"model": name, "batch": batch, "context": context, "error": repr(err)[:300]})
            for L, (k, v) in zip(model.layers, full):
                L["k"], L["v"] = k, v
        del model
        if timer.cuda:
            torch.cuda.empty_cache()
    return rows


def prefill_step(dev: str, smoke: bool, deadline: float, models: list[str]) -> list[dict]:
    rows = []
    for name in models:
        cfg = load_config(name)
        layers = 2 if smoke else None
        if smoke:
            cfg = {**cfg, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "head_dim": 16}
        lengths = [32, 64] if smoke else [512, 1024, 2048, 4096, 8192]
        model = StaticLlama(cfg, dev, 1, max(lengths) + 8, layers)
        for n in lengths:
            if time.monotonic() > deadline:
                rows.append({"model": name, "skipped": "time budget"})
                break
            tokens = torch.randint(0, model.vocab, (1, n), device=dev)
            with torch.no_grad():
                for _ in range(2):
                    model.forward(tokens, 0)
                if dev.startswith("cuda"):
                    torch.cuda.synchronize()
                times = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    model.forward(tokens, 0)
                    if dev.startswith("cuda"):
                        torch.cuda.synchronize()
                    times.append(time.perf_counter() - t0)
            rows.append({"model": name, "prompt": n, "seconds": statistics.median(times), "layers": model.n_layers,
                         "weight_bytes": model.weight_bytes()})
        del model
        if dev.startswith("cuda"):
            torch.cuda.empty_cache()
    return rows


def small_kernels(dev: str, timer: Timer, smoke: bool, deadline: float) -> list[dict]:
    """Per-kernel time of the small elementwise/reduction kernels around the GEMMs (norms, RoPE, SiLU, adds)."""
    rows = []
    hidden = 64 if smoke else 4096
    for m in ([1, 8] if smoke else [1, 8, 64, 256, 1024, 4096]):
        if time.monotonic() > deadline:
            rows.append({"skipped": "time budget"})
            break
        x = torch.randn(m, hidden, device=dev, dtype=torch.bfloat16)
        w = torch.randn(hidden, device=dev, dtype=torch.bfloat16)
        ops = {
            "mul": lambda x=x, w=w: x * w,
            "add": lambda x=x: x + x,
            "to_float": lambda x=x: x.float(),
            "mean_lastdim": lambda x=x: x.float().pow(2).mean(-1, keepdim=True),
            "silu": lambda x=x: F.silu(x),
        }
        for name, op in ops.items():
            try:
                kernels = 3 if name == "mean_lastdim" else 1
                t = timer(op, inner=64)
                rows.append({"op": name, "m": m, "hidden": hidden, "kernels": kernels, "seconds": t,
                             "seconds_per_kernel": t / kernels, "bytes": x.numel() * x.element_size() * 2})
            except Exception as err:  # noqa: BLE001
                rows.append({"op": name, "m": m, "error": repr(err)[:200]})
    return rows


def kernel_count(dev: str, smoke: bool, models: list[str]) -> list[dict]:
    """CUDA kernels launched by one eager decode step of the plain-PyTorch model, per layer (profiler)."""
    if not dev.startswith("cuda"):
        return [{"skipped": "needs CUDA"}]
    from torch.profiler import ProfilerActivity, profile

    rows = []
    for name in models:
        cfg = load_config(name)
        counts = {}
        for layers in (2, 4):
            model = StaticLlama(cfg, dev, 8, 1100, layers)
            tok = torch.randint(0, model.vocab, (8, 1), device=dev)
            model.forward(tok, 1023)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                model.forward(tok, 1023)
                torch.cuda.synchronize()
            kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            names: dict[str, int] = {}
            for e in kernels:
                names[e.name[:80]] = names.get(e.name[:80], 0) + 1
            counts[layers] = (len(kernels), names)
            del model
        per_layer = (counts[4][0] - counts[2][0]) / 2
        rows.append({"model": name, "kernels_2_layers": counts[2][0], "kernels_4_layers": counts[4][0],
                     "kernels_per_layer": per_layer, "outside_layers": counts[2][0] - 2 * per_layer,
                     "kernel_names_4_layers": counts[4][1]})
        torch.cuda.empty_cache()
    return rows


def compiled_decode(dev: str, timer: Timer, smoke: bool, deadline: float, models: list[str]) -> list[dict]:
    """The same decode step through torch.compile (Inductor fuses the small kernels), then graph-captured."""
    if not dev.startswith("cuda"):
        return [{"skipped": "needs CUDA"}]
    rows = []
    name = models[0]
    cfg = load_config(name)
    if smoke:
        return [{"skipped": "smoke"}]
    import torch._dynamo

    torch._dynamo.config.cache_size_limit = 64
    for batch in (1, 16, 64, 256):
        if time.monotonic() > deadline - 60:
            rows.append({"model": name, "batch": batch, "skipped": "time budget"})
            break
        model = StaticLlama(cfg, dev, batch, 1032)
        tokens = torch.randint(0, model.vocab, (batch, 1), device=dev)
        fwd = torch.compile(model.forward, mode="max-autotune-no-cudagraphs", dynamic=False, fullgraph=False)
        try:
            t_c = time.monotonic()
            fwd(tokens, 1023)
            torch.cuda.synchronize()
            compile_s = time.monotonic() - t_c
            t = timer(lambda: fwd(tokens, 1023), inner=1)
            rows.append({"model": name, "batch": batch, "context": 1024, "seconds": t, "compile_seconds": compile_s,
                         "tokens_per_s": batch / t, "weight_bytes": model.weight_bytes()})
        except Exception as err:  # noqa: BLE001
            rows.append({"model": name, "batch": batch, "error": repr(err)[:300]})
        del model, fwd
        torch.cuda.empty_cache()
    return rows


def pick_sdpa_backend(dev: str) -> tuple[object | None, dict]:
    """The first fused SDPA backend that runs GQA decode and causal prefill here (flash, cuDNN, efficient)."""
    if not dev.startswith("cuda"):
        return None, {"backend": "default (CPU)"}
    from torch.nn.attention import SDPBackend, sdpa_kernel

    tried = {}
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
        try:
            with sdpa_kernel([backend]):
                q = torch.randn(2, 32, 1, 128, device=dev, dtype=torch.bfloat16)
                k = torch.randn(2, 8, 64, 128, device=dev, dtype=torch.bfloat16)
                F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
                q = torch.randn(1, 32, 64, 128, device=dev, dtype=torch.bfloat16)
                F.scaled_dot_product_attention(q, k[:1], k[:1], is_causal=True, enable_gqa=True)
                torch.cuda.synchronize()
            return backend, {"backend": backend.name, "tried": tried}
        except Exception as err:  # noqa: BLE001
            tried[backend.name] = repr(err)[:200]
    return None, {"backend": "default (no fused backend took GQA)", "tried": tried}


def gpu_state() -> str:
    import subprocess

    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu,memory.used",
                               "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as err:  # noqa: BLE001
        return f"nvidia-smi failed: {err!r}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget-s", type=float, default=480.0, help="Stop starting new measurements after this many seconds.")
    ap.add_argument("--smoke", action="store_true", help="Tiny shapes on any device (tests the script itself).")
    ap.add_argument("--sections", default="ceilings,decode_step,prefill_step,attention,grouped_gemm,gemm")
    ap.add_argument("--models", default="meta-llama/Llama-3.1-8B,Qwen/Qwen2.5-32B")
    ap.add_argument("--compiled-model", default="meta-llama/Llama-3.1-8B", help="Model for the compiled_decode section.")
    args = ap.parse_args(argv)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    timer = Timer(dev, args.smoke)
    t_start = time.monotonic()
    deadline = t_start + args.budget_s
    torch.manual_seed(0)
    result: dict = {
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "device": torch.cuda.get_device_name(0) if dev == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__, "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "smoke": args.smoke,
        "method": "CUDA-graph replays timed with CUDA events, median of 5 rounds; weights rotated through "
                  f">= {L2_DEFEAT_BYTES >> 20} MiB of copies to defeat L2; random bf16 data",
    }
    if dev == "cuda":
        p = torch.cuda.get_device_properties(0)
        result["device_properties"] = {"multiprocessors": p.multi_processor_count, "total_memory": p.total_memory,
                                       "l2_cache_bytes": getattr(p, "L2_cache_size", None)}
    models = [m for m in args.models.split(",") if m]
    sections = args.sections.split(",")
    backend, result["sdpa"] = pick_sdpa_backend(dev)
    result["gpu_state_start"] = gpu_state() if dev == "cuda" else None

    def save():
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, indent=1))
        tmp.replace(args.out)

    import contextlib

    if backend is not None:
        from torch.nn.attention import sdpa_kernel

        attn_ctx = sdpa_kernel([backend])
    else:
        attn_ctx = contextlib.nullcontext()
    with torch.inference_mode(), attn_ctx:
        for section in sections:
            t0 = time.monotonic()
            if time.monotonic() > deadline:
                result[section] = {"skipped": "time budget"}
                continue
            print(f"[{time.monotonic() - t_start:6.1f}s] {section} ...", flush=True)
            runners = {
                "ceilings": lambda: ceilings(dev, timer, args.smoke),
                "gemm": lambda: gemm(dev, timer, args.smoke, deadline, ["bf16", "fp8"]),
                "attention": lambda: attention(dev, timer, args.smoke, deadline),
                "grouped_gemm": lambda: grouped_gemm(dev, timer, args.smoke, deadline),
                "decode_step": lambda: decode_step(dev, timer, args.smoke, deadline, models),
                "prefill_step": lambda: prefill_step(dev, args.smoke, deadline, models),
                "small_kernels": lambda: small_kernels(dev, timer, args.smoke, deadline),
                "kernel_count": lambda: kernel_count(dev, args.smoke, models),
                "compiled_decode": lambda: compiled_decode(dev, timer, args.smoke, deadline, [args.compiled_model]),
                "copy_eager": lambda: copy_eager(dev, args.smoke),
            }
            try:
                result[section] = runners[section]()
            except Exception as err:  # noqa: BLE001 - keep the other sections
                import traceback

                result[section] = {"error": repr(err)[:500], "traceback": traceback.format_exc()[-2000:]}
                print(f"{section} failed: {err!r}", flush=True)
                if timer.cuda:
                    torch.cuda.empty_cache()
            result.setdefault("section_seconds", {})[section] = round(time.monotonic() - t0, 1)
            save()
    result["gpu_state_end"] = gpu_state() if dev == "cuda" else None
    result["total_seconds"] = round(time.monotonic() - t_start, 1)
    save()
    summary(result)
    return 0


def summary(r: dict) -> None:
    c = r.get("ceilings", {})
    if "copy_bytes_read_plus_written_per_s" in c:
        print(f"copy {c['copy_bytes_read_plus_written_per_s'] / 1e12:.2f} TB/s; bf16 {c.get('bf16_matmul_flops_per_s', 0) / 1e12:.0f} TFLOP/s; "
              f"fp8 {c.get('fp8_scaled_mm_flops_per_s', 0) / 1e12:.0f} TFLOP/s")
    for row in r.get("decode_step", []):
        if "seconds" in row:
            print(f"decode {row['model']:28s} b={row['batch']:4d} ctx={row['context']:5d} {row['seconds'] * 1e3:8.3f} ms  {row['tokens_per_s']:9.0f} tok/s")
    for row in r.get("prefill_step", []):
        if "seconds" in row:
            print(f"prefill {row['model']:28s} n={row['prompt']:5d} {row['seconds'] * 1e3:8.2f} ms")
    g = [x for x in r.get("gemm", []) if "seconds" in x]
    print(f"gemm points {len(g)}; attention points {len([x for x in r.get('attention', []) if 'seconds' in x])}; "
          f"grouped {len([x for x in r.get('grouped_gemm', []) if 'seconds' in x])}; sections {r.get('section_seconds')}")


if __name__ == "__main__":
    sys.exit(main())
