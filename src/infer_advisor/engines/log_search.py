"""Pattern searches over a start-up log, linear in its size, and the reader that fills a ``StartupLog`` from them
keeping the line each figure came from."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from .startup_log_record import FIGURES, GIB, LINE_CHARS, ONE_VALUE, Engine, StartupLog

# Longest stretch of a line a pattern is tried on: vLLM's "Initializing a V1 LLM engine ... with config:" line, the
# longest one read, is ~3,000 characters. With at most _TRIES_PER_LINE attempts per line, parsing is linear in the
# log's size whatever it holds (the old whole-text searches backtracked: 1.1 MB of "llama_kv_cache" took 169 s).
MAX_LINE_CHARS = 4096
_TRIES_PER_LINE = 16
# Lines holding a pattern's literal that are tried before the pattern is given up: a start-up log names each figure
# within its first few hundred lines; 1 MB of "model=\n" would otherwise cost a Python step per line per pattern.
_CANDIDATE_LINES = 5000
# The literal a pattern starts with (escapes undone), used to jump to candidate lines with str.find.
_LEAD = re.compile(r"(?:[^\\\[\](){}.*+?^$|]|\\[.()\[\]{}#=' /:-])+")


def num(text: str) -> float:
    return float(text.replace(",", ""))


@functools.cache
def _compiled(pattern: str, flags: int, anchor: str | None) -> tuple[re.Pattern, str, bool]:
    """The compiled pattern, the literal to find candidate lines by, and whether the match starts at that literal."""
    rx = re.compile(pattern, flags)
    if anchor is not None:
        return rx, anchor, False
    m = _LEAD.match(pattern.removeprefix("\\b"))
    lead = re.sub(r"\\(.)", r"\1", m.group(0)) if m else ""
    if not lead:
        raise ValueError(f"pattern {pattern!r} needs a leading literal or an anchor")
    return rx, lead.lower() if flags & re.I else lead, True


class LogLines:
    """Pattern searches over a log, one line at a time, linear in the log's size: candidate lines are found with
    ``str.find`` of a literal, each line is cut at MAX_LINE_CHARS and tried at most _TRIES_PER_LINE times."""

    def __init__(self, text: str):
        self.text = text

    @functools.cached_property
    def lower(self) -> str:
        return self.text.lower()

    def matches(self, pattern: str, flags: int = 0, anchor: str | None = None) -> Iterator[tuple[re.Match, str]]:
        """(match, its whole line stripped) for each line that matches, in order."""
        rx, lit, leading = _compiled(pattern, flags, anchor)
        text = self.lower if flags & re.I else self.text
        pos, budget = text.find(lit), _CANDIDATE_LINES
        while pos >= 0 and budget > 0:
            budget -= 1
            start = text.rfind("\n", 0, pos) + 1
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            line = self.text[start : min(end, start + MAX_LINE_CHARS)]
            m = None
            if leading:
                at, tries = pos - start, 0
                while 0 <= at < len(line) and tries < _TRIES_PER_LINE and m is None:
                    m = rx.match(line, at)
                    at, tries = (text.find(lit, start + at + 1, start + len(line)) - start), tries + 1
            else:
                m = rx.search(line)
            if m is not None:
                yield m, self.text[start:end].strip()
            pos = text.find(lit, end)

    def first(self, pattern: str, flags: int = 0, anchor: str | None = None) -> tuple[re.Match, str] | tuple[None, None]:
        return next(self.matches(pattern, flags, anchor), (None, None))

    def has(self, *literals: str) -> bool:
        return any(lit in self.text for lit in literals)


class LogReader:
    """Fills a StartupLog from regular expressions, keeping the line each figure came from."""

    def __init__(self, text: str, engine: Engine):
        self.text, self.log, self.find = text, StartupLog(engine=engine), LogLines(text)

    def take(self, key: str, pattern: str, convert, group: int = 1, flags: int = 0, skip_lines: str | None = None,
             anchor: str | None = None):
        """Set ``key`` from the first match of ``pattern`` (on a line without ``skip_lines``), unless already set."""
        if getattr(self.log, key) is not None:
            return None
        found = self.find.matches(pattern, flags, anchor)
        for m, line in found:
            if skip_lines and skip_lines in line:
                continue
            try:
                value = convert(m.group(group))
            except ValueError:  # a figure that does not parse ('0.88.' at a sentence's end): not this line
                continue
            setattr(self.log, key, value)
            if key in FIGURES:
                self.log.lines[key] = line[:LINE_CHARS]
            if key in ONE_VALUE:
                self._refuse_second_value(key, value, line, found, group, convert, skip_lines)
            return m
        return None

    def _refuse_second_value(self, key, value, line, rest, group, convert, skip_lines) -> None:
        """Two different values of a figure that has one per start-up: the log holds two runs (or another GPU's)."""
        from ..errors import RequestError

        for m, other in rest:
            if skip_lines and skip_lines in other:
                continue
            try:
                second = convert(m.group(group))
            except ValueError:
                continue
            if second != value:
                raise RequestError(
                    f"The log gives two different {key} values ({value!r} in '{line[:80]}' and {second!r} in "
                    f"'{other[:80]}'): it holds more than one start-up; pass the log of one run."
                )


def gib(s: str) -> int:
    return int(round(num(s) * GIB))
