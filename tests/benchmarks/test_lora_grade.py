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


SESSION6 = {"vllm-issue10898-llama2-7b-tp8-a100-40gb-unused-adapter", "vllm-issue3316-qwen1.8b-merged-vs-unmerged",
            "vllm-issue8368-a100-80gb-non-lora-requests", "vllm-issue27171-gemma3-4b-lora-qps", "sglang-pr10286-chunked-sgmv-motivation",
            "sglang-pr27329-moe-lora-ceiling", "trtllm-issue2441-llama3-8b-h100", "sglang-issue2559-qwen2.5-7b-rtx4090-engines",
            "blog-squeezebits-vllm-vs-trtllm-multi-lora", "blog-habr-multilora-vllm-vs-trtllm",
            "blog-devto-40-adapters-llama3.1-8b-2xa100-vllm0.6.3", "gpustack-issue5438-qwen3-0.6b",
            "unsloth-grpo-qwen2.5-7b-rocm-vllm-lora-expand-failure", "vllm-issue16676-llama3.2-3b-lora-failure",
            "vllm-issue19693-llama3.1-8b-bnb-rtx5090-vllm0.9.1"}


def test_session6_batch_is_new_and_says_why_it_is_not_graded():
    data = points()
    entries = data["throughput_drops"] + data["startup_logs_with_lora"]
    batch = [e for e in entries if e["id"] in SESSION6]
    assert len(batch) == len(SESSION6)
    assert all(not e["graded"] and e["not_graded"] and "session 6" in e["found"] for e in batch)
    earlier = {e["url"] for e in entries if e["id"] not in SESSION6 and e["url"]}
    assert not earlier & {e["url"] for e in batch if e["url"]}  # sources never used before


def test_sglang_notebook_runs_against_the_pool_estimate():
    rows = {r["id"]: r for r in grade()["sglang_memory"]}
    assert len(rows) == 6 and {r["predicted_lora_pool_gib"] for r in rows.values()} == {2.5}
    logged = {k[len("sglang-docs-lora-notebook-llama3.1-8b"):]: r["logged_pool_and_rest_gib"] for k, r in rows.items()}
    assert logged == {"": 2.73, "-2026-05": 3.45, "-2026-02-11": 2.52, "-2026-03-04": 3.62, "-2026-05-02": 17.74,
                      "-2026-05-28": 2.44}


def test_session6_first_run_is_kept_and_the_retrospective_change_is_the_only_difference():
    first = json.loads((RESULTS.parent / "lora_grade_first_2026-12-04_lora7.json").read_text())
    now = json.loads(RESULTS.read_text())

    def passes(res, kind):
        return [r["pass"] for r in res[kind] if r["graded"]]

    assert passes(first, "throughput_drops") == [True, True, False] and passes(now, "throughput_drops") == [True, True, True]
    assert passes(first, "startup_logs") == [True, True, False, True, False]
    assert first["sglang_memory"] == now["sglang_memory"][:len(first["sglang_memory"])]


def test_session7_first_run_is_kept_and_the_0_8_0_to_0_8_3_defaults_are_the_only_difference():
    """Session 7 (lora8): the first run (code of main, before any change) and now differ only in the V1-forced 0.8.2
    log, whose profile samples vLLM 0.8.0-0.8.3's default 1024 sequences (data/engine_memory.yaml), not 256."""
    first = json.loads((RESULTS.parent / "lora_grade_first_2026-12-04_lora8.json").read_text())
    now = json.loads(RESULTS.read_text())
    graded = lambda res: {r["id"]: r for r in res["startup_logs"] if r["graded"]}  # noqa: E731
    before, after = graded(first), graded(now)
    changed = {k for k in before if before[k] != after[k]} - SESSION9_CHANGED  # session 9's stated max_num_seqs: own test
    assert changed == {"blog-llama3.1-8b-a100-vllm0.8.2-v1"}
    assert before["blog-llama3.1-8b-a100-vllm0.8.2-v1"]["error_pct"] == 6.35 and after["blog-llama3.1-8b-a100-vllm0.8.2-v1"]["pass"]
    assert first["throughput_drops"] == [r for r in now["throughput_drops"] if r["id"] not in SESSION8 | SESSION9]
    assert first["sglang_memory"] == now["sglang_memory"][:len(first["sglang_memory"])]
    assert [r["pass"] for r in after.values()] == [True, True, True, True, False]


SESSION7 = {"sglang-pr27181-qwen3-32b-lora-r64-concurrency1", "sglang-pr15912-qwen3-14b-ascend", "lorax-issue670-llama2-7b-a100-40gb",
            "vllm-pr31941-gpt-oss-20b-lora-loading-ttft", "vllm-pr20873-qwen3-0.6b-tp2-vllm0.9.2",
            "vllm-issue16668-llama2-7b-chat-h20-vllm0.8.5dev", "vllm-issue16961-vllm0.8.4-v1-lora-startup",
            "vllm-issue29049-vllm0.11.1-lora-oom", "vllm-issue23796-qwen2.5-vl-vllm0.10.1.1"}


def test_session7_batch_is_new_and_says_why_it_is_not_graded():
    data = points()
    entries = data["throughput_drops"] + data["startup_logs_with_lora"]
    batch = [e for e in entries if e["id"] in SESSION7]
    assert len(batch) == len(SESSION7)
    assert all(not e["graded"] and e["not_graded"] and "session 7" in e["found"] and e["url"] for e in batch)
    earlier = {e["url"] for e in entries if e["id"] not in SESSION7 and e["url"]}
    assert not earlier & {e["url"] for e in batch}  # sources never used before


SESSION8 = {"sglang-pr22809-qwen3-30b-a3b-tp4-lora-vs-nolora-requests", "vllm-pr10957-v1-lora-vs-v0-lora-llama2-7b-a100",
            "sglang-pr4115-lora-cuda-graph-llama2-7b-h100", "serana-qwen3-8b-l4-lora-vs-merged",
            "multi-lora-glen-chen-merged-vs-unmerged-decode", "multi-lora-vllm-cynthiazhuyun-tinyllama-a100-modal",
            "multi-lora-glen-chen-llama3.1-8b-vllm0.13-two-nodes", "serana-qwen3-8b-l4-lora-server-kv",
            "vllm-issue30872-sm100-lora-triton-failure", "vllm-issue17539-gptq-turing-lora-r64",
            "vllm-issue9133-phi2-enable-lora-docker-v0.6.2", "vllm-issue20944-llama3.1-70b-tp8-fully-sharded-loras",
            "sglang-issue3713-qwen2.5-14b-fp16-lora-crash", "sglang-issue12726-qwen3-4b-multi-lora-v0.5.4.post3",
            "kserve-pr4339-llama3.2-1b-vllm0.7.3-static-lora"}
SESSION8_SGLANG = "sglang-docs-lora-notebook-llama3.1-8b-2026-05-28"
# rows whose figures session 9 (lora10) changed retrospectively: the RunPod tickets state MAX_NUM_SEQS=256
SESSION9_CHANGED = {"runpod-mistral-7b-v0.2-rtx-pro-6000-vllm0.14"}


def test_session8_batch_is_new_and_says_why_it_is_not_graded():
    """Session 8 (lora9): facts only, none gradeable under the standing rule; sources never used before, each drop's
    percentage is the arithmetic of its own two figures."""
    data = points()
    entries = data["throughput_drops"] + data["startup_logs_with_lora"]
    batch = [e for e in entries if e["id"] in SESSION8]
    assert len(batch) == len(SESSION8)
    assert all(not e["graded"] and e["not_graded"] and "session 8" in e["found"] and e["url"] and e["quote"] and e["engine"]
               for e in batch)
    earlier = {e["url"] for e in entries if e["id"] not in SESSION8 and e["url"]}
    assert not earlier & {e["url"] for e in batch}  # sources never used before
    for e in batch:
        if "base_output_tokens_per_s" in e and "lora_output_tokens_per_s" in e:
            assert round((1 - e["lora_output_tokens_per_s"] / e["base_output_tokens_per_s"]) * 100, 1) == e["drop_pct"]
        if "measured" in e and e["engine"] == "vllm":
            assert e["engine_version"] and e["settings"]["max_model_len"] and e["settings"]["gpu_memory_utilization"]


def test_session8_sglang_notebook_run_is_its_own_run_with_what_the_pool_check_reads():
    """The 2026-05-28 notebook run (file id 56672355346, read in session 6 as a copy of the 2026-05-23 run): its own
    dated lines, and every field sglang_pool() reads."""
    runs = {e["id"]: e for e in points()["sglang_memory_logs"]}
    run = runs[SESSION8_SGLANG]
    assert "session 8" in run["found"] and "56672355346" in run["found"]
    assert "[2026-05-28" in run["quote"] and not any("[2026-05-28" in e["quote"] for k, e in runs.items() if k != SESSION8_SGLANG)
    assert {"max_loras_per_batch", "max_lora_rank"} <= set(run["settings"])
    assert {"avail_after_weights_gb", "avail_after_memory_pool_gb", "kv_k_gb", "kv_v_gb"} <= set(run["measured"])
    for key in ("avail_after_weights_gb", "avail_after_memory_pool_gb"):
        assert f"avail mem={run['measured'][key]:.2f} GB" in run["quote"]


def test_session8_first_run_by_frozen_memfix16_is_the_committed_grade():
    """Session 8 (lora9): the first run on main 25dc7a8 (memfix16 frozen) plus the batch's facts is the committed grade
    (no LoRA change followed it); its graded rows are session 7's, and the batch adds only the 2026-05-28 pool row."""
    first = json.loads((RESULTS.parent / "lora_grade_first_2026-12-04_lora9.json").read_text())
    before = json.loads((RESULTS.parent / "lora_grade_first_2026-12-04_lora8.json").read_text())
    now = json.loads(RESULTS.read_text())
    assert first["throughput_drops"] == [r for r in now["throughput_drops"] if r["id"] not in SESSION9]
    assert [r for r in first["startup_logs"] if r["id"] not in SESSION9_CHANGED] == [
        r for r in now["startup_logs"] if r["id"] not in SESSION9 | SESSION9_CHANGED]
    assert first["sglang_memory"] == now["sglang_memory"]
    graded = lambda res, kind: [r for r in res[kind] if r["graded"]]  # noqa: E731
    assert [r["pass"] for r in graded(first, "startup_logs")] == [True, True, True, True, False]
    assert [r["pass"] for r in graded(first, "throughput_drops")] == [True, True, True]
    assert graded(first, "throughput_drops") == graded(before, "throughput_drops")
    assert not any(r["graded"] for r in first["throughput_drops"] + first["startup_logs"] if r["id"] in SESSION8)
    assert first["sglang_memory"][-1] == {"id": SESSION8_SGLANG, "predicted_lora_pool_gib": 2.5, "logged_pool_and_rest_gib": 2.44}


def test_a_stated_max_num_seqs_reaches_the_plan_and_no_stated_setting_is_dropped(monkeypatch, tmp_path):
    """Session 9 (lora10, retrospective): predicted_kv and predicted_drop pass max_num_seqs where an entry states it
    (session 8 found the grade dropped it); a graded log's settings carry only keys the grade passes (KV_SETTINGS)."""
    import types

    import pytest

    import infer_advisor.plan as plan_pkg
    from benchmarks.lora_grade import KV_SETTINGS, predicted_drop, predicted_kv

    asked = []

    def fake_advise(**kw):
        asked.append(kw)
        perf = types.SimpleNamespace(output_tokens_per_s_aggregate=100.0, decode_step_terms_s={})
        mem = types.SimpleNamespace(engine_kv_cache_tokens=1, kv_cache_tokens=1, overhead_bytes_per_gpu={}, outside_budget_bytes_per_gpu={})
        return types.SimpleNamespace(performance=perf, memory=mem)

    monkeypatch.setattr(plan_pkg, "advise", fake_advise)
    log = {"id": "x", "gpu": "L40S", "model": "m", "engine_version": "0.14.0",
           "settings": {"max_model_len": 4096, "gpu_memory_utilization": 0.9, "tp": 1, "max_loras": 1, "max_lora_rank": 16, "max_num_seqs": 16}}
    predicted_kv(log, tmp_path)
    assert asked[-1]["max_num_seqs"] == 16
    del log["settings"]["max_num_seqs"]
    predicted_kv(log, tmp_path)
    assert asked[-1]["max_num_seqs"] is None
    drop = {"id": "d", "predict": {"model": "m", "gpu": "A100-80GB", "engine_version": "0.6.5", "concurrency": 8, "input_tokens": 10,
                                   "output_tokens": 10, "lora_adapters": 1, "max_lora_rank": 8, "max_num_seqs": 4}}
    predicted_drop(drop, tmp_path)
    assert [kw["max_num_seqs"] for kw in asked[-2:]] == [4, 4]
    with pytest.raises(ValueError, match="enforce_eager"):
        predicted_kv({**log, "settings": {**log["settings"], "enforce_eager": True}}, tmp_path)
    graded = [e for e in points()["startup_logs_with_lora"] if e.get("graded")]
    assert all(set(e["settings"]) <= KV_SETTINGS for e in graded)


SESSION9 = {"vllm-pr25914-enable-lora-no-active-adapter-llama2-7b", "vllm-pr38432-fused-shrink-expand-pdl-lora-only",
            "vllm-pr27694-lora-shrink-swizzle-qwen3-32b-tp4", "sglang-pr18082-lora-cuda-graph-non-lora-batches",
            "sglang-pr21885-csgmv-llama3.1-lora-only", "sglang-pr28953-kimi-k2.5-nvfp4-moe-lora-gb300",
            "lorax-pr464-vllm-compile-single-adapter", "vllm-issue11436-lora-prefill-no-cuda-graph",
            "vllm-issue18217-lora-extreme-latency", "faaslora-doc-serverlessllm-vllm-multi-lora",
            "tutorial-multi-lora-expected-output-qwen2.5-7b", "vllm0.13-fork-lora-cudagraph-invalidation-llama2-7b-a100",
            "rank-aware-lora-serving-rtx4080super-own-engine", "vllm-pr6234-lora-tests-llama2-13b-chat-tp4-vllm0.5.2",
            "vllm-issue29955-lora-prompt-logprobs-v1", "vllm-pr36370-gpt-oss-120b-lora-graph-memory",
            "vllm-issue5274-32b-lora-v100x8-oom", "reason4rec-grpo-llama3-8b-bnb-lora-vllm0.9.1"}


def _file_ids(text: str) -> set[str]:
    import re

    return set(re.findall(r"\b\d{8,}\b", text or ""))  # the code search's file ids (no other 8+ digit run in `found`)


def test_session9_batch_is_new_complete_and_says_why_it_is_not_graded():
    """Session 9 (lora10): facts only, collected after the grader freeze (0aa5dce) and before any prediction; none
    gradeable under the standing rule. Each entry has its source (URL, or a file id in `found`), a verbatim quote, the
    engine and why it is not graded; no URL or file id was used by an earlier entry; stated drops are their own arithmetic."""
    data = points()
    entries = data["throughput_drops"] + data["startup_logs_with_lora"]
    batch = [e for e in entries if e["id"] in SESSION9]
    assert len(batch) == len(SESSION9) == 18
    for e in batch:
        assert not e["graded"] and e["not_graded"] and "session 9, lora10" in e["found"] and e["quote"] and e["engine"]
        assert e["url"] or _file_ids(e["found"]), e["id"]
    earlier = [e for e in entries + data["sglang_memory_logs"] if e["id"] not in SESSION9]
    assert not {e["url"] for e in earlier if e.get("url")} & {e["url"] for e in batch if e["url"]}
    earlier_ids = set().union(*(_file_ids(e.get("found", "")) for e in earlier))
    assert not earlier_ids & set().union(*(_file_ids(e["found"]) for e in batch))
    for e in batch:
        if "base_tokens_per_s" in e and "lora_tokens_per_s" in e:
            assert round((1 - e["lora_tokens_per_s"] / e["base_tokens_per_s"]) * 100, 1) == e["drop_pct"]
        if e.get("settings") and "max_num_seqs" in e["settings"]:
            assert isinstance(e["settings"]["max_num_seqs"], int)  # a stated cap the grade would pass (session 9 fix)


def test_session9_stated_max_num_seqs_moves_only_the_rtx_pro_6000_row():
    """Session 9 (lora10, retrospective): both RunPod tickets state MAX_NUM_SEQS=256; passed to the plan, the 96 GB
    card's row leaves vLLM 0.14's 1,024-sequence default (-0.70% -> -0.26%), the L40S row (default 256) is unchanged,
    and every other graded row equals session 8's first run."""
    first = json.loads((RESULTS.parent / "lora_grade_first_2026-12-04_lora9.json").read_text())
    now = json.loads(RESULTS.read_text())
    graded = lambda res: {r["id"]: r for r in res["startup_logs"] if r["graded"]}  # noqa: E731
    before, after = graded(first), graded(now)
    assert {k for k in before if before[k] != after[k]} == SESSION9_CHANGED
    row = "runpod-mistral-7b-v0.2-rtx-pro-6000-vllm0.14"
    assert (before[row]["error_pct"], after[row]["error_pct"]) == (-0.7, -0.26) and after[row]["pass"]
    runpod = [e for e in points()["startup_logs_with_lora"] if e["id"].startswith("runpod-mistral")]
    assert len(runpod) == 2 and all(e["settings"]["max_num_seqs"] == 256 and "MAX_NUM_SEQS=256" in e["settings_added"] for e in runpod)
    assert [r["pass"] for r in after.values()] == [True, True, True, True, False]


def test_session9_first_run_by_frozen_memfix18_is_the_committed_grade():
    """Session 9 (lora10): the first run on main 95b6e72 (memfix18 frozen) plus the batch's facts and the amended grader
    freeze is the committed grade; its graded rows are the freeze's, and the batch adds only not-graded rows."""
    first = json.loads((RESULTS.parent / "lora_grade_first_2026-12-04_lora10.json").read_text())
    assert first == json.loads(RESULTS.read_text())
    graded = lambda res, kind: [r for r in res[kind] if r["graded"]]  # noqa: E731
    assert [r["pass"] for r in graded(first, "startup_logs")] == [True, True, True, True, False]
    assert [r["pass"] for r in graded(first, "throughput_drops")] == [True, True, True]
    assert not any(r["graded"] for r in first["throughput_drops"] + first["startup_logs"] if r["id"] in SESSION9)
    assert {r["id"] for r in first["throughput_drops"] + first["startup_logs"]} >= SESSION9
