"""Speed batch 10 (benchmarks/published/prospective/batch10.yaml): the data is complete and its checks pass."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from benchmarks.published.schema import load_dataset
from tests.support.modules import module_from_path

PROSPECTIVE = Path(__file__).resolve().parents[2] / "benchmarks" / "published" / "prospective"


def _check_module():
    return module_from_path(PROSPECTIVE / "batch10_sources" / "check.py", "batch10_check")


def test_batch10_loads_with_every_point_sourced_quoted_and_in_the_catalogs():
    data = load_dataset(PROSPECTIVE / "batch10.yaml")
    assert len(data.points) == 13 and len(data.sources) == 5
    for p in data.points:
        assert p.source_url.startswith("https://") and len(p.quote) >= 8, p.id
        assert p.model_in_catalog and p.gpu_in_catalog, p.id
        assert p.notes and p.doubt, p.id


def test_batch10_check_finds_no_problem(capsys):
    assert _check_module().main() == 0
    assert "0 problems" in capsys.readouterr().out


def test_batch10_novelty_list_covers_batches_1_to_9_and_every_other_data_file():
    used = {p.name for p in _check_module().USED}
    assert {f"batch{i}.yaml" for i in range(1, 10)} <= used
    assert {"speed_points.yaml", "serving_curves.yaml", "lora_points.yaml", "startup_logs.yaml"} <= used


def test_no_publisher_over_its_cap_of_five_and_five_publishers():
    """The cap of 5 points per publisher was written before the figures were read (the TGI source holds 5 of 13: a shortfall
    against the ~30% aim that the README records)."""
    data = load_dataset(PROSPECTIVE / "batch10.yaml")
    shares = Counter(data.source(p.source_id).publisher.split(" (")[0] for p in data.points)
    assert max(shares.values()) <= 5
    assert len(shares) >= 5
