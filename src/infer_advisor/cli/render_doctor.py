"""The text form of a :class:`~infer_advisor.doctor.diagnosis.Diagnosis`: the ledger, the error, the ranked edits.

Every value from the log or the user passes :func:`cell` (the project's one terminal escaper: control and Unicode
separator characters written as visible escapes, rich markup escaped) before it reaches the terminal.
"""

from __future__ import annotations

from ..formatting import human_bytes


def cell(value: object) -> str:
    """The project's terminal escaper (:func:`infer_advisor.untrusted.terminal_text`): unsafe characters written as
    visible escapes, rich markup escaped."""
    from ..untrusted import terminal_text

    return terminal_text(value)


def _gib(n: int | None) -> str:
    return "-" if n is None else (f"-{human_bytes(-n)}" if n < 0 else human_bytes(n))


def print_diagnosis(d) -> None:
    from rich.table import Table

    from ._console import make_console

    console = make_console()
    setup = ", ".join(x for x in [
        (f"engine not named (read as {d.engine} {d.engine_version or ''})" if d.engine_source.startswith("not named")
         else f"{d.engine} {d.engine_version or 'version unknown'} ({d.version_source})"), d.model and f"model {d.model}", d.gpu and f"GPU {d.gpu}",
        f"TP {d.tp}", d.gpu_count and f"{d.gpu_count} GPUs present ({d.gpu_count_source})", d.max_model_len and f"max_model_len {d.max_model_len:,}",
        d.gpu_memory_utilization and f"gpu_memory_utilization {d.gpu_memory_utilization:.2f}",
    ] if x)
    console.print(f"[bold]doctor[/bold]: {cell(setup)}")
    if d.engine_source not in ("log", "command"):
        console.print(f"engine: {cell(d.engine_source)}", style="dim")
    if d.command_settings:
        console.print("read from the command: " + cell(", ".join(f"{k}={v}" for k, v in d.command_settings.items())), style="dim")
    if d.ledger:
        base = d.budget_base or "total"
        t = Table(title="memory ledger, one GPU" + (f" ({base}: {_gib(d.gpu_memory_bytes)})" if d.gpu_memory_bytes else ""), header_style="bold")
        for name in ("term", "bytes", "budget", "source", "logged"):
            t.add_column(name, overflow="fold")
        for line in d.ledger:
            mark = " <- binding" if d.binding and line.term.startswith(d.binding) else ""
            t.add_row(cell(line.term + mark), _gib(line.bytes_per_gpu), "in" if line.in_budget else "outside", cell(line.source),
                      _gib(line.logged_bytes) if line.logged_bytes is not None else "")
        if d.budget_bytes:
            t.add_row(f"budget (fraction x {base})", _gib(d.budget_bytes), "", "", "")
        console.print(t)
    if d.kv_cache_tokens is not None:
        at_once = f"; {d.max_concurrency} request(s) of max_model_len at once" if d.max_concurrency is not None else ""
        console.print(f"KV cache: {d.kv_cache_tokens:,} tokens{at_once}")
    if d.error is not None:
        from ..doctor.startup_errors import REPORTED

        reported = d.error.line.startswith(REPORTED)  # the thread's words, not the engine's line (docfix11)
        said = "reported" if reported else "the engine raised" if d.error_logged else "the engine will raise"
        line = d.error.line[len(REPORTED):] if reported else d.error.line
        console.print(f"[red]{said}[/red] ({cell(d.error.kind)}{', the engine line is not in the text' if reported else ''}): {cell(line)}")
    elif d.starts:
        console.print("[green]starts[/green]: every start-up check passes")
    if d.edits:
        t = Table(title="edits, smallest first", header_style="bold")
        for name in ("#", "edit", "starts", "KV tokens", "requests at max_model_len", "cost", "how sure, why"):
            t.add_column(name, overflow="fold")
        for i, e in enumerate(d.edits, 1):
            sure = f"{(e.confidence or '').replace('_', ' ')}: {e.basis}" if e.basis else ""
            t.add_row(str(i), cell(e.change), {True: "yes", False: "no", None: "not decided"}[e.starts], "?" if e.kv_cache_tokens is None else f"{e.kv_cache_tokens:,}", "?" if e.max_concurrency is None else str(e.max_concurrency), cell(e.cost), cell(sure))
        console.print(t)
    if d.fixed_command:
        console.print(f"fixed command: {cell(d.fixed_command)}")
    if d.tried is not None:
        e = d.tried
        console.print(f"--try-flags {cell(e.change)}: {'starts' if e.starts else 'does not start'}; KV {e.kv_cache_tokens:,} tokens, "
                      f"{e.max_concurrency} request(s) of {e.max_model_len:,} tokens at once")
    for note in d.notes:
        console.print(f"note: {cell(note)}", style="dim")
