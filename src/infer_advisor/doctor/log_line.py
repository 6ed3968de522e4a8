"""The line of a text a match sits in: what a start-up error quotes as the engine's line (at most ``LINE_CHARS``)."""

from __future__ import annotations

import re

LINE_CHARS = 400


def matched_line(text: str, m: re.Match) -> str:
    """The whole line of ``text`` around ``m``, stripped, shortened to ``LINE_CHARS``."""
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    return text[start : end if end >= 0 else len(text)].strip()[:LINE_CHARS]
