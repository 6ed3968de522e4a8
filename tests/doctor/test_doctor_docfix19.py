"""docfix19 (retrospective, batch 16): the doctor on the real texts of benchmarks/published/startup_failures.yaml
(sf305, sf306, sf311, sf313, sf314, sf316) and the rules of doctor/budget_floor.py on small inputs."""

from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.doctor.startup_errors import find_startup_error
from tests.support.doctor_entries import failures_by_id as _by_id, diagnose_entry as _diag


def test_budget_under_the_weights_is_never_proposed():
    d = _diag("sf305")  # AWQ 7B at gpu_memory_utilization=0.1 of a T4: 1.46 GiB budget, 3.4 GiB of weights
    assert d.edits[0].argv == ["--gpu-memory-utilization", "0.90"]
    assert not any(e.argv[:1] in (["--kv-cache-dtype"], ["--max-model-len"], ["--enforce-eager"]) for e in d.edits)
    assert any("is under the weights (3.4 GiB per GPU in 4-bit" in n for n in d.notes)


def test_tgi_prefill_batch_carries_an_input_length_within_it():
    for i, spelled in (("sf316", "16,000"), ("sf166", "14,000")):  # Args debug line; a launcher command line
        first = _diag(i).edits[0]
        p = first.argv.index("--max-batch-prefill-tokens")
        n = first.argv.index("--max-input-length")
        assert int(first.argv[n + 1]) <= int(first.argv[p + 1]) and spelled in first.cost
    # an edit that already states the input length is left as it is (sf45: --max-input-tokens 15499)
    assert "--max-input-length" not in _diag("sf45").edits[0].argv


def test_vision_encoder_forward_is_the_profile_run():
    assert find_startup_error(_by_id()["sf306"].log).kind == "cuda_oom_profile"
    assert _diag("sf306").edits[0].argv[0] == "--max-num-seqs"
    text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
            "Capturing CUDA graphs\n    vision_embeds = self.vision_model(pixel_values)")
    assert find_startup_error(text).kind == "cuda_oom_graph_capture"  # a capture line still names its phase first


def test_v0_capacity_message_without_its_figure_halves_the_context():
    first = _diag("sf311").edits[0]
    assert first.argv == ["--max-model-len", "16384"] and first.starts is None


def test_free_memory_sentence_read_without_its_spaces():
    e = find_startup_error("报错：Free memory on device (0.75/14.57GiB) on startup is less than desired GPU memory "
                           "utilization(0.4,5.83GiB).我监控nvidia-smi")
    assert e.kind == "free_memory_below_utilization" and abs(e.figures["gpu_memory_utilization"] - 0.4) < 1e-9
    assert _diag("sf313").edits[0].change.startswith("free the GPU (13.82 GiB")


def test_held_memory_freeing_stays_first():
    assert _diag("sf314").edits[0].change.startswith("free the GPU (30.08 GiB held by other processes)")


def test_budget_rule_on_small_inputs():
    line = ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
            "initializing the engine.")
    t4 = diagnose(line, gpu="T4", model="mistralai/Mistral-7B-v0.1", gpu_memory_utilization=0.9)  # 13.5 GiB bf16 > 13.1
    assert [e.argv[0] for e in t4.edits] == ["--tensor-parallel-size"]  # only fewer weights per GPU is left
    a100 = diagnose(line, gpu="A100-80GB", model="mistralai/Mistral-7B-v0.1", gpu_memory_utilization=0.9)
    assert a100.edits and not any("under the weights" in n for n in a100.notes)  # weights within the budget: untouched
