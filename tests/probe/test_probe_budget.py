"""Probe (issue 18, searches): a sizing search answers within its time budget with the best found so far and names
what it did not search (DeepSeek-V3 `--gpu any --rate 3` took 72 s). The budget is lowered here to keep the test
short; the shipped one is capacity.sizing.SEARCH_BUDGET_S (25 s, under the 30 s bound)."""

from __future__ import annotations

import time

import pytest

from tests.probe.contract import check, probe_environment, run_cli


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    probe_environment(monkeypatch, tmp_path / "cache")


def test_shipped_budget_is_under_thirty_seconds():
    from infer_advisor.capacity import sizing as search

    assert 0 < search.SEARCH_BUDGET_S <= 25


@pytest.mark.parametrize("args", [
    ["plan", "--model", "deepseek-ai/DeepSeek-V3", "--gpu", "any", "--rate", "3"],
    ["plan", "--model", "meta-llama/Llama-3.1-405B", "--gpu", "any", "--rate", "1000000"],
])  # fmt: skip
def test_a_long_search_stops_at_its_budget_and_says_so(args, monkeypatch):
    from infer_advisor.capacity import sizing as search

    monkeypatch.setattr(search, "SEARCH_BUDGET_S", 0.3)  # the search got faster: 2 s now finishes some of these
    start = time.monotonic()
    outcome = run_cli([*args, "--format", "json"])
    took = time.monotonic() - start
    check(outcome, args)
    assert took < 15, f"{took:.1f} s with a 0.3 s budget"
    text = outcome.out + outcome.err
    assert "time budget" in text, text[-800:]
    assert "not planned" in text or "not simulated" in text
    if outcome.code == 2:
        assert len(outcome.err) < 2000  # one readable line, not several KB


def test_a_replica_never_claims_more_than_it_completed():
    """`plan --rate 200` on B200 pinned TP1 claimed 257.9 req/s per replica while the replica completed ~60 at that
    load: the widened trial passed its targets only because it ended before its queue grew."""
    from infer_advisor import size

    result = size(model="meta-llama/Llama-3.1-8B", gpu="B200", tensor_parallel_size=1, rate=200, quantization="none")
    chosen = result.chosen
    assert chosen is not None and chosen.max_rate_per_replica < 100, chosen.max_rate_per_replica
    assert chosen.replicas >= 3
