"""bench.csv and requests.csv cells go through the one CSV escaper, untrusted.csv_cell (session 9).

No server- or user-given text is a column today (model name, URL and failure reasons stay in bench.json), so this
guards the target rather than a known hole: a cell that starts like a spreadsheet formula is written as text, and a
control character is escaped, whatever column carries it later."""

from __future__ import annotations

import csv
import io

import pytest

from infer_advisor.bench.output import _csv
from infer_advisor.untrusted import csv_cell


@pytest.mark.parametrize(("value", "cell"), [
    ('=HYPERLINK("http://evil","x")', '\'=HYPERLINK("http://evil","x")'),
    ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
    ("-2+3", "'-2+3"),
    ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\\tx"),
    ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
    ("a\x1b[31mb", "a\\x1b[31mb"),
])
def test_a_text_cell_is_text_to_a_spreadsheet(value, cell):
    assert csv_cell(value) == cell


def test_numbers_keep_their_values():
    assert [csv_cell(v) for v in (-0.5, 3, None, True)] == [-0.5, 3, None, True]


def test_the_written_csv_reads_back_the_escaped_cells():
    rows = [{"concurrency": 1, "source": "=1+1", "ttft_s": -0.25}, {"concurrency": 2, "source": "measured", "ttft_s": 0.5}]
    back = list(csv.DictReader(io.StringIO(_csv(rows).decode())))
    assert [(r["source"], r["ttft_s"]) for r in back] == [("'=1+1", "-0.25"), ("measured", "0.5")]
