"""Shell quoting for emitted scripts: the project's one shell-word escaper, :func:`infer_advisor.untrusted.sh_quote`
(:func:`shlex.quote` with backslashes kept outside single quotes, so shellcheck SC1003 has nothing to flag). It lives
in the base stage so the engines' command lines (doctor's fixed command) and the CLI quote through the same function.
"""

from __future__ import annotations

from ..untrusted import sh_join, sh_quote

__all__ = ["sh_join", "sh_quote"]
