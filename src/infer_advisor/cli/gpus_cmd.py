"""`infer-advisor gpus`: what the NVML probe finds on this machine, then the GPU catalog.

    infer-advisor gpus                    # probe + catalog as tables
    infer-advisor gpus --json             # the same as one JSON document (GpusReport)
    infer-advisor gpus --probe-only       # only this machine
    infer-advisor gpus --gpu H100-80GB:8  # resolve a spec instead of probing

Every figure says where it came from: (probe) is NVML on this machine, (catalog) a datasheet.
"""

from __future__ import annotations

import argparse

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import RequestError
from ..hardware.facts import GPUInfo, HardwareFacts
from ..hardware.probe import ProbeResult
from ..units import GIB

HELP = "List the GPUs probed on this machine and the GPU catalog."

TB = 10**12  # bytes per TB, for display (bandwidths are decimal)
GB = 10**9  # bytes per GB, for display


class GpusOptions(BaseModel):
    """Options of `infer-advisor gpus`."""

    model_config = ConfigDict(extra="forbid")

    json_output: bool = Field(default=False, description="Print one JSON document (probe result, facts, catalog).")
    probe_only: bool = Field(default=False, description="Show only what the probe found on this machine.")
    catalog_only: bool = Field(default=False, description="Show only the GPU catalog; do not probe.")
    gpu: str | None = Field(
        default=None,
        description="Resolve this hardware spec (NAME[:COUNT][xNODES] or cpu) instead of probing this machine.",
    )

    @model_validator(mode="after")
    def _exclusive(self) -> GpusOptions:
        if self.probe_only and self.catalog_only:
            raise ValueError("--probe-only and --catalog-only exclude each other; pass one")
        return self


class GpusReport(BaseModel):
    """What `infer-advisor gpus --json` prints."""

    model_config = ConfigDict(extra="forbid")

    probe: ProbeResult | None = Field(default=None, description="Raw NVML result (None with --catalog-only/--gpu).")
    hardware: HardwareFacts | None = Field(
        default=None, description="Facts resolved from the probe (or from --gpu); None with --catalog-only."
    )
    catalog: list[GPUInfo] = Field(default_factory=list, description="Every catalog GPU (source='catalog').")


def configure(parser: argparse.ArgumentParser) -> None:
    from ._derive import add_model_arguments

    # `--json` by hand: a field named `json` would shadow BaseModel.json; the rest is derived.
    from ._format import add_format_option

    field = GpusOptions.model_fields["json_output"]
    add_format_option(parser, ("table", "json"), json_dest="json_output", json_help=field.description + " Same as --format json.")
    add_model_arguments(parser, GpusOptions, exclude={"json_output"})


def build_report(opts: GpusOptions) -> GpusReport:
    from ..hardware import gpu_catalog
    from ..hardware.resolve import facts_from_probe, probe_gpus, resolve_hardware

    report = GpusReport()
    if not opts.catalog_only:
        if opts.gpu is not None:
            report.hardware = resolve_hardware(opts.gpu)
        else:
            report.probe = probe_gpus()  # NVML, then amd-smi / rocm-smi
            report.hardware = facts_from_probe(report.probe)
    if not opts.probe_only:
        report.catalog = gpu_catalog()
    return report


def run(ns: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from ._format import output_format

    ns.json_output = output_format(ns, json_dest="json_output") == "json"
    values = {k: v for k, v in vars(ns).items() if k in GpusOptions.model_fields}
    try:
        opts = GpusOptions(**values)
    except ValidationError as err:
        raise RequestError(str(err.errors()[0].get("msg", err)).removeprefix("Value error, ")) from None
    report = build_report(opts)
    if opts.json_output:
        from ..untrusted import json_text  # C1, line and bidi controls as JSON escapes: same value, inert on a terminal

        print(json_text(report.model_dump_json(indent=2)))
        return 0
    _print_report(report, opts)
    return 0


def _fmt(value: float | None, source: str | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    tag = f" ({source})" if source else ""
    return f"{value:,.{digits}f}{tag}"


def _print_report(report: GpusReport, opts: GpusOptions) -> None:
    from ._console import make_console

    console = make_console()
    if report.hardware is not None:
        _print_hardware(console, report, opts)
    if report.catalog:
        if report.hardware is not None:
            console.print()
        _print_catalog(console, report.catalog)


def _print_hardware(console, report: GpusReport, opts: GpusOptions) -> None:  # noqa: ANN001
    from ..untrusted import safe_table, terminal_text

    hw = report.hardware
    assert hw is not None
    if hw.kind == "cpu":
        cpu = hw.cpu
        head = f"--gpu {opts.gpu}" if opts.gpu else "Probe"
        for note in hw.notes:
            console.print(f"{head}: {terminal_text(note)}")
        if cpu is not None:
            console.print(
                f"CPU (probe): {terminal_text(cpu.name or 'unknown model')}, {cpu.cores} logical cores, "
                f"{cpu.memory_bytes / GIB:.1f} GiB RAM"
            )
        return
    if hw.source == "probe":
        title = f"GPUs on this machine (NVML, driver {hw.driver_version or 'unknown'})"
    else:
        title = f"--gpu {hw.spec}: {hw.gpus_per_node} GPU(s) per node x {hw.nodes} node(s) (catalog)"
    table = safe_table(title=title, title_justify="left")
    for col in ("#", "name", "NVML name", "memory GiB", "free GiB", "bandwidth TB/s", "bf16 TFLOPS", "CC",
                "SM MHz", "link GB/s", "MIG"):
        table.add_column(col)
    # Catalog GPUs of one spec are identical: one row stands for all of them.
    rows: list[tuple[object, GPUInfo]] = list(enumerate(hw.gpus))
    if hw.source == "catalog" and len(hw.gpus) > 1:
        rows = [(f"0-{len(hw.gpus) - 1}", hw.gpus[0])]
    for i, g in rows:
        src = g.figure_sources
        link_bw = _fmt(g.interconnect_bandwidth_bytes_per_s / GB, src.get("interconnect_bandwidth_bytes_per_s"), 0)
        link = f"{g.interconnect} {link_bw}"
        if g.nvlink_active_links:
            link += f", {g.nvlink_active_links} links"
        table.add_row(
            str(i),
            g.name,
            g.probed_name or "-",
            _fmt(g.memory_bytes / GIB, src.get("memory_bytes")),
            _fmt(g.free_memory_bytes / GIB if g.free_memory_bytes is not None else None, "probe"),
            _fmt(g.memory_bandwidth_bytes_per_s / TB, src.get("memory_bandwidth_bytes_per_s"), 2),
            _fmt(g.tflops.get("bf16"), src.get("tflops")),
            _fmt(g.compute_capability, src.get("compute_capability")),
            _fmt(g.sm_clock_mhz, src.get("sm_clock_mhz"), 0),
            link,
            "-" if g.mig_enabled is None else ("on" if g.mig_enabled else "off"),
        )
    console.print(table)
    for note in hw.notes:
        console.print(f"note: {terminal_text(note)}")


def _print_catalog(console, gpus: list[GPUInfo]) -> None:  # noqa: ANN001
    from ..untrusted import safe_table

    table = safe_table(
        title="GPU catalog (all figures: catalog, from datasheets; TFLOPS dense, no sparsity)",
        title_justify="left",
        caption="Each entry's datasheet: `infer-advisor gpus --json --catalog-only` (catalog_source).",
        caption_justify="left",
    )
    for col in ("name", "vendor", "memory GiB", "bandwidth TB/s", "bf16", "fp8", "int8", "CC", "interconnect GB/s",
                "aliases"):
        table.add_column(col)
    for g in gpus:
        table.add_row(
            g.name,
            g.vendor,
            f"{g.memory_bytes / GIB:g}",
            f"{g.memory_bandwidth_bytes_per_s / TB:.2f}",
            *(f"{g.tflops[d]:g}" if d in g.tflops else "-" for d in ("bf16", "fp8", "int8")),
            f"{g.compute_capability:.1f}" if g.compute_capability else "-",
            f"{g.interconnect} {g.interconnect_bandwidth_bytes_per_s / GB:g}",
            ", ".join(g.aliases),
        )
    console.print(table)
