"""`infer-advisor quantize`: flags derived from :class:`infer_advisor.quantize.QuantizeRequest`.

    infer-advisor quantize --model ./tiny-llama --method ct2-int8 --out ./tiny-ct2 [--eval] [--json]

Exit codes: 0 done (check passed or could not run here), 1 the output was written but its runtime failed to
load it, 2 a bad input (one line on stderr).
"""

from __future__ import annotations

import argparse

HELP = "Quantize a model (AWQ, CTranslate2, GGUF) into a new directory."


def configure(parser: argparse.ArgumentParser) -> None:
    from ..quantize.results import QuantizeRequest
    from ._derive import add_model_arguments

    add_model_arguments(parser, QuantizeRequest)
    parser.add_argument(
        "--eval", dest="evaluate", action="store_true", default=argparse.SUPPRESS, help="Same as --evaluate."
    )
    from ._format import add_format_option

    add_format_option(parser, ("text", "json"), json_help="Print the result as JSON on stdout (--format json).")


def _check_lines(result) -> list[str]:
    check = result.check
    lines = [f"check: {check.status}" + (f" [{check.runtime}]" if check.runtime else "")]
    if check.loaded:
        lines.append(f"  generated {check.tokens_generated} tokens (measured): {check.prompt!r} -> {check.sample_text!r}")
    if check.perplexity_after is not None:
        before = f"{check.perplexity_before:.3f}" if check.perplexity_before is not None else "n/a"
        lines.append(
            f"  perplexity on {check.eval_tokens} calibration tokens (measured): "
            f"before {before}, after {check.perplexity_after:.3f}"
        )
    if check.detail:
        lines.append(f"  {check.detail}")
    return lines


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def run(ns: argparse.Namespace) -> int:
    import signal
    import sys

    from ..quantize import run_request
    from ..quantize.results import QuantizeRequest
    from ._derive import model_from_namespace

    from ._format import output_format

    fmt = output_format(ns, default="text")
    request = model_from_namespace(QuantizeRequest, ns)
    try:  # clean up the partial output on `kill` as on Ctrl-C (main thread only; restored after)
        previous = signal.signal(signal.SIGTERM, _interrupt)
    except ValueError:
        previous = None
    try:
        result = run_request(request, summary=False)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if fmt == "json":
        from ..untrusted import json_text  # C1, line and bidi controls as JSON escapes: same value, inert on a terminal

        print(json_text(result.model_dump_json(indent=2)))
    else:
        from ..untrusted import printable_lines

        print(printable_lines(result.summary()))
        for line in _check_lines(result):
            print(printable_lines(line))
        for note in result.notes:
            print(printable_lines(f"note: {note}"))
    if result.check.status == "failed":
        from . import _one_line

        print(_one_line(f"error: the output was written but did not load: {result.check.detail}"), file=sys.stderr)
        return 1
    return 0
