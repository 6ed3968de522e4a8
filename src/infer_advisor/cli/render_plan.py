"""Print a DeploymentPlan as rich tables (``--format table``) or Markdown (``--format markdown``, for pull requests
and tickets). Every figure carries its source in the last column; both formats show the same rows.

Numbers are never cut: tables fold a long value onto the next line, and in a pipe or a file the console is
200 columns wide (cli/_console.py) instead of rich's 80.
"""

from __future__ import annotations

import sys

GiB = 2**30


def _gib(n: float) -> str:
    return f"{n / GiB:.1f} GiB"


def _hardware(plan) -> tuple[str, str, str]:
    hw = plan.hardware
    if hw.kind == "gpu":
        g = hw.gpus[0]
        text = f"{hw.gpus_per_node}x {g.name}" + (f" x {hw.nodes} nodes" if hw.nodes > 1 else "")
        usable = f" ({_gib(g.usable_memory_bytes)} usable)" if g.usable_memory_bytes else ""
        arch = f"{g.gfx_arch or 'AMD'} (ROCm)" if g.vendor == "amd" else f"CC {g.compute_capability}"
        detail = f"{_gib(g.memory_bytes)}{usable}, {g.memory_bandwidth_bytes_per_s / 1e12:.2f} TB/s, {arch}, {g.interconnect}"
        return text, detail, g.source
    return "CPU", f"{hw.cpu_cores} cores, {_gib(hw.cpu_memory_bytes or 0)} RAM", hw.source


def _requests(n: int) -> str:
    return f"{n} request" + ("" if n == 1 else "s")


def headline(plan) -> list[str]:
    """The status lines above the tables (plain text)."""
    hw_text, _, _ = _hardware(plan)
    lines = [f"Plan for {plan.model.name} on {hw_text}: {'feasible' if plan.feasible else 'NOT feasible'}"]
    if not plan.feasible:
        lines.append(str(plan.infeasible_reason))
        if plan.suggestion:
            lines.append(f"Smallest catalog hardware that works: {plan.suggestion}")
    return lines


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
    kv_auto = " (f16)" if eng.kv_cache_dtype == "auto" and eng.name == "llama.cpp" else ""
    src = mem.figure_sources
    amd = plan.hardware.kind == "gpu" and plan.hardware.gpus[0].vendor == "amd"
    word = (lambda k: k.replace("cuda_", "hip_")) if amd else (lambda k: k)  # ROCm's HIP runtime, not CUDA
    overheads = ", ".join(f"{word(k)} {_gib(v)}" for k, v in mem.overhead_bytes_per_gpu.items() if v)
    outside = ", ".join(f"{word(k)} {_gib(v)}" for k, v in mem.outside_budget_bytes_per_gpu.items() if v)
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
            f"{_gib(mem.weights_bytes)} total, {_gib(mem.weights_bytes_per_gpu)} per {unit}",
            src.get("weights", "estimated"),
        ),
        (
            "KV cache per token",
            f"{mem.kv_cache_bytes_per_token / 1024:.0f} KiB ({mem.kv_cache_bytes_per_token_per_gpu / 1024:.0f} KiB per {unit})",
            "estimated",
        ),
        (
            "activations / overheads",
            f"{_gib(mem.activation_bytes_per_gpu)} / {overheads or 'none'}" + (f"; outside the KV budget: {outside}" if outside else ""),
            overhead_src,
        ),
        (
            "KV cache",
            f"{_gib(mem.kv_cache_bytes_per_gpu)} per {unit} = {mem.kv_cache_tokens:,} tokens; "
            f"{_requests(mem.max_concurrency)} of {eng.max_model_len:,} tokens",
            mem.source,
        ),
        *_engine_kv_rows(eng, mem),
        (
            f"reserved per {unit}" if mem.accounting != "peak" else f"peak per {unit}",
            f"{_gib(mem.total_bytes_per_gpu)} of {_gib(mem.gpu_memory_bytes)}",
            mem.source,
        ),
    ]
    if plan.speculative is not None:
        sp = plan.speculative
        rows.append((
            "speculative decoding",
            f"{sp.method} with {sp.draft_model}, {sp.num_speculative_tokens} draft tokens "
            f"({_gib(mem.draft_weights_bytes_per_gpu)} per {unit} of draft weights)",
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


def explain_rows(plan) -> list[tuple[str, str, str, str, str]]:
    """(candidate, rule, effect, matched, why) with the candidate named once per group."""
    from ..plan.explain import candidate_groups

    rows = []
    for g in candidate_groups(plan):
        status = f"score {g.score:+g}" if g.allowed else f"forbidden by {g.blocked_by.rule_id}"
        for i, t in enumerate(g.rules):
            effect = t.effect or ""
            if t.matched and t.score:
                effect += f" {t.score:+g}"
            rows.append((f"{g.name} ({status})" if i == 0 else "", t.rule_id, effect, "yes" if t.matched else "no", t.why))
    return rows


# ---------------------------------------------------------------- table


def print_plan(plan, explain: bool = False, fmt: str = "table") -> None:
    """Print ``plan`` as ``fmt`` ('table' or 'markdown') on stdout."""
    if fmt == "markdown":
        sys.stdout.write(plan_markdown(plan, explain=explain))
        return
    from rich.markup import escape
    from rich.table import Table

    from ._console import make_console

    console = make_console()
    head = headline(plan)
    status = "[green]feasible[/green]" if plan.feasible else "[red]NOT feasible[/red]"
    console.print(f"[bold]{escape(head[0].rsplit(': ', 1)[0])}[/bold]: {status}")
    for line in head[1:]:
        console.print(line, style="red" if line == str(plan.infeasible_reason) else None, markup=False)

    def table(title: str | None, columns: list[tuple[str, dict]], rows) -> Table:
        t = Table(title=title, show_header=True, header_style="bold")
        for name, opts in columns:
            t.add_column(name, overflow="fold", **opts)
        for row in rows:
            t.add_row(*(escape(str(c)) for c in row))
        return t

    console.print(table(None, [("", {"no_wrap": True}), ("value", {}), ("source", {"style": "dim"})], summary_rows(plan)))
    console.print(table(
        "decisions",
        [("rule", {"no_wrap": True}), ("decides", {"no_wrap": True}), ("value", {"no_wrap": True}), ("reason", {"ratio": 1, "min_width": 40})],
        decision_rows(plan),
    ))  # fmt: skip
    for w in plan.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")
    if plan.capacity is not None:
        from .render_capacity import print_capacity

        print_capacity(plan.capacity, console)
    if explain and plan.explain:
        console.print(table(
            "rules considered, by candidate",
            [("candidate", {"min_width": 24}), ("rule", {"no_wrap": True}), ("effect", {"no_wrap": True}),
             ("matched", {"no_wrap": True}), ("why", {"ratio": 1, "min_width": 40})],
            explain_rows(plan),
        ))  # fmt: skip
        from ..plan.explain import deciding_comparison

        console.print("[bold]deciding comparison[/bold]")
        for line in deciding_comparison(plan):
            console.print(f"- {escape(line)}")
        if plan.performance is not None:
            console.print("[bold]speed model[/bold]")
            for line in speed_explain_lines(plan.performance):
                console.print(f"- {escape(line)}")


# ---------------------------------------------------------------- markdown


def _md_cell(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(header: list[str], rows) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return out


def plan_markdown(plan, explain: bool = False) -> str:
    """The plan as Markdown: the same rows as the tables, for a pull request or a ticket."""
    head = headline(plan)
    lines = [f"## {_md_cell(head[0])}", ""]
    lines += [f"> {_md_cell(line)}" for line in head[1:]]
    lines += ([""] if head[1:] else []) + _md_table(["", "value", "source"], summary_rows(plan))
    lines += ["", "### Decisions", "", *_md_table(["rule", "decides", "value", "reason"], decision_rows(plan))]
    if plan.warnings:
        lines += ["", "### Warnings", "", *(f"- {_md_cell(w)}" for w in plan.warnings)]
    if plan.capacity is not None:
        from .render_capacity import capacity_lines

        lines += ["", *capacity_lines(plan.capacity)]
    if explain and plan.explain:
        from ..plan.explain import deciding_comparison

        lines += ["", "### Rules considered, by candidate", ""]
        lines += _md_table(["candidate", "rule", "effect", "matched", "why"], explain_rows(plan))
        lines += ["", "### Deciding comparison", "", *(f"- {_md_cell(line)}" for line in deciding_comparison(plan))]
        if plan.performance is not None:
            lines += ["", "### Speed model", "", *(f"- {_md_cell(line)}" for line in speed_explain_lines(plan.performance))]
    return "\n".join(lines) + "\n"
