"""Tensor parallelism over whole nodes, when pinned (issue 20 item 4: a refusal a published run contradicts).

SGLang and vLLM run DeepSeek-R1 with ``--tp 16`` over two 8-GPU nodes (Tenstorrent's 16x H100 runs in batch 3); the
planner never proposes it on its own, but a pinned ``--tensor-parallel-size`` that fills whole nodes is planned, with
the network's all-reduce in its step time.
"""

from __future__ import annotations

import pytest

from infer_advisor import advise
from infer_advisor.errors import RequestError


def test_pinned_tensor_parallelism_over_two_nodes_is_planned():
    plan = advise(model="deepseek-ai/DeepSeek-R1", gpu="H100-80GB:8x2", engine="vllm", tensor_parallel_size=16)
    par = plan.parallelism
    assert (par.tensor_parallel_size, par.pipeline_parallel_size, par.nodes) == (16, 1, 2)
    within = advise(model="deepseek-ai/DeepSeek-R1", gpu="H100-80GB:8x2", engine="vllm", tensor_parallel_size=8,
                    pipeline_parallel_size=2)
    # the same 16 GPUs, but every all-reduce of TP16 crosses the network: more communication per decode step
    assert plan.performance.decode_step_terms_s["tp_communication"] > within.performance.decode_step_terms_s["tp_communication"]


def test_tensor_parallelism_that_splits_a_node_is_still_refused():
    with pytest.raises(RequestError, match="spans whole nodes"):
        advise(model="deepseek-ai/DeepSeek-R1", gpu="H100-80GB:8x2", engine="vllm", tensor_parallel_size=12)
