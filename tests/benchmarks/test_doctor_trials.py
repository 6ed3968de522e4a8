"""benchmarks/gpu/doctor_trials.py (issue 24's real start-up failures on the H200): the KV cells a started server
allocated are every stream's, as the doctor counts them (this llama.cpp prints one stream's cells without
--kv-unified)."""

from __future__ import annotations

import gzip
from pathlib import Path

from benchmarks.gpu.doctor_trials import kv_cells

SET_E = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200" / "llamacpp-doctor-e-2026-12-04-call1"


def _cells(name: str) -> int | None:
    return kv_cells(gzip.decompress((SET_E / name).read_bytes()).decode())


def test_three_streams_without_kv_unified_count_three_times_the_printed_cells():
    # "(1256704 cells,  28 layers,  3/3 seqs)" for --ctx-size 3770112 -np 3
    assert _cells("e-ctx-4.6M-q4kv-3streams-fixed.log.gz") == 3 * 1_256_704 == 3_770_112


def test_a_unified_cache_counts_its_cells_once():
    # "(386560 cells,  28 layers,  2/1 seqs)" for --ctx-size 386560 -np 2 --kv-unified
    assert _cells("e-held90-ctx-450k-2slots-fixed.log.gz") == 386_560
