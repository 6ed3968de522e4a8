"""Print a DeploymentPlan: the short answer (cli/render_brief.py) and, with ``--explain``, every figure with its source
and every rule considered, grouped by decision; as rich text (``--format table``) or Markdown (``--format markdown``,
for pull requests and tickets). Both formats show the same rows.

Numbers are never cut: tables fold a long value onto the next line, and in a pipe or a file the console is
200 columns wide (cli/_console.py) instead of rich's 80.
"""

from __future__ import annotations

import sys

from ..formatting import gib


def _hardware(plan) -> tuple[str, str, str]:
    hw = plan.hardware
    if hw.kind == "gpu":
        g = hw.gpus[0]
        text = f"{hw.gpus_per_node}x {g.name}" + (f" x {hw.nodes} nodes" if hw.nodes > 1 else "")
        usable = f" ({gib(g.usable_memory_bytes)} usable)" if g.usable_memory_bytes else ""
        arch = f"{g.gfx_arch or 'AMD'} (ROCm)" if g.vendor == "amd" else f"CC {g.compute_capability}"
        detail = f"{gib(g.memory_bytes)}{usable}, {g.memory_bandwidth_bytes_per_s / 1e12:.2f} TB/s, {arch}, {g.interconnect}"
        return text, detail, g.source
    return "CPU", f"{hw.cpu_cores} cores, {gib(hw.cpu_memory_bytes or 0)} RAM", hw.source


def _requests(n: int) -> str:
    return f"{n} request" + ("" if n == 1 else "s")


def _quantization_text(q) -> str:
    text = q.method + (" (pre-quantized checkpoint)" if q.pre_quantized else "")
    if q.published_checkpoint is not None:
        pc = q.published_checkpoint
        text += f" (published checkpoint {pc.repo}" + (f":{pc.file}" if pc.file else "") + ")"
    if q.converter:
        text += f" - converted by {q.converter} in the artifacts"
    return text + (" - run `infer-advisor quantize` first" if q.needs_quantize_step else "")


def summary_rows(plan) -> list[tuple[str, str, str]]:
    """(what, value, source) rows of the main table."""
    m, mem, eng, q, par = plan.model, plan.memory, plan.engine, plan.quantization, plan.parallelism
    hw_text, hw_detail, hw_src = _hardware(plan)
    unit = "GPU" if plan.hardware.kind == "gpu" else "socket"  # a CPU plan's memory is the host's RAM
    params = f"{m.num_parameters / 1e9:.2f} B params"
    if m.num_active_parameters != m.num_parameters:  # MoE: per token, without the input embedding (as model cards count)
        active = m.num_active_parameters_without_embedding or m.num_active_parameters  # a plan.json written before the field
        params += f" ({active / 1e9:.2f} B active per token)"
    server = f"port {eng.port}" if eng.http_server else "no HTTP server: Python script"
    from .render_brief import auto_kv

    kv_auto = auto_kv(eng)
    src = mem.figure_sources
    amd = plan.hardware.kind == "gpu" and plan.hardware.gpus[0].vendor == "amd"
    word = (lambda k: k.replace("cuda_", "hip_")) if amd else (lambda k: k)  # ROCm's HIP runtime, not CUDA
    overheads = ", ".join(f"{word(k)} {gib(v)}" for k, v in mem.overhead_bytes_per_gpu.items() if v)
    outside = ", ".join(f"{word(k)} {gib(v)}" for k, v in mem.outside_budget_bytes_per_gpu.items() if v)
    calibrated = sorted({k for k, v in src.items() if v == "calibrated (log)"})
    overhead_src = (
        f"calibrated (log): {', '.join(calibrated)}" if calibrated
        else f"estimated ({mem.memory_profile})" if mem.memory_profile else "estimated"
    )  # fmt: skip
    rows = [
        ("model", f"{m.architecture}, {params}, context {m.max_position_embeddings:,}", m.source),
        ("hardware", f"{hw_text}: {hw_detail}", hw_src),
        ("engine", f"{eng.name} {eng.version} ({eng.image}), {server}", "rules"),
        ("quantization", _quantization_text(q), "rules"),
        ("dtype / KV cache", f"{plan.dtype} / {eng.kv_cache_dtype}{kv_auto}", "rules"),
        (
            "parallelism",
            f"TP {par.tensor_parallel_size} x PP {par.pipeline_parallel_size} x nodes {par.nodes}, replicas "
            f"{par.replicas}, executor {par.executor}",
            "rules + memory fit",
        ),
        ("max_model_len / max_num_seqs", f"{eng.max_model_len:,} / {eng.max_num_seqs}", "memory fit"),
        (
            "weights",
            f"{gib(mem.weights_bytes)} total, {gib(mem.weights_bytes_per_gpu)} per {unit}",
            src.get("weights", "estimated"),
        ),
        (
            "KV cache per token",
            f"{mem.kv_cache_bytes_per_token / 1024:.0f} KiB ({mem.kv_cache_bytes_per_token_per_gpu / 1024:.0f} KiB per {unit})",
            "estimated",
        ),
        (
            "activations / overheads",
            f"{gib(mem.activation_bytes_per_gpu)} / {overheads or 'none'}" + (f"; outside the KV budget: {outside}" if outside else ""),
            overhead_src,
        ),
        (
            "KV cache",
            f"{gib(mem.kv_cache_bytes_per_gpu)} per {unit} = {mem.kv_cache_tokens:,} tokens; "
            f"{_requests(mem.max_concurrency)} of {eng.max_model_len:,} tokens",
            mem.source,
        ),
        *_engine_kv_rows(eng, mem),
        (
            f"reserved per {unit}" if mem.accounting != "peak" else f"peak per {unit}",
            f"{gib(mem.total_bytes_per_gpu)} of {gib(mem.gpu_memory_bytes)}",
            mem.source,
        ),
    ]
    if plan.speculative is not None:
        sp = plan.speculative
        rows.append((
            "speculative decoding",
            f"{sp.method} with {sp.draft_model}, {sp.num_speculative_tokens} draft tokens "
            f"({gib(mem.draft_weights_bytes_per_gpu)} per {unit} of draft weights)",
            "data/speculative.yaml",
        ))  # fmt: skip
    if plan.prefix_caching is not None:
        rows.append(("prefix caching", plan.prefix_caching.how, plan.prefix_caching.source or "engine profile"))
    perf = plan.performance
    if perf is not None:
        rows += speed_rows(perf)
    return rows


def _engine_kv_rows(eng, mem) -> list[tuple[str, str, str]]:
    """What the engine's own start-up log will print (its token count differs from the effective one on hybrid models)."""
    if mem.engine_kv_cache_tokens is None:
        return []
    text = f"{mem.engine_kv_cache_tokens:,} tokens, max concurrency {mem.engine_max_concurrency:.2f}x for {eng.max_model_len:,} tokens"
    if mem.engine_starts is False:
        text = "refuses to start: " + (mem.engine_refusal or "no memory left for the KV cache")
    return [(f"{eng.name} {eng.version} log will print", text, f"engine_kv_report ({mem.engine_kv_rule})")]


def speed_rows(perf) -> list[tuple[str, str, str]]:
    """The speed rows: one replica at the plan's concurrency, the deployment, and how far the model has been off."""
    tail = ""
    if perf.ttft_p90_s is not None and perf.itl_p99_s is not None:
        tail = f"; p90 TTFT {perf.ttft_p90_s * 1000:.0f} ms, p99 ITL {perf.itl_p99_s * 1000:.1f} ms"
    rows = [(
        "speed (one replica)",
        f"TTFT {perf.ttft_s * 1000:.0f} ms, TPOT {perf.tpot_s * 1000:.1f} ms, "
        f"{perf.output_tokens_per_s_per_request:.0f} tok/s per request, "
        f"{perf.output_tokens_per_s_aggregate:,.0f} tok/s at concurrency {perf.concurrency}{tail}",
        f"{perf.source}, {perf.coefficients or 'assumed'} coefficients ({perf.profile})",
    )]  # fmt: skip
    if perf.replicas > 1:
        rows.append((
            "speed (deployment)",
            f"{perf.replicas} replicas: {perf.deployment_output_tokens_per_s:,.0f} output tok/s, "
            f"{perf.deployment_requests_per_s:.2f} requests/s at concurrency {perf.concurrency} each",
            f"{perf.source} (replicas x one replica)",
        ))  # fmt: skip
    if perf.accuracy:
        band = ""
        if perf.error_band:
            lo, hi = perf.error_band
            band = f"; expect the true figure within {lo:.2f}x to {hi:.2f}x the prediction (p90)"
        rows.append(("speed accuracy", f"{perf.accuracy}{band}", "docs/accuracy.md"))
    return rows


def speed_explain_lines(perf) -> list[str]:
    """--explain: which speed profile, how its coefficients were obtained, and where one decode step's time goes."""
    out = [f"profile: {perf.profile}; coefficients: {perf.coefficients or 'assumed'}"]
    if perf.accuracy:
        out.append(f"held-out accuracy: {perf.accuracy}")
    if perf.coefficients == "fitted":
        out.append("fitted on: the published measurements in benchmarks/published/speed_points.yaml for this engine (each with its "
                   "source and setup); every point's prediction beside aiconfigurator's: benchmarks/results/speed_report.md")
    if perf.decode_step_terms_s:
        total = sum(perf.decode_step_terms_s.values()) or 1.0
        terms = sorted(perf.decode_step_terms_s.items(), key=lambda kv: -kv[1])
        out.append(f"one decode step at concurrency {perf.concurrency}: " + ", ".join(
            f"{k} {v * 1000:.2f} ms ({v / total:.0%})" for k, v in terms if v > 0))
        sources = perf.term_sources or {}
        for k, v in terms:
            if v > 0:
                out.append(f"  {k} {v * 1000:.3f} ms: {sources.get(k, 'no source recorded')}")
        if "request_overhead" in sources:
            out.append(f"  per request, into TTFT only: request_overhead {sources['request_overhead']}")
    out.append(f"host overhead per step {perf.overhead_s_per_step * 1000:.2f} ms; decode at "
               f"{perf.decode_fraction_of_bandwidth_ceiling:.0%} of the bandwidth ceiling, prefill at "
               f"{perf.prefill_fraction_of_compute_ceiling:.0%} of the compute ceiling")
    out += perf.notes
    return out


def decision_rows(plan) -> list[tuple[str, str, str, str]]:
    return [(d.rule_id, d.decides, d.value, d.reason) for d in plan.decisions]


def explain_by_decision(plan) -> list[tuple[str, list[tuple[str, str, str, str, str]]]]:
    """--explain grouped by decision (engine, dtype, KV-cache dtype, quantization, layout): the deciding comparison
    line first, then every candidate of that decision with the rules judged for it."""
    from ..plan.explain import DECISIONS, deciding_comparison

    rows = explain_rows(plan)
    lines = deciding_comparison(plan)
    out = []
    for decides in DECISIONS:
        label = {"kv_cache_dtype": "KV-cache dtype"}.get(decides, decides)
        summary = next((ln for ln in lines if ln.split(" (")[0].split(":")[0] == label), f"{label}: no rule considered")
        mine = [r for r, d in rows if d == decides]
        if mine:
            out.append((summary, mine))
    out += [(ln, []) for ln in lines if ln.split(" (")[0].split(":")[0] not in
            ("engine", "dtype", "KV-cache dtype", "quantization", "layout")]
    return out


def explain_rows(plan) -> list[tuple[tuple[str, str, str, str, str], str]]:
    """((candidate, rule, effect, matched, why), decision) with the candidate named once per group."""
    from ..plan.explain import candidate_groups

    rows = []
    for g in candidate_groups(plan):
        status = f"score {g.score:+g}" if g.allowed else f"forbidden by {g.blocked_by.rule_id}"
        for i, t in enumerate(g.rules):
            effect = t.effect or ""
            if t.matched and t.score:
                effect += f" {t.score:+g}"
            rows.append(((f"{g.name} ({status})" if i == 0 else "", t.rule_id, effect, "yes" if t.matched else "no", t.why), g.decides))
    return rows


# ---------------------------------------------------------------- table


LABEL_WIDTH = 10


def brief_lines(plan, width: int) -> list[str]:
    """The default answer as plain lines for a ``width``-column terminal: labels in a column of their own, text
    wrapped under its label, a command on one line (the terminal soft-wraps it, so a copy-paste runs as printed),
    a deciding rule on one line (cut with '…'; --explain and the JSON have it whole)."""
    import textwrap

    from .render_brief import brief_rows, verdict

    room = max(width - LABEL_WIDTH - 1, 30)
    indent = " " * (LABEL_WIDTH + 1)
    out = [verdict(plan)]
    for row in brief_rows(plan):
        head = f"{row.label:<{LABEL_WIDTH}} "
        if row.command:
            out.append(head + row.text)
        elif row.one_line:
            out.append(head + (row.text if len(row.text) <= room else row.text[: room - 1] + "…"))
        else:
            wrapped = textwrap.wrap(row.text, room, break_on_hyphens=False) or [""]
            out += [head + wrapped[0], *(indent + w for w in wrapped[1:])]
    return out


def print_brief(plan, console) -> None:
    """:func:`brief_lines` on ``console`` (the verdict in bold, green or red), every line through the one cell function."""
    from ._console import cell

    lines = brief_lines(plan, console.width)
    colour = "green" if plan.feasible else "red"
    console.print(f"[bold {colour}]{cell(lines[0])}[/bold {colour}]", soft_wrap=True)
    for line in lines[1:]:
        console.print(cell(line), soft_wrap=True)


def print_plan(plan, explain: bool = False, fmt: str = "table", show_all: bool = False) -> None:
    """Print ``plan`` as ``fmt`` ('table' or 'markdown') on stdout: the short answer; with ``explain``, then every
    figure with its source and every rule considered, grouped by decision (each decision's summary line first)."""
    if fmt == "markdown":
        sys.stdout.write(plan_markdown(plan, explain=explain, show_all=show_all))
        return
    from rich.table import Table

    from ._console import cell, make_console

    console = make_console()
    print_brief(plan, console)
    if plan.capacity is not None:
        from .render_capacity import print_capacity

        print_capacity(plan.capacity, console, full=explain, show_all=show_all)
    if not explain:
        return

    def table(title: str | None, columns: list[tuple[str, dict]], rows) -> Table:
        t = Table(title=title, show_header=True, header_style="bold")
        for name, opts in columns:
            t.add_column(name, overflow="fold", **opts)
        for row in rows:
            t.add_row(*(cell(c) for c in row))
        return t

    console.print(table("every figure and its source", [("", {"no_wrap": True}), ("value", {}), ("source", {"style": "dim"})],
                        summary_rows(plan)))
    console.print(table(
        "decisions (rules that forbade an option included)",
        [("rule", {"no_wrap": True}), ("decides", {"no_wrap": True}), ("value", {"no_wrap": True}), ("reason", {"ratio": 1, "min_width": 40})],
        decision_rows(plan),
    ))  # fmt: skip
    for w in plan.warnings:
        console.print(f"[yellow]warning:[/yellow] {cell(w)}")
    if plan.explain:
        for summary, rows in explain_by_decision(plan):
            console.print(f"[bold]{cell(summary)}[/bold]")
            if not rows:
                continue
            console.print(table(
                None,
                [("candidate", {"min_width": 24}), ("rule", {"no_wrap": True}), ("effect", {"no_wrap": True}),
                 ("matched", {"no_wrap": True}), ("why", {"ratio": 1, "min_width": 40})],
                rows,
            ))  # fmt: skip
    if plan.performance is not None:
        console.print("[bold]speed model[/bold]")
        for line in speed_explain_lines(plan.performance):
            console.print(f"- {cell(line)}")


# ---------------------------------------------------------------- markdown


def _md_cell(text: str) -> str:
    from ._console import md_cell

    return md_cell(text)


def _md_table(header: list[str], rows) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return out


def brief_markdown(plan) -> list[str]:
    """The default answer as Markdown: the verdict as a heading, one list item per row."""
    from .render_brief import brief_rows, verdict

    lines = [f"## {_md_cell(verdict(plan))}", ""]
    lines += [f"- **{_md_cell(r.label)}**: {_md_cell(r.text)}" if r.label else f"  - {_md_cell(r.text)}" for r in brief_rows(plan)]
    return lines


def plan_markdown(plan, explain: bool = False, show_all: bool = False) -> str:
    """The plan as Markdown for a pull request or a ticket: the short answer; with ``explain``, every figure with its
    source, every decision and every rule considered, grouped by decision."""
    lines = brief_markdown(plan)
    if plan.capacity is not None:
        from .render_capacity import capacity_lines

        lines += ["", *capacity_lines(plan.capacity, full=explain, show_all=show_all)]
    if not explain:
        return "\n".join(lines) + "\n"
    lines += ["", "### Every figure and its source", "", *_md_table(["", "value", "source"], summary_rows(plan))]
    lines += ["", "### Decisions", "", *_md_table(["rule", "decides", "value", "reason"], decision_rows(plan))]
    if plan.warnings:
        lines += ["", "### Warnings", "", *(f"- {_md_cell(w)}" for w in plan.warnings)]
    if plan.explain:
        lines += ["", "### Rules considered, by decision"]
        for summary, rows in explain_by_decision(plan):
            lines += ["", f"**{_md_cell(summary)}**"]
            if rows:
                lines += ["", *_md_table(["candidate", "rule", "effect", "matched", "why"], rows)]
    if plan.performance is not None:
        lines += ["", "### Speed model", "", *(f"- {_md_cell(line)}" for line in speed_explain_lines(plan.performance))]
    return "\n".join(lines) + "\n"
