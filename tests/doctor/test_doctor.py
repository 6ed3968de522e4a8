"""infer-advisor doctor: the error in the engine's words, the ledger against the log's own figures, edits that start.

Logs are lines quoted from public vLLM issues (benchmarks/published/startup_failures.yaml); expected figures are the
log's own (weights, activation, KV) or follow from them by the engine's rule written out here by hand.
"""

from __future__ import annotations

import json
import time

import pytest

from benchmarks.published.startup_failures import load_failures
from infer_advisor.doctor.diagnosis import Diagnosis, diagnose
from infer_advisor.doctor.input_text import log_from_command, looks_like_command
from infer_advisor.doctor.startup_errors import find_startup_error
from infer_advisor.cli import main

GIB = 2**30
FAILURES = {f.id: f for f in load_failures().failures}
SF01 = dict(gpu="RTX-3090", model="meta-llama/Llama-3.1-8B", engine_version="0.6.4")


def test_errors_are_named_in_the_engines_words():
    err = find_startup_error(FAILURES["sf01"].log)
    assert err.kind == "max_len_exceeds_kv" and err.figures == {"max_model_len": 29000, "kv_cache_tokens": 23648}
    err = find_startup_error(FAILURES["sf14"].log)
    assert err.kind == "kv_needed_exceeds_available"
    assert err.figures["estimated_max_model_len"] == 205728 and err.figures["kv_needed_bytes"] == 62.00 * GIB
    assert find_startup_error(FAILURES["sf03"].log).figures["kv_cache_bytes"] == pytest.approx(-1.05 * GIB)
    assert find_startup_error(FAILURES["sf20"].log).kind == "cuda_oom_graph_capture"
    assert find_startup_error(FAILURES["sf25"].log).kind == "sglang_not_enough_memory"
    assert find_startup_error(FAILURES["sf31"].log).kind == "llamacpp_alloc_failed"
    assert find_startup_error("INFO all good\nGPU KV cache size: 10 tokens") is None


def test_error_patterns_stay_linear_on_hostile_input():
    text = "To serve at least one request with the model's max seq len (" + "9" * 200_000 + " CUDA out of memory. Tried to allocate " + "1." * 100_000
    start = time.perf_counter()
    find_startup_error(text)
    assert time.perf_counter() - start < 0.5


def test_ledger_reproduces_the_logs_figures_and_sums_to_the_budget():
    d = diagnose(FAILURES["sf01"].log, **SF01)
    assert d.error_logged and d.error.kind == "max_len_exceeds_kv" and d.starts is False and d.binding == "KV cache"
    by = {line.term.split(" (")[0]: line for line in d.ledger}
    for term in ("weights", "activation peak", "non-torch", "KV cache"):
        line = by[term]
        assert line.logged_bytes is not None and abs(line.bytes_per_gpu - line.logged_bytes) <= 0.03 * line.logged_bytes, term
    in_budget = sum(line.bytes_per_gpu for line in d.ledger if line.in_budget)
    assert in_budget == pytest.approx(0.90 * 23.58 * GIB, rel=0.03)
    assert d.kv_cache_tokens == 23648  # the log's own count, through the calibration


def test_first_edit_starts_by_the_engines_own_arithmetic():
    """V0 0.6.4: KV = util x total - weights - non-torch - activation; 128 KiB per token for Llama-3.1-8B in bf16."""
    d = diagnose(FAILURES["sf01"].log, **SF01)
    first = d.edits[0]
    assert first.starts
    per_token = 2.89 * GIB / 23648
    if first.argv[0] == "--max-model-len":
        assert int(first.argv[1]) <= 29000 and first.kv_cache_tokens >= int(first.argv[1])
    elif first.argv[0] == "--kv-cache-dtype":  # docfix12: decided by the engine's printed capacity, it ranks first
        assert first.argv[1] == "fp8" and 2 * 23648 >= 29000 and first.confidence == "engine_figures"
    else:
        u = float(first.argv[1])
        assert 23648 + (u - 0.90) * 23.58 * GIB / per_token >= 29000
    assert [e.starts for e in d.edits] == sorted((e.starts for e in d.edits), reverse=True)  # those that start first


def test_graph_capture_oom_needs_a_graph_pool_of_room():
    """issue 11251: 15.77 GiB cards, the run at 0.95 ran out of memory capturing CUDA graphs; the 0.90 log started."""
    log = FAILURES["sf17"].log.replace("(0.90) = 14.20GiB", "(0.95) = 14.98GiB") + "\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 15.77 GiB of which 5.00 MiB is free."
    # 7.51 GiB of weights per GPU at TP 2 and 1 MiB per 16-token block (3.76 GiB / 3852): Llama-3.1-8B's shapes
    d = diagnose(log, gpu="V100-16GB", model="meta-llama/Llama-3.1-8B", engine_version="0.6.4.post1", tp=2)
    assert d.error.kind == "cuda_oom_graph_capture" and d.binding == "CUDA graphs" and not d.starts
    changes = {e.argv[0]: e for e in d.edits if e.starts}
    assert "--enforce-eager" in changes
    assert "--gpu-memory-utilization" in changes and float(changes["--gpu-memory-utilization"].argv[1]) < 0.95


def test_a_command_line_is_read_as_the_setup_and_predicted():
    cmd = "vllm serve meta-llama/Llama-3.1-8B --max-model-len=131072 --gpu-memory-utilization 0.9 -tp 1 --enforce-eager"
    assert looks_like_command(cmd)
    log, flags = log_from_command(cmd)
    assert (log.model, log.max_model_len, log.gpu_memory_utilization, log.tp, flags) == ("meta-llama/Llama-3.1-8B", 131072, 0.9, 1, {"enforce-eager": True})
    d = diagnose(cmd, gpu="L4", engine_version="0.19.0")
    # 131072 tokens x 128 KiB = 16 GiB of KV for one request; an L4 has 22 GiB usable and 15 GiB of weights
    assert d.starts is False and not d.error_logged and d.error.kind in ("kv_needed_exceeds_available", "no_cache_blocks")
    assert d.edits and d.edits[0].starts
    import shlex

    fixed = shlex.split(d.fixed_command)  # the first edit applied, the rest kept, shell-quoted
    assert fixed[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B"] and fixed.count("--max-model-len") <= 1
    assert fixed[-len(d.edits[0].argv):] == d.edits[0].argv and "--enforce-eager" in fixed


def test_no_model_or_gpu_gives_the_engines_own_figures():
    d = diagnose(FAILURES["sf09"].log)
    assert d.error.kind == "max_len_exceeds_kv" and d.starts is None
    assert d.edits[0].argv == ["--max-model-len", "16640"] and "pass --gpu NAME" in d.notes[0]


def test_cli_json_schema_and_exit_codes(tmp_path, capsys):
    log = tmp_path / "vllm.log"
    log.write_text(FAILURES["sf01"].log)
    start = time.perf_counter()
    code = main(["doctor", str(log), "--gpu", "RTX-3090", "--model", "meta-llama/Llama-3.1-8B", "--engine-version", "0.6.4", "--json"])
    assert time.perf_counter() - start < 1.0
    out = capsys.readouterr().out
    assert code == 1 and Diagnosis.model_validate(json.loads(out)).edits
    assert main(["doctor", str(tmp_path / "missing.log")]) == 2
    assert "neither a log file nor a launch command of vLLM, SGLang, TGI or llama.cpp" in capsys.readouterr().err
    assert main(["doctor", "vllm serve Qwen/Qwen3-8B --max-model-len 4096", "--gpu", "H100-80GB", "--format", "json"]) == 0
    assert main(["schema", "diagnosis"]) == 0 and "Diagnosis" in capsys.readouterr().out


def test_terminal_output_strips_control_characters(tmp_path, capsys):
    log = tmp_path / "vllm.log"
    log.write_text(FAILURES["sf09"].log.replace("ValueError", "Value\x1b[31mError\u202e"))
    main(["doctor", str(log)])
    out = capsys.readouterr().out
    assert "\x1b[31m" not in out and "\u202e" not in out


def test_lora_slots_are_read_and_take_their_buffers_out_of_the_kv_cache():
    """V1 (0.19): the LoRA buffers are allocated at load, so the profile sees them (vllm#14450); 8 slots of rank 128 on
    Llama-3.1-8B: 8 x 128 x 2,621,440 elements x 2 bytes = 5.0 GiB (hand count in tests/estimate/test_lora.py)."""
    cmd = "vllm serve meta-llama/Llama-3.1-8B --max-model-len 32768 --enable-lora --max-loras 8 --max-lora-rank 128"
    _, extras = log_from_command(cmd)
    assert extras == {"enable-lora": True, "max-loras": 8, "max-lora-rank": 128}
    d = diagnose(cmd, gpu="L4", engine_version="0.19.0")
    lora = next(line for line in d.ledger if line.term.startswith("LoRA slots"))
    assert lora.in_budget and lora.bytes_per_gpu == 8 * 128 * 2_621_440 * 2
    assert d.starts is False and d.error.kind == "no_cache_blocks"
    fewer = next(e for e in d.edits if e.argv == ["--max-loras", "1"])
    assert fewer.kv_cache_tokens > 0
    log = "INFO non-default args: {'model': 'meta-llama/Llama-3.1-8B', 'enable_lora': True, 'max_loras': 4, 'max_lora_rank': 64}"
    from infer_advisor.doctor.input_text import extras_from_log

    assert extras_from_log(log) == {"enable-lora": True, "max-loras": 4, "max-lora-rank": 64}


def test_other_processes_memory_at_start_is_a_ledger_line_and_a_start_check():
    """A log made from vLLM 0.11+ format strings: it prints the memory free at start; a budget above it fails ('Free memory on device ... is less than
    desired GPU memory utilization'). Here 40 of 79.19 GiB are free and 0.9 asks for 71.27 GiB."""
    log = ("INFO [gpu_worker.py] Free memory on device (40.0/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB).\n"
           "INFO non-default args: {'model': 'meta-llama/Llama-3.1-8B', 'max_model_len': 8192}\nGPU KV cache size: 400,000 tokens")
    d = diagnose(log, gpu="H100-80GB", model="meta-llama/Llama-3.1-8B", engine_version="0.11.0", max_model_len=8192)
    other = next(line for line in d.ledger if line.term.startswith("other processes"))
    assert other.bytes_per_gpu == int((79.19 - 40.0) * GIB) and not other.in_budget
    assert d.starts is False and d.binding == "other processes"
    first = d.edits[0]
    assert first.argv[0] == "--gpu-memory-utilization" and float(first.argv[1]) * 79.19 <= 40.0


def test_batch4_messages_and_edits_from_the_engines_own_figures():
    """Prompted by batch 4 (retrospective): V1's negative 'Available KV cache memory' line, V0's message quoted from
    'model's', V1's free-memory start check and the V0 profile's own subtraction give edits without the model."""
    err = find_startup_error(FAILURES["sf50"].log)
    assert err.kind == "no_cache_blocks" and err.figures["kv_cache_bytes"] == pytest.approx(-2.77 * GIB)
    err = find_startup_error(FAILURES["sf53"].error_line)
    assert err.kind == "max_len_exceeds_kv" and err.figures == {"max_model_len": 8192, "kv_cache_tokens": 6048}
    d = diagnose(FAILURES["sf51"].error_line)  # 'Free memory on device (59.32/79.15 GiB) ... (0.9, 71.24 GiB)'
    first = d.edits[0]
    assert first.starts and first.argv == ["--gpu-memory-utilization", "0.74"]  # 0.74 x 79.15 = 58.57 <= 59.32 < 0.75 x 79.15
    # sf03 (V0 0.7.3): 0.70 x 8.00 GiB - 5.20 - 0.03 - 1.42 = -1.05 GiB; KV room above zero from (5.20 + 0.03 + 1.42) / 8.00 = 0.831
    d = diagnose(FAILURES["sf03"].log, max_model_len=4096, gpu_memory_utilization=0.70)
    assert d.edits[0].argv == ["--gpu-memory-utilization", "0.84"] and d.edits[0].starts is None
    d = diagnose(FAILURES["sf55"].log + "\n" + FAILURES["sf55"].error_line, gpu="RTX-3090")  # no model: the engine's advice, not decided
    assert d.edits[0].argv == ["--gpu-memory-utilization", "0.95"] and d.edits[0].starts is None


def test_graph_capture_rule_takes_the_modeled_pool_of_the_setup():
    """The room a failed capture proved short is the pool this setup captures (engines/cuda_graphs.py: first capture +
    per layer x further sizes), not one fixed figure; eager mode drops exactly that requirement."""
    from infer_advisor.doctor import diagnosis as doc
    from infer_advisor.doctor.edits import eager_rule, graph_pool_bytes, room_outside_budget
    from infer_advisor.estimate.memory import estimate_memory
    from infer_advisor.doctor.command import model_setup
    from infer_advisor.engines.startup_log import StartupLog

    log = StartupLog(engine="vllm", model="meta-llama/Llama-3.1-8B", max_model_len=8192, gpu_memory_utilization=0.9)
    facts, setup = model_setup(log, {}, model="meta-llama/Llama-3.1-8B", gpu="L4", version="0.19.0")
    base = estimate_memory(facts, **setup)
    pool = graph_pool_bytes(base)
    assert pool > 0 and pool != setup["memory"].cuda_graph_bytes  # scaled by 51 sizes x 32 layers, not the fixed 1.04 GiB
    err = find_startup_error("Capturing CUDA graphs (decode, FULL)\ntorch.OutOfMemoryError: CUDA out of memory.")
    rule = doc._rule(err, base, setup, {})
    assert rule.graph_pool_bytes == pool and rule.min_room_bytes == pytest.approx(room_outside_budget(base) + pool)
    assert eager_rule(rule, setup["memory"]).min_room_bytes == pytest.approx(max(room_outside_budget(base), 0.0))


def test_model_inferred_from_a_local_path_in_the_log():
    """A log whose model is a local folder: the Hugging Face cache layout models--ORG--NAME, or a folder named as a
    catalog entry, resolves in the catalog (marked inferred); a Hub id is not a path; an unknown folder stays unknown."""
    from infer_advisor.doctor.model import infer_model

    assert infer_model("/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/0a1b")[0] == "Qwen/Qwen3-8B"
    assert infer_model("/root/yjpzmodel/basemodel/Qwen3-8B")[0] == "Qwen/Qwen3-8B"
    assert infer_model("meta-llama/Llama-3.1-8B") == (None, None) and infer_model("/models/alpaca-2") == (None, None)
    log = FAILURES["sf01"].log.replace("Loading model weights", "Initializing an LLM engine with config: model='/data/Llama-3.1-8B', "
                                       "tensor_parallel_size=1\nLoading model weights", 1)
    d = diagnose(log, gpu="RTX-3090", engine_version="0.6.4")
    assert d.model == "meta-llama/Llama-3.1-8B" and d.memory_model and any(n.startswith("Model meta-llama/Llama-3.1-8B: inferred") for n in d.notes)


def test_a_v0_only_message_dates_the_log_to_v0_and_a_cut_message_still_names_the_error():
    """V1 words the max-len check 'To serve at least one request ...': a log printing V0's message and no version is read
    with the newest V0 memory profile (0.6.4 <= v < 0.8), not the pinned V1 default; a title cut after the length names it."""
    err = find_startup_error("ValueError: The model's max seq len (32768)")
    assert err.kind == "max_len_exceeds_kv" and err.figures == {"max_model_len": 32768}
    d = diagnose(FAILURES["sf37"].log, gpu="RTX-3090", model="Qwen/Qwen2.5-7B")
    assert d.engine_version == "0.6.4" and d.generation == "V0" and d.version_source.startswith("dated V0")
    assert find_startup_error("Not enough memory to handle prefill tokens.").kind == "tgi_prefill_tokens"


def test_the_engines_printed_figures_win_over_the_model_and_a_placeholder_version_is_not_a_release():
    """vllm-backport#15 (sf49): a source build prints 'version 0.1.dev1+g<sha>' (setuptools-scm's placeholder), which is
    not read as vLLM 0.1; the engine estimated 856 tokens, so a longer context the model finds room for does not start."""
    f = FAILURES["sf49"]
    d = diagnose(f.log, gpu=f.gpu, model=f.catalog_model, engine_version=f.engine_version, tp=f.tp, max_model_len=250000)
    assert d.engine_version != f.engine_version and "placeholder" in d.version_source and d.memory_model
    contexts = [e for e in d.edits if e.argv[0] == "--max-model-len"]
    assert all(e.starts == (int(e.argv[1]) <= 856) for e in contexts) and d.edits[0].argv == ["--max-model-len", "856"]
    # sf14 (V1): FP8 halves the 62.00 GiB needed against 48.66 GiB available, by the engine's own figures
    f = FAILURES["sf14"]
    d = diagnose(f.log, gpu=f.gpu, model=f.catalog_model, engine_version=f.engine_version, tp=f.tp, max_model_len=262144)
    assert next(e for e in d.edits if e.argv[0] == "--kv-cache-dtype").starts


def test_batch5_messages_the_doctor_missed_on_its_first_run():
    """Prompted by batch 5 (retrospective): V1's start check naming the device, torch.OutOfMemoryError after the KV cache
    was sized, a free memory no model fits in, and V1's KV message wrapped mid-word by a terminal paste."""
    err = find_startup_error(FAILURES["sf66"].log)  # 'Free memory on device cuda:1 (19.77/22.05 GiB) ... (0.9, 19.84 GiB)'
    assert err.kind == "free_memory_below_utilization" and err.figures["free_bytes"] == pytest.approx(19.77 * GIB)
    d = diagnose(FAILURES["sf66"].log)
    assert d.edits[0].argv == ["--gpu-memory-utilization", "0.89"] and d.edits[0].starts  # 0.89 x 22.05 = 19.62 <= 19.77
    err = find_startup_error(FAILURES["sf63"].log + "\ntorch.OutOfMemoryError")  # after 'GPU KV cache size: 150,745 tokens'
    assert err.kind == "cuda_oom_graph_capture"
    assert find_startup_error("enforce_eager=True\nGPU KV cache size: 1,000 tokens\ntorch.OutOfMemoryError").kind == "cuda_oom"
    d = diagnose(FAILURES["sf65"].log)  # 0.49 of 79.32 GiB free: a utilization of 0.00 passes the check and loads nothing
    assert [e.argv for e in d.edits] == [[]] and any("hold 78.83 GiB" in n for n in d.notes)  # no flag: "free the GPU" (schema 2)
    err = find_startup_error(FAILURES["sf68"].log)  # '(4.26 GiB KV cach' / 'e is needed, ... (4.25 GiB)'
    assert err.kind == "kv_needed_exceeds_available" and err.figures["kv_needed_bytes"] == pytest.approx(4.26 * GIB)
    d = diagnose(FAILURES["sf68"].log, max_model_len=100000)
    assert d.edits[0].argv == ["--max-model-len", "99584"] and d.edits[0].starts is None  # 100000 x 4.25 / 4.26, not decided


def test_batch6_tgi_router_warmup_panic_and_no_start_under_the_free_memory():
    """Prompted by batch 6 (retrospective): TGI 0.9's router panic 'Unable to warmup model: ... would exceed allowed
    memory. (out of memory)' is a warmup OOM; with the model, when no edit starts under V1's printed free memory the note
    names what holds the GPU (sf79: 7.34 of 139.72 GiB free for an 8-bit Mixtral-8x7B)."""
    assert find_startup_error(FAILURES["sf81"].log).kind == "cuda_oom_warmup"
    f = FAILURES["sf79"]
    d = diagnose(f.log, model=f.catalog_model, gpu_memory_utilization=0.9)
    assert d.memory_model and not any(e.starts for e in d.edits)
    assert any("hold 132.38 GiB" in n and "no edit below starts" in n for n in d.notes)
