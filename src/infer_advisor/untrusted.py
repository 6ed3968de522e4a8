"""Values from users and outside files: what they may hold (checked once, where they enter) and how they are
made safe where they leave for a terminal or a comment.

    >>> refuse_unsafe("meta-llama/Llama-2-7b-hf", "--model")
    'meta-llama/Llama-2-7b-hf'
    >>> check_version("0.33.0@evil", "--engine-version")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    infer_advisor.errors.RequestError: --engine-version '0.33.0@evil' is not a version...
    >>> escape_unsafe("a\\u2028b")
    'a\\\\u2028b'

Unsafe characters are every Unicode control (C0, DEL, C1 including NEL U+0085), line and paragraph separator
(U+2028, U+2029), and format character (Cf: bidi embeddings, overrides and isolates U+202A-U+202E, U+2066-U+2069,
marks U+200E/U+200F/U+061C, zero-width characters, BOM), plus surrogates and private-use code points. YAML 1.1
reads NEL, U+2028 and U+2029 as line breaks; terminals act on ESC and C1; bidi controls reorder what a reader
sees. Each target has one escaper: shell words (:func:`sh_quote`, re-exported by emit/quote.py), YAML and JSON (their emitters, emit/templating.py),
terminal and markdown (:func:`terminal_text`; :func:`markdown_cell` for prose, cells and list items,
:func:`markdown_code` for an inline code span), CSV cells (:func:`csv_cell`).
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Iterable
from typing import Any

from .errors import RequestError

# Unicode general categories refused in names, versions and paths: Cc control, Cf format, Zl/Zp separators,
# Cs surrogate, Co private use, Cn unassigned.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
# A fast pre-filter: every character outside printable ASCII is looked at by category.
_NOT_PLAIN = re.compile(r"[^\x20-\x7e]")

# An engine version: digits with dots, an optional leading 'v' (dropped) or 'b' (llama.cpp builds, b7200), and an
# optional PEP 440 / semver suffix (rc1, .post1, -rc.1). No '+': a Docker tag cannot hold it. Docker tags are
# [A-Za-z0-9_][A-Za-z0-9_.-]{0,127} (distribution/reference), so every match is also a valid tag piece.
VERSION_PATTERN = re.compile(r"^b?[0-9]{1,8}(?:\.[0-9]{1,8}){0,3}(?:[.-]?(?:a|b|rc|post|dev)\.?[0-9]{0,8})?$")
MAX_VERSION_CHARS = 40
# A GPU name: letters, digits, space and - _ . ( ) +, starting with a letter or digit (every catalog name fits).
GPU_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._()+-]{0,63}$")


def unsafe_chars(text: str) -> list[str]:
    """The unsafe characters in ``text``, in order (empty: the text is safe)."""
    return [ch for ch in _NOT_PLAIN.findall(text) if ch != " " and unicodedata.category(ch) in _UNSAFE_CATEGORIES]


def _name(ch: str) -> str:
    return f"U+{ord(ch):04X}" + (f" {unicodedata.name(ch)}" if unicodedata.name(ch, "") else "")


def refuse_unsafe(text: str, what: str, error: type[Exception] = RequestError) -> str:
    """``text`` unchanged, or ``error`` naming the first unsafe character (one line, the value shown escaped)."""
    bad = unsafe_chars(text)
    if bad:
        raise error(
            f"{what} {escape_unsafe(text)[:120]!r} holds {_name(bad[0])}: control, line/paragraph separator and "
            "bidi/format characters are not allowed in names, versions and paths."
        )
    return text


def escape_unsafe(text: str) -> str:
    """``text`` with every unsafe character written as a visible escape (``\\n``, ``\\x1b``, ``\\u2028``)."""
    if not _NOT_PLAIN.search(text):
        return text
    out = []
    for ch in text:
        if ch == " " or "\x20" <= ch <= "\x7e" or unicodedata.category(ch) not in _UNSAFE_CATEGORIES:
            out.append(ch)
        elif ch in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def check_version(text: str, what: str = "--engine-version", error: type[Exception] = RequestError) -> str:
    """A version string, a leading 'v' dropped ('v0.19.0' -> '0.19.0'); anything else raises ``error``."""
    value = text.strip()
    if len(value) > MAX_VERSION_CHARS:
        value = value[:MAX_VERSION_CHARS] + "..."
    elif value[:1] in ("v", "V") and value[1:2].isdigit():
        value = value[1:]
    if not VERSION_PATTERN.match(value):
        raise error(
            f"{what} {escape_unsafe(value)!r} is not a version: digits and dots with an optional rc/post/dev suffix "
            "(0.33.0, 0.11.0rc1; llama.cpp builds b7200)."
        )
    return value


def check_gpu_name(text: str, what: str = "GPU name", error: type[Exception] = RequestError) -> str:
    refuse_unsafe(text, what, error)
    if not GPU_NAME_PATTERN.match(text):
        raise error(
            f"{what} {text[:80]!r} may hold only letters, digits, spaces and - _ . ( ) +, at most 64 characters, "
            "starting with a letter or digit."
        )
    return text


def terminal_text(value: object) -> str:
    """One cell or line for the terminal: unsafe characters escaped visibly, rich markup escaped (``[`` -> ``\\[``)."""
    from rich.markup import escape

    return escape(escape_unsafe(str(value)))


# Markdown that changes structure or reaches out: table pipes, code spans, links/images, raw HTML, escapes.
_MARKDOWN_SPECIAL = re.compile(r"([\\`|\[\]#])")
# What starts raw HTML (a tag, a comment, a declaration) or an entity; '8.0 < 7.0' stays as it is.
_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")


def markdown_cell(value: object) -> str:
    """One markdown cell or list item: unsafe characters (newline and \\r included) escaped visibly, ``| ` [ ] \\``
    backslash-escaped (``#`` too: a trailing `` #`` would be read as an ATX heading's closing sequence and dropped,
    found by hypothesis on a folder named ``#``), and a ``<`` that would open a tag or an ``&`` that would start an entity written as an
    entity, so text can end neither the cell, the row nor the table, and raw HTML and links become text."""
    text = escape_unsafe(str(value))
    text = _HTML_START.sub("&lt;", _ENTITY.sub("&amp;", text))
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


_BACKTICK_RUNS = re.compile(r"`+")


def markdown_code(value: object) -> str:
    """One inline code span holding ``value`` exactly (a command, a path): unsafe characters escaped visibly, and
    fenced by more backticks than the longest run inside it, padded with a space where it starts or ends with a
    backtick or a space (CommonMark 6.1 strips one from each side), so a backtick in a folder name cannot close the
    span and turn the rest of the line into Markdown or raw HTML."""
    text = escape_unsafe(str(value))
    fence = "`" * (max((len(m) for m in _BACKTICK_RUNS.findall(text)), default=0) + 1)
    if text[:1] in ("`", " ") or text[-1:] in ("`", " "):
        text = f" {text} "
    return f"{fence}{text}{fence}"


# The user-information part of a URL (``scheme://user:password@host``): a credential, never written to a file.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s]+@")


def without_credentials(text: str) -> str:
    """``text`` with the ``user:password@`` of every URL in it written ``***@``: what a result file or report may keep
    of a ``--url`` (the connection itself still uses the credentials)."""
    return _URL_USERINFO.sub(r"\1***@", text)


def json_text(text: str) -> str:
    """JSON text (a document, or a string's quoted form) with every unsafe character but the newlines between its lines
    written as a JSON escape (``\\u2028``; beyond U+FFFF a surrogate pair): the same value for every JSON parser, and
    nothing a terminal acts on (JSON writers keep C1 controls, line separators and bidi controls raw). In valid JSON
    such a character can only stand inside a string, so escaping it never changes the structure."""
    if not unsafe_chars(text.replace("\n", "")):
        return text
    import json

    return "".join(json.dumps(ch)[1:-1] if ch != "\n" and unsafe_chars(ch) else ch for ch in text)


# A CSV cell a spreadsheet would read as a formula or a command (OWASP "CSV injection"): it starts with one of these.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_cell(value: object) -> object:
    """A value for one CSV cell (bench.csv, requests.csv): numbers and None as they are; text with unsafe characters
    escaped and, where it starts like a formula (``=HYPERLINK(...)``, ``+``, ``-``, ``@``, a tab or line break), led by
    ``'`` so that a spreadsheet shows it as text instead of running it. The csv module does the quoting.

    >>> print(csv_cell("=SUM(A1)"), csv_cell("meta-llama/Llama-3.1-8B"), csv_cell(-0.5))
    '=SUM(A1) meta-llama/Llama-3.1-8B -0.5
    """
    if not isinstance(value, str):
        return value
    text = escape_unsafe(value)
    return "'" + text if value.startswith(_FORMULA_STARTS) else text


def printable_lines(text: str) -> str:
    """``text`` with unsafe characters escaped except the newlines that separate its lines (console output)."""
    return "\n".join(escape_unsafe(line) for line in text.split("\n"))


def safe_table(*args, **kwargs):
    """A rich ``Table`` whose title, caption and string cells pass :func:`terminal_text` (cells never parse as
    markup: ``[/]`` in a config.json field is text, not a closing tag)."""
    from rich.table import Table

    class SafeTable(Table):
        def add_row(self, *cells, **kw):
            super().add_row(*(terminal_text(c) if isinstance(c, str) else c for c in cells), **kw)

    for key in ("title", "caption"):
        if isinstance(kwargs.get(key), str):
            kwargs[key] = terminal_text(kwargs[key])
    return SafeTable(*args, **kwargs)


def sh_quote(value: Any) -> str:
    """One POSIX shell word: :func:`shlex.quote`, with backslashes kept outside single quotes.

    ``shlex.quote("a\\")`` gives ``'a\'``: correct for bash, but shellcheck (SC1003) flags a backslash before a
    closing quote as a likely mistake. Writing each backslash as ``\\\\`` between quoted pieces gives the same word
    with no finding. Every shell command the project writes or prints (artifacts, doctor's fixed command, a
    calibration's command line) is quoted here."""
    text = str(value)
    if "\\" not in text:
        return shlex.quote(text)
    return "\\\\".join(shlex.quote(part) if part else "" for part in text.split("\\"))


def sh_join(values: Iterable[Any]) -> str:
    return " ".join(sh_quote(v) for v in values)
