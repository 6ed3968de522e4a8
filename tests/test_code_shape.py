"""Code shape of ``src/infer_advisor``: no module over 450 lines, no function over 80 (STYLE.md: a module a reader
can hold in one sitting; a function that fits on a screen).

``PENDING`` lists the few known exceptions still being split, each with its size now: an entry may shrink, never
grow, and must be removed once it is under the limit (the test says so), so the list only gets shorter.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "infer_advisor"
MODULE_LINES = 450
FUNCTION_LINES = 80

# "path[:function]" -> lines now. Functions are named by their qualified name (Class.method, outer.inner).
PENDING: dict[str, int] = {}


def _functions(tree: ast.AST, prefix: str = ""):
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            yield name, node.end_lineno - node.lineno + 1
            yield from _functions(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")


def shape() -> dict[str, int]:
    """Every module over MODULE_LINES and every function over FUNCTION_LINES, with its length."""
    out: dict[str, int] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MODULE_LINES:
            out[rel] = lines
        for name, length in _functions(ast.parse(text)):
            if length > FUNCTION_LINES:
                out[f"{rel}:{name}"] = length
    return out


def test_no_module_or_function_over_the_limits():
    found = shape()
    new = {k: v for k, v in found.items() if k not in PENDING}
    grown = {k: (v, PENDING[k]) for k, v in found.items() if k in PENDING and v > PENDING[k]}
    assert not new, f"over {MODULE_LINES} lines per module / {FUNCTION_LINES} per function: {new}"
    assert not grown, f"pending splits that grew (now, allowed): {grown}"


def test_pending_list_is_current():
    found = shape()
    done = sorted(k for k in PENDING if k not in found)
    assert not done, f"under the limit now: remove from PENDING in {__file__}: {done}"
