"""Choosing among layouts that fit equally well by the goal: the speed model decides what the rules leave open.

With the same engine and weights, several layouts can hold the workload (Llama-3.1-70B on 8x H100: TP4 x 2 replicas
or TP8 x 1). The rules rank them equal; the goal decides, through the step-time model:

- latency: the lowest time for one request (time to first token + answer tokens x time per output token) at the
  plan's concurrency;
- throughput: the most output tokens per second over the whole node (replicas x one replica);
- balanced: the most output tokens per second among the layouts within 25% of the fastest time per output token.

The comparison is kept and printed with the plan (decision ``layout.goal``), so `--explain` says why TP4 beat TP8.
"""

from __future__ import annotations

from typing import Any

BALANCED_SLACK = 1.25  # balanced: time per output token within this factor of the fastest layout's


def _figures(model, hw, engine: str, dtype: str, kv: str, qv, layout, concurrency: int, input_tokens: int, request_tokens: int) -> dict:
    from ..estimate.step_time import build_step_model, decode_shape, prefill_shape

    step = build_step_model(model, gpu=hw.gpu, engine=engine, quantization=qv.value, dtype=dtype, kv_cache_dtype=kv,
                            tp=layout.tp, pp=layout.pp, nodes=layout.nodes, expert_parallel=layout.ep,
                            cpu_cores=hw.cpu.cores if hw.cpu else None, cpu_simd=hw.cpu.simd if hw.cpu else None)
    batch = max(1, concurrency)
    ctx = max(1, (input_tokens + request_tokens) / 2)
    output = max(1, request_tokens - input_tokens)
    micro = max(1, -(-batch // layout.pp))  # pipeline stages keep pp micro-batches of batch / pp sequences in flight
    tpot = step.seconds(decode_shape(micro, ctx))  # every sequence gets a token per pass through the stages
    ttft = step.seconds(prefill_shape(1, max(1, input_tokens)))
    replicas = max(1, hw.total_gpus // layout.gpus)
    per_replica = batch / tpot
    return {"tpot": tpot, "ttft": ttft, "e2e": ttft + output * tpot, "replicas": replicas, "throughput": replicas * per_replica}


def pick_by_goal(model, hw, request: Any, engine: str, dtype: str, kv: str, fitting: list, concurrency: int,
                 input_tokens: int, request_tokens: int) -> tuple[int, str]:
    """Index of the layout the goal prefers among ``fitting`` [(qv, lv, layout, memory)], and the comparison in words."""
    figs = [_figures(model, hw, engine, dtype, kv, qv, layout, concurrency, input_tokens, request_tokens)
            for qv, _, layout, _ in fitting]
    goal = request.goal
    idx = list(range(len(fitting)))
    if goal == "latency":
        best = min(idx, key=lambda i: (figs[i]["e2e"], fitting[i][2].gpus))
        measure = "time for one request"
    elif goal == "throughput":
        best = max(idx, key=lambda i: (figs[i]["throughput"], -fitting[i][2].gpus))
        measure = "output tokens/s over the node"
    else:
        fastest = min(f["tpot"] for f in figs)
        allowed = [i for i in idx if figs[i]["tpot"] <= BALANCED_SLACK * fastest]
        best = max(allowed, key=lambda i: (figs[i]["throughput"], -fitting[i][2].gpus))
        measure = f"output tokens/s among layouts within {BALANCED_SLACK:.2f}x of the fastest time per output token"

    def describe(i: int) -> str:
        lo, f = fitting[i][2], figs[i]
        return (f"TP{lo.tp}" + (f" x PP{lo.pp}" if lo.pp > 1 else "") + (" EP" if lo.ep else "")
                + f" x {f['replicas']} replica(s): {f['ttft'] * 1e3:.0f} ms to first token, {f['tpot'] * 1e3:.1f} ms per output token, "
                  f"{f['throughput']:,.0f} tok/s over the node")

    others = "; ".join(describe(i) for i in idx if i != best)
    why = (f"goal {goal}: best {measure} at concurrency {max(1, concurrency)} (step-time model, estimated): {describe(best)}; "
           f"beat {others}")
    return best, why
