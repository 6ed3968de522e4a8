import asyncio, json, os, statistics, sys
from pathlib import Path
sys.path[:0] = [os.getcwd(), os.getcwd() + "/src"]
from benchmarks.capacity_validation import *
from benchmarks.capacity_validation import _concurrent_timings
from tests.support.llama_server import build_capacity_model, build_llama_server, llama_server
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
gguf = build_capacity_model(out / "m")
res = {}
with llama_server(build_llama_server(), gguf, parallel=4, ctx_per_slot=256, batch=512, threads=1, alias=str(gguf.parent)) as url:
    for rep in range(4):
        for n in (1, 2, 3, 4):
            t = asyncio.run(_concurrent_timings(url, n, 8, 64, 1000 * rep + n))
            res.setdefault(n, []).append(round(statistics.median(x["predicted_per_token_ms"] for x in t), 2))
        print(rep, res, flush=True)
print(json.dumps(res)); (out / "decode.json").write_text(json.dumps(res))
