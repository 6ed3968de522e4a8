"""Build prospective/batch8.yaml (speed batch 8, facts only) from the saved raw text under raw/.

Every quote is a ' ... '-joined list of fragments; each fragment is checked here (and again by check.py) to occur
verbatim, whitespace collapsed, in the saved raw file named for its source. Deterministic: re-running gives the same bytes.
    python build.py            # writes ../batch8.yaml
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parents[3]) not in sys.path:  # run as a script: the repository root, for the shared source tools
    sys.path.insert(0, str(HERE.parents[3]))

from benchmarks.published.prospective.source_tools import metric, point, quoter, write_batch  # noqa: E402

RAW = HERE / "raw"
OUT = HERE.parent / "batch8.yaml"
quote = quoter(RAW)


# ---------------------------------------------------------------- ROCm/vllm dev-docker README @16c81851 (AMD)
ROCM_SHA = "16c81851b42c6c7587ea979abf64751aa37fe2f2"
ROCM_URL = f"https://github.com/ROCm/vllm/blob/{ROCM_SHA}/docs/dev-docker/README.md"
ROCM_RAW = "rocm-vllm-dev-docker-README-16c81851b.md"
ROCM_ID = "rocm-vllm-dev-docker-0.7.3-2025-03-12"
ROCM_ROWS = [  # size, catalog, checkpoint, isl, osl, prompts (= max num seqs), value as printed (first 7 rows, table order)
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 128, 2048, 3200, "15919.0"),
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 128, 4096, 1500, "12053.3"),
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 500, 2000, 2000, "13089.0"),
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 2048, 2048, 1500, "8352.4"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 128, 2048, 1500, "4219.7"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 128, 4096, 1500, "3328.7"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 500, 2000, 2000, "3109.3"),
]


def rocm_points():
    pts, seen = [], set()
    for size, cat, ckpt, isl, osl, n, val in ROCM_ROWS:
        first = size not in seen
        seen.add(size)
        row = (f"| Llama 3.1 {size} ({ckpt}) | FP8 | 8 | {isl} | {osl} | {n} | {n} | {val} |" if first
               else f"| | | | {isl} | {osl} | {n} | {n} | {val} |")
        pts.append(point(
            id=f"rocm-vllm073-mar12-mi300x-llama31-{size.lower()}-fp8-tp8-offline-{isl}-{osl}", source_id=ROCM_ID, source_url=ROCM_URL,
            quote=quote(ROCM_RAW, "- vLLM 0.7.3", "### Throughput Measurements",
                        "| Model | Precision | TP Size | Input | Output | Num Prompts | Max Num Seqs | Throughput (tokens/s) |", row,
                        "8x AMD Instinct MI300X (192GiB, 750W) GPUs"),
            quote_context="Throughput Measurements table ('a local inference client is fed requests at an infinite rate'); columns Model | "
                          "Precision | TP Size | Input | Output | Num Prompts | Max Num Seqs | Throughput (tokens/s); the system line below it",
            engine="vllm", engine_version="0.7.3 (ROCm 6.3.1 docker rocm/vllm-dev, README of 2025-03-12)", model=ckpt, catalog_model=cat,
            quantization="fp8", weights_checkpoint=ckpt, kv_cache_dtype="fp8", dtype="float16", gpu="MI300X",
            gpu_as_stated="8x AMD Instinct MI300X (192GiB, 750W) GPUs", gpu_count=8, tp=8, mode="offline_throughput", num_requests=n,
            input_tokens=isl, output_tokens=osl, length_distribution="fixed",
            metrics={"total_tokens_per_s": metric(float(val), "single")}, primary_metric="total_tokens_per_s",
            inferred=["kv_cache_dtype", "dtype", "catalog_model"],
            notes="Supermicro AS-8125GS-TNMR2 with 2x AMD EPYC 9554, 8x AMD Instinct MI300X (192GiB, 750W). Settings from the README's "
                  "reproduce command: benchmark_throughput.py --distributed-executor-backend mp --quantization fp8 --kv-cache-dtype fp8 "
                  "--dtype float16 --gpu-memory-utilization 0.9 --num-scheduler-steps 10 --enable-chunked-prefill False --max-model-len 8192 "
                  f"--max-num-batched-tokens 131072 --max-seq-len-to-capture 131072 --tensor-parallel-size 8 --num-prompts {n} --max-num-seqs {n}; "
                  "VLLM_USE_TRITON_FLASH_ATTN=0. All prompts queued at once. 'Throughput (tokens/s)' read as benchmark_throughput's total "
                  "tokens/s (input + output), as for the other README releases. kv_cache_dtype / dtype are the reproduce command's (the table "
                  "states only 'FP8'). First 7 table rows by the AMD cap (the 405B 2048/2048 row left out by order).",
            doubt="The table does not say whether 'Throughput (tokens/s)' is total or output tokens/s; --num-scheduler-steps 10 is a V0 "
                  "multi-step flag. Another release of the rocm-vllm-dev-docker-* README family (AMD; used before: 040de12d, 5486e7bc, 68af0558, "
                  "7bb0618b, c43debd4, 25070a18, 16d2b92e): merge the family when holding out by publisher.",
        ))
    return pts


# ---------------------------------------------------------------- sariekr/gpu_conc (AIMultiple; vLLM concurrency sweep)
GC_SHA = "c848ef1cba23e05aba3a3325d2b0142144287f46"
GC_ID = "gpu-conc-sariekr-gptoss20b-h200-b200"
GC_FILES = [("H200", "H200/benchmark_summary_20250814_182107.json", "H200", "2025-08-14"),
            ("B200", "b200/benchmark_summary_20250815_090845.json", "B200", "2025-08-15")]
GC_LEVELS = (1, 8, 64, 512)


def gc_raw(path):
    return "gpu_conc-" + path.replace("/", "-")


def gc_fragment(r):
    """The level's leading keys as one whitespace-collapsed fragment of the raw JSON."""
    keys = ("concurrency", "total_requests_sent", "successful_requests", "failed_requests", "response_rate", "test_duration_seconds",
            "system_output_throughput", "requests_per_second", "median_end_to_end_latency")
    return ", ".join(f'"{k}": {json.dumps(r[k])}' for k in keys) + ","


def gpu_conc_points():
    pts = []
    for gpu, path, folder, day in GC_FILES:
        raw = gc_raw(path)
        data = json.loads((RAW / raw).read_text(encoding="utf-8"))
        mem = data["test_info"]["gpu_info"]["memory"]
        for r in data["results"]:
            c = r["concurrency"]
            if c not in GC_LEVELS:
                continue
            pts.append(point(
                id=f"gpuconc-{gpu.lower()}-gptoss20b-vllm-c{c}-1000-1000", source_id=GC_ID,
                source_url=f"https://github.com/sariekr/gpu_conc/blob/{GC_SHA}/{path}",
                quote=quote(raw, '"input_tokens": 1000, "output_tokens": 1000,', '"model": "openai/gpt-oss-20b"',
                            f'"gpu_info": {{ "model": "NVIDIA {gpu}", "memory": "{mem}", "count": 1 }}', gc_fragment(r),
                            f'"median_ttft": {json.dumps(r["median_ttft"])},',
                            f'"median_output_speed_per_query": {json.dumps(r["median_output_speed_per_query"])},'),
                quote_context=f"{folder}/ benchmark summary JSON: test_info config and gpu_info, and the results entry of concurrency {c}",
                engine="vllm", engine_version=None, model="openai/gpt-oss-20b", catalog_model="openai/gpt-oss-20b", quantization="none",
                weights_checkpoint="openai/gpt-oss-20b (MXFP4 experts as shipped)", gpu=gpu, gpu_as_stated=f"NVIDIA {gpu} ({mem}), count 1",
                gpu_count=1, tp=1, mode="closed_loop", concurrency=c, num_requests=r["total_requests_sent"], input_tokens=1000,
                output_tokens=1000, length_distribution="fixed",
                metrics={"output_tokens_per_s": metric(r["system_output_throughput"], "single"),
                         "requests_per_s": metric(r["requests_per_second"], "single"),
                         "ttft_s": metric(round(r["median_ttft"] / 1000, 6), "median"),
                         "e2e_s": metric(round(r["median_end_to_end_latency"] / 1000, 6), "median"),
                         "output_tokens_per_s_per_user": metric(r["median_output_speed_per_query"], "median")},
                primary_metric="output_tokens_per_s", inferred=["tp", "quantization", "length_distribution"],
                notes=f"sariekr/gpu_conc (multi_concurrency_benchmark.py + concurrency.py, an AsyncOpenAI streaming client against a vLLM "
                      f"OpenAI server; 'vllm serve your-model' in the README): run of {day}, phases of 180 s per concurrency level after a 30 s "
                      "ramp-up, synthetic prompts of ~1000 tokens asking for 1000 output tokens, request timeout 30 s. The figure is the "
                      "summary's 'system_output_throughput' (output tokens/s of all requests in the phase). One GPU, so TP 1 (inferred); "
                      "gpt-oss-20b as shipped (MXFP4 experts: quantization 'none', as earlier batches record gpt-oss); lengths read as fixed "
                      "(target lengths; the client counts streamed chunks as tokens). vLLM version not stated (August 2025).",
                doubt="vLLM version and server flags not stated. The author's later commits 'fix concurrency size' / 'concurrency fix queue' "
                      "(2025-10-08) and 'Fix token counting' (2025-10-10) postdate this run: the client's real concurrency at the higher levels "
                      "and its token count (one streamed chunk = one token) may differ from the stated ones; whether the server stopped at EOS "
                      "before 1000 tokens is not stated. Publisher AIMultiple (author e-mail) - new.",
            ))
    return pts


# ---------------------------------------------------------------- saicharan0810/vllm-tgi-benchmark README (Saicharan Kolluru)
KS_SHA = "13f64c9cd8a01f7ea4ab5e6d23119fcd7afc6809"
KS_URL = f"https://github.com/saicharan0810/vllm-tgi-benchmark/blob/{KS_SHA}/README.md"
KS_RAW = "vllm-tgi-benchmark-README.md"
KS_ID = "vllm-tgi-benchmark-kolluru-a100"
KS_ROWS = [  # label, catalog, gpus, concurrency, vllm, tgi, speedup
    ("LLaMA-2-7B", "meta-llama/Llama-2-7b-hf", 1, 100, "15,243", "4,156", "3.67x"),
    ("LLaMA-2-13B", "meta-llama/Llama-2-13b-hf", 1, 100, "8,934", "3,187", "2.80x"),
    ("LLaMA-2-70B", "meta-llama/Llama-2-70b-hf", 4, 50, "3,245", "1,544", "2.10x"),
]
KS_SETUP = {"vllm": ("| vLLM | v0.6.1 | PagedAttention, Continuous Batching |", "0.6.1"),
            "tgi": ("| HuggingFace TGI | v2.3.0 | Dynamic Batching, Quantization Support |", "2.3.0")}


def kolluru_points():
    pts = []
    for label, cat, gpus, conc, v_vllm, v_tgi, speed in KS_ROWS:
        for engine, val in (("vllm", v_vllm), ("tgi", v_tgi)):
            line, ver = KS_SETUP[engine]
            tp_frag = "- LLaMA-2-70B (tensor parallel, 4 GPUs)" if gpus == 4 else f"- {label} (single GPU)"
            pts.append(point(
                id=f"kolluru-a100-{label.lower()}-{engine}-c{conc}-sharegpt", source_id=KS_ID, source_url=KS_URL,
                quote=quote(KS_RAW, line, tp_frag, "- 4x NVIDIA A100 80GB GPUs", "- Prompt lengths: Poisson distribution (mean=512 tokens)",
                            "- Generation lengths: Poisson distribution (mean=256 tokens)", "- 1,000 requests per benchmark run",
                            "### Throughput Performance", "| Model | vLLM (tokens/sec) | TGI (tokens/sec) | Speedup |",
                            f"| {label} @ {conc} concurrent | {v_vllm} | {v_tgi} | {speed} |"),
                quote_context="README: 'Benchmarked Systems' table, models and hardware lists, 'Workload Design', and the 'Throughput "
                              f"Performance' row '{label} @ {conc} concurrent' ({'vLLM' if engine == 'vllm' else 'TGI'} column)",
                engine=engine, engine_version=ver, model=label, catalog_model=cat, quantization="none", dtype=None, gpu="A100-80GB",
                gpu_as_stated="NVIDIA A100 80GB" + (" x4 (tensor parallel, 4 GPUs)" if gpus == 4 else " (single GPU)"),
                gpu_count=gpus, tp=gpus, mode="closed_loop", concurrency=conc, num_requests=1000, input_tokens=512, output_tokens=256,
                length_distribution="sharegpt",
                metrics={"output_tokens_per_s": metric(float(val.replace(",", "")), "median")}, primary_metric="output_tokens_per_s",
                inferred=["catalog_model", "metrics.output_tokens_per_s", "gpu_count"],
                notes="README of the study 'Comparative Analysis of Large Language Model Inference Serving Systems: A Performance Study of vLLM "
                      "and HuggingFace TGI' (arXiv 2511.17593, November 2025): vLLM v0.6.1 and TGI v2.3.0 (docker "
                      "ghcr.io/huggingface/text-generation-inference:2.3.0), 4x A100 80GB, ShareGPT conversations with Poisson prompt "
                      "(mean 512) and generation (mean 256) lengths, 1,000 requests per run after 100 warm-up requests, sampling temperature 0.7 "
                      "/ top-p 0.9, median of 3 runs. 'tokens/sec' read as output tokens/s of all requests together (the README's 'Tokens per "
                      "second across all concurrent requests'; inferred). LLaMA-2 checkpoints read as the base meta-llama/Llama-2-*-hf (the "
                      "README's commands name meta-llama/Llama-2-7b-hf). Concurrency from the row label (closed loop).",
                doubt="Provenance: the README's clone URL is a template ('yourusername'), results/ holds only an example JSON and the figures are "
                      "rounded; whether 'tokens/sec' counts output or input + output tokens is not stated; dtype and server flags not stated; "
                      "GPU form factor (SXM/PCIe) not stated. The lead may hold this source out as a whole.",
            ))
    return pts


# ---------------------------------------------------------------- vLLM PR #15322 (DefTruth, vipshop)
def vllm15322_point():
    raw = "vllm-pr-15322.excerpt.md"
    return point(
        id="vllm15322-l20x24-deepseek-r1-pp3-tp8-c16-4096-1024-before", source_id="vllm-pr-15322-deepseek-r1-l20",
        source_url="https://github.com/vllm-project/vllm/pull/15322",
        quote=quote(raw, "# [Misc] Add tuned R1 w8a8 and MoE configs for NVIDIA L20",
                    "optimizing DeepSeek-R1 671B inference performance on NVIDIA L20 devices using vLLM with pp3 + tp8",
                    "--random-input-len 4096", "--random-output-len 1024", "--ignore-eos", "--max-concurrency 16", "--num-prompts 16",
                    "#### Before", "Successful requests: 16", "Total input tokens: 65536", "Total generated tokens: 16384",
                    "Request throughput (req/s): 0.13", "Output token throughput (tok/s): 131.35", "Total Token throughput (tok/s): 656.75",
                    "Mean TTFT (ms): 8749.86", "Median TTFT (ms): 9009.79", "Mean TPOT (ms): 112.99", "Median TPOT (ms): 112.77"),
        quote_context="PR description: the setup sentence, the benchmark_serving command and the 'Before' printout (stock configs)",
        engine="vllm", engine_version=None, model="/workspace/DeepSeek-R1 (local copy of deepseek-ai/DeepSeek-R1)",
        catalog_model="deepseek-ai/DeepSeek-R1", quantization="fp8", weights_checkpoint="deepseek-ai/DeepSeek-R1 (block FP8 as shipped)",
        gpu="L20", gpu_as_stated="NVIDIA L20 devices, pp3 + tp8", gpu_count=24, tp=8, pp=3, mode="closed_loop", concurrency=16,
        num_requests=16, input_tokens=4096, output_tokens=1024, length_distribution="fixed",
        metrics={"output_tokens_per_s": metric(131.35, "single"), "total_tokens_per_s": metric(656.75, "single"),
                 "requests_per_s": metric(0.13, "single"), "ttft_s": metric(8.74986, "mean"), "tpot_s": metric(0.11299, "mean")},
        primary_metric="output_tokens_per_s", inferred=["gpu_count", "quantization", "weights_checkpoint"],
        notes="vipshop's production setup: DeepSeek-R1 671B with pipeline parallel 3 x tensor parallel 8 (24 L20 GPUs, inferred from 'pp3 + "
              "tp8'; nodes not stated). Client: vLLM benchmarks/benchmark_serving.py random 4096/1024 with --ignore-eos (16 x 4096 input "
              "tokens, 16 x 1024 output in the printout: fixed lengths), 16 prompts at --max-concurrency 16 (one wave). 'Before' = stock "
              "vLLM with the default W8A8 block-FP8 and fused-MoE kernel configs (the log warns 'Using default W8A8 Block FP8 kernel config'); "
              "the PR adds tuned L20 configs. vLLM main of 2025-03-19 (log date), version not stated.",
        doubt="vLLM version not stated; node layout (3 nodes of 8?) and interconnect not stated; one wave of 16 requests (TTFT includes "
              "queueing of the 16 prefills).",
    )


# ---------------------------------------------------------------- tenstorrent/tt-inference-server issue #340 (Tenstorrent)
TT_URL = "https://github.com/tenstorrent/tt-inference-server/issues/340"
TT_RAW = "tenstorrent-issue-340.excerpt.md"
TT_ID = "tenstorrent-issue-340-qwen3-a100"
TT_HEAD = ("| ISL | OSL | Concurrency | N Req | TTFT (ms) | TPOT (ms) | Tput User (TPS) | Tput Decode (TPS) | Tput Prefill (TPS) | "
           "E2EL (ms) | Req Tput (RPS) |")
TT_ROWS = {  # model: [(isl, osl, conc, n, ttft, tpot, user, decode, prefill, e2el, rps)] - thread order, first 9 complete rows
    "Qwen3-1.7B": [(128, 128, 1, 8, "11.4", "4.6", "215.32", "215.3", "11190.8", "601.2", "1.661"),
                   (128, 1024, 1, 4, "14.0", "4.7", "213.67", "213.7", "9121.9", "4801.7", "0.208"),
                   (1024, 128, 1, 4, "26.4", "4.8", "207.55", "207.5", "38832.5", "638.3", "1.565"),
                   (2048, 128, 1, 4, "30.9", "5.0", "200.79", "200.8", "66234.2", "663.4", "1.506")],
    "Qwen3-14B": [(128, 128, 1, 8, "52.5", "24.3", "41.22", "41.2", "2436.5", "3133.5", "0.319"),
                  (128, 1024, 1, 4, "32.8", "28.2", "35.47", "35.5", "3901.3", "28877.5", "0.035"),
                  (1024, 128, 1, 4, "284.0", "28.9", "34.59", "34.6", "3605.4", "3955.8", "0.253"),
                  (2048, 128, 1, 4, "282.8", "27.6", "36.19", "36.2", "7242.7", "3792.3", "0.264"),
                  (3072, 128, 1, 4, "359.1", "29.1", "34.38", "34.4", "8555.6", "4053.0", "0.247")],
}


def tenstorrent_points():
    pts = []
    for name, rows in TT_ROWS.items():
        meta = ("### Metadata: Qwen3-1.7B on A100", '"model_repo": "Qwen/Qwen3-1.7B",', '"vllm_commit": "n/a",') if name == "Qwen3-1.7B" else ()
        for isl, osl, conc, n, ttft, tpot, user, dec, pre, e2e, rps in rows:
            row = f"| {isl} | {osl} | {conc} | {n} | {ttft} | {tpot} | {user} | {dec} | {pre} | {e2e} | {rps} |"
            pts.append(point(
                id=f"tenstorrent340-a100-{name.lower().replace('.', '')}-c{conc}-{isl}-{osl}", source_id=TT_ID, source_url=TT_URL,
                quote=quote(TT_RAW, "# Qwen3 Family: GPU Benchmarks", *meta, f"### Performance Benchmark Sweeps for {name} on A100", TT_HEAD, row),
                quote_context=f"Issue comment: 'Performance Benchmark Sweeps for {name} on A100' table row ISL {isl} / OSL {osl}"
                              + (" and the comment's metadata block" if meta else ""),
                engine="vllm", engine_version=None, model=f"Qwen/{name}", catalog_model=f"Qwen/{name}", quantization="none",
                dtype=None, gpu="A100-80GB", gpu_as_stated="A100", gpu_count=1, tp=1, mode="closed_loop", concurrency=conc,
                num_requests=n, input_tokens=isl, output_tokens=osl, length_distribution="fixed",
                metrics={"ttft_s": metric(round(float(ttft) / 1000, 6), "mean"), "tpot_s": metric(round(float(tpot) / 1000, 6), "mean"),
                         "output_tokens_per_s_per_user": metric(float(user), "mean"),
                         "e2e_s": metric(round(float(e2e) / 1000, 6), "mean"), "requests_per_s": metric(float(rps), "mean")},
                primary_metric="tpot_s", inferred=["engine", "gpu", "gpu_count", "tp", "quantization", "length_distribution"],
                notes="Tenstorrent's GPU reference runs (tt-inference-server 'run.py --device gpu --workflow release'), columns ISL | OSL | "
                      "Concurrency | N Req | TTFT | TPOT | Tput User | Tput Decode | Tput Prefill | E2EL | Req Tput, as batch 3's issue #356. "
                      f"Concurrency {conc}, {n} requests. Engine read as vLLM (the metadata's 'vllm_commit' field; the workflow's GPU "
                      "references run vLLM's benchmark client) - inferred, version not stated. One A100 (80GB inferred; the table says "
                      "'A100'), TP 1 inferred; BF16 checkpoint as shipped. Statistic of TTFT/TPOT not stated: recorded as mean.",
                doubt="Engine and version, GPU memory/form factor and server flags are not stated in the excerpt; whether prefix caching "
                      "served repeated prompts is not stated. Same publisher family as batch 3's tenstorrent-issue-356 (merge when holding "
                      "out by publisher).",
            ))
    return pts


# ---------------------------------------------------------------- sources
SOURCES = [
    {"source_id": ROCM_ID, "url": ROCM_URL,
     "title": "ROCm/vllm dev-docker README at 16c81851: vLLM FP8 throughput on MI300X (vLLM 0.7.3, ROCm 6.3.1, 'Updated README.md with "
              "config info and header font size (#473)')",
     "kind": "docs", "date": "2025-03-12 (commit 16c81851)", "publisher": "AMD (ROCm/vllm)",
     "notes": "Read from the repository snapshot (git show 16c81851b:docs/dev-docker/README.md, saved whole in raw/); its table lines are those "
              "of 0f2300e3 (2025-03-11). Another release of the README than those used before (040de12d, 5486e7bc, 7bb0618b, 68af0558, c43debd4, "
              "25070a18, 16d2b92e): merge the rocm-vllm-dev-docker-* ids when holding out by publisher."},
    {"source_id": GC_ID, "url": f"https://github.com/sariekr/gpu_conc/tree/{GC_SHA}",
     "title": "sariekr/gpu_conc: vLLM multi-level concurrency benchmark, gpt-oss-20b on one H200 / one B200 (benchmark_summary JSON)",
     "kind": "repo", "date": "2025-08-14 / 2025-08-15 (runs; snapshot c848ef1 of 2025-10-10)", "publisher": "AIMultiple (sariekr, gpu_conc)",
     "notes": "Read with git show from the fetched snapshot; the two summary files saved whole in raw/. New publisher."},
    {"source_id": KS_ID, "url": KS_URL,
     "title": "saicharan0810/vllm-tgi-benchmark README: vLLM v0.6.1 vs TGI v2.3.0 on A100 80GB (arXiv 2511.17593)",
     "kind": "repo", "date": "2025-11-25 (commit 13f64c9c)", "publisher": "Saicharan Kolluru (vllm-tgi-benchmark)",
     "notes": "Read with git show from the fetched snapshot; README saved whole in raw/. New publisher; provenance doubts in each point."},
    {"source_id": "vllm-pr-15322-deepseek-r1-l20", "url": "https://github.com/vllm-project/vllm/pull/15322",
     "title": "vllm-project/vllm PR #15322 '[Misc] Add tuned R1 w8a8 and MoE configs for NVIDIA L20' (DeepSeek-R1 pp3 + tp8, 'Before' run)",
     "kind": "issue", "date": "2025-03-22", "publisher": "DefTruth (vipshop, vLLM PR)",
     "notes": "Excerpts of the issues corpus (search tool), raw/vllm-pr-15322.excerpt.md. New publisher."},
    {"source_id": TT_ID, "url": TT_URL,
     "title": "tenstorrent/tt-inference-server issue #340 'Qwen3 Family: GPU Benchmarks': sweeps for Qwen3-1.7B and Qwen3-14B on A100",
     "kind": "issue", "date": "2025-06-24 / 2025-07-18 (comments)", "publisher": "Tenstorrent (tt-inference-server team)",
     "notes": "Excerpts of the issues corpus (search tool), raw/tenstorrent-issue-340.excerpt.md. Same publisher as batch 3's issue #356 "
              "(another thread)."},
]


def main():
    pts = rocm_points() + gpu_conc_points() + kolluru_points() + [vllm15322_point()] + tenstorrent_points()
    write_batch(OUT, "Batch 8 of published LLM-serving speed measurements from sources never used in benchmarks/published/speed_points.yaml, "
                     "prospective/batch1.yaml .. batch7.yaml, serving_curves.yaml or lora_points.yaml, gathered 2026-12-05 (01:20-01:35 UTC) "
                     "for prospective grading of the profile frozen by speedfix8 (session 10). Same schema as speed_points.yaml.", SOURCES, pts)


if __name__ == "__main__":
    main()
