"""Check prospective/batch7.yaml: schema (project loader), catalog names, the primary figure inside its quote, every quote fragment
inside the saved raw text, and that no source / point URL or id was used before (speed_points, serving_curves, lora_points, batch1-6).

    PYTHONPATH=src:. python benchmarks/published/prospective/batch7_sources/check.py     # prints problems (0 expected) and information lines

Information lines (not problems): another commit/release of a page used before, and a source repository that other (non-speed)
data files of benchmarks/published name.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.published.prospective.batch7_sources.build import FT_ID, ft_raw
from benchmarks.published.prospective.source_tools import check_batch, repository_info

HERE = Path(__file__).resolve().parent
PUB = HERE.parents[1]
BATCH = HERE.parent / "batch7.yaml"
USED = [PUB / "speed_points.yaml", PUB / "serving_curves.yaml", PUB / "lora_points.yaml"] + [HERE.parent / f"batch{i}.yaml" for i in range(1, 7)]
RAW_OF = {
    "rocm-vllm-dev-docker-0.8.5-2025-05-19": "rocm-vllm-dev-docker-README-16d2b92eb.md",
    "sglang-benchmark-dsv3-datacrunch-8xh200-v041": "sglang-benchmark_dsv3-README-26db155e.excerpt.md",
    "llamacpp-pr-16834-rtx4090-moe-tg": "llamacpp-pr-16834.excerpt.md",
    "vllm-pr-23696-gptoss-120b-b200": "vllm-pr-23696.excerpt.md",
    "sglang-pr-4918-deepseek-v3-h200": "sglang-pr-4918.excerpt.md",
}


def raw_file(p) -> Path:
    if p.source_id == FT_ID:
        rel = p.source_url.split("/blob/", 1)[1].split("/", 1)[1].rsplit("/report/README.md", 1)[0]
        return HERE / "raw" / ft_raw(rel)
    return HERE / "raw" / RAW_OF[p.source_id]


def main() -> int:
    return check_batch(BATCH, USED, raw_file, repository_info(PUB, USED + [BATCH]))


if __name__ == "__main__":
    sys.exit(main())
