"""docfix21 (retrospective, batches 16-18): the doctor on the real texts of benchmarks/published/startup_failures.yaml
(sf305, sf334, sf337, sf242) and the new rules on small inputs: ggml's stream-creation OOM, a GPU named by its total
only, the quoted quantization of a pasted LLM(...) call, SGLang's static fraction under the weights, PyTorch over vLLM's
budget before the KV cache."""

from infer_advisor.doctor.diagnosis import Diagnosis, diagnose
from infer_advisor.doctor.edits import undecided_edit
from infer_advisor.doctor.gpu import infer_gpu
from infer_advisor.doctor.sglang_floor import fraction_floor
from infer_advisor.engines.startup_log import detect_engine
from tests.support.doctor_entries import diagnose_entry

_STREAM = ("ollama[1]: ROCm error: out of memory\nollama[1]:   current device: 0, in function stream at "
           "//ml/backend/ggml/ggml/src/ggml-cuda/common.cuh:1489\n")


def test_ollama_stream_oom_is_llama_cpp_and_the_runtime_goes_first():
    d = diagnose_entry("sf337")  # 15 GB model, 98304M of VRAM: the runtime, not a memory setting
    assert d.engine == "llama.cpp"
    assert d.edits[0].argv == [] and d.edits[0].change.startswith("another GPU runtime")
    assert not any("(vLLM)" in e.change or e.argv[:1] == ["--gpu-memory-utilization"] for e in d.edits)


def test_stream_oom_without_sizes_keeps_the_memory_edits_first():
    assert detect_engine(_STREAM) == "llama.cpp"  # ggml-cuda's path names the engine
    d = diagnose(_STREAM)
    assert d.edits and not d.edits[0].change.startswith("another GPU runtime")
    assert d.edits[-1].change.startswith("another GPU runtime")
    d = diagnose(_STREAM.replace("in function stream", "in function alloc"))  # a buffer: no runtime edit
    assert not any(e.change.startswith("another GPU runtime") for e in d.edits)


def test_a_total_alone_does_not_name_the_card():
    name, how = infer_gpu("GPU 0 has a total capacity of 139.72 GiB of which 60.69 MiB is free.", None)
    assert name == "H200" and "does not name the card" in how
    name, how = infer_gpu("ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA H200, compute capability 9.0, VMM: yes", None)
    assert name == "H200" and "device name" in how  # a named device stays named


def test_quoted_quantization_of_a_pasted_call_counts_4_bit_weights():
    weights = next(line for line in diagnose_entry("sf305").ledger if line.term == "weights")
    assert weights.bytes_per_gpu < 5 * 2**30  # AWQ Mistral-7B (was 13.5 GiB, counted as bf16)


def test_load_oom_over_the_budget_leaves_out_eager_and_utilization():
    d = diagnose_entry("sf334")  # 139.21 GiB held by PyTorch of 139.72: over 0.90 x total + the graph pool
    assert not any(e.argv[:1] in (["--enforce-eager"], ["--gpu-memory-utilization"]) for e in d.edits)
    assert d.edits[0].change.startswith("a smaller checkpoint")
    assert any("does not name the card" in n for n in d.notes)
    log = ("INFO 01-01 00:00:00 [gpu_worker.py:1] x\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 "
           "has a total capacity of 79.19 GiB of which 10.00 MiB is free. Of the allocated memory {} GiB is allocated by PyTorch, "
           "and 1.00 MiB is reserved by PyTorch but unallocated.")
    low, high = diagnose(log.format("70.00")), diagnose(log.format("78.90"))  # 70 <= 0.90 x 79.19 + graphs < 78.90
    assert any(e.argv[:1] == ["--enforce-eager"] for e in low.edits)
    assert not any(e.argv[:1] == ["--enforce-eager"] for e in high.edits)


def test_sglang_fraction_under_the_weights_is_left_out():
    assert not any(e.argv[:1] == ["--mem-fraction-static"] for e in diagnose_entry("sf242").edits)  # 135 GiB on 80 GB
    diag = Diagnosis(input_kind="log", engine="sglang", engine_version=None, version_source="pinned default",
                     gpu_memory_bytes=80 * 2**30)
    diag.edits = [undecided_edit(f"--mem-fraction-static {v}", ["--mem-fraction-static", v], "", 0.1, "x") for v in ("0.50", "0.90")]
    fraction_floor(diag, "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=18.0 GB, mem usage=60.00 GB.")
    assert [e.argv[1] for e in diag.edits] == ["0.90"]  # 0.50 x 80 GiB < 60 GiB of weights
    assert any("left out" in n for n in diag.notes)
