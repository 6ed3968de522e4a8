"""docfix22 (retrospective, grade schema 8's two fails): no vLLM utilization or SGLang static fraction whose budget is
under the weights is offered, on the real texts of benchmarks/published/startup_failures.yaml (sf286, sf112) and on small
inputs: a start decided by V1's free-memory check alone is held to the weights too, weights over the whole card get fewer
weights per GPU first, and a KV pool that could not be sized gets a larger SGLang fraction, never a smaller one."""

from infer_advisor.doctor.diagnosis import diagnose
from tests.support.doctor_entries import diagnose_entry

_FREE = ("ValueError: Free memory on device (6.44/11.63 GiB) on startup is less than desired GPU memory utilization "
         "(0.9, 10.47 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.")
_UTIL, _FRACTION = "--gpu-memory-utilization", "--mem-fraction-static"


def _budgets(d, flag):
    return [float(e.argv[1]) for e in d.edits if e.argv[:1] == [flag] and len(e.argv) > 1]


def test_sf286_no_utilization_under_the_16_bit_weights():
    d = diagnose_entry("sf286")  # Qwen2.5-7B (14.19 GiB in 16 bits) on an 11.63 GiB card: no utilization holds it
    assert not _budgets(d, _UTIL)
    assert d.edits[0].argv == ["--tensor-parallel-size", "2"] and d.edits[0].starts is None
    assert "checkpoint" in d.edits[1].change  # the one-GPU remedy beside more GPUs
    assert not any("keeps the asked budget" in e.cost for e in d.edits)  # freeing memory keeps 10.47 GiB: under them too
    assert not any(e.keeps_asked_budget for e in d.edits)  # the structured mark budget_floor reads (tidy10)
    assert any("under the weights" in n for n in d.notes)


def test_free_memory_check_start_kept_where_the_budget_holds_the_weights():
    d = diagnose(_FREE, model="Qwen/Qwen2.5-1.5B-Instruct")  # ~3 GiB of weights: 0.55 x 11.63 holds them
    assert d.edits and d.edits[0].argv[:1] == [_UTIL] and d.edits[0].starts is True
    d = diagnose(_FREE)  # no model: nothing to floor by, the start-check edit stays
    assert _budgets(d, _UTIL)


def test_sf112_pool_that_could_not_be_sized_gets_a_larger_fraction():
    d = diagnose_entry("sf112")  # "fails at pool sizing or OOMs during CUDA graph capture", no engine line, 4x H200
    assert all(b > 0.90 for b in _budgets(d, _FRACTION))  # SGLang's default for 141 GiB at TP 4 is 0.901
    assert d.edits[0].argv == [_FRACTION, "0.95"]


def test_an_oom_while_the_pools_are_made_keeps_the_smaller_fraction():
    d = diagnose_entry("sf181")  # "OOMs during automatic KV-pool sizing": the pools were sized too large
    assert d.edits[0].argv == [_FRACTION, "0.70"]


def test_ollama_num_gpu_from_its_own_plan_and_the_failed_buffer():
    d = diagnose_entry("sf132")  # 32 of 33 layers, 11.3 GiB repeating + 256 MiB KV, a 2,508 MiB compute buffer failed
    assert d.edits[0].change.startswith("PARAMETER num_gpu 25 ")  # 32 - ceil(2,508 / 358 MiB per layer)
    d = diagnose_entry("sf62")  # no plan line: no number
    assert not any(e.change.startswith("PARAMETER num_gpu") and e.change[len("PARAMETER num_gpu "):][:1].isdigit() for e in d.edits)
