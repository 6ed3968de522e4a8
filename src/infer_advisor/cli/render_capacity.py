"""Print a capacity search (plan --rate) as a ranking: the workload and targets restated, the chosen fleet and its
price, the two runners-up and why they lost, each other GPU type folded into one line ("A40: 1,408 GPUs, 12x the
cost") or hidden past :data:`HIDE_PAST_COST_RATIO` (``--all`` shows them), and the full per-GPU table with
``--explain``. Latency figures are named plainly: TTFT (time to first token), TPOT (mean time per output token),
ITL (the gap between two tokens of one answer; the target is on its p99).
"""

from __future__ import annotations

import re

from ..capacity.result import Candidate, CapacityResult
from ..capacity.targets import TARGET_METRICS

# Other GPU types costing this many times the chosen fleet or more are hidden unless --all (issue 25: 1,408 A40s
# "meeting the targets" for an 8B model read as an answer).
HIDE_PAST_COST_RATIO = 10.0
MAX_OTHER_GPUS = 4  # other GPU types shown one line each before the rest are counted and hidden
_PLAIN = {"ttft_p90": "p90 TTFT (time to first token)", "ttft_p99": "p99 TTFT (time to first token)",
          "itl_p99": "p99 ITL (gap between two tokens)", "e2e_p90": "p90 end to end (whole request)"}
_SHORT = {"ttft_p90": "p90 TTFT", "ttft_p99": "p99 TTFT", "itl_p99": "p99 ITL", "e2e_p90": "p90 end to end"}


def _ms(v: float | None) -> str:
    return "-" if v is None else (f"{v * 1000:.0f} ms" if v < 1 else f"{v:.3g} s")


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


def _option(c: Candidate) -> str:
    return (f"{c.replicas} x {c.gpus_per_replica} {c.gpu} ({c.layout}, {c.engine}, {c.quantization}, KV {c.kv_cache_dtype}, "
            f"budget {c.max_num_batched_tokens})")


def _cost_ratio(c: Candidate, chosen: Candidate | None) -> float | None:
    if chosen is None or c.cost_per_hour is None or not chosen.cost_per_hour:
        return None
    return c.cost_per_hour / chosen.cost_per_hour


def _why_lost(r: Candidate, chosen: Candidate) -> str:
    ratio = _cost_ratio(r, chosen)
    if ratio is not None:
        cost = f"{_money(r.cost_per_hour)}/hour, " + (f"{ratio:.2f}x the cost" if ratio > 1.005 else "the same cost, a tie the sizing rules broke")
    else:
        cost = f"{r.total_gpus:,} GPUs against {chosen.total_gpus:,}"
    return (f"{r.replicas} x {r.gpus_per_replica} {r.gpu} ({r.layout}, {r.quantization}, KV {r.kv_cache_dtype}) = "
            f"{r.total_gpus:,} GPUs, {cost}; {r.max_rate_per_replica:.2f} req/s per replica of {_gpus(r.gpus_per_replica)}, "
            f"the chosen {chosen.max_rate_per_replica:.2f}")


def _gpus(n: int) -> str:
    return f"{n} GPU" + ("" if n == 1 else "s")


def _short_words(text: str) -> str:
    """A target's words as the targets row names them ('p90 time to first token' -> 'p90 TTFT')."""
    for name, (_, _, words) in TARGET_METRICS.items():
        text = text.replace(words, _SHORT[name])
    return text.replace("even at a near-idle load", "even near idle")


_RULE = re.compile(r"^(?P<text>.*?)\s*\(rule (?P<rule>[\w.-]+)\)\.?$", re.S)


def sizing_choices(result: CapacityResult) -> list[str]:
    """Each sizing choice that a rule made (``what it did (rule)``); the chosen option's own line is the chosen row
    already."""
    out = []
    for d in result.decisions:
        m = _RULE.match(d)
        if m:
            out.append(f"{m['text']} (rule {m['rule']})")
    return out


def _pct(speed: float) -> str:
    return f"{abs(speed - 1):.0%} {'faster' if speed > 1 else 'slower'}"


def _band_text(c: Candidate) -> str:
    """'p50 X (Y-Z), p90 X (Y-Z) if the replica is a% faster to b% slower than modelled', or the queue growing at an
    edge instead of a figure."""
    b = c.ttft_band
    slower, faster = b.slower, b.faster
    point = f"p50 {_ms(c.ttft_p50_s)}, p90 {_ms(c.ttft_p90_s)}"
    if faster.queue_grows:  # the faster replica's queue grows: so does the modelled one's
        return f"{point}; the queue grows even if the replica is {_pct(faster.speed)} than modelled"
    if slower.queue_grows:
        return (f"p50 {_ms(c.ttft_p50_s)} ({_ms(faster.ttft_p50_s)}), p90 {_ms(c.ttft_p90_s)} ({_ms(faster.ttft_p90_s)}) if "
                f"the replica is {_pct(faster.speed)} than modelled; the queue grows if it is {_pct(slower.speed)}")
    return (f"p50 {_ms(c.ttft_p50_s)} ({_ms(faster.ttft_p50_s)}-{_ms(slower.ttft_p50_s)}), p90 {_ms(c.ttft_p90_s)} "
            f"({_ms(faster.ttft_p90_s)}-{_ms(slower.ttft_p90_s)}) if the replica is {_pct(faster.speed)} to "
            f"{_pct(slower.speed)} than modelled")


def ttft_band_rows(c: Candidate) -> list[tuple[str, str]]:
    """The chosen option's TTFT with its band from the speed model's error (capacity/ttft_band.py), and a plain note
    near the knee."""
    b = c.ttft_band
    if b is None:
        return []
    rows = [("TTFT band", f"{_band_text(c)} (band: {b.band_from})")]
    if b.near_knee:
        rows.append(("", f"each replica runs at {b.utilisation:.0%} of the most it is modelled to sustain: near the knee "
                         "TTFT moves several-fold for a few percent of step-time error (docs/capacity.md)"))
    return rows


def workload_lines(result: CapacityResult) -> list[tuple[str, str]]:
    targets = "; ".join(f"{_PLAIN.get(k, TARGET_METRICS[k][2])} <= {_ms(v)}" for k, v in result.targets.given().items())
    return [("workload", f"{result.rate:g} requests/s; prompt tokens {result.input_tokens}, answer tokens {result.output_tokens}"),
            ("targets", targets or "none given (the fleet is sized for the rate alone)")]


def other_gpu_lines(result: CapacityResult, *, show_all: bool = False) -> tuple[list[str], str | None]:
    """One line per other GPU type (best option first), and a line saying what was hidden (None: nothing)."""
    chosen = result.chosen
    shown = [(r.gpu, r.layout, r.replicas, r.quantization) for r in result.runners_up]
    others = [c for c in result.best_per_gpu if (chosen is None or c.gpu != chosen.gpu)
              and (c.gpu, c.layout, c.replicas, c.quantization) not in shown]  # a runner-up is already a line
    lines, hidden_cost, hidden_more = [], 0, 0
    for c in others:
        ratio = _cost_ratio(c, chosen)
        if c.replicas and c.meets_targets:
            if ratio is not None and ratio >= HIDE_PAST_COST_RATIO and not show_all:
                hidden_cost += 1
                continue
            cost = f", {ratio:.1f}x the cost" if ratio is not None else (f", {_money(c.cost_per_hour)}/hour" if c.cost_per_hour else "")
            text = f"{c.gpu}: {c.total_gpus:,} GPUs ({c.replicas} x {c.gpus_per_replica}, {c.layout}, {c.quantization}){cost}"
        elif "sizing.fold-absurd-fleets" in (c.why_not or "") and not show_all:  # folded by the sizing rule: past the ratio
            hidden_cost += 1
            continue
        else:
            text = f"{c.gpu}: {_short_words(c.why_not or 'misses the targets')}"
        if len(lines) >= MAX_OTHER_GPUS and not show_all:
            hidden_more += 1
            continue
        lines.append(text)
    parts = ([f"{hidden_cost} at {HIDE_PAST_COST_RATIO:g}x the chosen fleet or more"] if hidden_cost else []) + (
        [f"{hidden_more} more"] if hidden_more else [])
    hidden = f"GPU types hidden: {', '.join(parts)}; --all shows them" if parts else None
    return lines, hidden


def summary_rows(result: CapacityResult, *, show_all: bool = False) -> list[tuple[str, str]]:
    """(label, text) rows: what was asked, the chosen fleet, the runners-up and why they lost, the other GPU types."""
    rows = workload_lines(result)
    c = result.chosen
    if c:
        checks = ", ".join(f"{_SHORT.get(k.target, k.words)} {_ms(k.value_s)}" for k in c.checks)
        cost = (f"{_money(c.cost_per_hour)}/hour, ${c.usd_per_million_output_tokens:.2f}/M output tokens"
                if c.cost_per_hour is not None and c.usd_per_million_output_tokens is not None else "no price known")
        rows.append(("chosen", f"{_option(c)} = {c.total_gpus:,} GPUs, {cost}; {checks or 'no target'} at "
                               f"{result.rate / max(c.replicas, 1):.2f} req/s per replica (of {c.max_rate_per_replica:.2f})"))
        rows += ttft_band_rows(c)
        rows += [("sizing" if i == 0 else "", d) for i, d in enumerate(sizing_choices(result))]
        if c.physics:
            rows.append(("physics", "at its peak: " + ", ".join(f"{p.name.replace('_', ' ')} {p.share:.0%}" for p in c.physics)
                         + " of the limit" + (" (the simulated rate broke a limit and was lowered to it)" if c.physics_capped else "")))
        for r in result.runners_up:
            rows.append(("runner-up", _why_lost(r, c)))
    elif result.binding:
        b = result.binding
        rows.append(("no option", f"meets every target. The {b.words} target binds: the best any option reaches at a near-idle "
                                  f"load is {_ms(b.best_value_s)} ({b.best_option}) against {_ms(b.limit_s)}, {b.by_factor:.2f}x "
                                  f"over. {b.suggestion}."))
    else:
        rows.append(("no option", "meets every target (--explain shows why each one fails)."))
    lines, hidden = other_gpu_lines(result, show_all=show_all)
    rows += [("other GPUs" if i == 0 else "", line) for i, line in enumerate(lines)]
    if hidden:
        rows.append(("" if lines else "other GPUs", f"({hidden})"))
    price = f"; ${c.price.usd_per_gpu_hour:g}/GPU-hour, {c.price.source.split(' (http')[0].removeprefix('catalog default: ')}" if (
        c and c.price) else ""
    rows.append(("figures", f"simulated{price}"))  # how: the chosen row's budget, docs/capacity.md
    return rows


def footer_lines(result: CapacityResult) -> list[str]:
    out = [f"Searched {result.candidates_considered} candidates, simulated {result.candidates_simulated}, in "
           f"{result.search_seconds:.1f} s. Figures: {result.source}."]
    if result.accuracy:
        out.append(f"Accuracy: {result.accuracy}")
    out += [f"Note: {n}" for n in result.notes]
    return out


def _in_block(rows: list[tuple[str, str]], n: int, label: str) -> bool:
    """Row ``n`` continues the block that starts at the last labelled row above it."""
    return next((lab for lab, _ in reversed(rows[:n]) if lab), None) == label


def capacity_lines(result: CapacityResult, *, full: bool = False, show_all: bool = False) -> list[str]:
    """Markdown lines: the same content the terminal shows."""
    from ._console import md_cell as _md_cell

    out = ["### Sizing", ""]
    out += [f"- **{_md_cell(label)}**: {_md_cell(text)}" if label else f"  - {_md_cell(text)}"
            for label, text in summary_rows(result, show_all=show_all)]
    if full:
        out += ["", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        out += ["| " + " | ".join(_md_cell(cell) for cell in _row(cand)) + " |" for cand in result.best_per_gpu]
        out += ["", *(_md_cell(ln) for ln in footer_lines(result))]
    return out


def _one_line(text: str, room: int) -> str:
    """A sizing choice in one terminal line: its first sentence, cut to ``room`` keeping its ``(rule ...)``."""
    m = _RULE.match(text)
    if m and len(text) > room:  # the first sentence, else what comes before its colon
        head = m["text"].split(". ")[0]
        head = head if len(head) + len(m["rule"]) + 8 <= room else head.split(": ")[0]
        text = f"{head} (rule {m['rule']})"
    return text if len(text) <= room else _cut_keeping_rule(text, room)


def _cut_keeping_rule(text: str, room: int) -> str:
    """``text`` cut to ``room`` with '…', the ``(rule ...)`` that ends it kept whole (--explain has the rest)."""
    m = _RULE.match(text)
    tail = f" (rule {m['rule']})" if m else ""
    head = m["text"] if m else text
    keep = max(room - len(tail) - 1, 10)
    return (head if len(head) <= keep else head[:keep] + "…") + tail


def print_capacity(result: CapacityResult, console, *, full: bool = False, show_all: bool = False) -> None:
    """The ranking on ``console`` (labels in a column, text wrapped under them); with ``full``, the per-GPU table."""
    import textwrap

    from rich.table import Table

    from ._console import cell

    room = max(console.width - 11, 30)
    rows = summary_rows(result, show_all=show_all)
    for n, (label, text) in enumerate(rows):
        if not full and (label == "sizing" or (label == "" and n and _in_block(rows, n, "sizing"))):
            text = _one_line(text, room)  # one line per choice, its rule kept (--explain and JSON: whole)
        wrapped = textwrap.wrap(text, room, break_on_hyphens=False) or [""]
        style = "bold green" if label == "chosen" else "bold red" if label == "no option" else None
        for i, line in enumerate(wrapped):
            console.print(cell(f"{label if i == 0 else '':<10} {line}"), style=style, soft_wrap=True)
    if not full:
        return
    t = Table(title="best option per GPU type", show_header=True, header_style="bold")
    for h in HEADER:
        t.add_column(h, overflow="fold")
    for cand in result.best_per_gpu:
        t.add_row(*(cell(x) for x in _row(cand)))
    console.print(t)
    for ln in footer_lines(result):
        console.print(cell(ln), style="dim")
