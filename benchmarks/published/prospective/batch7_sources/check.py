"""Check prospective/batch7.yaml: schema (project loader), catalog names, the primary figure inside its quote, every quote fragment
inside the saved raw text, and that no source / point URL or id was used before (speed_points, serving_curves, lora_points, batch1-6).

    PYTHONPATH=src:. python benchmarks/published/prospective/batch7_sources/check.py     # prints problems (0 expected) and information lines

Information lines (not problems): another commit/release of a page used before, and a source repository that other (non-speed)
data files of benchmarks/published name.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import yaml

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
FT_ID = "francetravail-results-benchmark-llm-serving"


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def page(url: str) -> str:
    """A GitHub file URL without its commit/tag (so a page reused at another commit is seen)."""
    m = re.match(r"https://github\.com/([^/]+/[^/]+)/blob/[^/]+/(.+)", url)
    return f"{m.group(1)}:{m.group(2)}" if m else url.rstrip("/")


def repo(url: str) -> str | None:
    m = re.match(r"https://github\.com/([^/]+/[^/#?]+)", url)
    return m.group(1).lower() if m else None


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


def other_files_naming(repos: set[str]) -> dict[str, list[str]]:
    """Non-speed data files of benchmarks/published that name one of these repositories (information only)."""
    seen: dict[str, list[str]] = {}
    used = {p.resolve() for p in USED} | {BATCH.resolve()}
    for f in sorted(PUB.rglob("*.yaml")):
        if f.resolve() in used or "prospective" in f.parts:
            continue
        low = f.read_text(encoding="utf-8", errors="replace").lower()
        for r in repos:
            if r and r in low and r not in ("sgl-project/sglang", "vllm-project/vllm", "ggml-org/llama.cpp", "rocm/vllm"):
                seen.setdefault(r, []).append(f.name)
    return seen


def raw_file(p) -> Path:
    if p.source_id == FT_ID:
        rel = p.source_url.split("/blob/", 1)[1].split("/", 1)[1].rsplit("/report/README.md", 1)[0]
        return HERE / "raw" / ("francetravail-" + rel.replace("/", "_") + "-README.md")
    return HERE / "raw" / RAW_OF[p.source_id]


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
    for r, files in sorted(other_files_naming({repo(s.url) for s in data.sources}).items()):
        info.append(f"repository {r} is named by non-speed data files: {', '.join(files)}")
    for p in data.points:
        if p.source_url in urls or p.id in ids:
            problems.append(f"{p.id}: point URL or id used before")
        if p.model_in_catalog and (find_model(p.catalog_model) is None or find_model(p.catalog_model).name != p.catalog_model):
            problems.append(f"{p.id}: catalog model {p.catalog_model} not canonical")
        if not p.gpu_in_catalog or find_gpu(p.gpu) is None or find_gpu(p.gpu).name != p.gpu:
            problems.append(f"{p.id}: GPU {p.gpu} not a canonical catalog name")
        raw = norm(raw_file(p).read_text(encoding="utf-8"))
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
