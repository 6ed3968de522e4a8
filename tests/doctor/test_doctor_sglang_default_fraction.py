"""The doctor's SGLang default fraction is the planner's, by the log's version (session 9): SGLang 0.4.8-0.5.2 reserve
by memory band (32 GiB above 160 GiB whatever the TP; memfix20, server_args.py __post_init__), 0.5.3+ by chunk, graph
batch and ranks. Before, the doctor took the pinned version's rule for every log."""

from __future__ import annotations

import pytest

from infer_advisor.doctor.sglang_fraction import sglang_default_fraction
from infer_advisor.engines.memory import default_memory_fraction, memory_profile
from infer_advisor.units import MIB

B200 = 184_320 * MIB  # the catalog's B200 total


def test_a_0_4_10_log_gets_the_band_rule_of_its_version():
    band = sglang_default_fraction(B200, 8, "0.4.10")
    assert band == pytest.approx(round((184_320 - 32 * 1024) / 184_320, 3))
    assert band == default_memory_fraction(memory_profile("sglang", "0.4.10"), driver_memory_bytes=B200, tp=8, version="0.4.10")
    assert band != sglang_default_fraction(B200, 8, None)  # the pinned version's rule differs on this GPU


def test_no_version_or_one_older_than_every_range_gets_the_pinned_rule():
    pinned = default_memory_fraction(memory_profile("sglang"), driver_memory_bytes=B200, tp=8)
    assert sglang_default_fraction(B200, 8, None) == pinned
    assert sglang_default_fraction(B200, 8, "0.0.1") == pinned
