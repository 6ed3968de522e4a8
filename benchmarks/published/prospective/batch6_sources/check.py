"""Check prospective/batch6.yaml: schema (project loader), catalog names, the primary figure inside its quote, every quote fragment
inside the saved raw text, and that no source / point URL or id was used before (speed_points, serving_curves, lora_points, batch1-5).

    PYTHONPATH=src:. python benchmarks/published/prospective/batch6_sources/check.py     # prints problems (0 expected) and information lines
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.published.prospective.source_tools import check_batch

HERE = Path(__file__).resolve().parent
PUB = HERE.parents[1]
BATCH = HERE.parent / "batch6.yaml"
USED = [PUB / "speed_points.yaml", PUB / "serving_curves.yaml", PUB / "lora_points.yaml"] + [HERE.parent / f"batch{i}.yaml" for i in range(1, 6)]
RAW_OF = {
    "trtllm-perf-overview-v0.15.0": "trtllm-perf-overview-v0.15.0.excerpt.md",
    "rocm-vllm-dev-docker-0.7.3-2025-03-27": "rocm-vllm-dev-docker-README-25070a184.md",
    "lambdalabs-vllm-benchmark-v0-tp-scaling": "lambdalabs-vllm-benchmark-benchmark_v0-0e8fc5d0.excerpt.md",
    "gpustack-perf-lab-lmcache-qwen3-8b-rtx4090": "gpustack-lmcache-prefill-47277d79.md",
    "sglang-issue-6681-qwen25-32b-h20": "sglang-issue-6681.excerpt.md",
    "sglang-pr-5877-qwen3-30b-l20": "sglang-pr-5877.excerpt.md",
    "vllm-pr-25398-qwen3-30b-fp8-h100pcie": "vllm-pr-25398.excerpt.md",
    "vllm-issue-12315-llama33-70b-4xa100": "vllm-issue-12315.excerpt.md",
    "llm-price-compass-issue-6-llama3-8b-2xa10g": "llm-price-compass-issue-6.excerpt.md",
}


def main() -> int:
    return check_batch(BATCH, USED, lambda p: HERE / "raw" / RAW_OF[p.source_id])


if __name__ == "__main__":
    sys.exit(main())
