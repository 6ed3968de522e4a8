"""`infer-advisor gpus`: tables, JSON, and bad input -> one line on stderr, exit 2."""

from __future__ import annotations

import pytest

from infer_advisor.cli import main
from infer_advisor.cli.gpus_cmd import GpusOptions, GpusReport


def test_json_has_probe_and_catalog(capsys):
    assert main(["gpus", "--json"]) == 0
    report = GpusReport.model_validate_json(capsys.readouterr().out)
    assert report.probe is not None and report.hardware is not None
    assert len(report.catalog) >= 22
    assert all(g.source == "catalog" and g.catalog_source for g in report.catalog)
    if not report.probe.ok:
        assert report.hardware.kind == "cpu" and report.probe.error in report.hardware.notes[0]


def test_json_catalog_only_and_probe_only(capsys):
    assert main(["gpus", "--json", "--catalog-only"]) == 0
    report = GpusReport.model_validate_json(capsys.readouterr().out)
    assert report.probe is None and report.hardware is None and len(report.catalog) >= 22
    assert main(["gpus", "--json", "--probe-only"]) == 0
    report = GpusReport.model_validate_json(capsys.readouterr().out)
    assert report.probe is not None and report.catalog == []


def test_json_for_a_spec(capsys):
    assert main(["gpus", "--json", "--gpu", "h100:8x2", "--probe-only"]) == 0
    report = GpusReport.model_validate_json(capsys.readouterr().out)
    assert report.probe is None
    assert report.hardware.total_gpus == 16 and report.hardware.gpu.name == "H100-80GB"


def test_tables_say_where_figures_come_from(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "220")
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out
    assert "GPU catalog (all figures: catalog" in out
    for name in ("H100-80GB", "RTX-4090", "MI300X", "T4"):
        assert name in out
    assert "CPU (probe)" in out or "(probe)" in out
    assert main(["gpus", "--gpu", "L4:2", "--probe-only"]) == 0
    out = capsys.readouterr().out
    assert "(catalog)" in out and "L4" in out and "GPU catalog" not in out


@pytest.mark.parametrize(
    ("argv", "start"),
    [
        (["gpus", "--gpu", "H10"], "error: Unknown GPU 'H10'. Did you mean"),
        (["gpus", "--gpu", "h100:0"], "error: Bad GPU spec 'h100:0'"),
        (["gpus", "--gpu", "h100:100000"], "error: Bad GPU spec"),
        (["gpus", "--probe-only", "--catalog-only"], "error: --probe-only and --catalog-only exclude each other"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, start):
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith(start) and "\n" not in err and "Traceback" not in err
    assert captured.out == ""


def test_every_option_has_a_description():
    for name, field in GpusOptions.model_fields.items():
        assert field.description, name
    with pytest.raises(ValueError):
        GpusOptions(no_such_option=True)
