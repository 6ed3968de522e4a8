"""Claims in README.md and docs/models.md that rot silently when the code or the catalog changes: the exit-code table
against the CLI's exit codes, and the model catalog's counts against `infer-advisor models`."""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path

from infer_advisor import cli
from infer_advisor.cli import main

ROOT = Path(__file__).resolve().parents[2]
CLI_DIR = Path(cli.__file__).parent


def _readme_exit_rows() -> dict[int, str]:
    section = (ROOT / "README.md").read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(m[1]): m[2] for m in re.finditer(r"^\| *(\d+) *\| *(.+?) *\|$", section, re.M)}


def _constant_returns(path: Path) -> set[int]:
    """Every integer literal a `return` of the module can give (`return 1`, `return 0 if ok else 1`)."""
    codes: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Return) and node.value is not None:
            values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            codes |= {v.value for v in values if isinstance(v, ast.Constant) and type(v.value) is int}
    return codes


def test_the_exit_code_table_lists_exactly_the_codes_the_cli_returns():
    rows = _readme_exit_rows()
    constants = {v for k, v in vars(cli).items() if k.startswith("EXIT_") and isinstance(v, int)}
    assert set(rows) == constants, f"README 'Exit codes' lists {sorted(rows)}, cli/__init__.py defines {sorted(constants)}"
    for path in sorted(CLI_DIR.glob("*_cmd.py")):
        assert _constant_returns(path) <= set(rows), f"{path.name} returns a code the README's table does not list"


def test_every_command_that_exits_1_is_named_in_the_table():
    row = _readme_exit_rows()[cli.EXIT_INFEASIBLE]
    for path in sorted(CLI_DIR.glob("*_cmd.py")):
        if cli.EXIT_INFEASIBLE in _constant_returns(path):
            command = next(name for name, (module, _) in cli.COMMANDS.items() if module == path.stem)
            assert f"`{command}" in row, f"`{command}` can exit {cli.EXIT_INFEASIBLE}; README's table row does not say when"


def test_the_catalog_counts_in_the_docs_are_the_catalogs(capsys):
    assert main(["models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["models"]
    configs, ids = len(rows), len(rows) + sum(len(r["variants"]) for r in rows)
    readme = (ROOT / "README.md").read_text()
    assert f"{configs} configs, {ids} Hub ids" in readme, f"README: say '{configs} configs, {ids} Hub ids'"
    per_family: Counter = Counter()
    per_family_ids: Counter = Counter()
    for r in rows:
        per_family[r["family"]] += 1
        per_family_ids[r["family"]] += 1 + len(r["variants"])
    families = ", ".join(f"{f} {per_family[f]}/{per_family_ids[f]}" for f in sorted(per_family, key=str.lower))
    expected = f"{configs} config files, {ids} Hub ids (entries plus variants), by family (configs/ids): {families}."
    models_md = " ".join((ROOT / "docs" / "models.md").read_text().split())
    assert expected in models_md, f"docs/models.md 'The catalog': paste (wrapped as you like)\n{expected}"
