"""Check prospective/batch10.yaml: schema (project loader), catalog names, the primary figure inside its quote, every quote fragment
inside the saved raw text, and that no source / point URL or id was used before: speed_points, serving_curves, lora_points,
prospective batch1-9 and every other data file of benchmarks/published (*.yaml and *.json at its top level).

    PYTHONPATH=src:. python benchmarks/published/prospective/batch10_sources/check.py     # prints problems (0 expected) and information lines

Information lines (not problems): another commit/release of a page used before, and a source repository that other (non-speed)
data files of benchmarks/published name.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.published.prospective.source_tools import check_batch, repository_info

HERE = Path(__file__).resolve().parent
PUB = HERE.parents[1]
BATCH = HERE.parent / "batch10.yaml"
EARLIER = [HERE.parent / f"batch{i}.yaml" for i in range(1, 10)]
OTHER = sorted(p for p in PUB.glob("*.yaml")) + sorted(p for p in PUB.glob("*.json"))
USED = OTHER + EARLIER
RAW_OF = {
    "trtllm-issue-4043-llama31-405b-fp8-b200-h200": "trtllm-issue-4043.excerpt.md",
    "rocm-aiter-pr-3422-glm51-fp8-mi300x": "rocm-aiter-pr-3422.excerpt.md",
    "bbuf-ai-infra-skills-pr-18-sglang-h100": "bbuf-ai-infra-skills-pr-18.excerpt.md",
    "llamacpp-pr-15451-gptoss20b-2x-rtxa5000": "llamacpp-pr-15451.excerpt.md",
    "tgi-pr-1243-llama2-13b-a100-benchmark": "tgi-pr-1243.excerpt.md",
}


def raw_file(p) -> Path:
    return HERE / "raw" / RAW_OF[p.source_id]


def main() -> int:
    return check_batch(BATCH, USED, raw_file, repository_info(PUB, USED + [BATCH]))


if __name__ == "__main__":
    sys.exit(main())
