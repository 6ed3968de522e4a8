"""Validate speed_points.yaml together with every incoming/*.yaml, as the merged file would be validated.

    python benchmarks/published/incoming/check.py            # all incoming files
    python benchmarks/published/incoming/check.py amd.yaml   # some of them
    python benchmarks/published/incoming/check.py --write-merged /tmp/merged.yaml

Incoming files hold only ``sources:`` and ``points:`` (new ones, to be merged into speed_points.yaml by hand). This script
concatenates them onto speed_points.yaml and runs what the loader and tests/benchmarks/test_published_points.py check:
the pydantic schema (``schema.Dataset``: unique ids, every point's source present, no unused source), catalog links
(model and GPU names resolve to their canonical entries), and that each primary figure appears in its quote (as is, or in
ms). Exit 0 when all pass; 1 with one line per problem otherwise.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml
from pydantic import ValidationError

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # repository root, for `benchmarks.published.schema`

from benchmarks.published.schema import DATA_FILE, Dataset  # noqa: E402


def merged(files: list[Path]) -> dict:
    data = yaml.safe_load(DATA_FILE.read_text(encoding="utf-8"))
    for f in files:
        extra = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
        unknown = set(extra) - {"sources", "points"}
        if unknown:
            raise SystemExit(f"{f}: only 'sources' and 'points' belong in an incoming file, not {sorted(unknown)}")
        data["sources"] = data["sources"] + list(extra.get("sources") or [])
        data["points"] = data["points"] + list(extra.get("points") or [])
    return data


def _numbers(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", text)]


def problems(data: Dataset, new_ids: set[str]) -> list[str]:
    from infer_advisor.hardware.catalog import find_entry as find_gpu
    from infer_advisor.model_facts.catalog import find_entry as find_model

    out = []
    for p in data.points:
        if p.id not in new_ids:
            continue
        if p.model_in_catalog:
            entry = find_model(p.catalog_model)
            if entry is None:
                out.append(f"{p.id}: catalog_model {p.catalog_model} is not in the model catalog")
            elif entry.name != p.catalog_model:
                out.append(f"{p.id}: write the canonical model name {entry.name}")
        elif find_model(p.model) is not None:
            out.append(f"{p.id}: {p.model} is in the catalog; set catalog_model")
        if p.gpu_in_catalog:
            entry = find_gpu(p.gpu)
            if entry is None or entry.name != p.gpu:
                out.append(f"{p.id}: GPU {p.gpu} is not a canonical catalog name")
        elif find_gpu(p.gpu) is not None or not p.gpu_nearest_catalog or find_gpu(p.gpu_nearest_catalog) is None:
            out.append(f"{p.id}: GPU {p.gpu} marked missing but is in the catalog, or has no valid gpu_nearest_catalog")
        value = p.metrics.value(p.primary_metric)
        found = _numbers(p.quote)
        if not any(abs(c - n) <= 1e-6 * max(1.0, abs(n)) for c in (value, value * 1000.0) for n in found):
            out.append(f"{p.id}: {p.primary_metric}={value} is not in its quote")
        if not data.source(p.source_id).url.startswith("https://"):
            out.append(f"{p.id}: source {p.source_id} has no https url")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="incoming files (default: every *.yaml next to this script)")
    ap.add_argument("--write-merged", type=Path, help="also write the merged dataset (for running the tests on it)")
    args = ap.parse_args()
    files = [HERE / f if not Path(f).is_absolute() else Path(f) for f in args.files] or sorted(HERE.glob("*.yaml"))
    raw = merged(files)
    try:
        data = Dataset.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        print(f"schema: {where}: {first['msg']} ({err.error_count()} error(s))")
        return 1
    new_ids = {p["id"] for f in files for p in (yaml.safe_load(f.read_text(encoding="utf-8")) or {}).get("points") or []}
    found = problems(data, new_ids)
    for line in found:
        print(line)
    if args.write_merged:
        args.write_merged.write_text(yaml.safe_dump(raw, sort_keys=False, width=130, allow_unicode=True), encoding="utf-8")
    print(f"{len(data.points)} points from {len(data.sources)} sources ({len(new_ids)} new from {len(files)} incoming file(s)): "
          f"{'OK' if not found else f'{len(found)} problem(s)'}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
