"""Writing a report: bench.json, bench.csv, requests.csv (each replaced atomically), bench.png, and the screen table."""

from __future__ import annotations

import csv
import io
import os
import tempfile
from pathlib import Path

from .report import BenchReport

JSON_NAME, LEVELS_CSV, REQUESTS_CSV, PLOT_NAME = "bench.json", "bench.csv", "requests.csv", "bench.png"
_STATS = ("ttft_s", "tpot_s", "itl_s", "e2e_s")


def _atomic_write(path: Path, data: bytes) -> None:
    """Write to a temp file beside ``path`` and rename it over: a crash never leaves half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are ordinary files
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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


def write_files(report: BenchReport, out: Path) -> None:
    """Write (or replace) bench.json, bench.csv and requests.csv in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    _atomic_write(out / JSON_NAME, report.model_dump_json(indent=2).encode())
    _atomic_write(out / LEVELS_CSV, _csv(level_rows(report)))
    req_rows = [
        {k: v for k, v in s.model_dump().items() if k != "itl_s"}
        | {"itl_mean_s": sum(s.itl_s) / len(s.itl_s) if s.itl_s else ""}
        for s in report.requests
    ]
    _atomic_write(out / REQUESTS_CSV, _csv(req_rows))


def write_plot(report: BenchReport, out: Path) -> Path | None:
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
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    _atomic_write(out / PLOT_NAME, buf.getvalue())
    return out / PLOT_NAME


def render_table(report: BenchReport):
    """A rich Table of the levels (every figure measured) and, if any, the plan comparison."""
    from rich.table import Table

    md = report.metadata
    mem_label = {"nvml": "peak GPU mem (NVML)", "psutil-rss": "peak RSS (psutil)", "none": "peak mem"}[md.memory_source]
    table = Table(
        title=f"{md.engine} · {md.model} · {md.device.name}" + (" · RANDOM WEIGHTS" if md.random_weights else ""),
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
    ):
        table.add_column(col, justify="right")
    for lv in report.levels:
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
            f"{lv.peak_memory_bytes / 2**30:.2f} GiB" if lv.peak_memory_bytes is not None else "-",
        )
    tables = [table]
    if report.comparisons:
        cmp = Table(title="Plan vs measured", caption="predicted: the plan's estimate; measured: this run.")
        for col in ("metric", "conc.", "predicted", "source", "measured", "error %"):
            cmp.add_column(col, justify="right")
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
