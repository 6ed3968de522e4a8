"""docfix11 (retrospective: written after batches 7-9's "no edit" and "not read" entries): a thread whose excerpt leaves
the engine's own line out but whose words say it ran out of memory; vLLM's V1 lines without the word "vLLM"."""

from __future__ import annotations

from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.doctor.startup_errors import REPORTED, find_startup_error
from infer_advisor.engines.startup_log import detect_engine

# sgl-project/sglang#35777 (sf121), the reporter's words, verbatim
SF121 = ("At the recommended mem-fraction (0.90–0.94) the server enters an OOM crash-restart loop during graph capture. "
         "We had to drop to `--mem-fraction-static 0.80` **and** add `--cuda-graph-backend-prefill disabled` to boot at all.")
# ai-dynamo/dynamo#9238 (sf137), two lines of the PR description, verbatim
SF137 = ("2. Even when the env var IS set, SGLang's default `--mem-fraction-static` (~0.65) causes the KV pool allocation to fail "
         "before the token cap is applied\n  If budget ≤ 0 → OOM (stage 2 never runs)")
# noonghunna/club-3090#71 (sf163), the maintainer's words, verbatim
SF163 = ("- The OOM you hit at default `max_model_len=180000` was real KV-pool budget pressure (your 4090 has ~23.5 GiB usable "
         "vs the headless 3090 the compose was calibrated for)\nMAX_MODEL_LEN=90000 bash scripts/switch.sh vllm/long-text")
# noonghunna/club-3090#617 (sf119), two V1 lines with no "vLLM" in them, verbatim
SF119 = ("(EngineCore pid=43) INFO 07-13 00:04:10 [gpu_worker.py:508] Available KV cache memory: 3.93 GiB\n"
         "(EngineCore pid=43) ERROR 07-13 00:04:10 [co")


def test_reported_oom_is_marked_as_the_reporters_words_with_its_phase():
    err = find_startup_error(SF121)
    assert err.kind == "cuda_oom_graph_capture" and err.line.startswith(REPORTED) and "graph capture" in err.line
    assert find_startup_error(SF137).kind == "sglang_not_enough_memory"  # the KV pool's sizing: SGLang's own check
    assert find_startup_error(SF163).kind == "kv_cache_check"  # vLLM's KV-cache check
    assert find_startup_error("Scheduler hit an exception: Traceback (most recent call last):") is None


def test_an_engine_line_wins_over_the_reporters_words():
    text = "the server OOMs at start\nINFO: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.00 GiB is free"
    err = find_startup_error(text)
    assert not err.line.startswith(REPORTED) and err.figures["requested_bytes"] == 2 * 2**30


def test_the_doctor_gives_the_engines_own_remedy_for_the_reported_failure():
    d = diagnose(SF137, gpu="L4", gpu_memory_utilization=0.65)
    assert d.engine == "sglang" and d.edits[0].argv[0] == "--mem-fraction-static" and float(d.edits[0].argv[1]) > 0.65
    assert d.edits[0].starts is None  # advice, not decided by any printed figure
    d = diagnose(SF163, gpu="RTX-4090", max_model_len=180000)
    assert {tuple(e.argv) for e in d.edits} >= {("--max-model-len", "90000")} and all(e.starts is None for e in d.edits)


def test_v1_lines_without_the_word_vllm_are_read():
    assert detect_engine(SF119) == "vllm"
    assert diagnose(SF119, gpu="RTX-5090").engine == "vllm"


def test_flash_attention_is_offered_where_its_absence_made_the_compute_buffer_fail():
    """H200 set e (main c8bc06d): e-fa-off-ctx-500k-ub2048's first log; -fa on is offered, undecided, after the context
    cut the printed figures decide (the flash-attention buffer is not printed); never where flash attention was on."""
    import gzip
    from pathlib import Path

    runs = Path(__file__).resolve().parents[2] / "benchmarks/results/h200/llamacpp-doctor-e-2026-12-04-call1"
    off = diagnose(gzip.open(runs / "e-fa-off-ctx-500k-ub2048-first.log.gz", "rt").read())
    fa = [e for e in off.edits if e.argv[:1] == ["--flash-attn"]]
    assert len(fa) == 1 and fa[0].argv == ["--flash-attn", "on"] and "97,812 MiB" in fa[0].cost
    # docfix12 (retrospective): the printed figures now decide it (doctor_llamacpp_compute), so it starts and ranks first;
    # set e ran the context cut, which still follows it
    assert fa[0].starts is True and off.edits[0] is fa[0]
    assert any(e.argv == ["--ctx-size", "344320"] and e.starts for e in off.edits)
    on = diagnose(gzip.open(runs / "e-held128-ctx-32k-ub8192-first.log.gz", "rt").read())
    assert not any(e.argv[:1] == ["--flash-attn"] for e in on.edits)
    old = find_startup_error("llama_context: flash_attn    = 0\nllama_context: n_ubatch = 512\nggml_gallocr_reserve_n: failed to "
                             "allocate CUDA0 buffer of size 9000000000")
    assert old.figures["flash_attn_off"] == 0.0  # the older boolean -fa: the edit is "--flash-attn" with no value


# vllm-project/vllm#48601 (sf146): the reporter's words and one V2-runner line, verbatim
SF146 = ("We will encounter an OOM at kernel warmup:\n(Worker_TP2 pid=3264437) INFO 07-14 09:50:23 [gpu_worker.py:855] Free memory on "
         "device (77.57/79.11 GiB) on startup. Desired GPU memory utilization is (0.92, 72.78 GiB). Actual usage is 7.39 GiB for weight, "
         "1.54 GiB for peak activation, 0.6 GiB for non-torch memory, and 2.04 GiB for CUDAGraph memory. Replace gpu_memory_utilization "
         "config with `--kv-cache-memory=65565989131` (61.06 GiB) to fit into requested memory, or `--kv-cache-memory=70712017408` "
         "(65.86 GiB) to fully utilize gpu memory. Current kv cache memory in use is 63.25 GiB.")


def test_an_oom_after_the_kv_cache_overran_its_budget_takes_the_engines_own_fit():
    err = find_startup_error(SF146)
    assert err.figures["kv_fit_bytes"] == 65565989131 and err.figures["kv_in_use_bytes"] == 63.25 * 2**30
    first = diagnose(SF146, gpu="H100-80GB", tp=4).edits[0]
    assert first.argv == ["--kv-cache-memory-bytes", "65565989131"] and first.starts is None
    within = SF146.replace("in use is 63.25 GiB", "in use is 60.00 GiB")  # inside its budget: the engine's figure frees nothing
    assert diagnose(within, gpu="H100-80GB", tp=4).edits[0].argv[0] != "--kv-cache-memory-bytes"


def test_an_engines_warning_about_a_risk_of_oom_is_no_failure():
    assert find_startup_error("WARNING 07-14 09:50:23 [config.py:1] Lower max_num_seqs to avoid OOM.") is None
    assert find_startup_error("this setting may cause OOM on small cards") is None
    assert find_startup_error("We will encounter an OOM at kernel warmup:").kind == "cuda_oom"


def test_no_edit_on_a_reported_failure_is_decided():
    d = diagnose(SF121, gpu="RTX-5090", gpu_memory_utilization=0.9)
    assert d.edits and all(e.starts is None for e in d.edits)
    assert any(e.argv == ["--disable-cuda-graph"] for e in d.edits)
