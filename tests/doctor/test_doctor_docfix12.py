"""docfix12 (retrospective on batch 10): the engine's printed figures before our estimate, no knob that frees nothing."""

from __future__ import annotations

from benchmarks.doctor_grade import grade, run_doctor
from benchmarks.published.startup_failures import load_failures
from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.doctor.startup_errors import find_startup_error

FAILURES = {f.id: f for f in load_failures().failures}


def test_the_printed_capacity_gives_the_context_and_ranks_before_the_models_estimate():
    d = run_doctor(FAILURES["sf167"])  # "... stored in KV cache (39024)": the model's own context was 25,344
    first = d.edits[0]
    assert first.argv == ["--max-model-len", "38912"] and first.starts and first.confidence == "engine_figures"
    assert not any(e.argv == ["--max-model-len", "25344"] for e in d.edits)
    assert grade(FAILURES["sf167"])["verdict"] == "starts"


def test_the_mamba_message_without_its_head_is_the_engines_bound():
    error = find_startup_error("exceeds available Mamba cache blocks (95)... CUDA graph capture cannot proceed")
    assert error.kind == "mamba_cache_blocks" and error.figures == {"mamba_cache_blocks": 95}
    first = run_doctor(FAILURES["sf177"]).edits[0]
    assert first.argv == ["--max-num-seqs", "95"] and first.starts


def test_a_kv_shortfall_in_words_asks_for_more_memory_not_less():
    d = run_doctor(FAILURES["sf182"])
    assert d.error.kind == "kv_cache_check" and d.edits[0].argv == ["--gpu-memory-utilization", "0.95"]
    assert not any(e.argv[:1] == ["--gpu-memory-utilization"] and float(e.argv[1]) < 0.90 for e in d.edits)


def test_llamacpp_weights_or_compute_oom_gets_no_kv_edit():
    for fid, binding in (("sf172", "weights"), ("sf185", "activation peak")):
        d = run_doctor(FAILURES[fid])
        assert d.binding == binding, fid
        assert not any("--cache-type-k" in e.argv for e in d.edits), fid
    assert "layers" in run_doctor(FAILURES["sf172"]).edits[0].change


def test_one_allocation_larger_than_the_gpu_gets_no_memory_knob():
    for fid, size in (("sf180", "80.04 GiB"), ("sf190", "1,029.51 GiB")):
        d = run_doctor(FAILURES[fid])
        assert len(d.edits) == 1 and d.edits[0].argv == [] and size in d.edits[0].change and d.edits[0].starts is None, fid
    small = diagnose("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
                     "79.19 GiB of which 1.00 GiB is free.\nvLLM API server version 0.8.4")
    assert small.edits and all(e.argv for e in small.edits)  # an ordinary request: the first tries as before


def test_spare_gpus_put_tp_first_for_an_oom_of_unknown_phase():
    d = run_doctor(FAILURES["sf174"])  # TP 4 of 8 A100-40GB present
    assert d.edits[0].argv == ["--tensor-parallel-size", "8"] and d.edits[0].starts is None
    assert "the machine has 8 GPUs" in d.edits[0].basis
    sf90 = run_doctor(FAILURES["sf90"])  # the TP is not stated (TGI shards over every visible GPU): no TP first
    # docfix14: grade schema 6 passes sf90's stated TGI command (its log names no engine), so TGI's own flags; the prefill
    # cut is half the command's 128, never the default's 2048
    assert sf90.engine == "tgi" and sf90.edits[0].argv == ["--max-batch-prefill-tokens", "64"]


def test_v0s_check_on_its_printed_lines_where_the_message_is_cut():
    d = run_doctor(FAILURES["sf175"])  # max_seq_len=32768, "# GPU blocks: 1842" (x 16 = 29,472)
    assert d.error.kind == "max_len_exceeds_kv" and not d.error_logged and d.error.line.startswith("predicted")
    assert d.edits[0].argv == ["--max-model-len", "29440"] and d.edits[0].starts
    row = grade(FAILURES["sf175"])
    assert row["verdict"] == "starts" and "1,842 printed blocks x 16" in row["engine_arithmetic_why"]


def _set_log(name: str) -> str:
    import gzip
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200"
    return gzip.open(next(root.glob(f"llamacpp-doctor-*/{name}-first.log.gz")), "rt").read()


def test_flash_attention_is_decided_by_the_printed_compute_buffer_and_ranks_before_a_context_cut():
    from infer_advisor.doctor.llamacpp_compute import compute_bound

    d = diagnose(_set_log("e-fa-off-ctx-500k-ub2048"), model="meta-llama/Llama-3.2-3B", gpu="H200")
    assert d.edits[0].argv == ["--flash-attn", "on"] and d.edits[0].starts and d.edits[0].confidence == "engine_figures"
    f = d.error.figures  # 500,224 cells x 2,048 tokens: 4 x (24 + 1) B a pair without flash attention, 6 B with it
    assert (f["n_head"], f["n_ctx_seq"], f["n_ubatch"], f["flash_attn_off"]) == (24, 500224, 2048, 1.0)
    failed = f["requested_bytes"]
    assert 500224 * 2048 * 100 <= failed <= 500224 * 2048 * 100 + 120 * 2**20  # the pairs explain the printed buffer
    assert compute_bound(f, failed, flash=True) < 8 * 2**30
    tight = diagnose(_set_log("e-held110-ctx-200k-fa-off"), model="meta-llama/Llama-3.2-3B", gpu="H200")
    fa = next(e for e in tight.edits if e.argv[:1] == ["--flash-attn"])
    assert fa.starts is None  # the bound does not fit the 29 GiB left beside 110 GiB held: not decided
    f104 = diagnose(_set_log("f-held104-ctx-100k-fa-off-ub1024"), model="meta-llama/Llama-3.1-8B", gpu="H200")
    assert [e.argv[:2] for e in f104.edits[:2]] == [["--flash-attn", "on"], ["--batch-size", "512"]]
    assert all(e.starts for e in f104.edits[:2])


def test_the_default_micro_batch_is_decided_only_where_the_bound_fits():
    d = diagnose(_set_log("e-held128-ctx-32k-ub8192"), model="meta-llama/Llama-3.2-3B", gpu="H200")
    ub = next(e for e in d.edits if "--ubatch-size" in e.argv)
    assert ub.starts is None  # with the allowances for the feed-forward and the logits the bound overruns the fit margin
    assert d.error.figures.get("flash_attn_on") == 1.0
