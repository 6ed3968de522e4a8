"""docfix20 (retrospective, batch 17): the doctor on the real texts of benchmarks/published/startup_failures.yaml
(sf321, sf322-sf324, sf328-sf330, sf332, sf212) and the new rules on small inputs; the grader's TGI legacy spelling."""

from benchmarks.doctor_grade import _FIX_KIND, GRADE_SCHEMA
from infer_advisor.doctor.cpu_offload import offload_edit
from infer_advisor.doctor.metal_working_set import metal_context_edit, metal_plan
from infer_advisor.doctor.mm_profile import mm_profile_edit
from infer_advisor.doctor.ollama import ollama_edits
from tests.support.doctor_entries import diagnose_entry, failures_by_id as _by_id


def _first(i):
    return diagnose_entry(i).edits[0]


def test_ollama_refusal_without_a_system_memory_line_is_read():
    assert _first("sf322").change.startswith("a smaller model or quantization")  # 132 GB pulled > 13.4 GiB available
    for i in ("sf323", "sf324"):  # no weights figure in the log: the context (x parallel) first
        assert _first(i).change.startswith("PARAMETER num_ctx smaller")


def test_ollama_weights_over_available_keep_the_smaller_model_first():
    text = "Error: model requires more system memory (20.0 GiB) than is available (15.0 GiB)"
    edits, _ = ollama_edits(text + "\nllm_load_print_meta: model size       = 4.00 GiB")
    assert edits[0].change.startswith("PARAMETER num_ctx smaller")
    edits, _ = ollama_edits(text + "\nllm_load_print_meta: model size       = 18.00 GiB")
    assert edits[0].change.startswith("a smaller model")


def test_metal_working_set_gives_a_context_under_it():
    assert _first("sf329").argv == ["--ctx-size", "65536"]  # weights buffer not printed: power of two under 107,520
    assert "at most 76%" in _first("sf330").change  # 10,922.67 - 3,648.58 - 1,080.02 of 8,192 MiB KV, no n_ctx printed
    log = ("ggml_metal_init: recommendedMaxWorkingSetSize  = 10922.67 MiB\nllama_new_context_with_model: n_ctx = 16384\n"
           "ggml_metal_add_buffer: allocated 'data            ' buffer, size =  3648.58 MiB\n"
           "ggml_metal_add_buffer: allocated 'kv              ' buffer, size =  8192.00 MiB\n"
           "ggml_metal_add_buffer: allocated 'alloc           ' buffer, size =  1080.02 MiB\n"
           "ggml_metal_graph_compute: command buffer 0 failed with status 5\n")
    assert round(metal_plan(log)["working_set"] / 2**20, 2) == 10922.67
    assert metal_context_edit(log, None).argv == ["--ctx-size", "12288"]  # 16384 x 6194 / 8192 = 12388 -> 12288
    assert metal_context_edit(log.replace("status 5", "status 4"), None) is None  # no out-of-memory failure


def test_2023_metal_whole_file_buffer_is_ngl_0():
    assert _first("sf328").argv == ["--n-gpu-layers", "0"]
    assert _first("sf212").change.startswith("Llama(n_gpu_layers=0)")  # llama-cpp-python 0.1.67, same message


def test_cuda_runtime_oom_with_offload_on_turns_offload_off():
    assert _first("sf321").argv == ["--cpu-offload-gb", "0"]
    assert offload_edit("--cpu-offload-gb 2 ... CUDA error: out of memory").argv == ["--cpu-offload-gb", "0"]
    assert offload_edit("--cpu-offload-gb 2 ... CUDA out of memory. Tried to allocate 2.00 GiB") is None  # the allocator's
    assert offload_edit("--cpu-offload-gb 0 ... CUDA error: out of memory") is None


def test_multimodal_profile_is_bounded_by_the_mm_limits_not_max_num_seqs():
    d = diagnose_entry("sf332")
    assert "--limit-mm-per-prompt" in d.edits[0].change
    assert not any(e.argv[:1] == ["--max-num-seqs"] for e in d.edits)
    short = ("(max_num_batched_tokens / max_num_seqs = 40000) is too short to hold the multi-modal embeddings in the worst "
             "case (32768 tokens in total, out of which {'image': 32768} are reserved")
    assert mm_profile_edit(short) is None  # not over the length: not this case


def test_grader_reads_tgi_legacy_input_length():
    assert GRADE_SCHEMA >= 7 and _FIX_KIND["--max-input-length"] == _FIX_KIND["--max-input-tokens"] == "max_model_len"
