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

    class _Console(Console):
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
    """``text`` safe to print on a terminal: every control and format character (ESC, bidi marks) and the Unicode line
    and paragraph separators (U+2028, U+2029, U+0085) become '?', so a user's value cannot move the cursor or fake a line.

        terminal_text("/tmp/a\x1b[31mred")  # '/tmp/a?[31mred'
    """
    import unicodedata

    return "".join("?" if unicodedata.category(ch)[0] == "C" or unicodedata.category(ch) in ("Zl", "Zp") else ch for ch in text)


def cell(value: object) -> str:
    """The one function every table cell and printed line of user-derived text goes through on its way to the
    terminal: control and separator characters made harmless (:func:`terminal_text`), then rich markup escaped
    (``[`` -> ``\\[``), so a value prints as the text it is."""
    from rich.markup import escape

    return escape(terminal_text(str(value)))


def md_cell(value: object) -> str:
    """The one function every Markdown cell and list item goes through: a backslash, a pipe or a line break cannot end
    the cell, the row or the item."""
    return terminal_text(str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " "))
