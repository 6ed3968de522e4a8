"""docfix18 (retrospective, batch 15): the doctor on the real logs of benchmarks/published/startup_failures.yaml, and the
shared builders (undecided_edit, the one --cpu-offload-gb edit, the rule-of-thumb share in data/doctor_flags.yaml)."""

import pytest

from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.doctor.edits import NOT_DECIDED, undecided_edit
from infer_advisor.doctor.engine_flags import rule_of_thumb
from infer_advisor.doctor.engine_words import engines_in_words
from infer_advisor.doctor.load_oom import offload_edit, offload_gib
from infer_advisor.doctor.rank_kv import rank_figures
from infer_advisor.hardware.catalog import GIB
from tests.support.doctor_entries import failures_by_id as _by_id, diagnose_entry as _diag


def test_undecided_edit_is_the_one_builder():
    e = undecided_edit("--enforce-eager", ["--enforce-eager"], "slower", 0.3, "why")
    assert (e.starts, e.kv_cache_tokens, e.max_concurrency, e.max_model_len) == (None, None, None, 0)
    assert e.basis == f"{NOT_DECIDED}: why" and e.confidence == "first_try"
    assert undecided_edit("x", [], "c", 1.0, basis="as written", confidence=None).basis == "as written"


def test_one_offload_builder_and_the_share_from_the_data_file():
    assert rule_of_thumb("on_gpu_share") == 0.5
    assert offload_gib(0) == 1 and offload_gib(1.5 * GIB) == 2
    assert offload_edit(8, 0.1, "w").argv == ["--cpu-offload-gb", "8"]
    assert _diag("sf271").edits[0].change == "--cpu-offload-gb 8"  # docfix17's first edit, now through the one builder


def test_ranks_printing_different_kv_sizes_put_that_ranks_memory_first_sf288():
    d = _diag("sf288")  # Worker_TP1 -3.86 GiB, Worker_TP0 9.90 GiB
    assert rank_figures(_by_id()["sf288"].log) == {1: -3.86, 0: 9.9}
    assert d.edits[0].argv == [] and "rank 1" in d.edits[0].change and "13.76 GiB" in d.edits[0].change
    assert d.edits[1].argv[:1] == ["--gpu-memory-utilization"]


def test_equal_rank_figures_are_left_alone():
    assert not rank_figures("(Worker_TP0 pid=1) INFO [gpu_worker.py:1] Available KV cache memory: 9.90 GiB")


def test_flags_the_failing_sentence_names_go_first_sf290():
    d = _diag("sf290")  # "I can't get more than `--max_num_batched_tokens 64000` or it OOM with `--max_model_len 120000`"
    assert d.edits[0].argv == ["--max-model-len", "60000"] and d.edits[0].starts is None


def test_two_engines_in_words_name_no_engine_first_sf294():
    assert engines_in_words(_by_id()["sf294"].log) == ["vllm", "sglang"]
    d = _diag("sf294")
    assert d.engine_source.startswith("not named by any line (the text names vLLM and SGLang)")
    assert d.edits[0].argv == [] and "(vLLM)" in d.edits[0].change and "(SGLang)" in d.edits[0].change


def test_one_engine_in_words_or_an_engine_line_is_not_several():
    assert engines_in_words("vLLM fails with out of memory") == []
    assert engines_in_words("INFO 12-10 03:24:48 [gpu_worker.py:298] x\nsglang was fine, vllm OOMs") == []


def test_ollama_gets_its_own_knobs_sf298():
    d = _diag("sf298")  # ollama 0.4.5, no n_ctx printed, a CUDA0 compute buffer failed
    assert d.edits[0].change.startswith("PARAMETER num_gpu")
    assert not any("--ctx-size" in e.change.split("(")[0] for e in d.edits)
    assert any(e.change.startswith("PARAMETER num_batch 256") for e in d.edits)


def test_ollama_context_number_kept_where_the_runner_prints_a_larger_one_sf281():
    d = _diag("sf281")  # n_ctx = 10240000 printed
    assert d.edits[0].change.startswith("PARAMETER num_ctx x OLLAMA_NUM_PARALLEL at most 4096")
    assert d.edits[0].argv == ["--ctx-size", "4096"]


def test_llama_cpp_python_gets_its_keywords_sf303():
    d = _diag("sf303")  # khoj: "Failed to create llama_context" wrapped by rich's log handler
    assert d.edits[0].change.startswith("Llama(n_ctx=4096)") and d.edits[0].argv == ["--ctx-size", "4096"]


@pytest.mark.parametrize("text", ["llama_new_context_with_model: failed to allocate compute buffers"])
def test_plain_llama_server_keeps_its_flags(text):
    d = diagnose(text)
    assert not any(e.change.startswith(("Llama(", "PARAMETER")) for e in d.edits)
