"""Catalog lookup time in a fresh process after imports (median of 9): python benchmarks/catalog_load.py

Run with PYTHONPATH pointing at an older src/ to compare."""
import statistics, subprocess, sys, os
pre = "import time, infer_advisor.model_facts.resolve as r, infer_advisor.model_facts.catalog as c, infer_advisor.model_facts.build, infer_advisor.model_facts.facts as f; f.ModelFacts.model_rebuild(); c.CatalogEntry.model_rebuild(); "
code = {
 "exact id": "c.find_entry('meta-llama/Llama-2-7b-hf')",
 "alias": "c.find_entry('llama-2-7b')",
 "whole catalog": "c.load_catalog()",
}
for label, cd in code.items():
    times = []
    for _ in range(9):
        out = subprocess.run([sys.executable, "-c", pre + f"t=time.perf_counter(); {cd}; print(time.perf_counter()-t)"],
                             capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        times.append(float(out.stdout))
    print(f"{label:14} median {statistics.median(times)*1000:.2f} ms")
