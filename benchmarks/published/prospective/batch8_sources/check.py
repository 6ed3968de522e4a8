"""Check prospective/batch8.yaml: schema (project loader), catalog names, the primary figure inside its quote, every quote fragment
inside the saved raw text, and that no source / point URL or id was used before (speed_points, serving_curves, lora_points, batch1-7).

    PYTHONPATH=src:. python benchmarks/published/prospective/batch8_sources/check.py     # prints problems (0 expected) and information lines

Information lines (not problems): another commit/release of a page used before, and a source repository that other (non-speed)
data files of benchmarks/published name.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.published.prospective.batch8_sources.build import GC_ID, gc_raw
from benchmarks.published.prospective.source_tools import check_batch, repository_info

HERE = Path(__file__).resolve().parent
PUB = HERE.parents[1]
BATCH = HERE.parent / "batch8.yaml"
USED = [PUB / "speed_points.yaml", PUB / "serving_curves.yaml", PUB / "lora_points.yaml"] + [HERE.parent / f"batch{i}.yaml" for i in range(1, 8)]
RAW_OF = {
    "rocm-vllm-dev-docker-0.7.3-2025-03-12": "rocm-vllm-dev-docker-README-16c81851b.md",
    "vllm-tgi-benchmark-kolluru-a100": "vllm-tgi-benchmark-README.md",
    "vllm-pr-15322-deepseek-r1-l20": "vllm-pr-15322.excerpt.md",
    "tenstorrent-issue-340-qwen3-a100": "tenstorrent-issue-340.excerpt.md",
}


def raw_file(p) -> Path:
    if p.source_id == GC_ID:
        return HERE / "raw" / gc_raw(p.source_url.split("/blob/", 1)[1].split("/", 1)[1])
    return HERE / "raw" / RAW_OF[p.source_id]


def main() -> int:
    return check_batch(BATCH, USED, raw_file, repository_info(PUB, USED + [BATCH]))


if __name__ == "__main__":
    sys.exit(main())
