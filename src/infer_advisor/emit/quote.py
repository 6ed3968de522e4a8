"""Shell quoting for emitted scripts: :func:`shlex.quote`, with backslashes kept outside single quotes.

``shlex.quote("a\\")`` gives ``'a\'``: correct for bash, but shellcheck (SC1003) flags a backslash before a
closing quote as a likely mistake. Writing each backslash as ``\\`` between quoted pieces gives the same word
with no finding.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any


def sh_quote(value: Any) -> str:
    text = str(value)
    if "\\" not in text:
        return shlex.quote(text)
    return "\\\\".join(shlex.quote(part) if part else "" for part in text.split("\\"))


def sh_join(values: Iterable[Any]) -> str:
    return " ".join(sh_quote(v) for v in values)
