"""Consistency checks shared by the bench tests."""

from __future__ import annotations

import pytest

from infer_advisor.bench import BenchReport


def check_consistent(report: BenchReport, out_tokens: int) -> None:
    """Every figure follows from the per-request samples: TTFT <= e2e, TPOT, tokens/s, requests/s."""
    for s in report.requests:
        assert s.output_tokens == out_tokens
        assert 0 < s.ttft_s <= s.e2e_s
        assert s.tpot_s == pytest.approx((s.e2e_s - s.ttft_s) / (s.output_tokens - 1))
        assert len(s.itl_s) == s.output_tokens - 1
        assert sum(s.itl_s) == pytest.approx(s.e2e_s - s.ttft_s)
    for lv in report.levels:
        mine = [s for s in report.requests if s.concurrency == lv.concurrency]
        assert lv.num_requests == len(mine)
        assert lv.output_tokens_total == sum(s.output_tokens for s in mine)
        assert lv.output_tokens_per_s_aggregate == pytest.approx(lv.output_tokens_total / lv.duration_s)
        assert lv.requests_per_s == pytest.approx(lv.num_requests / lv.duration_s)
        assert lv.output_tokens_per_s_per_request == pytest.approx(
            sum(s.output_tokens / s.e2e_s for s in mine) / len(mine)
        )
        assert lv.ttft_s.mean == pytest.approx(sum(s.ttft_s for s in mine) / len(mine))
        assert lv.ttft_s.p50 <= lv.ttft_s.p90 <= lv.ttft_s.p99
        # No request finishes before the level's slowest one is counted: duration bounds every e2e.
        assert max(s.e2e_s for s in mine) <= lv.duration_s + 1e-9
