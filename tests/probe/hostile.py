"""The shared corpus of hostile values (issue 18): each one tries to leave its slot in a shell word, a YAML scalar, a
Dockerfile instruction, a comment, a terminal cell or a markdown cell. The CLI, API and renderer tests all use it.

``CANARY`` payloads create a file named ``CANARY`` when they run; a test passes only if that file never appears.
"""

from __future__ import annotations

# Line breaks of every kind: shell and YAML comments end at \n; YAML 1.1 also breaks lines at NEL, U+2028, U+2029.
LINE_BREAKS = ["\n", "\r", "\r\n", "\x85", "\u2028", "\u2029", "\x0b", "\x0c"]
# Bidi and format controls (trojan-source reordering), zero-width characters, terminal escapes.
FORMAT_CONTROLS = ["\u202e", "\u2066", "\u2069", "\u200f", "\u061c", "\u200b", "\ufeff", "\x1b[31m", "\x1b]8;;http://evil/\x1b\\", "\x9b31m", "\x00", "\x7f"]

# Values whose characters are all allowed at the boundary but special in some target.
SHELL_SPECIAL = ["$(touch CANARY)", "`touch CANARY`", "'; touch CANARY; '", '" && touch CANARY && "', "${IFS}touch${IFS}CANARY",
                 "a\\", "--flag=$(touch CANARY)", "x; touch CANARY #"]
YAML_SPECIAL = ["key: value", "- item", "---", "&anchor", "*alias", "{a: b}", "[a, b]", "!!python/object:os.system", "# c",
                "yes", "null", "0x10", "'", '"', "@at", "%percent", "|", ">"]
MARKUP_SPECIAL = ["[/]", "[link=http://evil/]click[/link]", "[bold red]x", "<script>alert(1)</script>", "<!-- x -->",
                  "| a | b |", "`code`", "**bold**", "[x](http://evil/)", "&amp;", "\\[/]"]

# Safe characters only: accepted everywhere and quoted by each target's escaper.
QUOTABLE = SHELL_SPECIAL + YAML_SPECIAL + MARKUP_SPECIAL

# Hostile characters: refused at every boundary (names, versions, paths) and escaped where an outside file supplies them.
REFUSED = [f"x{c}touch CANARY #" for c in LINE_BREAKS] + [f"name{c}evil" for c in FORMAT_CONTROLS]

# Engine versions a user may type that must be refused (a version becomes an image tag and a comment).
BAD_VERSIONS = ["0.33.0\ntouch CANARY #", "0.33.0@evil", "0.33.0:evil", "0.33.0\u2028x", "0.33.0/../x", "latest",
                "0.33.0+cu121", "$(touch CANARY)", "0.33.0;id", "1" * 60]
GOOD_VERSIONS = {"0.33.0": "0.33.0", "v0.19.0": "0.19.0", "0.11.0rc1": "0.11.0rc1", "b7200": "b7200", "1.2.0.post1": "1.2.0.post1"}

ALL = QUOTABLE + REFUSED
