"""docfix10 (retrospective: written after the H200 set d trials): llama.cpp's fitting dry run (common_fit_params) in
d-ctx-1.05M-4streams-first, and the KV line's cells per stream (docs/doctor.md, set d)."""

from __future__ import annotations

import gzip
from pathlib import Path

from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.doctor.llamacpp import LLAMACPP_FIT_MARGIN
from infer_advisor.engines.llamacpp_fit_dry_run import without_fit_dry_run
from infer_advisor.engines.startup_log import parse_startup_log

H200_D = Path(__file__).resolve().parents[2] / "benchmarks/results/h200/llamacpp-doctor-d-2026-12-04-call4"
MIB = 2**20

# d-ctx-1.05M-4streams-first.log.gz, lines 1, 43, 307, 1423-1424, 1427-1429, 1475-1476, 2473, 2483-2484 (the dry run),
# then 2512, 2776, 3893-3894, 3899-3901, 3947-3949 (the real load), verbatim
DRY_RUN = """\
0.00.770.793 I print_info: no_alloc              = 1
0.00.774.022 I load_tensors:        CUDA0 model buffer size =     0.00 MiB
0.00.774.023 I load_tensors:    CUDA_Host model buffer size =     0.00 MiB
0.00.777.109 I llama_context: n_seq_max             = 4
0.00.777.109 I llama_context: n_ctx                 = 1050624
0.00.777.110 I llama_context: n_ctx_seq             = 262656
0.00.812.136 I llama_kv_cache:      CUDA0 KV buffer size =     0.00 MiB
0.00.812.149 I llama_kv_cache: size = 131328.00 MiB (262656 cells,  32 layers,  4/4 seqs), K (f16): 65664.00 MiB, V (f16): 65664.00 MiB
0.00.816.906 I sched_reserve:      CUDA0 compute buffer size =   364.51 MiB
0.00.894.619 W common_fit_params: failed to fit params to free device memory: n_gpu_layers already set by user to 99, abort
0.00.894.636 I common_fit_params: fitting params to free memory took 0.59 seconds
"""
BEFORE = """\
0.00.188.229 I srv  llama_server: initializing ...
0.00.458.511 I llama_prepare_model_devices: using device CUDA0 (NVIDIA H200) (0000:00:06.0) - 142629 MiB free
"""
REAL_LOAD = """\
0.00.995.190 I llama_prepare_model_devices: using device CUDA0 (NVIDIA H200) (0000:00:06.0) - 142629 MiB free
0.01.295.508 I print_info: no_alloc              = 0
0.01.314.322 I load_tensors:   CPU_Mapped model buffer size =  1002.00 MiB
0.01.314.324 I load_tensors:        CUDA0 model buffer size = 14315.02 MiB
0.03.603.735 I llama_context: n_seq_max             = 4
0.03.603.735 I llama_context: n_ctx                 = 1050624
0.03.603.736 I llama_context: n_ctx_seq             = 262656
0.03.648.440 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 131328.00 MiB on device 0: cudaMalloc failed: out of memory
0.03.648.452 E alloc_tensor_range: failed to allocate CUDA0 buffer of size 137707388928
0.03.651.174 E llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache
"""


def test_dry_run_is_cut_at_llamacpp_own_markers():
    assert without_fit_dry_run(BEFORE + DRY_RUN + REAL_LOAD) == BEFORE + REAL_LOAD
    assert without_fit_dry_run(BEFORE + REAL_LOAD) == BEFORE + REAL_LOAD
    unclosed = BEFORE + DRY_RUN.split("0.00.894.619")[0]  # a dry run with no common_fit_params line: kept
    assert without_fit_dry_run(unclosed) == unclosed


def test_kv_cells_count_every_stream_and_real_figures_win():
    log = parse_startup_log(BEFORE + DRY_RUN + REAL_LOAD, require_kv=False)
    assert log.kv_cache_tokens == 4 * 262656 == 1050624  # "262656 cells, 4/4 seqs": per stream, four streams
    assert log.kv_cache_bytes == 131328 * MIB and log.max_num_seqs == 4
    assert log.weights_bytes == round(14315.02 * MIB)  # the real load's, never the dry run's 0.00 MiB
    assert log.activation_bytes == round(364.51 * MIB)  # the dry run's compute buffer: the real load died before its own


def test_whole_log_first_edit_fills_memory_with_llamacpp_margin():
    text = gzip.decompress((H200_D / "d-ctx-1.05M-4streams-first.log.gz").read_bytes()).decode()
    first = diagnose(text, gpu="H200", model="meta-llama/Llama-3.1-8B", gpus=1).edits[0]
    assert first.change.startswith("--ctx-size") and first.starts
    cells = int(first.argv[1])
    assert 4 * 63424 < cells < 1050624  # no longer the dry run's per-stream cells read as the whole cache
    # the log's own figures: 142,629 MiB free, 14,315.02 MiB model buffer, 364.51 MiB compute, 128 KiB of f16 KV a cell
    left = (142629 - 14315.02 - 364.51) * MIB - cells * 131328.00 * MIB / 1050624
    assert left >= LLAMACPP_FIT_MARGIN
