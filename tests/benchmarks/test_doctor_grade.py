"""benchmarks/doctor_grade.py: the committed grade is what the doctor gives now, and its checks use the engine's words."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.doctor_grade import engine_check, grade, run_doctor, summary
from benchmarks.published.startup_failures import load_failures

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "doctor_grade.json"


def test_committed_summaries_match_a_fresh_run():
    rows = [grade(f) for f in load_failures().failures]
    committed = json.loads(RESULTS.read_text())
    assert summary(rows, True) == committed["held_out"]
    assert summary(rows, False) == committed["tuning"]
    assert summary(rows, None, batch=2) == committed["batch2"]
    assert summary(rows, None, batch=3) == committed["batch3"]
    assert summary(rows, None, batch=4) == committed["batch4"]
    assert summary(rows, None, batch=5) == committed["batch5"]
    assert summary(rows, None, batch=6) == committed["batch6"]
    assert summary(rows, None, batch=10) == committed["batch10"]
    assert summary(rows, None, batch=11) == committed["batch11"]
    assert summary(rows, None, batch=12) == committed["batch12"]
    assert summary(rows, None, batch=13) == committed["batch13"]
    assert summary(rows, None, batch=14) == committed["batch14"]
    assert summary(rows, None, batch=15) == committed["batch15"]


def test_batch4_first_answers_are_kept_as_committed():
    """The prospective figure: the doctor's first answers on batch 4, committed before any change they prompted (6d9e33e)."""
    first = json.loads((RESULTS.parent / "doctor_grade_batch4_first.json").read_text())
    assert first["batch4"]["entries"] == 15 and first["batch4"]["first_edit_starts"] == 4 and first["batch4"]["no_edit"] == 4


def test_batch5_first_answers_are_kept_as_committed():
    """The prospective figure of batch 5: main db7b1e0's doctor on sf63-sf77, committed before any change (4467d46)."""
    first = json.loads((RESULTS.parent / "doctor_grade_batch5_first.json").read_text())["batch5"]
    assert (first["entries"], first["first_edit_starts"], first["first_edit_fails"], first["unverifiable"], first["no_edit"],
            first["not_read"], first["error_named"]) == (15, 5, 0, 6, 3, 1, 11)


def test_batch6_first_answers_are_kept_as_committed():
    """Batch 6's first answers: doc5 7bef7e9's doctor (after batch 5's changes), committed before any further change (f56a5b1)."""
    first = json.loads((RESULTS.parent / "doctor_grade_batch6_first.json").read_text())["batch6"]
    assert (first["entries"], first["first_edit_starts"], first["unverifiable"], first["no_edit"], first["error_named"]) == (4, 2, 1, 1, 3)


def _first_run(batch: int) -> tuple[dict, dict, dict]:
    """Batch ``batch``'s committed first answers: its summary, its rows by id, and the held-aside summary of that run."""
    first = json.loads((RESULTS.parent / f"doctor_grade_batch{batch}_first.json").read_text())
    return first[f"batch{batch}"], {r["id"]: r for r in first["rows"] if r["batch"] == batch}, first["held_aside"]


def test_batch10_first_answers_are_kept_as_committed():
    """Batch 10's first answers: main f57fca7's doctor (docfix11 frozen ccc54c3) on sf167-sf196, committed before anything
    else (1521d4e). Every start is decided by the log's own figures; the three no-edit entries are the ones docs/doctor.md
    names (sf175's V0 blocks line without its message, sf176's prose, sf177's Mamba message without its head)."""
    b10, rows, held = _first_run(10)
    assert (b10["entries"], b10["first_edit_starts"], b10["first_edit_fails"], b10["unverifiable"], b10["no_edit"],
            b10["not_read"], b10["error_named"], b10["starts_by_log_figures"]) == (30, 9, 0, 18, 3, 0, 10, 9)
    assert sorted(i for i, r in rows.items() if r["verdict"] == "starts") == [
        "sf168", "sf173", "sf178", "sf183", "sf186", "sf192", "sf193", "sf194", "sf195"]
    assert sorted(i for i, r in rows.items() if r["verdict"] == "no edit") == ["sf175", "sf176", "sf177"]
    assert (held["entries"], held["first_edit_starts"], held["first_edit_fails"]) == (174, 49, 0)


def test_batch11_first_answers_are_kept_as_committed():
    """Batch 11's first answers: main b6793e1's doctor (docfix12 frozen 3a5a487) on sf197-sf225, committed before anything
    else (fd55544). None is decided: no thread prints a figure that decides the first edit or confirms a fix on its knob.
    The no-edit and not-read entries are the ones docs/doctor.md names (llama.cpp's compute-buffer lines without the
    cudaMalloc line, errors only in titles, ollama's and vllm-ascend's own lines, Metal's buffer limit)."""
    b11, rows, held = _first_run(11)
    assert (b11["entries"], b11["first_edit_starts"], b11["first_edit_fails"], b11["unverifiable"], b11["no_edit"],
            b11["not_read"], b11["crash"], b11["error_named"], b11["memory_model_run"]) == (29, 0, 0, 20, 6, 3, 0, 8, 1)
    assert sorted(i for i, r in rows.items() if r["verdict"] == "no edit") == [
        "sf198", "sf206", "sf207", "sf210", "sf211", "sf224"]
    assert sorted(i for i, r in rows.items() if r["verdict"] == "not read") == ["sf212", "sf215", "sf218"]
    # another engine's flag first: the engine was not told apart (the '(vLLM)' label) on an SGLang, a llama.cpp run
    assert rows["sf221"]["first_edit"] == rows["sf222"]["first_edit"] == rows["sf223"]["first_edit"] == "--enforce-eager (vLLM)"
    assert (held["entries"], held["first_edit_starts"], held["first_edit_fails"]) == (203, 55, 0)


def test_batch12_first_answers_are_kept_as_committed():
    """Batch 12's first answers: main 6cf2cda's doctor (docfix14 frozen ce5dd73) on sf226-sf240, committed before anything
    else (f8c7ec8). Four start, all by the engine's printed figures (three V0 capacities, one V1 estimate); sf237's start
    is the KV check only (its thread's next run at the same utilization fails CUDA-graph capture, docs/doctor.md). The
    no-edit and not-read entries are ollama's one prefixed line (sf236) and ik_llama.cpp's log without an error line
    (sf232); the host kill printed without a pid (sf240) still gets a GPU knob first."""
    b12, rows, held = _first_run(12)
    assert (b12["entries"], b12["first_edit_starts"], b12["first_edit_fails"], b12["unverifiable"], b12["no_edit"],
            b12["not_read"], b12["crash"], b12["error_named"], b12["memory_model_run"], b12["starts_by_log_figures"]) == (
        15, 4, 0, 9, 1, 1, 0, 7, 3, 4)
    starts = {i: r["first_edit"] for i, r in rows.items() if r["verdict"] == "starts"}
    assert starts == {"sf231": "--max-model-len 50944", "sf233": "--max-model-len 720", "sf234": "--max-model-len 62976",
                      "sf237": "--max-model-len 3584"}
    assert all(rows[i]["decided_by"] == "log_figures" for i in starts)
    assert [i for i, r in rows.items() if r["verdict"] == "no edit"] == ["sf236"]
    assert [i for i, r in rows.items() if r["verdict"] == "not read"] == ["sf232"]
    assert rows["sf240"]["first_edit"] == "--gpu-memory-utilization 0.85 (vLLM)"
    assert (held["entries"], held["first_edit_starts"], held["first_edit_fails"]) == (218, 59, 0)


def test_batch13_first_answers_are_kept_as_committed():
    """Batch 13's first answers: main 7dbe14f's doctor (docfix15 frozen 70360b8, as merged at 0a188f8) on sf241-sf267,
    committed before anything else (736d21e). Six start: five by the engine's printed figures (two V1 estimates, one V1
    shortfall, two start checks) and one by the thread's confirmed TP 2; sf260's start is the start check only (a 0.06
    budget holds no model, docs/doctor.md). The three not read are ollama's own scheduler and title lines."""
    b13, rows, held = _first_run(13)
    assert (b13["entries"], b13["first_edit_starts"], b13["first_edit_fails"], b13["unverifiable"], b13["no_edit"],
            b13["not_read"], b13["crash"], b13["error_named"], b13["memory_model_run"], b13["starts_by_log_figures"],
            b13["starts_by_thread_fix"]) == (27, 6, 0, 15, 3, 3, 0, 9, 6, 5, 1)
    starts = {i: r["first_edit"] for i, r in rows.items() if r["verdict"] == "starts"}
    assert starts == {"sf241": "--max-model-len 190208", "sf242": "--tensor-parallel-size 2",
                      "sf258": "--gpu-memory-utilization 0.93", "sf259": "--max-model-len 4864",
                      "sf260": "--gpu-memory-utilization 0.06", "sf261": "--gpu-memory-utilization 0.75"}
    assert rows["sf242"]["decided_by"] == "thread_fix"
    assert [i for i, r in rows.items() if r["verdict"] == "no edit"] == ["sf251", "sf253", "sf256"]
    assert [i for i, r in rows.items() if r["verdict"] == "not read"] == ["sf248", "sf250", "sf257"]
    assert (held["entries"], held["first_edit_starts"], held["first_edit_fails"]) == (245, 66, 0)


def test_batch14_first_answers_are_kept_as_committed():
    """Batch 14's first answers: main 6c4d8bc's doctor (docfix16 frozen 1d0e2bd) on sf268-sf287, committed before
    anything else (e2a0435). None decided: the threads print torch OOM lines or words; the two not read are an entry
    whose log is two environment lines (sf274) and one whose engine version is the build's commit hash (sf283)."""
    b14, rows, held = _first_run(14)
    assert (b14["entries"], b14["first_edit_starts"], b14["first_edit_fails"], b14["unverifiable"], b14["no_edit"],
            b14["not_read"], b14["crash"], b14["error_named"], b14["memory_model_run"], b14["gpu_inferred"]) == (
        20, 0, 0, 16, 2, 2, 0, 5, 5, 1)
    assert [i for i, r in rows.items() if r["verdict"] == "no edit"] == ["sf280", "sf284"]
    assert [i for i, r in rows.items() if r["verdict"] == "not read"] == ["sf274", "sf283"]
    assert rows["sf286"]["first_edit"] == "--gpu-memory-utilization 0.55"
    assert rows["sf275"]["first_edit"].endswith("(TGI)") and rows["sf287"]["first_edit"].endswith("(vLLM)")
    assert (held["entries"], held["first_edit_starts"], held["first_edit_fails"]) == (265, 65, 0)


def test_batch15_first_answers_are_kept_as_committed():
    """Batch 15's first answers: main 79481a1's doctor (docfix17 frozen 0c9f9c6, merged at d5ab209, one comment changed
    after) on sf288-sf303, committed before anything else (991bbaf). None decided: the threads' failing lines are cut or
    in words; the four with no edit name no failing line (sf292 title only; sf297, sf300, sf302 cut before it)."""
    b15, rows, held = _first_run(15)
    assert (b15["entries"], b15["first_edit_starts"], b15["first_edit_fails"], b15["unverifiable"], b15["no_edit"],
            b15["not_read"], b15["crash"], b15["error_named"], b15["memory_model_run"], b15["gpu_inferred"]) == (
        16, 0, 0, 12, 4, 0, 0, 4, 3, 1)
    assert [i for i, r in rows.items() if r["verdict"] == "no edit"] == ["sf292", "sf297", "sf300", "sf302"]
    assert rows["sf288"]["first_edit"] == "--gpu-memory-utilization 0.95"
    assert rows["sf294"]["engine"] == "sglang" and rows["sf294"]["first_edit"] == "--gpu-memory-utilization 0.85"
    assert rows["sf298"]["first_edit"] == "--ctx-size 4096"
    assert (held["entries"], held["first_edit_starts"], held["first_edit_fails"]) == (281, 66, 0)


def test_batch16_first_answers_are_kept_as_committed():
    """Batch 16's first answers: main ca91216's doctor (docfix18 frozen ebcf351) on sf304-sf320, committed before anything
    else (7f60188). Its threads were selected beforehand for a confirmed fix or a deciding engine figure: all 11 starts are
    by the log's own figures (ten --max-model-len at or under V0's printed capacity, one utilization under V1's free
    memory); the first edits docs/doctor.md reads as failing by an operator's eye (sf305, sf306, sf316) stay undecided."""
    b16, rows, held = _first_run(16)
    assert (b16["entries"], b16["first_edit_starts"], b16["first_edit_fails"], b16["unverifiable"], b16["no_edit"],
            b16["not_read"], b16["crash"], b16["error_named"], b16["memory_model_run"], b16["gpu_inferred"],
            b16["starts_by_log_figures"]) == (17, 11, 0, 4, 1, 1, 0, 14, 2, 0, 11)
    assert sorted(i for i, r in rows.items() if r["verdict"] == "starts") == [
        "sf304", "sf307", "sf308", "sf309", "sf310", "sf312", "sf315", "sf317", "sf318", "sf319", "sf320"]
    assert all(rows[i]["decided_by"] == "log_figures" for i, r in rows.items() if r["verdict"] == "starts")
    assert [i for i, r in rows.items() if r["verdict"] == "no edit"] == ["sf311"]
    assert [i for i, r in rows.items() if r["verdict"] == "not read"] == ["sf313"]
    assert (rows["sf305"]["first_edit"], rows["sf306"]["first_edit"], rows["sf316"]["first_edit"]) == (
        "--kv-cache-dtype fp8", "--gpu-memory-utilization 0.85", "--max-batch-prefill-tokens 2048")
    assert rows["sf315"]["first_edit"] == "--gpu-memory-utilization 0.80"
    assert (held["entries"], held["first_edit_starts"], held["first_edit_fails"]) == (298, 79, 0)


def test_batch17_first_answers_are_kept_as_committed():
    """Batch 17's first answers: main c34b0e1's doctor (docfix19 frozen bba4078) on sf321-sf332, committed before anything
    else (efb1fb9). Selected by batch 16's rule and moved away from V0's capacity check: the one start is sf325's context
    under V0's printed capacity (a CPU backend); the five no-edit entries are ollama's system-memory pair (sf322-sf324) and
    llama.cpp's Metal buffers against the working set (sf329, sf330), which docs/doctor.md names as unread; the first
    edits it reads as failing by an operator's eye (sf321, sf328, sf332) stay undecided."""
    b17, rows, held = _first_run(17)
    assert (b17["entries"], b17["first_edit_starts"], b17["first_edit_fails"], b17["unverifiable"], b17["no_edit"],
            b17["not_read"], b17["crash"], b17["error_named"], b17["memory_model_run"], b17["gpu_inferred"],
            b17["starts_by_log_figures"]) == (12, 1, 0, 6, 5, 0, 0, 5, 0, 1, 1)
    assert [i for i, r in rows.items() if r["verdict"] == "starts"] == ["sf325"]
    assert rows["sf325"]["decided_by"] == "log_figures" and rows["sf325"]["first_edit"] == "--max-model-len 21760"
    assert [i for i, r in rows.items() if r["verdict"] == "no edit"] == ["sf322", "sf323", "sf324", "sf329", "sf330"]
    assert (rows["sf321"]["first_edit"], rows["sf331"]["first_edit"], rows["sf332"]["first_edit"]) == (
        "--mem-fraction-static 0.65", "--enforce-eager", "--max-num-seqs 128")
    assert rows["sf328"]["first_edit"].startswith("fewer layers on the GPU")
    assert (held["entries"], held["first_edit_starts"], held["first_edit_fails"]) == (310, 81, 0)


def test_batch18_first_answers_are_kept_as_committed():
    """Batch 18's first answers: main 1457ce2's doctor (docfix20 frozen ad69faf) on sf333-sf337, committed before anything
    else (7f74d2c). Selected by batches 16-17's rule: the one start is sf333's context under V0's printed capacity; the four
    undecided first edits are the ones docs/doctor.md reads by an operator's eye (sf335's num_gpu, the reporter's fix,
    would start; sf334's eager mode for a weight-loading OOM and sf337's vLLM flag on an ollama ROCm log would fail;
    sf336 open)."""
    b18, rows, held = _first_run(18)
    assert (b18["entries"], b18["first_edit_starts"], b18["first_edit_fails"], b18["unverifiable"], b18["no_edit"],
            b18["not_read"], b18["crash"], b18["error_named"], b18["memory_model_run"], b18["gpu_inferred"],
            b18["starts_by_log_figures"]) == (5, 1, 0, 4, 0, 0, 0, 2, 0, 1, 1)
    assert [i for i, r in rows.items() if r["verdict"] == "starts"] == ["sf333"]
    assert rows["sf333"]["decided_by"] == "log_figures" and rows["sf333"]["first_edit"] == "--max-model-len 14336"
    assert (rows["sf334"]["first_edit"], rows["sf337"]["first_edit"]) == ("--enforce-eager", "--gpu-memory-utilization 0.85 (vLLM)")
    assert rows["sf335"]["first_edit"].startswith("PARAMETER num_gpu lower")
    assert rows["sf336"]["first_edit"].startswith("PARAMETER num_ctx smaller")
    assert (held["entries"], held["first_edit_starts"], held["first_edit_fails"]) == (315, 83, 0)


def test_batch19_first_answers_are_kept_as_committed():
    """Batch 19's first answers: main a09a04a's doctor (docfix21 frozen cd88bae, merged 155c957; grade schema 8) on
    sf338-sf347, committed before anything else (10fbf3f). Selected by batches 16-18's rule: the two starts are sf339's
    context under V0's printed capacity (log figures) and sf342's llama.cpp context under the thread's working 32k (thread
    fix); the six undecided first edits are the ones docs/doctor.md reads by an operator's eye (sf340's halved context
    and sf344's fewer GPU layers would start; sf338's halved context, sf343's lower SGLang fraction, sf346's fewer layers
    with none on the GPU and sf347's tensor-parallel size on llama.cpp would fail); sf341 and sf345 get no edit."""
    b19, rows, held = _first_run(19)
    assert (b19["entries"], b19["first_edit_starts"], b19["first_edit_fails"], b19["unverifiable"], b19["no_edit"],
            b19["not_read"], b19["crash"], b19["error_named"], b19["memory_model_run"], b19["gpu_inferred"],
            b19["starts_by_log_figures"], b19["starts_by_thread_fix"]) == (10, 2, 0, 6, 2, 0, 0, 5, 1, 0, 1, 1)
    assert [i for i, r in rows.items() if r["verdict"] == "starts"] == ["sf339", "sf342"]
    assert (rows["sf339"]["decided_by"], rows["sf339"]["first_edit"]) == ("log_figures", "--max-model-len 23296")
    assert (rows["sf342"]["decided_by"], rows["sf342"]["first_edit"]) == ("thread_fix", "--ctx-size 4096")
    assert [i for i, r in rows.items() if r["verdict"] == "no edit"] == ["sf341", "sf345"]
    assert (rows["sf338"]["first_edit"], rows["sf340"]["first_edit"], rows["sf343"]["first_edit"],
            rows["sf347"]["first_edit"]) == ("--max-model-len 2048", "--ctx-size 2048", "--mem-fraction-static 0.75",
                                             "--tensor-parallel-size 32")
    assert rows["sf344"]["first_edit"].startswith("PARAMETER num_gpu lower")
    assert rows["sf346"]["first_edit"].startswith("PARAMETER num_gpu lower")
    assert (held["entries"], held["first_edit_starts"], held["first_edit_fails"]) == (325, 85, 2)


def test_batch20_first_answers_are_kept_as_committed():
    """Batch 20's first answers: main 8224577's doctor (docfix22 frozen b9c409f; grade schema 8) on sf348-sf349, committed
    before anything else (c1bb348). Selected by batches 16-19's rule: the start is sf349's llama.cpp context at the 4096
    of Cortex's own successful retry (thread fix); sf348 (held out), a V0 capacity message retyped by its reporter, is not
    read (docs/doctor.md reads it by an operator's eye)."""
    b20, rows, held = _first_run(20)
    assert (b20["entries"], b20["first_edit_starts"], b20["first_edit_fails"], b20["unverifiable"], b20["no_edit"],
            b20["not_read"], b20["crash"], b20["error_named"], b20["memory_model_run"], b20["gpu_inferred"],
            b20["starts_by_log_figures"], b20["starts_by_thread_fix"]) == (2, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1)
    assert (rows["sf349"]["verdict"], rows["sf349"]["decided_by"], rows["sf349"]["first_edit"]) == (
        "starts", "thread_fix", "--ctx-size 4096")
    assert rows["sf348"]["verdict"] == "not read"
    assert (held["entries"], held["first_edit_starts"], held["first_edit_fails"]) == (327, 86, 0)


def test_a_budget_that_passes_the_start_check_and_holds_no_model_fails():
    """sf65 (batch 5): 0.49 of 79.32 GiB free; the first run's 0.00 passed V1's start check and would load nothing."""
    f = next(x for x in load_failures().failures if x.id == "sf65")

    class _Edit:
        argv = ["--gpu-memory-utilization", "0.00"]

    ok, why = engine_check(f, run_doctor(f), _Edit())
    assert ok is False and "holds no model" in why


def test_v1_context_edit_is_checked_against_the_engines_estimate():
    f = next(x for x in load_failures().failures if x.id == "sf15")
    row = grade(f)
    assert row["verdict"] == "starts" and "810,208" in row["engine_arithmetic_why"]

    class _Edit:
        argv = ["--max-model-len", "900000"]

    ok, why = engine_check(f, run_doctor(f), _Edit())
    assert ok is False and "900000 <=" in why


def test_mamba_cache_bound_is_the_engine_check_only():
    """Grade schema 4 (docfix8): sf113's --max-num-seqs 856 passes vLLM's printed Mamba-cache check (the check only)."""
    from benchmarks.doctor_grade import GRADE_SCHEMA, grade
    from benchmarks.published.startup_failures import load_failures

    sf113 = grade(next(f for f in load_failures().failures if f.id == "sf113"))
    assert GRADE_SCHEMA >= 4 and sf113["verdict"] == "starts" and sf113["decided_by"] == "log_figures"
    assert "Mamba cache blocks 856" in sf113["engine_arithmetic_why"]
