"""One spelling for output formats across commands: ``--format FORMAT`` everywhere, ``--json`` kept as its alias.

    add_format_option(parser, ("table", "json"))          # in configure()
    fmt = output_format(ns)                                 # in run(): 'table' or 'json'; a clash is one error line
"""

from __future__ import annotations

import argparse


def add_format_option(parser, choices: tuple[str, ...] = ("table", "json"), *, json_dest: str = "json",
                      json_help: str = "Same as --format json.", help: str | None = None) -> None:  # noqa: A002
    """``--format {choices}`` (the first is the default) and ``--json`` (stored in ``json_dest``) as its alias."""
    parser.add_argument(
        "--format",
        choices=choices,
        default=None,
        help=help or f"{' or '.join(choices)} (default {choices[0]}); json is the stable, machine-readable form.",
    )
    if "json" in choices:
        parser.add_argument("--json", dest=json_dest, action="store_true", help=json_help)


def output_format(ns: argparse.Namespace, *, json_dest: str = "json", default: str = "table") -> str:
    """The format asked for: --json means --format json; both given and different is a bad input (exit 2)."""
    from ..errors import RequestError

    as_json = bool(getattr(ns, json_dest, False))
    fmt = getattr(ns, "format", None)
    if as_json and fmt not in (None, "json"):
        raise RequestError(f"--json and --format {fmt} disagree; pass one of them.")
    return "json" if as_json else (fmt or default)
