"""Shared tools of the prospective speed batches' ``batchN_sources/build.py`` and ``check.py`` (batch 6 onwards).

build.py side: verbatim quotes from the saved raw text (``quoter``), points in the schema's key order (``point``, ``metric``)
and the YAML writer (``write_batch``). check.py side: the sets of URLs / ids / pages used before (``used_sets``) and the
whole check of a batch file (``check_batch``): schema through the project loader, canonical catalog names, the primary
figure inside its quote, every quote fragment inside its raw text, and novelty against the earlier files. Each batch
keeps its own specifics (its raw folder, its earlier-files list, how a point finds its raw file) and passes them in.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

# Key order of a written point (the schema's order, as speed_points.yaml), the keys written even when null, and the defaults.
POINT_ORDER = ["id", "source_id", "source_url", "quote", "quote_context", "engine", "engine_version", "engine_backend", "model",
               "catalog_model", "model_in_catalog", "quantization", "weights_checkpoint", "kv_cache_dtype", "dtype", "gpu",
               "gpu_as_stated", "gpu_in_catalog", "gpu_count", "tp", "pp", "dp", "mode", "batch", "concurrency", "request_rate",
               "num_requests", "input_tokens", "output_tokens", "length_distribution", "metrics", "primary_metric", "inferred",
               "notes", "doubt"]
KEEP_NULL = ("engine_version", "kv_cache_dtype", "dtype", "catalog_model")
POINT_DEFAULTS = {"engine_backend": None, "weights_checkpoint": None, "kv_cache_dtype": None, "dtype": None, "gpu_in_catalog": True,
                  "pp": 1, "dp": 1, "model_in_catalog": True, "inferred": [], "doubt": None}
# Repositories too general to say anything when another data file names them (information lines of other_files_naming).
GENERAL_REPOS = ("sgl-project/sglang", "vllm-project/vllm", "ggml-org/llama.cpp", "rocm/vllm")
QUOTE_JOIN = " ... "


# ---------------------------------------------------------------- build.py side
def norm(text: str) -> str:
    """Whitespace collapsed: how a quote fragment is compared with the raw text."""
    return re.sub(r"\s+", " ", text).strip()


def quoter(raw_dir: Path) -> Callable[..., str]:
    """quote(raw_file, *frags): the fragments joined by ' ... ', each checked to occur (normalised) in raw_dir / raw_file."""
    def quote(raw_file: str, *frags: str) -> str:
        text = norm((raw_dir / raw_file).read_text(encoding="utf-8"))
        for f in frags:
            if norm(f) not in text:
                raise SystemExit(f"{raw_file}: fragment not in raw text: {f!r}")
        return QUOTE_JOIN.join(norm(f) for f in frags)
    return quote


def metric(value, stat):
    return {"value": value, "stat": stat}


def point(**kw):
    """A point dict in POINT_ORDER, defaults filled in, null keys dropped except KEEP_NULL; unknown keys stop the build."""
    base = copy.deepcopy(POINT_DEFAULTS)  # a fresh 'inferred' list per point (a shared one would be dumped as a YAML alias)
    base.update(kw)
    extra = set(base) - set(POINT_ORDER)
    if extra:
        raise SystemExit(f"unknown keys {extra}")
    return {k: base[k] for k in POINT_ORDER if k in base and (base[k] is not None or k in KEEP_NULL)}


def write_batch(out: Path, description: str, sources: list, points: list) -> None:
    data = {"schema_version": 1, "description": description, "sources": sources, "points": points}
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=150)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({len(sources)} sources, {len(points)} points)")


# ---------------------------------------------------------------- check.py side
def page(url: str) -> str:
    """A GitHub file URL without its commit/tag (so a page reused at another commit is seen)."""
    m = re.match(r"https://github\.com/([^/]+/[^/]+)/blob/[^/]+/(.+)", url)
    return f"{m.group(1)}:{m.group(2)}" if m else url.rstrip("/")


def repo(url: str) -> str | None:
    m = re.match(r"https://github\.com/([^/]+/[^/#?]+)", url)
    return m.group(1).lower() if m else None


def numbers(text: str) -> set[float]:
    return {float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", text) if x.replace(",", "").replace(".", "").isdigit()}


def used_sets(used_files: Iterable[Path]):
    """(URLs, source/point ids, pages) named by the earlier data files."""
    urls, ids, pages = set(), set(), set()
    for f in used_files:
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


def other_files_naming(pub: Path, skip: Iterable[Path], repos: set[str]) -> dict[str, list[str]]:
    """Non-speed data files of benchmarks/published (pub) that name one of these repositories (information only)."""
    seen: dict[str, list[str]] = {}
    used = {p.resolve() for p in skip}
    for f in sorted(pub.rglob("*.yaml")):
        if f.resolve() in used or "prospective" in f.parts:
            continue
        low = f.read_text(encoding="utf-8", errors="replace").lower()
        for r in repos:
            if r and r in low and r not in GENERAL_REPOS:
                seen.setdefault(r, []).append(f.name)
    return seen


def repository_info(pub: Path, skip: Iterable[Path]) -> Callable[[Any], list[str]]:
    """check_batch's more_info: a line per source repository that other (non-speed) data files of benchmarks/published name."""
    skip = list(skip)

    def lines(data) -> list[str]:
        naming = other_files_naming(pub, skip, {repo(s.url) for s in data.sources})
        return [f"repository {r} is named by non-speed data files: {', '.join(files)}" for r, files in sorted(naming.items())]
    return lines


def ms(text: str) -> float:
    """A printed millisecond figure (thousands commas allowed) in seconds."""
    return round(float(text.replace(",", "")) / 1000, 6)

def _point_problems(p, urls, ids, raw_path: Callable) -> list[str]:
    from infer_advisor.hardware.catalog import find_entry as find_gpu
    from infer_advisor.model_facts.catalog import find_entry as find_model

    problems = []
    if p.source_url in urls or p.id in ids:
        problems.append(f"{p.id}: point URL or id used before")
    if p.model_in_catalog and (find_model(p.catalog_model) is None or find_model(p.catalog_model).name != p.catalog_model):
        problems.append(f"{p.id}: catalog model {p.catalog_model} not canonical")
    if not p.gpu_in_catalog or find_gpu(p.gpu) is None or find_gpu(p.gpu).name != p.gpu:
        problems.append(f"{p.id}: GPU {p.gpu} not a canonical catalog name")
    raw = norm(raw_path(p).read_text(encoding="utf-8"))
    for frag in p.quote.split(QUOTE_JOIN):
        if norm(frag) not in raw:
            problems.append(f"{p.id}: quote fragment not in raw text: {frag[:80]!r}")
    v = p.metrics.value(p.primary_metric)
    if not any(abs(n - v) < 1e-6 * max(1, v) or abs(n / 1000 - v) < 1e-9 for n in numbers(p.quote)):
        problems.append(f"{p.id}: primary figure {v} not in its quote")
    return problems


def check_batch(batch: Path, used_files: list[Path], raw_path: Callable, more_info: Callable | None = None) -> int:
    """Check one batch file and print INFO / PROBLEM lines and a count; 1 if any problem.

    raw_path(point) is the saved raw file of a point; more_info(data) gives a batch's own information lines (printed after
    the pages-used-before lines, before the publisher shares)."""
    from benchmarks.published.schema import load_dataset

    problems, info = [], []
    data = load_dataset(batch)
    urls, ids, pages = used_sets(used_files)
    for s in data.sources:
        if s.url in urls or s.source_id in ids:
            problems.append(f"source {s.source_id}: URL or id used before")
        elif page(s.url) in pages:
            info.append(f"{s.source_id}: another commit/release of a page used before ({page(s.url)})")
    if more_info is not None:
        info += more_info(data)
    for p in data.points:
        problems += _point_problems(p, urls, ids, raw_path)
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
