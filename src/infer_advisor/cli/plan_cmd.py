"""`infer-advisor plan`: flags derived from PlanRequest; a readable table, or --json; --emit writes artifacts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "Recommend engine, quantization, dtype and parallelism; emit launch artifacts."


def configure(parser: argparse.ArgumentParser) -> None:
    from ..request import PlanRequest
    from ._derive import add_model_arguments

    add_model_arguments(parser, PlanRequest)
    out = parser.add_argument_group("output")
    from ._format import add_format_option

    add_format_option(out, ("table", "markdown", "json"), help="table (default; 200 columns wide in a pipe, numbers never cut), "
                      "markdown (for pull requests and tickets) or json (schema: `infer-advisor schema`).")
    out.add_argument(
        "--explain",
        action="store_true",
        help="Show every rule considered, grouped by the candidate it was applied to, and the deciding comparison.",
    )
    out.add_argument(
        "--all",
        action="store_true",
        dest="show_all",
        help="With --rate: list every GPU type searched, also those costing 10x the chosen fleet or more.",
    )
    out.add_argument(
        "--emit",
        metavar="KINDS",
        help="Write artifacts: comma-separated script,docker,compose,k8s,readme or 'all' (needs --out).",
    )
    out.add_argument("--out", type=Path, metavar="DIR", help="Folder for --emit artifacts (written atomically).")
    out.add_argument(
        "--force", action="store_true", help="Replace an existing --out folder (or --plot file) that infer-advisor wrote."
    )
    out.add_argument(
        "--startup-check",
        action="store_true",
        help="Predict what the engine does at start-up with exactly the settings given (nothing searched or changed): it "
        "starts with N tokens (the figure its log prints), or refuses with its own error text; exit 0 or 1.",
    )
    out.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.png",
        help="With --rate: draw the trade-off front (output tokens/s per GPU against tokens/s per user) to this PNG.",
    )


def run(ns: argparse.Namespace) -> int:
    from ..errors import RequestError
    from ..api import advise
    from ..request import PlanRequest
    from ._derive import model_from_namespace

    request = model_from_namespace(PlanRequest, ns)
    if request.rate:  # a sizing search runs for seconds and simulates many options: collect garbage again (cli.QUICK_COMMANDS)
        import gc

        gc.enable()
    from ._format import output_format

    fmt = output_format(ns)
    if ns.emit is not None and not ns.out:
        raise RequestError("--emit needs --out DIR (the folder the artifacts are written to).")
    if ns.out is not None and ns.emit is None:
        raise RequestError("--out needs --emit KINDS (script,docker,compose,k8s,readme or all); nothing else writes there.")
    if ns.plot is not None:
        if not request.rate:
            raise RequestError("--plot draws a sizing search's trade-off front: add --rate REQUESTS_PER_S.")
        if ns.plot.suffix.lower() != ".png":
            raise RequestError(f"--plot {ns.plot}: give a .png file name.")
        if ns.plot.is_dir() or not ns.plot.resolve().parent.is_dir():
            raise RequestError(f"--plot {ns.plot}: the folder it goes in must exist and the path must not be a folder.")
        from .._output import check_file
        from ..capacity.plot import is_front_png, require_matplotlib

        require_matplotlib()
        check_file(ns.plot, force=ns.force, ours=is_front_png, option="--plot")  # refused now, not after the search
    if getattr(ns, "startup_check", False):
        return _startup_check(request, fmt)
    kinds = None
    if ns.emit is not None:
        from ..emit import parse_kinds

        kinds = parse_kinds(ns.emit)  # an unknown or empty kind is refused before the plan is made
    plan = advise(request=request, explain=ns.explain, progress=_progress if request.rate else None)
    written: list[Path] = []
    if kinds is not None:
        from ..emit import write_artifacts

        written = write_artifacts(plan, kinds, ns.out, force=ns.force)
    if ns.plot is not None and plan.capacity is not None:
        from ..capacity.plot import plot_front

        written.append(plot_front(plan.capacity, ns.plot, force=ns.force))
    if fmt == "json":
        from ..untrusted import json_text  # C1, line and bidi controls as JSON escapes: same value, inert on a terminal

        sys.stdout.write(json_text(plan.model_dump_json(indent=2)) + "\n")
    else:
        from .render_plan import print_plan

        print_plan(plan, explain=ns.explain, fmt=fmt, show_all=ns.show_all)
        from ..untrusted import escape_unsafe

        for path in written:
            print(escape_unsafe(f"wrote {path}"))
    return 0 if plan.feasible else 1



def _startup_check(request, fmt: str) -> int:
    from ..plan.startup import outcome_lines, startup_outcome

    out = startup_outcome(request)
    if fmt == "json":
        from ..untrusted import json_text  # C1, line and bidi controls as JSON escapes: same value, inert on a terminal

        sys.stdout.write(json_text(out.model_dump_json(indent=2)) + "\n")
    else:
        from rich.markup import escape

        from ._console import make_console

        console = make_console()
        for line in outcome_lines(out):
            console.print(escape(line), soft_wrap=True)
    return 0 if out.starts else 1


def _progress(line: str) -> None:
    """A sizing search's progress line on stderr (the search sends one at most once a second, none in its first)."""
    print(line, file=sys.stderr, flush=True)
