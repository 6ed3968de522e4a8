"""Print a DeploymentPlan as rich tables. Every figure carries its source in the last column."""

from __future__ import annotations

GiB = 2**30


def _gib(n: float) -> str:
    return f"{n / GiB:.1f} GiB"


def print_plan(plan, explain: bool = False) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    m, hw, mem, eng, q, par = plan.model, plan.hardware, plan.memory, plan.engine, plan.quantization, plan.parallelism
    if hw.kind == "gpu":
        g = hw.gpus[0]
        hw_text = f"{hw.gpus_per_node}x {g.name}" + (f" x {hw.nodes} nodes" if hw.nodes > 1 else "")
        hw_detail = f"{_gib(g.memory_bytes)}, {g.memory_bandwidth_bytes_per_s / 1e12:.2f} TB/s, CC {g.compute_capability}, {g.interconnect}"
        hw_src = g.source
    else:
        hw_text = "CPU"
        hw_detail = f"{hw.cpu_cores} cores, {_gib(hw.cpu_memory_bytes or 0)} RAM"
        hw_src = hw.source
    status = "[green]feasible[/green]" if plan.feasible else "[red]NOT feasible[/red]"
    console.print(f"[bold]Plan for {m.name}[/bold] on {hw_text}: {status}")
    if not plan.feasible:
        console.print(f"[red]{plan.infeasible_reason}[/red]")
        if plan.suggestion:
            console.print(f"Smallest catalog hardware that works: [bold]{plan.suggestion}[/bold]")

    t = Table(show_header=True, header_style="bold")
    t.add_column("")
    t.add_column("value")
    t.add_column("source", style="dim")
    params = f"{m.num_parameters / 1e9:.2f} B params"
    if m.num_active_parameters != m.num_parameters:
        params += f" ({m.num_active_parameters / 1e9:.2f} B active)"
    t.add_row("model", f"{m.architecture}, {params}, context {m.max_position_embeddings}", m.source)
    t.add_row("hardware", f"{hw_text}: {hw_detail}", hw_src)
    server = f"port {eng.port}" if eng.http_server else "no HTTP server: Python script"
    t.add_row("engine", f"{eng.name} {eng.version} ({eng.image}), {server}", "rules")
    qtext = q.method + (" (pre-quantized checkpoint)" if q.pre_quantized else "") + (" - run `infer-advisor quantize` first" if q.needs_quantize_step else "")
    t.add_row("quantization", qtext, "rules")
    t.add_row("dtype / KV cache", f"{plan.dtype} / {eng.kv_cache_dtype}", "rules")
    t.add_row(
        "parallelism",
        f"TP {par.tensor_parallel_size} x PP {par.pipeline_parallel_size} x nodes {par.nodes}, replicas {par.replicas}, executor {par.executor}",
        "rules + memory fit",
    )
    t.add_row("max_model_len / max_num_seqs", f"{eng.max_model_len} / {eng.max_num_seqs}", "memory fit")
    unit = "GPU" if hw.kind == "gpu" else "socket"  # a CPU plan's memory is the host's RAM
    t.add_row("weights", f"{_gib(mem.weights_bytes)} total, {_gib(mem.weights_bytes_per_gpu)} per {unit}", mem.weights_origin)
    t.add_row("KV cache per token", f"{mem.kv_cache_bytes_per_token / 1024:.0f} KiB ({mem.kv_cache_bytes_per_token_per_gpu / 1024:.0f} KiB per {unit})", mem.source)
    overheads = ", ".join(f"{k} {_gib(v)}" for k, v in mem.overhead_bytes_per_gpu.items() if v)
    t.add_row("activations / overheads", f"{_gib(mem.activation_bytes_per_gpu)} / {overheads or 'none'}", mem.source)
    t.add_row(
        "KV cache",
        f"{_gib(mem.kv_cache_bytes_per_gpu)} per {unit} = {mem.kv_cache_tokens:,} tokens; {mem.max_concurrency} requests of {eng.max_model_len} tokens",
        mem.source,
    )
    label = f"reserved per {unit}" if mem.accounting != "peak" else f"peak per {unit}"
    t.add_row(label, f"{_gib(mem.total_bytes_per_gpu)} of {_gib(mem.gpu_memory_bytes)}", mem.source)
    if plan.speculative is not None:
        sp = plan.speculative
        t.add_row("speculative decoding", f"{sp.method} with {sp.draft_model}, {sp.num_speculative_tokens} draft tokens "
                  f"({_gib(mem.draft_weights_bytes_per_gpu)} per {unit} of draft weights)", "data/speculative.yaml")
    if plan.prefix_caching is not None:
        t.add_row("prefix caching", plan.prefix_caching.how, plan.prefix_caching.source or "engine profile")
    perf = plan.performance
    if perf is not None:
        t.add_row(
            "speed",
            f"TTFT {perf.ttft_s * 1000:.0f} ms, TPOT {perf.tpot_s * 1000:.1f} ms, {perf.output_tokens_per_s_per_request:.0f} tok/s per request, "
            f"{perf.output_tokens_per_s_aggregate:.0f} tok/s aggregate at concurrency {perf.concurrency}",
            f"{perf.source} ({perf.profile})",
        )
    console.print(t)

    d = Table(title="decisions", show_header=True, header_style="bold")
    d.add_column("rule")
    d.add_column("decides")
    d.add_column("value")
    d.add_column("reason")
    for dec in plan.decisions:
        d.add_row(dec.rule_id, dec.decides, dec.value, dec.reason)
    console.print(d)
    for w in plan.warnings:
        console.print(f"[yellow]warning:[/yellow] {w}")
    if explain and plan.explain:
        e = Table(title="rules considered", show_header=True, header_style="bold")
        for col in ("rule", "decides", "applied to", "matched", "why"):
            e.add_column(col)
        for tr in plan.explain:
            e.add_row(tr.rule_id, tr.decides, tr.applied_to, "yes" if tr.matched else "no", tr.why)
        console.print(e)
