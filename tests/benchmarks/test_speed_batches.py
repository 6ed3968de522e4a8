"""Speed batches 6-10 (benchmarks/published/prospective/batchN.yaml): each batch's data is complete and its checks pass.

One table row per batch, with its own counts and the publisher cap its collector wrote before reading the figures.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from benchmarks.published.schema import load_dataset
from tests.support.modules import module_from_path

PROSPECTIVE = Path(__file__).resolve().parents[2] / "benchmarks" / "published" / "prospective"

# batch: (points, sources, every point carries a doubt note)
COUNTS = {6: (37, 9, False), 7: (33, 6, True), 8: (31, 5, True), 9: (21, 6, True), 10: (13, 5, True)}


def _check_module(batch: int):
    return module_from_path(PROSPECTIVE / f"batch{batch}_sources" / "check.py", f"batch{batch}_check")


def _publisher_shares(batch: int, *, first_name: bool = False) -> tuple[Counter, int]:
    """Points per publisher (``first_name``: the publisher without its parenthesised detail) and the batch's point count."""
    data = load_dataset(PROSPECTIVE / f"batch{batch}.yaml")
    name = (lambda s: s.split(" (")[0]) if first_name else (lambda s: s)
    return Counter(name(data.source(p.source_id).publisher) for p in data.points), len(data.points)


@pytest.mark.parametrize("batch", sorted(COUNTS))
def test_batch_loads_with_every_point_sourced_quoted_and_in_the_catalogs(batch):
    points, sources, doubt = COUNTS[batch]
    data = load_dataset(PROSPECTIVE / f"batch{batch}.yaml")
    assert len(data.points) == points and len(data.sources) == sources
    for p in data.points:
        assert p.source_url.startswith("https://") and len(p.quote) >= 8, p.id
        assert p.model_in_catalog and p.gpu_in_catalog, p.id
        assert p.notes and (p.doubt or not doubt), p.id


@pytest.mark.parametrize("batch", sorted(COUNTS))
def test_batch_check_finds_no_problem(batch, capsys):
    assert _check_module(batch).main() == 0
    assert "0 problems" in capsys.readouterr().out


@pytest.mark.parametrize("batch", [9, 10])
def test_novelty_list_covers_every_earlier_batch_and_every_other_data_file(batch):
    used = {p.name for p in _check_module(batch).USED}
    assert {f"batch{i}.yaml" for i in range(1, batch)} <= used
    assert {"speed_points.yaml", "serving_curves.yaml", "lora_points.yaml", "startup_logs.yaml"} <= used


@pytest.mark.parametrize("batch", [6, 7, 8])
def test_no_publisher_holds_a_third(batch):
    shares, n = _publisher_shares(batch)
    assert max(shares.values()) / n < 1 / 3
    assert batch == 6 or len(shares) >= 5


def test_batch9_no_publisher_over_a_third_and_five_publishers():
    shares, n = _publisher_shares(9, first_name=True)
    assert max(shares.values()) / n <= 1 / 3
    assert len(shares) >= 5


def test_batch10_no_publisher_over_its_cap_of_five_and_five_publishers():
    """The cap of 5 points per publisher was written before the figures were read (the TGI source holds 5 of 13: a shortfall
    against the ~30% aim that the README records)."""
    shares, _ = _publisher_shares(10, first_name=True)
    assert max(shares.values()) <= 5
    assert len(shares) >= 5
