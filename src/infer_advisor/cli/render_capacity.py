"""Print a capacity search (plan --rate): the answer, why it won, the best option per GPU type, the binding target."""

from __future__ import annotations

from ..capacity.result import Candidate, CapacityResult


def _ms(v: float | None) -> str:
    return "-" if v is None else (f"{v * 1000:.0f} ms" if v < 10 else f"{v:.1f} s")


def _money(v: float | None) -> str:
    return "-" if v is None else f"${v:,.2f}"


def _row(c: Candidate) -> list[str]:
    if c.why_not and not c.replicas:
        return [c.gpu, c.layout, c.engine, c.quantization, "-", "-", "-", "-", "-", "-", "-", c.why_not]
    return [
        c.gpu, c.layout, c.engine, f"{c.quantization}/{c.kv_cache_dtype} b{c.max_num_batched_tokens}",
        f"{c.replicas} x {c.gpus_per_replica}", f"{c.max_rate_per_replica:.2f}", _ms(c.ttft_p90_s), _ms(c.itl_p99_s),
        f"{c.output_tokens_per_s:,.0f}" if c.output_tokens_per_s else "-", _money(c.cost_per_hour),
        f"{c.usd_per_million_output_tokens:.2f}" if c.usd_per_million_output_tokens is not None else "-",
        "meets targets" if c.meets_targets else (c.why_not or ""),
    ]


HEADER = ["GPU", "layout", "engine", "weights/KV budget", "replicas x GPUs", "req/s per replica", "p90 TTFT", "p99 ITL",
          "output tok/s", "$/hour", "$/M tokens", "verdict"]


def capacity_lines(result: CapacityResult, fmt: str = "markdown") -> list[str]:
    """Markdown (or plain) lines: the same content the rich table shows."""
    out = [f"**Sizing for {result.rate:g} requests/s** (prompts {result.input_tokens}, answers {result.output_tokens}; targets: "
           + (", ".join(f"{k} {v:g} s" for k, v in result.targets.given().items()) or "none") + ")", ""]
    c = result.chosen
    if c:
        out.append(f"**Cheapest that meets every target:** {c.replicas} x {c.gpus_per_replica} {c.gpu} ({c.layout}, {c.engine}, "
                   f"{c.quantization}, KV {c.kv_cache_dtype}, max_num_batched_tokens {c.max_num_batched_tokens}) = "
                   f"{c.total_gpus} GPUs, {_money(c.cost_per_hour)}/hour, ${c.usd_per_million_output_tokens:.2f} per million output "
                   f"tokens; p90 TTFT {_ms(c.ttft_p90_s)}, p99 ITL {_ms(c.itl_p99_s)}, {c.max_rate_per_replica:.2f} req/s per replica.")
        if c.price:
            out.append(f"Price: {c.price.usd_per_gpu_hour:g} USD/GPU-hour ({c.price.source}).")
        for w in result.why_chosen:
            out.append(f"- beat {w}")
    elif result.binding:
        b = result.binding
        out.append(f"**No option meets every target.** The {b.words} target binds: the best any option reaches at a near-idle load is "
                   f"{_ms(b.best_value_s)} ({b.best_option}) against {_ms(b.limit_s)}, {b.by_factor:.2f}x over. {b.suggestion}.")
    else:
        out.append("**No option meets every target** (see the table for why each one fails).")
    out += ["", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for cand in result.best_per_gpu:
        out.append("| " + " | ".join(_row(cand)) + " |")
    out += ["", f"Searched {result.candidates_considered} candidates, simulated {result.candidates_simulated}, in "
            f"{result.search_seconds:.1f} s. {result.source}."]
    if result.accuracy:
        out.append(f"Accuracy: {result.accuracy}")
    out += [f"Note: {n}" for n in result.notes]
    return out


def print_capacity(result: CapacityResult, console=None) -> None:
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.table import Table

    console = console or Console()
    lines = capacity_lines(result)
    head = [ln for ln in lines if not ln.startswith("|")]
    split = head.index("") if "" in head else len(head)
    console.print(Markdown("\n".join(head[:split + 1 + sum(1 for x in head[split + 1:] if x.startswith('- '))])))
    t = Table(title="Best option per GPU type", show_header=True, header_style="bold")
    for h in HEADER:
        t.add_column(h, overflow="fold")
    for cand in result.best_per_gpu:
        t.add_row(*_row(cand))
    console.print(t)
    for ln in lines:
        if ln.startswith(("Searched", "Accuracy", "Note")):
            console.print(ln)
