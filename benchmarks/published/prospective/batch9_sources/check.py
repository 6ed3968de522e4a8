"""Check prospective/batch9.yaml: schema (project loader), catalog names, the primary figure inside its quote, every quote fragment
inside the saved raw text, and that no source / point URL or id was used before: speed_points, serving_curves, lora_points,
prospective batch1-8 and every other data file of benchmarks/published (*.yaml and *.json at its top level).

    PYTHONPATH=src:. python benchmarks/published/prospective/batch9_sources/check.py     # prints problems (0 expected) and information lines

Information lines (not problems): another commit/release of a page used before, and a source repository that other (non-speed)
data files of benchmarks/published name.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.published.prospective.batch8_sources.build import gc_raw
from benchmarks.published.prospective.source_tools import check_batch, repository_info

HERE = Path(__file__).resolve().parent
PUB = HERE.parents[1]
BATCH = HERE.parent / "batch9.yaml"
EARLIER = [HERE.parent / f"batch{i}.yaml" for i in range(1, 9)]
OTHER = sorted(p for p in PUB.glob("*.yaml")) + sorted(p for p in PUB.glob("*.json"))
USED = OTHER + EARLIER
RAW_OF = {
    "qwen3-speed-benchmark-sglang-h20": "qwen3-speed-benchmark-ac727245.excerpt.md",
    "tenstorrent-issue-521-gemma3-4b-a100": "tenstorrent-issue-521.excerpt.md",
    "tenstorrent-issue-143-qwen25-72b-2xh100": "tenstorrent-issue-143.excerpt.md",
    "rocm-aiter-pr-1930-deepseek-r1-mi300x": "rocm-aiter-pr-1930.excerpt.md",
    "sglang-pr-6939-deepseek-v3-b200": "sglang-pr-6939.excerpt.md",
}


GC9_ID = "gpu-conc-sariekr-gptoss20b-h100pcie-20250811"


def raw_file(p) -> Path:
    if p.source_id == GC9_ID:
        return HERE / "raw" / gc_raw(p.source_url.split("/blob/", 1)[1].split("/", 1)[1])
    return HERE / "raw" / RAW_OF[p.source_id]


def main() -> int:
    return check_batch(BATCH, USED, raw_file, repository_info(PUB, USED + [BATCH]))


if __name__ == "__main__":
    sys.exit(main())
