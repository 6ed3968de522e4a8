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


def summary_lines(result: CapacityResult) -> list[str]:
    """The answer in words: what was asked, the chosen fleet and price, why it beat the runners-up (or what binds)."""
    targets = ", ".join(f"{k} {v:g} s" for k, v in result.targets.given().items()) or "none"
    out = [f"Sizing for {result.rate:g} requests/s (prompts {result.input_tokens}, answers {result.output_tokens}; "
           f"targets: {targets})"]
    c = result.chosen
    if c:
        cost = (f", {_money(c.cost_per_hour)}/hour, ${c.usd_per_million_output_tokens:.2f} per million output tokens"
                if c.cost_per_hour is not None and c.usd_per_million_output_tokens is not None else ", no price known")
        label = "Cheapest" if c.cost_per_hour is not None else "Fewest GPUs"
        out.append(f"{label} that meets every target: {c.replicas} x {c.gpus_per_replica} {c.gpu} ({c.layout}, {c.engine}, "
                   f"{c.quantization}, KV {c.kv_cache_dtype}, max_num_batched_tokens {c.max_num_batched_tokens}) = "
                   f"{c.total_gpus} GPUs{cost}; p90 TTFT {_ms(c.ttft_p90_s)}, p99 ITL {_ms(c.itl_p99_s)}, "
                   f"{c.max_rate_per_replica:.2f} req/s per replica.")
        if c.price:
            out.append(f"Price: {c.price.usd_per_gpu_hour:g} USD/GPU-hour ({c.price.source}).")
        out += [f"- beat {w}" for w in result.why_chosen]
        if c.physics:
            out.append("Physics at that rate: " + ", ".join(f"{p.name} {p.share:.0%} of its limit" for p in c.physics)
                       + (" (the simulated rate broke a limit and was lowered to it)" if c.physics_capped else "") + ".")
        out += [f"- choice: {d}" for d in result.decisions]
    elif result.binding:
        b = result.binding
        out.append(f"No option meets every target. The {b.words} target binds: the best any option reaches at a near-idle load "
                   f"is {_ms(b.best_value_s)} ({b.best_option}) against {_ms(b.limit_s)}, {b.by_factor:.2f}x over. "
                   f"{b.suggestion}.")
    else:
        out.append("No option meets every target (see the table for why each one fails).")
    return out


def footer_lines(result: CapacityResult) -> list[str]:
    out = [f"Searched {result.candidates_considered} candidates, simulated {result.candidates_simulated}, in "
           f"{result.search_seconds:.1f} s. Figures: {result.source}."]
    if result.accuracy:
        out.append(f"Accuracy: {result.accuracy}")
    out += [f"Note: {n}" for n in result.notes]
    return out


def capacity_lines(result: CapacityResult) -> list[str]:
    """Markdown lines: the same content the rich output shows."""
    head = summary_lines(result)
    out = [f"### {head[0]}", "", *(ln if ln.startswith("- ") else ln + "  " for ln in head[1:]), ""]
    out += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in _row(cand)) + " |" for cand in result.best_per_gpu]
    return out + ["", *footer_lines(result)]


def print_capacity(result: CapacityResult, console) -> None:
    from rich.markup import escape
    from rich.table import Table

    head = summary_lines(result)
    console.print(f"[bold]{escape(head[0])}[/bold]")
    for ln in head[1:]:
        console.print(ln, markup=False, style="green" if ln.startswith(("Cheapest", "Fewest")) else None)
    t = Table(title="best option per GPU type", show_header=True, header_style="bold")
    for h in HEADER:
        t.add_column(h, overflow="fold")
    for cand in result.best_per_gpu:
        t.add_row(*(escape(x) for x in _row(cand)))
    console.print(t)
    for ln in footer_lines(result):
        console.print(ln, markup=False, style="dim")
