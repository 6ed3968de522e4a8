"""Rewrite data/models/_index.json from the catalog entries (after editing entry files by hand).

    PYTHONPATH=src python benchmarks/rebuild_catalog_index.py
"""

from infer_advisor.model_facts.add import _INDEX_COMMENT, _write_json
from infer_advisor.model_facts.catalog import INDEX_FILE, build_index, folder, load_catalog

if __name__ == "__main__":
    _write_json(folder() / INDEX_FILE, {"_comment": _INDEX_COMMENT, "names": build_index(load_catalog())})
    print(f"{folder() / INDEX_FILE}: {len(load_catalog())} entries")
