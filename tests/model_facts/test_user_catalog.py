"""`models add` writes the USER catalog folder (INFER_ADVISOR_HOME, else the XDG data dir), never the installed
package; the catalog loader reads it beside the shipped entries, and a fresh installation still finds it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import infer_advisor
from infer_advisor.cli import main
from infer_advisor.constants import user_catalog_dir
from infer_advisor.model_facts import resolve_model
from infer_advisor.model_facts.catalog import find_entry, folder, load_catalog

PACKAGE = Path(infer_advisor.__file__).resolve().parent


@pytest.fixture
def config(tmp_path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(find_entry("Qwen/Qwen3-0.6B").config))
    return path


def test_add_writes_the_user_folder_and_prints_it(config, tmp_path, capsys):
    shipped_before = sorted(p.name for p in folder().iterdir())
    assert main(["models", "add", str(config), "--id", "acme/Tiny-Home", "--family", "Acme"]) == 0
    written = tmp_path / "ia-home" / "models" / "acme--Tiny-Home.json"
    out = capsys.readouterr().out
    assert f"wrote {written}" in out and written.is_file()
    assert PACKAGE not in written.resolve().parents  # outside the installation: pip upgrade/reinstall keep it
    assert sorted(p.name for p in folder().iterdir()) == shipped_before  # nothing written into the package
    # the loader reads it (same process: the caches were refreshed)
    assert find_entry("acme/Tiny-Home").name == "acme/Tiny-Home"
    assert resolve_model("acme/Tiny-Home", source="catalog").num_parameters == 596_049_920
    assert "acme/Tiny-Home" in {e.name for e in load_catalog()}
    assert main(["models", "--family", "acme"]) == 0
    assert "acme/Tiny-Home" in capsys.readouterr().out


def test_xdg_data_home_when_no_infer_advisor_home(monkeypatch, tmp_path):
    monkeypatch.delenv("INFER_ADVISOR_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert user_catalog_dir() == tmp_path / "xdg" / "infer_advisor" / "models"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_catalog_dir() == tmp_path / "home" / ".local" / "share" / "infer_advisor" / "models"


def test_a_fresh_installation_reads_the_user_catalog(config, tmp_path):
    """Reinstall, simulated: a copy of the package in another site folder (nothing of the old one kept) and a new
    process with the same environment still finds the user's entry; the copy's shipped catalog has no trace of it."""
    assert main(["models", "add", str(config), "--id", "acme/Tiny-Reinstall"]) == 0
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "infer_advisor", ignore=shutil.ignore_patterns("__pycache__"))
    assert not (site / "infer_advisor" / "data" / "models" / "acme--Tiny-Reinstall.json").exists()
    code = (
        "import infer_advisor, json; from infer_advisor.model_facts.catalog import find_entry; "
        "e = find_entry('acme/Tiny-Reinstall'); print(json.dumps([infer_advisor.__file__, e and e.name]))"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
    where, name = json.loads(done.stdout)
    assert Path(where).resolve().is_relative_to(site.resolve()) and name == "acme/Tiny-Reinstall"


def test_a_shipped_name_needs_force_and_then_the_users_config_wins(config, tmp_path, capsys):
    mine = json.loads(config.read_text())
    mine["max_position_embeddings"] = 8192
    config.write_text(json.dumps(mine))
    assert main(["models", "add", str(config), "--id", "Qwen/Qwen3-0.6B"]) == 2
    err = capsys.readouterr().err
    assert "shipped catalog" in err and "--force" in err and err.count("\n") == 1
    assert main(["models", "add", str(config), "--id", "Qwen/Qwen3-0.6B", "--force"]) == 0
    assert resolve_model("Qwen/Qwen3-0.6B", source="catalog").max_position_embeddings == 8192
    assert [e.name for e in load_catalog()].count("Qwen/Qwen3-0.6B") == 1


def test_a_broken_user_index_is_one_error_line(tmp_path, capsys):
    where = tmp_path / "ia-home" / "models"
    where.mkdir(parents=True)
    (where / "_index.json").write_text("{not json")
    assert main(["models", "llama-2-7b", "--source", "catalog"]) == 2
    err = capsys.readouterr().err
    assert "_index.json" in err and err.count("\n") == 1


def test_the_printed_folder_goes_through_the_terminal_escaper(config, tmp_path, monkeypatch, capsys):
    home = tmp_path / "a\x1b[31mred\u2028b\u202e"
    monkeypatch.setenv("INFER_ADVISOR_HOME", str(home))
    assert main(["models", "add", str(config), "--id", "acme/Tiny-Esc"]) == 0
    out = capsys.readouterr().out
    assert (home / "models" / "acme--Tiny-Esc.json").is_file()  # written where asked
    wrote = [line for line in out.splitlines() if line.startswith("wrote ")]
    assert len(wrote) == 1 and "\\x1b[31mred\\u2028b\\u202e" in wrote[0]  # the one escaper: visible escapes
    assert not any(ch in out for ch in "\x1b\u2028\u202e")
