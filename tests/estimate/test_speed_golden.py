"""Pinned speed predictions (tests/estimate/golden_speed.json): a coefficient or operator change must be intended.

Regenerate after an intended change with `python -m tests.estimate.speed_golden` and review the diff.
"""

import json

import pytest

from tests.estimate.speed_golden import CASES, GOLDEN, predict

GOLDEN_ROWS = {r["case"]: r for r in json.loads(GOLDEN.read_text())}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].split('/')[-1]}-{c[1]}-{c[2]}-{c[3]}-tp{c[4]}pp{c[5]}-c{c[6]}")
def test_prediction_matches_the_golden_table(case):
    got = predict(case)
    want = GOLDEN_ROWS[got["case"]]
    for key in ("decode_step_s", "prefill_step_s", "ttft_mean_s", "tpot_mean_s", "output_tokens_per_s"):
        assert got[key] == pytest.approx(want[key], rel=1e-6), f"{key} changed: run `python -m tests.estimate.speed_golden` if intended"


def test_golden_table_covers_every_case():
    assert set(GOLDEN_ROWS) == {"|".join(map(str, c)) for c in CASES}
