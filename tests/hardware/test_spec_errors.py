"""Issue 25 item 4: the inline GPU spec is documented with every field (README, `plan --help`) and a bad one is
refused in ONE line that names every missing and every wrong field."""

from __future__ import annotations

from pathlib import Path

from infer_advisor.cli import main
from infer_advisor.hardware.spec import SPEC_EXAMPLE

README = Path(__file__).resolve().parents[2] / "README.md"
REQUIRED = ("memory_gib", "memory_bandwidth_gb_s", "tflops", "compute_capability", "interconnect", "interconnect_gb_s")


def test_one_line_names_every_missing_field(capsys):
    assert main(["plan", "--gpu", "{name: X}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    missing = err.split("missing ")[1].split(".")[0]
    assert [f.strip() for f in missing.split(",")] == list(REQUIRED)
    assert SPEC_EXAMPLE in err  # ... and a description that works


def test_wrong_and_missing_fields_together(capsys):
    assert main(["plan", "--gpu", "{name: X, memory_gib: -1, interconnect: wifi, color: red}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "missing memory_bandwidth_gb_s, tflops, compute_capability, interconnect_gb_s;" in err
    assert "memory_gib (input should be greater than 0)" in err and "interconnect (input should be" in err and "color (" in err


def test_the_example_is_documented_and_works(capsys):
    assert SPEC_EXAMPLE in README.read_text()
    try:
        main(["plan", "--help"])
    except SystemExit:
        pass
    assert SPEC_EXAMPLE in " ".join(capsys.readouterr().out.split())
    assert main(["plan", "--model", "meta-llama/Llama-3.1-8B", "--gpu", SPEC_EXAMPLE + ":2", "--format", "json"]) == 0
