"""vLLM's CUDA-graph pool by captured sizes and layers (engines/cuda_graphs.py), against vLLM's own size rule and logs."""

import pytest

from infer_advisor.engines.cuda_graphs import capture_sizes
from infer_advisor.engines.memory import memory_profile
from infer_advisor.estimate.engine_terms import cuda_graph_pool_bytes

GiB = 2**30


def test_default_sizes_are_vllms_list_up_to_512():
    """VllmConfig._set_cudagraph_sizes (0.19-0.24): [1, 2, 4] + range(8, 256, 8) + range(256, 513, 16) = 51 sizes
    with 1,024 sequences (the llm-d-planner logs' 'cudagraph_capture_sizes')."""
    sizes = capture_sizes(1024, 0, 8192, 512)
    assert len(sizes) == 3 + 31 + 17 and sizes[:4] == [1, 2, 4, 8] and sizes[-1] == 512


def test_few_sequences_and_speculation_set_the_ceiling():
    assert capture_sizes(2, 0, 8192, 512) == [1, 2, 4]  # min(2 x 1 x 2, 512)
    assert capture_sizes(2, 3, 8192, 512) == [1, 2, 4, 8, 16]  # MTP 3: decode query length 4
    assert capture_sizes(256, 0, 100, 512) == [1, 2, 4, *range(8, 97, 8), 100]  # max_num_batched_tokens appended


@pytest.mark.parametrize(
    ("layers", "logged_gib"),
    [(32, 0.91), (16, 0.65), (8, 0.51), (80, 1.79)],  # Llama-3.1-8B at PP 1 / 2 / 4, Llama-3.3-70B TP 2 (vLLM 0.19, H100)
)
def test_pool_follows_layers_per_gpu_on_vllm_019_logs(layers, logged_gib):
    mp = memory_profile("vllm", "0.19.0")
    assert cuda_graph_pool_bytes(mp, layers, 1024, 0, 8192) / GiB == pytest.approx(logged_gib, rel=0.08)


def test_two_sequences_reserve_about_what_vllm_020_printed():
    """club-3090 issue 104 (vLLM 0.20.2, Qwen3.6-27B, 64 layers, TP 2, max_num_seqs 2): 'The current
    --gpu-memory-utilization=0.8800 is equivalent to --gpu-memory-utilization=0.8592 without CUDA graph memory
    profiling' on a 23.56 GiB RTX 3090 = 0.49 GiB; the fixed 1.04 GiB was twice that."""
    mp = memory_profile("vllm", "0.20.2")
    assert cuda_graph_pool_bytes(mp, 64, 2, 0, 8192) / GiB == pytest.approx(0.49, rel=0.2)
    assert cuda_graph_pool_bytes(mp, 64, 2, 0, 8192) < mp.cuda_graph_bytes / 2


def test_versions_without_scaling_keep_their_fixed_pool():
    mp = memory_profile("vllm", "0.16.0")
    assert mp.cuda_graph_scaling is None and cuda_graph_pool_bytes(mp, 80, 1024, 0, 8192) == mp.cuda_graph_bytes


def test_a_profile_without_graphs_gets_no_pool():
    """--enforce-eager (doctor sets the profile's pool to 0) turns the scaled pool off too."""
    mp = memory_profile("vllm", "0.20.2").model_copy(update={"cuda_graph_bytes": 0})
    assert cuda_graph_pool_bytes(mp, 64, 2, 0, 8192) == 0
