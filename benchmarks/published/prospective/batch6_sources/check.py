"""Check prospective/batch6.yaml: schema (project loader), catalog names, the primary figure inside its quote, every quote fragment
inside the saved raw text, and that no source / point URL or id was used before (speed_points, serving_curves, lora_points, batch1-5).

    PYTHONPATH=src:. python benchmarks/published/prospective/batch6_sources/check.py     # prints problems (0 expected) and information lines
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import yaml

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


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def page(url: str) -> str:
    """A GitHub file URL without its commit/tag (so a page reused at another commit is seen)."""
    m = re.match(r"https://github\.com/([^/]+/[^/]+)/blob/[^/]+/(.+)", url)
    return f"{m.group(1)}:{m.group(2)}" if m else url.rstrip("/")


def used_sets():
    urls, ids, pages = set(), set(), set()
    for f in USED:
        text = f.read_text(encoding="utf-8")
        for u in re.findall(r"https://[^\s'\"<>)]+", text):
            u = u.rstrip(".,;")
            urls.add(u)
            pages.add(page(u))
        data = yaml.safe_load(text)
        for key in ("sources", "points", "curves"):
            for item in (data or {}).get(key, []) or []:
                if isinstance(item, dict):
                    ids.update(str(item[k]) for k in ("source_id", "id") if k in item)
    return urls, ids, pages


def numbers(text: str) -> set[float]:
    return {float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", text) if x.replace(",", "").replace(".", "").isdigit()}


def main() -> int:
    from benchmarks.published.schema import load_dataset
    from infer_advisor.hardware.catalog import find_entry as find_gpu
    from infer_advisor.model_facts.catalog import find_entry as find_model

    problems, info = [], []
    data = load_dataset(BATCH)
    urls, ids, pages = used_sets()
    for s in data.sources:
        if s.url in urls or s.source_id in ids:
            problems.append(f"source {s.source_id}: URL or id used before")
        elif page(s.url) in pages:
            info.append(f"{s.source_id}: another commit/release of a page used before ({page(s.url)})")
    for p in data.points:
        if p.source_url in urls or p.id in ids:
            problems.append(f"{p.id}: point URL or id used before")
        if p.model_in_catalog and (find_model(p.catalog_model) is None or find_model(p.catalog_model).name != p.catalog_model):
            problems.append(f"{p.id}: catalog model {p.catalog_model} not canonical")
        if not p.gpu_in_catalog or find_gpu(p.gpu) is None or find_gpu(p.gpu).name != p.gpu:
            problems.append(f"{p.id}: GPU {p.gpu} not a canonical catalog name")
        raw = norm((HERE / "raw" / RAW_OF[p.source_id]).read_text(encoding="utf-8"))
        for frag in p.quote.split(" ... "):
            if norm(frag) not in raw:
                problems.append(f"{p.id}: quote fragment not in raw text: {frag[:80]!r}")
        v = p.metrics.value(p.primary_metric)
        if not any(abs(n - v) < 1e-6 * max(1, v) or abs(n / 1000 - v) < 1e-9 for n in numbers(p.quote)):
            problems.append(f"{p.id}: primary figure {v} not in its quote")
    n = len(data.points)
    pub = Counter(data.source(p.source_id).publisher.split(" (")[0] for p in data.points)
    for name, k in pub.most_common():
        info.append(f"publisher {name}: {k} points ({100 * k / n:.0f}%)")
    for line in info:
        print("INFO", line)
    for line in problems:
        print("PROBLEM", line)
    print(f"{len(data.sources)} sources, {n} points, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
