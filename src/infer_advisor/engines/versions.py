"""Comparable keys of engine versions, for the data files' version ranges ([first, below)).

    >>> from infer_advisor.engines.versions import version_key
    >>> version_key("0.6.3.post1"), version_key("b7200"), version_key("v0.5.9")
    ((0, 6, 3), (7200,), (0, 5, 9))
"""

import functools
import re


@functools.lru_cache(maxsize=256)  # pure; the sizing search asks it tens of thousands of times
def version_key(version: str) -> tuple[int, ...]:
    """Comparable key of an engine version: '0.6.3.post1' -> (0, 6, 3); 'b7200' -> (7200,); 'v0.5.9' -> (0, 5, 9)."""
    text = version.strip().lower().lstrip("v")
    if re.fullmatch(r"b\d+", text):
        return (int(text[1:]),)
    parts = []
    for piece in text.split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
    if not parts:
        from ..errors import RequestError

        raise RequestError(f"Engine version '{version}' is not a version number (e.g. 0.8.5, 3.3.6, b7200).")
    return tuple(parts)
