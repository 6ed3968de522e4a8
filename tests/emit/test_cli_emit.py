"""Done means: `infer-advisor plan --model meta-llama/Llama-2-7b-hf --gpu A100-80GB --emit all --out DIR` writes
every artifact, each passing its real tool, offline."""

from __future__ import annotations

import pytest

from infer_advisor._output import MANIFEST
from infer_advisor.cli import main
from tests.emit.checks import check_file


def test_plan_emit_all_offline(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("INFER_ADVISOR_NO_NVML", "1")
    out = tmp_path / "out"
    assert main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--emit", "all", "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir() if p.name != MANIFEST)
    assert names == ["Dockerfile", "README.md", "docker-compose.yml", "k8s.yaml", "serve.sh"]
    for path in out.iterdir():
        if path.name == MANIFEST:
            continue
        check_file(path.name, path.read_text())
    # A second run without --force refuses with one line and exit code 2; with --force it replaces the folder.
    assert main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--emit", "script", "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--emit", "script", "--out", str(out), "--force"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "README.md", "serve.sh"]


@pytest.mark.parametrize("kinds", ["helm", "script,nope"])
def test_unknown_kind_exits_2(kinds, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("INFER_ADVISOR_NO_NVML", "1")
    assert main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--emit", kinds, "--out", str(tmp_path / "o")]) == 2
    assert "Unknown artifact kind" in capsys.readouterr().err
