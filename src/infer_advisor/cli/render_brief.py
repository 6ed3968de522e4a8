"""The default `plan` answer: about fifteen lines a person reads before deciding.

The verdict and the command to run, engine / weights / layout, memory (weights, KV tokens, concurrency), speed with
its error band, the fleet's cost in the first line when it was sized (the ranking follows: cli/render_capacity.py), the rules that decided something (one line each) and at most three
warnings that change a decision. Everything else is behind ``--explain`` (cli/render_plan.py) and ``--format json``.

    >>> from infer_advisor import advise
    >>> plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
    >>> rows = brief_rows(plan)
    >>> [row.label for row in rows][:5]
    ['run', 'engine', 'layout', 'memory', 'speed']
    >>> rows[2].text
    'TP1 x PP1: 1 GPU per replica, 1 replica'

Rows are plain text; the table and markdown printers only lay them out, through the one cell function
(:func:`infer_advisor.cli._console.cell` for the terminal, ``_md_cell`` for markdown).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..formatting import gib

MAX_WARNINGS = 3  # issue 25: at most three warnings that change a decision in the default answer

# Warnings that change what the user deploys or can serve, first; the rest are in --explain.
_DECIDING = ("max_model_len", "does not fit", "do not fit", "calibration", "not found", "refused", "deprecated")


@dataclass(frozen=True)
class Row:
    label: str
    text: str
    command: bool = False  # printed on one line, never wrapped, so a copy-paste runs as it is
    one_line: bool = False  # cut with '…' at the terminal's width (the whole text is in --explain and the JSON)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def hardware_words(plan) -> str:
    hw = plan.hardware
    if hw.kind != "gpu":
        return "CPU"
    return f"{hw.gpus_per_node}x {hw.gpus[0].name}" + (f" x {hw.nodes} nodes" if hw.nodes > 1 else "")


def verdict(plan) -> str:
    """The first line: the model and hardware with where their facts came from, and the verdict."""
    sized = plan.capacity is not None and plan.capacity.chosen is not None
    what = "feasible" if plan.feasible else "NOT feasible"
    if sized:
        c = plan.capacity.chosen
        cost = f", ${c.cost_per_hour:,.2f}/hour" if c.cost_per_hour is not None else ""
        return (f"{plan.model.name} ({plan.model.source}) at {plan.capacity.rate:g} requests/s: {c.replicas} x "
                f"{c.gpus_per_replica} {c.gpu}{cost} ({what})")
    return f"{plan.model.name} ({plan.model.source}) on {hardware_words(plan)} ({plan.hardware.source}): {what}"


def launch_command(plan) -> tuple[str | None, list[str]]:
    """(the engine's command on the host, the `infer-advisor quantize` commands to run first), shell-quoted."""
    from ..emit.quote import sh_join
    from ..engines.argv import model_ref
    from ..engines.launch import launch_argv
    from ..errors import InferAdvisorError

    try:
        ref = model_ref(plan)
        return sh_join(launch_argv(plan, ref, "host")), [sh_join(s) for s in ref.quantize_steps]
    except InferAdvisorError:  # an engine the artifacts cannot start (the plan says why in its warnings)
        return None, []


def auto_kv(eng) -> str:
    """' (f16)' where the engine fixes what an auto KV cache holds (data/engines.yaml auto_kv_cache_dtype), else ''."""
    from ..engines.profiles import engine_profiles

    profile = engine_profiles().get(eng.name)
    fixed = profile.auto_kv_cache_dtype if profile is not None else None
    return f" ({fixed})" if eng.kv_cache_dtype == "auto" and fixed else ""


def _engine_text(plan) -> str:
    eng, q = plan.engine, plan.quantization
    server = f", port {eng.port}" if eng.http_server else ", a Python script (no HTTP server)"
    weights = "unquantized" if q.method == "none" else q.method
    if q.published_checkpoint is not None:
        weights += f" from {q.published_checkpoint.repo}"
    kv = eng.kv_cache_dtype + auto_kv(eng)
    return f"{eng.name} {eng.version}{server}; {plan.dtype} {weights} weights, KV cache {kv}"


def _layout_text(plan) -> str:
    par = plan.parallelism
    per = par.tensor_parallel_size * par.pipeline_parallel_size
    unit = "GPU" if plan.hardware.kind == "gpu" else "CPU socket"
    text = (f"TP{par.tensor_parallel_size} x PP{par.pipeline_parallel_size}{' EP' if par.expert_parallel else ''}: "
            f"{_plural(per, unit)} per replica" + (f" over {par.nodes} nodes" if par.nodes > 1 else "")
            + f", {_plural(par.replicas, 'replica')}")
    if plan.speculative is not None:
        text += f"; speculative decoding ({plan.speculative.method}, {plan.speculative.num_speculative_tokens} draft tokens)"
    return text


def _memory_text(plan) -> str:
    mem, eng = plan.memory, plan.engine
    unit = "GPU" if plan.hardware.kind == "gpu" else "socket"
    return (f"weights {gib(mem.weights_bytes_per_gpu)} per {unit}; KV cache {mem.kv_cache_tokens:,} tokens = "
            f"{_plural(mem.max_concurrency, 'request')} of {eng.max_model_len:,} tokens at once; "
            f"{gib(mem.total_bytes_per_gpu)} of {gib(mem.gpu_memory_bytes)} per {unit} ({mem.source})")


def _ms(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:,.0f} s" if seconds >= 10 else f"{seconds:.2f} s"
    return f"{seconds * 1000:.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.1f} ms"


def speed_texts(perf) -> list[str]:
    """Two lines: the figures at the plan's concurrency (TTFT, TPOT, throughput, the tails), and how sure they are."""
    line = (f"{_plural(perf.concurrency, 'concurrent request')}: first token (TTFT) {_ms(perf.ttft_s)}; mean time per "
            f"output token (TPOT) {_ms(perf.tpot_s)} = {perf.output_tokens_per_s_per_request:.0f} tok/s per user; "
            f"{perf.output_tokens_per_s_aggregate:,.0f} tok/s per replica")
    if perf.ttft_p90_s is not None and perf.itl_p99_s is not None:
        line += f"; p90 TTFT {_ms(perf.ttft_p90_s)}, p99 gap between two tokens (ITL) {_ms(perf.itl_p99_s)}"
    sure = f"{perf.source}, {perf.coefficients or 'assumed'} coefficients" + (f": {perf.accuracy}" if perf.accuracy else "")
    if perf.error_band:
        lo, hi = perf.error_band
        sure = f"within {lo:.2f}x-{hi:.2f}x of the prediction in 9 of 10 held-out cases (docs/accuracy.md)"
    return [line, sure]


def deciding_rules(plan) -> list[tuple[str, str, str]]:
    """(what was decided, rule ids, reason) for each decision a rule made; forbids that removed an option nobody
    preferred, and a memory fit that only confirmed the preferred value, decided nothing and are left to --explain."""
    by: dict[tuple[str, str], list] = {}
    for d in plan.decisions:
        if d.effect == "forbid":
            continue
        by.setdefault((d.decides, d.value), []).append(d)
    out = []
    for (decides, value), ds in by.items():
        chosen_by_rules = [d for d in ds if not d.rule_id.startswith("memory.")]
        shown = chosen_by_rules or ds
        label = "context" if decides == "context" else decides.replace("_", " ")
        value = value.replace("tp=", "TP").replace(" pp=", " x PP").replace(" nodes=1", "").replace(" nodes=", " x nodes ")
        value = f"{int(value):,}" if value.isdigit() else value
        out.append((f"{label} {value}", ", ".join(d.rule_id for d in shown), shown[0].reason))
    return out


def deciding_warnings(plan) -> tuple[list[str], int]:
    """At most three warnings, those that change a decision first; and how many more there are."""
    ranked = sorted(plan.warnings, key=lambda w: not any(k in w for k in _DECIDING))
    return ranked[:MAX_WARNINGS], max(len(ranked) - MAX_WARNINGS, 0)


def brief_rows(plan) -> list[Row]:
    """The default answer, row by row (label, plain text)."""
    rows: list[Row] = []
    if not plan.feasible:
        rows.append(Row("why not", str(plan.infeasible_reason)))
        if plan.suggestion:
            rows.append(Row("instead", f"smallest catalog hardware that works: {plan.suggestion}"))
    command, first = launch_command(plan) if plan.feasible else (None, [])
    for step in first:
        rows.append(Row("first", step, command=True))
    if command and plan.parallelism.nodes > 1:
        rows.append(Row("first", f"a Ray cluster over the {plan.parallelism.nodes} nodes (--emit script writes ray-node.sh "
                                 "for each node); then, on the head node:"))
    if command:
        rows.append(Row("run", command, command=True))
    sized = plan.capacity is not None and plan.capacity.chosen is not None
    if not sized:  # sized: the chosen row of the ranking says both
        rows.append(Row("engine", _engine_text(plan)))
        rows.append(Row("layout", _layout_text(plan)))
    if plan.feasible:  # an infeasible plan's memory and speed describe a deployment that does not run (--explain has them)
        rows.append(Row("memory", _memory_text(plan)))
    if plan.performance is not None and plan.feasible:
        speed, sure = speed_texts(plan.performance)
        if not sized:  # sized: the simulated figures are in the ranking's rows
            rows.append(Row("speed", speed))
        rows.append(Row("how sure", sure))
    decided = deciding_rules(plan)
    if sized:  # what the sizing pinned (request.*) is said by its own rows
        decided = [d for d in decided if not all(r.startswith("request.") for r in d[1].split(", "))]
    for i, (what, rule_ids, reason) in enumerate(decided):
        rows.append(Row("decided" if i == 0 else "", f"{what} ({rule_ids}): {reason}", one_line=True))
    shown, more = deciding_warnings(plan)
    for i, w in enumerate(shown):
        rows.append(Row("warning" if i == 0 else "", w))
    more_text = f"{more} more warning{'s' if more != 1 else ''} and " if more else ""
    rows.append(Row("more", f"--explain: {more_text}every rule and figure, with sources; --format json; --emit all --out DIR"))
    return rows
