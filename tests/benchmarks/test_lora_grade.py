"""benchmarks/lora_grade.py: the committed LoRA grade (benchmarks/results/lora_grade.json, the tables of docs/lora.md) is
what the plan gives now, and every graded point carries what the grade needs."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.lora_grade import grade, points

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "lora_grade.json"


def test_committed_grade_matches_a_fresh_run():
    assert grade() == json.loads(RESULTS.read_text())


def test_points_say_what_they_are_and_why_not():
    data = points()
    for e in data["throughput_drops"] + data["startup_logs_with_lora"]:
        assert e["quote"] and ("url" in e)
        if e.get("graded"):
            assert ("predict" in e and "inferred" in e) or "settings" in e
        else:
            assert e["not_graded"]
    graded_logs = [e for e in data["startup_logs_with_lora"] if e.get("graded")]
    assert all(e["settings"]["max_loras"] >= 1 and e["measured"]["kv_cache_tokens"] > 0 for e in graded_logs)


def test_a_fixed_run_of_dataset_prompts_is_asked_as_a_finite_run():
    from benchmarks.lora_grade import finite_run

    assert finite_run({"concurrency": 96}) == {}
    run = finite_run({"requests": 96, "length_distribution": "sharegpt"})
    assert run == {"requests": 96, "input_distribution": "lognormal", "output_distribution": "exponential", "context": 2048}
    asked = [e["predict"] for e in points()["throughput_drops"] if e.get("graded")]
    assert all(finite_run(p) for p in asked)  # every graded drop names its run (PR 11267: 1000 prompts; vllm#10062: 96)
