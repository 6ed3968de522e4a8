"""`infer-advisor bench`: measure an engine or an OpenAI-compatible server; flags derived from BenchRequest."""

from __future__ import annotations

import argparse
import sys

HELP = "Benchmark an engine or an OpenAI-compatible server; compare with the plan."


def configure(parser: argparse.ArgumentParser) -> None:
    from ..bench.request import BenchRequest
    from ._derive import add_model_arguments

    add_model_arguments(parser, BenchRequest)
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="Show a progress bar.")
    from ._format import add_format_option

    add_format_option(parser, ("table", "json"), json_help="Print the report as JSON on stdout instead of tables (--format json).")


def run(ns: argparse.Namespace) -> int:
    from ..bench import run_bench
    from ..bench.output import render_table
    from ..bench.request import BenchRequest
    from ._console import make_console
    from ._derive import model_from_namespace

    from ._format import output_format

    fmt = output_format(ns)
    req = model_from_namespace(BenchRequest, ns)
    report = run_bench(req, progress=ns.progress, command_line=["infer-advisor", *sys.argv[1:]])
    if fmt == "json":
        from ..untrusted import json_text  # C1, line and bidi controls as JSON escapes: same value, inert on a terminal

        print(json_text(report.model_dump_json(indent=2)))
        return 0
    console = make_console()
    for table in render_table(report):
        console.print(table)
    for note in report.notes:
        console.print(f"note: {note}", style="yellow", markup=False)
    if req.out is not None:
        from .._output import read_manifest

        manifest = read_manifest(req.out) or {"files": []}
        console.print(f"wrote {', '.join(str(req.out / f) for f in manifest['files'])}", markup=False)
    return 0
