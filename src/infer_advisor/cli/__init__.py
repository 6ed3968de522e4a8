"""The `infer-advisor` command. Each subcommand lives in its own module and is imported only when run.

A subcommand module ``cli/<name>_cmd.py`` exposes::

    HELP = "one line for `infer-advisor --help`"
    def configure(parser: argparse.ArgumentParser) -> None   # add its arguments
    def run(ns: argparse.Namespace) -> int                    # do the work, return the exit code

Errors derived from :class:`infer_advisor.errors.InferAdvisorError` become one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, one-line help). Kept here so `--help` needs no subcommand import.
COMMANDS: dict[str, tuple[str, str]] = {
    "plan": ("plan_cmd", "Recommend engine, quantization, dtype and parallelism; emit launch artifacts."),
    "gpus": ("gpus_cmd", "List the GPUs probed on this machine and the GPU catalog."),
    "models": ("models_cmd", "List the embedded model catalog."),
    "schema": ("schema_cmd", "Print the JSON Schema of the plan (or another result) model."),
    "quantize": ("quantize_cmd", "Quantize a model (AWQ, CTranslate2, GGUF) into a new directory."),
    "bench": ("bench_cmd", "Benchmark an engine or an OpenAI-compatible server; compare with the plan."),
    "calibrate": ("calibrate_cmd", "Benchmark at several batch sizes and fit a speed profile for the plan."),
}


def _top_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="infer-advisor",
        description="Plan, emit, quantize and benchmark LLM inference deployments (offline-first).",
        epilog="Run `infer-advisor COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"infer-advisor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_) in COMMANDS.items():
        sub.add_parser(name, help=help_, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    from ..errors import InferAdvisorError

    args = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args if not a.startswith("-")), None)
    if command not in COMMANDS:
        parser = _top_parser()
        if command is None:
            ns = parser.parse_args(args)  # handles --help / --version
            parser.print_help()
            return 0 if not args else 2
        parser.error(f"unknown command '{command}' (choose from {', '.join(COMMANDS)})")
    module = importlib.import_module(f"{__name__}.{COMMANDS[command][0]}")
    parser = argparse.ArgumentParser(prog=f"infer-advisor {command}", description=COMMANDS[command][1])
    module.configure(parser)
    rest = list(args)
    rest.remove(command)
    ns = parser.parse_args(rest)
    try:
        return int(module.run(ns) or 0)
    except InferAdvisorError as err:
        print(f"error: {_one_line(str(err))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
