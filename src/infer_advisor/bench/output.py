"""Writing a report: bench.json, bench.csv, requests.csv, bench.png (each replaced atomically), and the screen table.

While a run goes on, and after one that stopped early, the CSV files and the plot are named
``bench.incomplete.csv``, ``requests.incomplete.csv`` and ``bench.incomplete.png`` (bench.json says the same
with ``complete: false``); a finished run replaces them with the final names.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

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
        row: dict = {"concurrency": lv.concurrency, "num_requests": lv.num_requests, "duration_s": lv.duration_s}
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
            source="measured",
        )
        rows.append(row)
    return rows


def _csv(rows: list[dict]) -> bytes:
    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
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
    """bench.png: median TTFT and TPOT against aggregate throughput, one point per concurrency level."""
    if not report.levels:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    x = [lv.output_tokens_per_s_aggregate for lv in report.levels]
    for ax, name, label in ((axes[0], "ttft_s", "TTFT p50 (ms)"), (axes[1], "tpot_s", "TPOT p50 (ms)")):
        y = [getattr(lv, name).p50 * 1000 if getattr(lv, name) else float("nan") for lv in report.levels]
        ax.plot(x, y, marker="o")
        for xi, yi, lv in zip(x, y, report.levels, strict=True):
            ax.annotate(f"c={lv.concurrency}", (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xlabel("output tokens/s (aggregate)")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    md = report.metadata
    title = f"{md.engine}: {md.model or ''} on {md.device.name} ({md.workload}{', random weights' if md.random_weights else ''})"
    if not report.complete:
        title = "INCOMPLETE RUN - " + title
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    name = file_names(report.complete)[3]
    folder.write(name, buf.getvalue())
    if report.complete:
        folder.remove(incomplete_name(PLOT_NAME))
    return name


def _gib(n: int | None) -> str:
    return f"{n / 2**30:.2f} GiB" if n is not None else "-"


def render_table(report: BenchReport):
    """A rich Table of the levels (every figure measured) and, if any, the plan comparison."""
    from rich.table import Table

    md = report.metadata
    mem_label = {
        "nvml": "peak GPU mem (NVML)",
        "torch-allocator": "peak GPU mem (allocator + CUDA context)",
        "psutil-rss": "peak RSS (psutil)",
        "none": "peak mem",
    }[md.memory_source]
    device_column = any(lv.peak_device_memory_bytes is not None for lv in report.levels)
    status = "" if report.complete else " · INCOMPLETE" + (f" ({report.error})" if report.error else "")
    table = Table(
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
    tables = [table]
    if report.comparisons:
        cmp = Table(title="Plan vs measured", caption="predicted: the plan's estimate; measured: this run.")
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
