"""The rich console every command prints through: the terminal's width on a terminal, wide in a pipe or a file.

Rich falls back to 80 columns when stdout is not a terminal, which cut numbers ("1013…") and squeezed reasons to a
few characters in CI logs and redirected output. Here a pipe or file gets :data:`PIPE_WIDTH` columns (``COLUMNS``
still wins when set), and tables built with ``overflow="fold"`` wrap a long value instead of cutting it.
"""

from __future__ import annotations

import os
import sys

# Wide enough for the plan and bench tables without wrapping a figure; a log line this long reads fine.
PIPE_WIDTH = 200


def make_console(*, stderr: bool = False):
    """A rich Console for stdout (or stderr): wide in a pipe; a closed pipe raises BrokenPipeError (the CLI then
    exits 141 quietly) instead of rich's own ``SystemExit(1)``, which read as "infeasible plan"."""
    from rich.console import Console

    from ..untrusted import printable_lines

    class _Console(Console):
        def render_str(self, text: str, **kwargs):
            """Every string printed (a line, a table cell, a title) loses its terminal controls here: ESC, OSC 8
            links, C1, bidi and \\r are written as visible escapes. Rich markup is escaped where the text is built
            (:func:`infer_advisor.untrusted.terminal_text`)."""
            return super().render_str(printable_lines(text), **kwargs)

        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    stream = sys.stderr if stderr else sys.stdout
    width = None
    if not os.environ.get("COLUMNS"):
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        if not tty:
            width = PIPE_WIDTH
    return _Console(file=stream, width=width, stderr=stderr, highlight=False)


def fit_width(console, renderable, *, at_most: int = 1000) -> None:
    """In a pipe or file without ``COLUMNS``: widen ``console`` to what ``renderable`` needs (up to ``at_most``), so a
    table of ``no_wrap`` columns (the model catalog) is not cut; a terminal or ``COLUMNS`` keeps its width."""
    if console.is_terminal or os.environ.get("COLUMNS"):
        return
    need = console.measure(renderable, options=console.options.update_width(at_most)).maximum
    console.width = max(console.width, need)


def terminal_text(text: str) -> str:
    """``text`` for a plain (markup-free) terminal line: control, separator and bidi characters written as visible
    escapes. One implementation: :func:`infer_advisor.untrusted.escape_unsafe`."""
    from ..untrusted import escape_unsafe

    return escape_unsafe(str(text))


def cell(value: object) -> str:
    """The one function every table cell and printed line of user-derived text goes through on its way to the
    terminal (:func:`infer_advisor.untrusted.terminal_text`: unsafe characters escaped, then rich markup)."""
    from ..untrusted import terminal_text as escape

    return escape(value)


def md_cell(value: object) -> str:
    """The one function every Markdown cell and list item goes through (:func:`infer_advisor.untrusted.markdown_cell`)."""
    from ..untrusted import markdown_cell

    return markdown_cell(value)
