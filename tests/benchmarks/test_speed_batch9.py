"""Speed batch 9 (benchmarks/published/prospective/batch9.yaml): the data is complete and its checks pass."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from benchmarks.published.schema import load_dataset
from tests.support.modules import module_from_path

PROSPECTIVE = Path(__file__).resolve().parents[2] / "benchmarks" / "published" / "prospective"


def _check_module():
    return module_from_path(PROSPECTIVE / "batch9_sources" / "check.py", "batch9_check")


def test_batch9_loads_with_every_point_sourced_quoted_and_in_the_catalogs():
    data = load_dataset(PROSPECTIVE / "batch9.yaml")
    assert len(data.points) == 21 and len(data.sources) == 6
    for p in data.points:
        assert p.source_url.startswith("https://") and len(p.quote) >= 8, p.id
        assert p.model_in_catalog and p.gpu_in_catalog, p.id
        assert p.notes and p.doubt, p.id


def test_batch9_check_finds_no_problem(capsys):
    assert _check_module().main() == 0
    assert "0 problems" in capsys.readouterr().out


def test_batch9_novelty_list_covers_batches_1_to_8_and_every_other_data_file():
    used = {p.name for p in _check_module().USED}
    assert {f"batch{i}.yaml" for i in range(1, 9)} <= used
    assert {"speed_points.yaml", "serving_curves.yaml", "lora_points.yaml", "startup_logs.yaml"} <= used


def test_no_publisher_holds_more_than_a_third_and_at_least_five_publishers():
    data = load_dataset(PROSPECTIVE / "batch9.yaml")
    shares = Counter(data.source(p.source_id).publisher.split(" (")[0] for p in data.points)
    assert max(shares.values()) / len(data.points) <= 1 / 3
    assert len(shares) >= 5
