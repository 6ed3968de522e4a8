"""Writing a report: bench.json, bench.csv, requests.csv, bench.png (each replaced atomically), and the screen table.

While a run goes on, and after one that stopped early, the CSV files and the plot are named
``bench.incomplete.csv``, ``requests.incomplete.csv`` and ``bench.incomplete.png`` (bench.json says the same
with ``complete: false``); a finished run replaces them with the final names.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from ..untrusted import csv_cell
from .report import BenchReport

if TYPE_CHECKING:  # pragma: no cover
    from .._output import OutputFolder

JSON_NAME, LEVELS_CSV, REQUESTS_CSV, PLOT_NAME = "bench.json", "bench.csv", "requests.csv", "bench.png"
_STATS = ("ttft_s", "tpot_s", "itl_s", "e2e_s")


def incomplete_name(name: str) -> str:
    """``bench.csv`` -> ``bench.incomplete.csv``: what a file is called until the run finishes."""
    stem, dot, ext = name.rpartition(".")
    return f"{stem}.incomplete{dot}{ext}"


def file_names(complete: bool) -> tuple[str, str, str, str]:
    """(json, levels csv, requests csv, plot) as named for a complete or an unfinished run."""
    if complete:
        return JSON_NAME, LEVELS_CSV, REQUESTS_CSV, PLOT_NAME
    return JSON_NAME, incomplete_name(LEVELS_CSV), incomplete_name(REQUESTS_CSV), incomplete_name(PLOT_NAME)


def level_rows(report: BenchReport) -> list[dict]:
    rows = []
    for lv in report.levels:
        row: dict = {"concurrency": lv.concurrency, "num_requests": lv.num_requests,
                     "failed_requests": lv.failed_requests, "duration_s": lv.duration_s}
        for name in _STATS:
            st = getattr(lv, name)
            for k in ("mean", "p50", "p90", "p99"):
                row[f"{name.removesuffix('_s')}_{k}_s"] = getattr(st, k) if st else ""
        row.update(
            output_tokens_total=lv.output_tokens_total,
            input_tokens_mean=lv.input_tokens_mean if lv.input_tokens_mean is not None else "",
            output_tokens_per_s_per_request=lv.output_tokens_per_s_per_request,
            output_tokens_per_s_aggregate=lv.output_tokens_per_s_aggregate,
            requests_per_s=lv.requests_per_s,
            peak_memory_bytes=lv.peak_memory_bytes if lv.peak_memory_bytes is not None else "",
            memory_source=report.metadata.memory_source,
            peak_device_memory_bytes=lv.peak_device_memory_bytes if lv.peak_device_memory_bytes is not None else "",
            request_rate=_blank(lv.request_rate),
            achieved_rate_per_s=_blank(lv.achieved_rate_per_s),
            send_lateness_p99_s=lv.send_lateness_s.p99 if lv.send_lateness_s else "",
            saturated=_blank(lv.saturated),
            source="measured",
        )
        rows.append(row)
    return rows


def _blank(value):
    return "" if value is None else value


def _csv(rows: list[dict]) -> bytes:
    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)
    return buf.getvalue().encode()


def write_files(report: BenchReport, folder: OutputFolder) -> None:
    """Write (or replace) bench.json and the two CSV files in ``folder`` (named as ``report.complete`` says)."""
    json_name, levels_name, requests_name, _ = file_names(report.complete)
    folder.write(json_name, report.model_dump_json(indent=2).encode())
    folder.write(levels_name, _csv(level_rows(report)))
    req_rows = [
        {k: v for k, v in s.model_dump().items() if k != "itl_s"}
        | {"itl_mean_s": sum(s.itl_s) / len(s.itl_s) if s.itl_s else ""}
        for s in report.requests
    ]
    folder.write(requests_name, _csv(req_rows))
    if report.complete:
        for name in file_names(False)[1:3]:
            folder.remove(name)


def plotting_available() -> bool:
    """Is matplotlib importable (the [bench] extra)? bench.png needs it; everything else does not."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


MISSING_PLOT_NOTE = "bench.png not written: matplotlib is not installed (pip install 'infer-advisor[bench]')."


def write_plot(report: BenchReport, folder: OutputFolder) -> str | None:
    """bench.png (:func:`bench_figure`), replaced atomically; None when there is nothing to draw."""
    if not report.levels:
        return None
    import matplotlib
    import matplotlib.pyplot as plt

    # Every text is literal: a model name from --model or the server's /v1/models ('m$\\frac{$') is not mathtext
    # (it raised ValueError while saving: exit 3, no bench.png).
    with matplotlib.rc_context({"text.parse_math": False}):
        fig = bench_figure(report)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=110)
    finally:
        plt.close(fig)
    name = file_names(report.complete)[3]
    folder.write(name, buf.getvalue())
    if report.complete:
        folder.remove(incomplete_name(PLOT_NAME))
    return name


def bench_figure(report: BenchReport):
    """Median TTFT and TPOT against aggregate throughput, one measured point per concurrency level, beside the plan's
    predicted curve and its error band when the run had --plan (open loop: TTFT and ITL against the offered rate)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    if report.levels[0].request_rate is not None:
        _plot_open_loop(axes, report)
    else:
        x = [lv.output_tokens_per_s_aggregate for lv in report.levels]
        for ax, name, label in ((axes[0], "ttft_s", "TTFT p50 (ms)"), (axes[1], "tpot_s", "TPOT p50 (ms)")):
            y = [getattr(lv, name).p50 * 1000 if getattr(lv, name) else float("nan") for lv in report.levels]
            ax.plot(x, y, marker="o", label="measured (p50)")
            for xi, yi, lv in zip(x, y, report.levels, strict=True):
                ax.annotate(f"c={lv.concurrency}", (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=8)
            _plot_predicted(ax, report, name)
            ax.set_xlabel("output tokens/s (aggregate)")
            ax.set_ylabel(label)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
    md = report.metadata
    title = f"{md.engine}: {md.model or ''} on {md.device.name} ({md.workload}{', random weights' if md.random_weights else ''})"
    if not report.complete:
        title = "INCOMPLETE RUN - " + title
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def _plot_predicted(ax, report: BenchReport, name: str) -> None:
    """The plan's curve (dashed) and, where the speed model has a held-out error band, the band around it."""
    pts = sorted(report.predictions, key=lambda p: p.output_tokens_per_s_aggregate)
    if not pts:
        return
    x = [p.output_tokens_per_s_aggregate for p in pts]
    y = [getattr(p, name) * 1000 for p in pts]
    ax.plot(x, y, linestyle="--", marker="x", color="C1", label=f"plan's prediction ({pts[0].source})"[:80])
    if all(p.error_band for p in pts):
        ax.fill_between(x, [v * p.error_band[0] for v, p in zip(y, pts, strict=True)],
                        [v * p.error_band[1] for v, p in zip(y, pts, strict=True)], color="C1", alpha=0.15,
                        label=f"band: {pts[0].error_band[0]:.2f}x-{pts[0].error_band[1]:.2f}x (9 of 10 held-out cases)")


def _plot_open_loop(axes, report: BenchReport) -> None:
    """Open loop: p50 and p90 TTFT and inter-token latency against the offered rate; saturated levels circled."""
    levels = sorted(report.levels, key=lambda lv: lv.request_rate or 0.0)
    x = [lv.request_rate for lv in levels]
    for ax, name, label in ((axes[0], "ttft_s", "TTFT (ms)"), (axes[1], "itl_s", "inter-token latency (ms)")):
        for stat, marker in (("p50", "o"), ("p90", "s")):
            y = [getattr(getattr(lv, name), stat) * 1000 if getattr(lv, name) else float("nan") for lv in levels]
            ax.plot(x, y, marker=marker, label=stat)
            for xi, yi, lv in zip(x, y, levels, strict=True):
                if lv.saturated:
                    ax.plot([xi], [yi], "o", markersize=12, fillstyle="none", color="red")
        ax.set_xlabel("request rate (req/s, Poisson; red circle: queue grows)")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)


def _gib(n: int | None) -> str:
    return f"{n / 2**30:.2f} GiB" if n is not None else "-"


def render_table(report: BenchReport):
    """A rich Table of the levels (every figure measured) and, if any, the plan comparison."""
    from ..untrusted import safe_table

    md = report.metadata
    mem_label = {
        "nvml": "peak GPU mem (NVML)",
        "torch-allocator": "peak GPU mem (allocator + CUDA context)",
        "psutil-rss": "peak RSS (psutil)",
        "none": "peak mem",
    }[md.memory_source]
    device_column = any(lv.peak_device_memory_bytes is not None for lv in report.levels)
    status = "" if report.complete else " · INCOMPLETE" + (f" ({report.error})" if report.error else "")
    table = safe_table(
        title=f"{md.engine} · {md.model} · {md.device.name}"
        + (" · RANDOM WEIGHTS" if md.random_weights else "")
        + status,
        caption="All figures measured on this run.",
    )
    for col in (
        "conc.",
        "reqs",
        "TTFT mean / p99 ms",
        "TPOT mean ms",
        "ITL p99 ms",
        "e2e mean s",
        "tok/s/req",
        "tok/s total",
        "req/s",
        mem_label,
        *(["whole device (NVML)"] if device_column else []),
    ):
        table.add_column(col, justify="right", overflow="fold")  # a number may wrap, never lose digits
    for lv in report.levels:
        if lv.request_rate is not None:
            continue
        device = [_gib(lv.peak_device_memory_bytes)] if device_column else []
        table.add_row(
            str(lv.concurrency),
            str(lv.num_requests),
            f"{lv.ttft_s.mean * 1e3:.1f} / {lv.ttft_s.p99 * 1e3:.1f}",
            f"{lv.tpot_s.mean * 1e3:.2f}" if lv.tpot_s else "-",
            f"{lv.itl_s.p99 * 1e3:.2f}" if lv.itl_s else "-",
            f"{lv.e2e_s.mean:.3f}",
            f"{lv.output_tokens_per_s_per_request:.1f}",
            f"{lv.output_tokens_per_s_aggregate:.1f}",
            f"{lv.requests_per_s:.2f}",
            _gib(lv.peak_memory_bytes),
            *device,
        )
    closed = [lv for lv in report.levels if lv.request_rate is None]
    opened = [lv for lv in report.levels if lv.request_rate is not None]
    tables = [table] if closed or not opened else []
    if opened:
        tables.append(_open_table(report, opened, status))
    if report.comparisons:
        cmp = safe_table(title="Plan vs measured", caption="predicted: the plan's estimate; measured: this run.")
        for col in ("metric", "conc.", "predicted", "source", "measured", "error %"):
            cmp.add_column(col, justify="right", overflow="fold")
        for c in report.comparisons:
            cmp.add_row(
                c.metric,
                str(c.concurrency),
                f"{c.predicted:.4g}",
                c.predicted_source,
                f"{c.measured:.4g}",
                f"{c.error_pct:+.1f}",
            )
        tables.append(cmp)
    return tables


def _open_table(report: BenchReport, levels, status: str):
    from ..untrusted import safe_table

    md = report.metadata
    table = safe_table(
        title=f"{md.engine} · {md.model} · {md.device.name} · open loop (Poisson arrivals)"
        + (" · RANDOM WEIGHTS" if md.random_weights else "")
        + status,
        caption="All figures measured on this run. max in flight: requests sent and not finished, at most.",
    )
    for col in (
        "rate req/s (achieved)",
        "reqs",
        "max in flight",
        "TTFT p50 / p90 / p99 ms",
        "ITL p50 / p90 / p99 ms",
        "e2e p50 s",
        "tok/s total",
        "req/s",
        "queue grows",
    ):
        table.add_column(col, justify="right", overflow="fold")

    def ms(st) -> str:
        return f"{st.p50 * 1e3:.1f} / {st.p90 * 1e3:.1f} / {st.p99 * 1e3:.1f}" if st else "-"

    for lv in levels:
        achieved = f" ({lv.achieved_rate_per_s:.2f})" if lv.achieved_rate_per_s is not None else ""
        table.add_row(
            f"{lv.request_rate:g}{achieved}",
            str(lv.num_requests),
            str(lv.concurrency),
            ms(lv.ttft_s),
            ms(lv.itl_s),
            f"{lv.e2e_s.p50:.3f}",
            f"{lv.output_tokens_per_s_aggregate:.1f}",
            f"{lv.requests_per_s:.2f}",
            {True: "yes", False: "no", None: "too few requests"}[lv.saturated],
        )
    return table
