"""Build prospective/batch6.yaml (speed batch 6, facts only) from the saved raw text under raw/.

Every quote is a ' ... '-joined list of fragments; each fragment is checked here (and again by check.py) to occur
verbatim, whitespace collapsed, in the saved raw file named for its source. Deterministic: re-running gives the same bytes.
    python build.py            # writes ../batch6.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parents[3]) not in sys.path:  # run as a script: the repository root, for the shared source tools
    sys.path.insert(0, str(HERE.parents[3]))

from benchmarks.published.prospective.source_tools import metric, point, quoter, write_batch  # noqa: E402

RAW = HERE / "raw"
OUT = HERE.parent / "batch6.yaml"
quote = quoter(RAW)


# ---------------------------------------------------------------- TensorRT-LLM v0.15.0 perf-overview (NVIDIA)
TRT_URL = "https://github.com/NVIDIA/TensorRT-LLM/blob/v0.15.0/docs/source/performance/perf-overview.md"
TRT_RAW = "trtllm-perf-overview-v0.15.0.excerpt.md"
TRT_ROWS = [  # (isl, osl, H100 FP8 cell as printed, num_requests from the page's dataset table)
    ("128, 128", 128, 128, "3197.73", 30000), ("128, 2048", 128, 2048, "826.72", 3000), ("500, 2000", 500, 2000, "658.87", 3000),
    ("1000, 1000", 1000, 1000, "772.64", 3000), ("2048, 128", 2048, 128, "331.26", 3000), ("2048, 2048", 2048, 2048, "383.46", 1500),
    ("5000, 500", 5000, 500, "217.12", 1500),
]


def trt_points():
    pts = []
    for lens, isl, osl, cell, nreq in TRT_ROWS:
        row = f"| LLaMA v3 70B| 1| {lens}| {cell}|" if isl == 128 and osl == 128 else f"| | | {lens}| {cell}|"
        pts.append(point(
            id=f"trtllm0150-h100-llama3-70b-fp8-tp1-{isl}-{osl}", source_id="trtllm-perf-overview-v0.15.0", source_url=TRT_URL,
            quote=quote(TRT_RAW, "**All data in the table below was generated using version 0.15.0 and presents token throughput in tokens/second.**",
                        "| | GPU| | H100 80GB HBM3|", "| | Precision| | FP8|", "| LLaMA v3 70B| 1| 128, 128|", row),
            quote_context="Throughput Measurements table; columns GPU H100 80GB HBM3 (Precision FP8) | A100-SXM4-80GB | A100-PCIE-80GB | L40S | "
                          f"GH200 96GB; block 'LLaMA v3 70B', TP Size 1, row {lens}, H100 column",
            engine="trtllm", engine_version="0.15.0", engine_backend="tensorrt", model="LLaMA v3 70B", catalog_model="meta-llama/Meta-Llama-3-70B",
            quantization="fp8", kv_cache_dtype="fp8", gpu="H100-80GB", gpu_as_stated="H100 80GB HBM3", gpu_count=1, tp=1,
            mode="offline_throughput", num_requests=nreq, input_tokens=isl, output_tokens=osl, length_distribution="fixed",
            metrics={"output_tokens_per_s": metric(float(cell), "single")}, primary_metric="output_tokens_per_s",
            inferred=["catalog_model", "num_requests", "kv_cache_dtype", "metrics.output_tokens_per_s"],
            notes="trtllm-bench throughput (in-flight batching; 'a local inference client is fed requests at an infinite rate') over an engine built "
                  "with `trtllm-bench --model $model_name build --tp_size $tp_size --pp_size $pp_size --quantization FP8 --dataset $dataset_file`; "
                  "synthetic token-norm-dist dataset with stdev 0 (fixed lengths). num_requests from the page's $num_requests table for the length "
                  "pair. 'token throughput in tokens/second' read as output tokens/s of all GPUs together, the reading batch1/batch2 gave the "
                  "v0.13 / v0.17 pages of the same family. Checkpoint not named ('LLaMA v3 70B', read as Meta-Llama-3-70B); FP8 weights quantized "
                  "at engine build, KV cache FP8 with it (the family's pages: FP8 quantization sets the KV cache to FP8). Text read from the search "
                  "index's stored copy of docs/source/performance/perf-overview.md (id 5939417815, commit not named); the URL's v0.15.0 tag is "
                  "inferred from 'generated using version 0.15.0'.",
            doubt="One 70B FP8 model on one 80 GB H100 leaves ~10 GB for the KV cache, so the runs are KV-bound; 128/4096 is empty in the "
                  "table (not run). Same publisher and table family as the trtllm-perf-overview-* ids of batches 1, 2 and 4.",
        ))
    return pts


# ---------------------------------------------------------------- ROCm/vllm dev-docker README @25070a184 (AMD)
ROCM_SHA = "25070a1841df0dca585b7ddcb967c42aaec4b7c5"
ROCM_RAW = "rocm-vllm-dev-docker-README-25070a184.md"
ROCM_TP = [  # model label, catalog, checkpoint, isl, osl, prompts(=max seqs), value, first row of its block?
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 128, 2048, 3200, "15684.7"),
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 128, 4096, 1500, "11761.5"),
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 500, 2000, 2000, "12895.9"),
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 2048, 2048, 1500, "8380.7"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 128, 2048, 1500, "4218.6"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 128, 4096, 1500, "3326.2"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 500, 2000, 2000, "3113.4"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 2048, 2048, 500, "2112.1"),
]
ROCM_LAT = [  # size, catalog, checkpoint, isl, osl, value, row as printed
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 128, 2048, "17.662",
     "| Llama 3.1 70B (amd/Llama-3.1-70B-Instruct-FP8-KV) | FP8 | 8 | 1 | 128 | 2048 | 17.662 |"),
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 2048, 2048, "17.891", "| | | | 1 | 2048 | 2048 | 17.891 |"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 128, 2048, "46.779",
     "| Llama 3.1 405B (amd/Llama-3.1-70B-Instruct-FP8-KV) | FP8 | 8 | 1 | 128 | 2048 | 46.779 |"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 2048, 2048, "47.448", "| | | | 1 | 2048 | 2048 | 47.448 |"),
]
ROCM_COMMON = dict(source_id="rocm-vllm-dev-docker-0.7.3-2025-03-27", engine="vllm",
                   engine_version="0.7.3 (ROCm 6.3.1 docker rocm/vllm-dev, README of 2025-03-28)", quantization="fp8", kv_cache_dtype="fp8",
                   dtype="float16", gpu="MI300X", gpu_as_stated="8x AMD Instinct MI300X (192GiB, 750W) GPUs", gpu_count=8, tp=8)


def rocm_tp_row(size, ckpt, isl, osl, n, val, first):
    if first:
        return f"| Llama 3.1 {size} ({ckpt}) | FP8 | 8 | {isl} | {osl} | {n} | {n} | {val}"
    return f"| | | | {isl} | {osl} | {n} | {n} | {val}"


def rocm_points(url):
    pts = []
    seen = set()
    for size, cat, ckpt, isl, osl, n, val in ROCM_TP:
        first = size not in seen
        seen.add(size)
        row = rocm_tp_row(size, ckpt, isl, osl, n, val, first)
        pts.append(point(
            id=f"rocm-vllm073-mar27-mi300x-llama31-{size.lower()}-fp8-tp8-offline-{isl}-{osl}", source_url=url,
            quote=quote(ROCM_RAW, "- vLLM 0.7.3", "### Throughput Measurements",
                        "| Model | Precision | TP Size | Input | Output | Num Prompts | Max Num Seqs | Throughput (tokens/s) |", row),
            quote_context="Throughput Measurements table ('a local inference client is fed requests at an infinite rate'); columns Model | Precision | "
                          "TP Size | Input | Output | Num Prompts | Max Num Seqs | Throughput (tokens/s)",
            model=ckpt, catalog_model=cat, weights_checkpoint=ckpt, mode="offline_throughput", num_requests=n, input_tokens=isl, output_tokens=osl,
            length_distribution="fixed", metrics={"total_tokens_per_s": metric(float(val), "single")}, primary_metric="total_tokens_per_s",
            inferred=["kv_cache_dtype", "dtype", "catalog_model"],
            notes="8x AMD Instinct MI300X (192GiB, 750W), Supermicro AS-8125GS-TNMR2 (2x EPYC 9554). Settings from the README's reproduce command: "
                  "benchmark_throughput.py --distributed-executor-backend mp --quantization fp8 --kv-cache-dtype fp8 --dtype float16 "
                  "--gpu-memory-utilization 0.9 --num-scheduler-steps 10 --enable-chunked-prefill False --max-model-len 8192 "
                  f"--max-num-batched-tokens 131072 --max-seq-len-to-capture 131072 --tensor-parallel-size 8 --num-prompts {n} --max-num-seqs {n}; "
                  "VLLM_USE_TRITON_FLASH_ATTN=0; 'Benchmarks were run with benchmark scripts from v0.6.5'. All prompts queued at once. "
                  "'Throughput (tokens/s)' read as benchmark_throughput's total tokens/s (input + output), as for the other README releases.",
            doubt="The table does not say whether 'Throughput (tokens/s)' is total or output tokens/s; --num-scheduler-steps 10 is a V0 multi-step "
                  "flag. Another release of the rocm-vllm-dev-docker-* README family (AMD) used in speed_points and batches 2-4.",
            **ROCM_COMMON))
    for size, cat, ckpt, isl, osl, val, row in ROCM_LAT:
        pts.append(point(
            id=f"rocm-vllm073-mar27-mi300x-llama31-{size.lower()}-fp8-tp8-bs1-{isl}-{osl}", source_url=url,
            quote=quote(ROCM_RAW, "- vLLM 0.7.3", "### Latency Measurements",
                        "| Model | Precision | TP Size | Batch Size | Input | Output | MI300X Latency (sec) |", row),
            quote_context="Latency Measurements table; columns Model | Precision | TP Size | Batch Size | Input | Output | MI300X Latency (sec)",
            model=ckpt, catalog_model=cat, weights_checkpoint=ckpt, mode="static_batch", batch=1, input_tokens=isl, output_tokens=osl,
            length_distribution="fixed", metrics={"e2e_s": metric(float(val), "mean")}, primary_metric="e2e_s",
            inferred=["kv_cache_dtype", "dtype", "catalog_model", "length_distribution"] + (["model", "weights_checkpoint"] if size == "405B" else []),
            notes="8x AMD Instinct MI300X. Settings from the README's reproduce command: benchmark_latency.py --distributed-executor-backend mp "
                  "--quantization fp8 --kv-cache-dtype fp8 --dtype float16 --gpu-memory-utilization 0.9 --batch-size 1 --input-len IN "
                  "--output-len OUT --tensor-parallel-size 8 --num-iters-warmup 3 --num-iters 5; VLLM_USE_TRITON_FLASH_ATTN=0. Latency = mean of "
                  "5 iterations of one generate() of 1 prompt of IN random tokens, OUT tokens (ignore_eos)."
                  + (" The 405B block's label reads '(amd/Llama-3.1-70B-Instruct-FP8-KV)' (a copy slip: the block is Llama 3.1 405B and its "
                     "latencies are ~2.6x the 70B block's); the 405B FP8-KV checkpoint of the reproduce command is recorded." if size == "405B" else ""),
            doubt=("The 405B rows' checkpoint label names the 70B checkpoint (read as a copy slip). " if size == "405B" else "")
                  + "Another release of the rocm-vllm-dev-docker-* README family (AMD).",
            **ROCM_COMMON))
    return pts


# ---------------------------------------------------------------- LambdaLabsML/vllm-benchmark (Lambda)
LAMBDA_URL = "https://github.com/LambdaLabsML/vllm-benchmark/blob/0e8fc5d0f9865a326666cb82aeb2d8dc74c82c5e/benchmark_v0.md"
LAMBDA_RAW = "lambdalabs-vllm-benchmark-benchmark_v0-0e8fc5d0.excerpt.md"
LAMBDA_ROWS = [("A100-80GB", "A100-80GB-SXM", 1, "1517.54", "42.85"), ("A100-80GB", "A100-80GB-SXM", 2, "1854.27", "38.21"),
               ("A100-80GB", "A100-80GB-SXM", 4, "1899.76", "40.02"), ("A100-80GB", "A100-80GB-SXM", 8, "1972.26", "40.47"),
               ("H100-80GB", "H100-80GB-SXM", 1, "3400.4", "19.75"), ("H100-80GB", "H100-80GB-SXM", 2, "3688.64", "18.83"),
               ("H100-80GB", "H100-80GB-SXM", 4, "3475.27", "20.26"), ("H100-80GB", "H100-80GB-SXM", 8, "3931.83", "17.61")]


def lambda_points():
    pts = []
    for gpu, stated, n, thr, itl in LAMBDA_ROWS:
        pts.append(point(
            id=f"lambda-vllm054-{gpu.lower()}x{n}-llama31-8b-fp8-tp{n}-sharegpt-n320", source_id="lambdalabs-vllm-benchmark-v0-tp-scaling",
            source_url=LAMBDA_URL,
            quote=quote(LAMBDA_RAW, "with `--num-prompts` fixed at 320 to ensure a large batch size and fully utilize the compute",
                        "| | Meta-Llama-3.1-8B-FP8 |", f"| {n}x{stated} | {thr}/{itl} |", "This benchmark was conducted with vLLM `v0.5.4`."),
            quote_context="'Tensor Parallel v.s. Data Parallel' table ('throughput/latency', --num-prompts 320), column Meta-Llama-3.1-8B-FP8, "
                          f"row {n}x{stated}; the version sentence of 'vLLM v0.5.4 v.s. v0.6.0'",
            engine="vllm", engine_version="0.5.4", model="Meta-Llama-3.1-8B-FP8", catalog_model="meta-llama/Llama-3.1-8B", quantization="fp8",
            gpu=gpu, gpu_as_stated=f"{n}x{stated}", gpu_count=n, tp=n, mode="offline_throughput", num_requests=320, input_tokens=215.2,
            output_tokens=178.8, length_distribution="sharegpt",
            metrics={"output_tokens_per_s": metric(float(thr), "single"), "itl_s": metric(round(float(itl) / 1000, 6), "unstated")},
            primary_metric="output_tokens_per_s",
            inferred=["tp", "mode", "input_tokens", "output_tokens", "length_distribution", "metrics.itl_s"],
            notes="vLLM v0.5.4 (docker vllm/vllm-openai:v0.5.4 in the README) serving the FP8 Llama 3.1 8B checkpoint named 'Meta-Llama-3.1-8B-FP8' "
                  "(repository not named on the page); client vLLM benchmarks/benchmark_serving.py with --num-prompts 320 and its default request "
                  "rate inf (all at once: offline_throughput, as batch 5 records all-at-once runs). TP = GPU count: the table illustrates 'overly "
                  "tensor parallelized systems' (inferred). Dataset: ShareGPT_V3_unfiltered_cleaned_split (the README downloads it; inferred for this "
                  "table). Lengths: the page states none; 215.2 / 178.8 tokens per request are the means of benchmark_serving's default ShareGPT "
                  "sample with the Llama 3 tokenizer as printed in vllm issue #7567 (1000 requests: 215196 input, 178793 generated) - inferred. "
                  "'latency' = the page's 'Inter-token Latency' in ms (mean or median not stated).",
            doubt="Lengths, dataset and TP are inferred; max-model-len varied between runs of the study ('little difference'), the one used "
                  "for this table is not stated. vLLM 0.5.4 (V0).",
        ))
    return pts


# ---------------------------------------------------------------- GPUStack LMCache page (GPUStack)
GS_URL = ("https://github.com/gpustack/gpustack/blob/47277d79f4a5bae12a2d25e9ecbed2a2177a5f2d/docs/performance-lab/references/"
          "evaluating-lmcache-prefill-acceleration-in-vllm.md")
GS_RAW = "gpustack-lmcache-prefill-47277d79.md"
GS_ROWS = [("1K", 1024, "579.86", "5212.32", "8886.36", "42.08"), ("8K", 8192, "77.87", "5060.79", "80610.70", "43.33"),
           ("20K", 20480, "22.97", "3698.09", "277456.13", "31.68")]


def gpustack_points():
    pts = []
    for label, isl, out, tot, ttft, tpot in GS_ROWS:
        pts.append(point(
            id=f"gpustack-lmcache-rtx4090-qwen3-8b-vllm01011-baseline-random-{isl}-128-n100", source_id="gpustack-perf-lab-lmcache-qwen3-8b-rtx4090",
            source_url=GS_URL,
            quote=quote(GS_RAW, "- **Model**: Qwen3-8B", "- **Hardware**: NVIDIA RTX 4090 24GB", "- **vLLM Version**: v0.10.1.1",
                        "vllm serve Qwen/Qwen3-8B", "### Cache Miss Scenarios (Random Dataset)",
                        "vllm bench serve --model Qwen/Qwen3-8B --endpoint-type openai-chat --endpoint /v1/chat/completions --dataset-name random "
                        "--random-input-len 1024 --random-output-len 128 --num-prompts 100 --seed 40",
                        f"#### {label} Input Tokens", "| Metric | Without LMCache | With LMCache | Change |", f"| Output TPS | {out} |",
                        f"| Total TPS | {tot} |", f"| Mean TTFT (ms) | {ttft} |", f"| Mean TPOT (ms) | {tpot} |"),
            quote_context=f"'Experimental Setup' list, the standard serving command, section 'Cache Miss Scenarios (Random Dataset)': its bench "
                          f"command and table '{label} Input Tokens', column 'Without LMCache'",
            engine="vllm", engine_version="0.10.1.1", model="Qwen/Qwen3-8B", catalog_model="Qwen/Qwen3-8B", quantization="none",
            gpu="RTX-4090", gpu_as_stated="NVIDIA RTX 4090 24GB", gpu_count=1, tp=1, mode="offline_throughput", num_requests=100,
            input_tokens=isl, output_tokens=128, length_distribution="fixed",
            metrics={"output_tokens_per_s": metric(float(out), "single"), "total_tokens_per_s": metric(float(tot), "single"),
                     "ttft_s": metric(round(float(ttft) / 1000, 5), "mean"), "tpot_s": metric(round(float(tpot) / 1000, 5), "mean")},
            primary_metric="output_tokens_per_s",
            inferred=["mode", "length_distribution", "gpu_count"] + ([] if isl == 1024 else ["input_tokens", "output_tokens"]),
            notes="Standard serving: `vllm serve Qwen/Qwen3-8B` (defaults: bf16, prefix caching on, max_model_len 40960). Client: vllm bench serve, "
                  "openai-chat endpoint, random dataset, 100 prompts, no rate or concurrency cap (all at once: offline_throughput), seed 40."
                  + ("" if isl == 1024 else f" The bench command is stated for 1K only; '{label}' read as --random-input-len {isl} with the same "
                     f"128 output tokens: the row's Total TPS / Output TPS = {float(tot) / float(out):.2f} = ({isl} + 128) / 128, so the page's own "
                     "figures agree (inferred)."),
            doubt="Random dataset without --random-range-ratio: in vLLM 0.10.1.1 the default range ratio 0.0 gives fixed lengths. Random prompts "
                  "carry no reusable prefixes, but prefix caching is on by default. Same lab as the gpustack-* ids of batches 2-5.",
        ))
    return pts


# ---------------------------------------------------------------- issue / PR threads
def thread_points():
    pts = []
    raw = "sglang-issue-6681.excerpt.md"
    pts.append(point(
        id="sglang6681-h20x2-qwen25-32b-instruct-sglang043p4-tp2-c512-r128-1024-128", source_id="sglang-issue-6681-qwen25-32b-h20",
        source_url="https://github.com/sgl-project/sglang/issues/6681",
        quote=quote(raw, "GPU: H20 TP2", "sglang: 0.4.3.post4", "python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-32B-Instruct --tp 2",
                    "--num-prompts 1024", "--random-input 1024", "--random-output 128", "--random-range-ratio 1.0", "--request-rate 128",
                    "--max-concurrency 512", "Successful requests: 1024", "Output token throughput (tok/s): 456.37",
                    "Total token throughput (tok/s): 4107.36", "Concurrency: 507.99"),
        quote_context="issue description: GPU/version lines, launch and bench commands, the printout",
        engine="sglang", engine_version="0.4.3.post4", model="Qwen/Qwen2.5-32B-Instruct", catalog_model="Qwen/Qwen2.5-32B", quantization="none",
        gpu="H20", gpu_as_stated="H20 TP2", gpu_count=2, tp=2, mode="closed_loop", concurrency=512, request_rate=128.0, num_requests=1024,
        input_tokens=1024, output_tokens=128, length_distribution="fixed",
        metrics={"output_tokens_per_s": metric(456.37, "single"), "total_tokens_per_s": metric(4107.36, "single")},
        primary_metric="output_tokens_per_s", inferred=["gpu_count", "mode"],
        notes="sglang.bench_serving --backend sglang, random 1024/128 with --random-range-ratio 1.0 (fixed), 1024 prompts at 128 req/s capped at "
              "512 in flight; the printout's mean concurrency 507.99: recorded as closed_loop 512 (request rate kept). Server: defaults at TP 2 "
              "(bf16 checkpoint). The reporter calls the figures 'weird' (the question of the thread).",
        doubt="The reporter doubts the figures; H20 memory variant (96 GB) assumed as the catalog's H20; SGLang 0.4.3.post4 of early 2025 on a "
              "2025-05 report.",
    ))
    raw = "sglang-pr-5877.excerpt.md"
    for tp, val in ((2, "1387.86"), (4, "2186.99")):
        pts.append(point(
            id=f"sglang5877-l20-qwen3-30b-a3b-tp{tp}-rate10-n100-1000-2000-before", source_id="sglang-pr-5877-qwen3-30b-l20",
            source_url="https://github.com/sgl-project/sglang/pull/5877",
            quote=quote(raw, "# [qwen3] Add L20 fused moe config for qwen3 30b", "configs includes TP2 and TP4 for 30b-bfloat16",
                        "python3 -m sglang.launch_server --model-path /root/qwen3/30b --tp 2/4",
                        "python3 -m sglang.bench_serving --backend sglang-oai --num-prompts 100 --request-rate 10 --dataset-name random "
                        "--random-input-len 1000 --random-output-len 2000 --random-range-ratio 1 --warmup-requests 5",
                        "TP Size|Input-Output Length | Before Output Token Throughput (tok/s) | After Output Token Throughput (tok/s)",
                        f"{tp}|1000-2000|{val}|"),
            quote_context=f"PR title and description: motivation, launch and bench commands, performance table row TP {tp} (Before column)",
            engine="sglang", engine_version=None, model="/root/qwen3/30b (Qwen3-30B-A3B, bf16)", catalog_model="Qwen/Qwen3-30B-A3B",
            quantization="none", dtype="bfloat16", gpu="L20", gpu_as_stated="L20", gpu_count=tp, tp=tp, mode="open_loop", request_rate=10.0,
            num_requests=100, input_tokens=1000, output_tokens=2000, length_distribution="fixed",
            metrics={"output_tokens_per_s": metric(float(val), "single")}, primary_metric="output_tokens_per_s",
            inferred=["catalog_model", "gpu_count", "engine_version"],
            notes="Server: sglang.launch_server --tp 2 or 4 on a local copy of the 30B Qwen3 MoE in bfloat16 ('30b-bfloat16'). Client: bench_serving "
                  "sglang-oai, 100 prompts, Poisson arrivals at 10 req/s, random 1000/2000 fixed, 5 warm-up requests. 'Before' = stock SGLang with "
                  "its default fused-MoE config. SGLang version: main of late April 2025 (not stated). Same author as batch 5's sglang-pr-10404 / "
                  "-10467 ids (merge when holding out by publisher).",
            doubt="SGLang version not stated; checkpoint path only ('/root/qwen3/30b', read as Qwen3-30B-A3B base/instruct, same shapes).",
        ))
    raw = "vllm-pr-25398.excerpt.md"
    pts.append(point(
        id="vllm25398-h100pcie-qwen3-30b-a3b-fp8-tp2ep-c64-n128-7500-7500-before", source_id="vllm-pr-25398-qwen3-30b-fp8-h100pcie",
        source_url="https://github.com/vllm-project/vllm/pull/25398",
        quote=quote(raw, "## Performance Improvement for FP8 MoE on H100 PCIe", "- **Model:** Qwen/Qwen3-30B-A3B-FP8",
                    "- **Server:** `python -m vllm.entrypoints.openai.api_server --model $MODEL --enable-expert-parallel -tp 2 --port 8101 "
                    "--gpu_memory_utilization=0.95`",
                    "- **Benchmark:** `vllm bench serve --model $MODEL --dataset-name random --random-input-len 7500 --random-output-len 7500 "
                    "--max-concurrency 64 --num-prompts 128 --port 8101`",
                    "| Metric | Before | After | Improvement |", "| Output token throughput (tok/s) | 1600.05 |",
                    "| Total token throughput (tok/s) | 3211.70 |", "| Mean TPOT (ms) | 38.88 |"),
        quote_context="PR description: heading, test configuration list, performance comparison table (Before column)",
        engine="vllm", engine_version=None, model="Qwen/Qwen3-30B-A3B-FP8", catalog_model="Qwen/Qwen3-30B-A3B-FP8", quantization="fp8",
        weights_checkpoint="Qwen/Qwen3-30B-A3B-FP8", gpu="H100-PCIe", gpu_as_stated="NVIDIA H100 PCIe", gpu_count=2, tp=2, mode="closed_loop",
        concurrency=64, num_requests=128, input_tokens=7500, output_tokens=7500, length_distribution="fixed",
        metrics={"output_tokens_per_s": metric(1600.05, "single"), "total_tokens_per_s": metric(3211.70, "single"),
                 "tpot_s": metric(0.03888, "mean")},
        primary_metric="output_tokens_per_s", inferred=["gpu_count", "length_distribution", "engine_version"],
        notes="Server: vLLM OpenAI server, --enable-expert-parallel -tp 2 --gpu_memory_utilization=0.95 (other flags default). Client: vllm bench "
              "serve random 7500/7500, 128 prompts at max concurrency 64 (range ratio default 0.0 in vLLM of September 2025: fixed lengths, "
              "inferred; output not forced with --ignore-eos, the printout's totals are not in the excerpt). 'Before' = the stock fused-MoE "
              "config (E=128,N=384). vLLM version: main of late September 2025 (0.10.2/0.11 line, not stated).",
        doubt="Expert parallel over the TP group (EP 2) is not expressible in the schema; without --ignore-eos answers may stop before 7500 "
              "tokens; block-FP8 checkpoint.",
    ))
    raw = "vllm-issue-12315.excerpt.md"
    for steps, rps, tot, out in (("1", "3.28", "1414.42", "714.48"), ("10", "3.47", "1496.33", "755.85")):
        pts.append(point(
            id=f"vllm12315-a100x4-llama33-70b-vllm066-tp4-sharegpt-n200-steps{steps}", source_id="vllm-issue-12315-llama33-70b-4xa100",
            source_url="https://github.com/vllm-project/vllm/issues/12315",
            quote=quote(raw, "python3 benchmark_throughput.py --dataset ShareGPT_V3_unfiltered_cleaned_split.json --device cuda --output-json "
                             "throughput_results_tp_4_a100.json --tensor-parallel-size 4 --model meta-llama/Llama-3.3-70B-Instruct --num-prompts 200 "
                             "--seed 0 --num-scheduler-steps 10 --max-num-seqs 256",
                        "vLLM version: 0.6.6", "Device: 4 x A100",
                        f"- > Throughput: {rps} requests/s, {tot} total tokens/s, {out} output tokens/s @ --num-scheduler-steps {steps}"),
            quote_context="issue description: the command, 'Misc discussion on performance' (version, device) and the result line",
            engine="vllm", engine_version="0.6.6", model="meta-llama/Llama-3.3-70B-Instruct", catalog_model="meta-llama/Llama-3.3-70B-Instruct",
            quantization="none", gpu="A100-80GB", gpu_as_stated="4 x A100", gpu_count=4, tp=4, mode="offline_throughput", num_requests=200,
            input_tokens=round(float(tot) / float(rps) - float(out) / float(rps), 1), output_tokens=round(float(out) / float(rps), 1),
            length_distribution="sharegpt",
            metrics={"output_tokens_per_s": metric(float(out), "single"), "total_tokens_per_s": metric(float(tot), "single"),
                     "requests_per_s": metric(float(rps), "single")},
            primary_metric="output_tokens_per_s", inferred=["gpu", "input_tokens", "output_tokens"],
            notes="vLLM 0.6.6 benchmark_throughput (offline LLM engine) on ShareGPT_V3, 200 prompts, seed 0, --max-num-seqs 256, TP 4, "
                  f"--num-scheduler-steps {steps} (V0 multi-step scheduling; the command shows 10, the result line names the value of each run). "
                  "Lengths per request derived from the line's own figures (output tok/s / req/s and (total - output) / req/s). GPU: '4 x A100' "
                  "read as the 80 GB SXM A100 of the vLLM v0 dashboard the reporter compares with (memory not stated: inferred).",
            doubt="A100 memory size not stated (a 70B bf16 model on 4 x 40 GB would barely fit); --num-scheduler-steps is not expressible in the "
                  "schema.",
        ))
    raw = "llm-price-compass-issue-6.excerpt.md"
    pts.append(point(
        id="llmpricecompass6-a10gx2-llama3-8b-vllm-tp2-sharegpt-n1000", source_id="llm-price-compass-issue-6-llama3-8b-2xa10g",
        source_url="https://github.com/arc53/llm-price-compass/issues/6",
        quote=quote(raw, "# 📊 Benchmark Results: 2 * A10G (24GB)", "Nvidia A10G", "### 🧠 Backend", "vllm", "meta-llama/Meta-Llama-3-8B",
                    "I'm only using 2 * A10G GPUs with `tp=2` for the benchmark",
                    "I'm using a proprietary fine-tuned version of meta-llama/Meta-Llama-3-8B, but the architecture is exactly the same without any "
                    "differences.", "Successful requests: 1000", "Total input tokens: 215196", "Total generated tokens: 43140",
                    "Output token throughput (tok/s): 441.76"),
        quote_context="issue form fields (GPU, backend, model id, notes) and the 'Complete report' printout of the reporter's comment",
        engine="vllm", engine_version=None, model="fine-tune of meta-llama/Meta-Llama-3-8B (same architecture)",
        catalog_model="meta-llama/Meta-Llama-3-8B", quantization="none", gpu="A10G", gpu_as_stated="2 * A10G (24GB), AWS g5.12xlarge",
        gpu_count=2, tp=2, mode="offline_throughput", num_requests=1000, input_tokens=215.196, output_tokens=43.14, length_distribution="sharegpt",
        metrics={"output_tokens_per_s": metric(441.76, "single"), "requests_per_s": metric(10.24, "single")},
        primary_metric="output_tokens_per_s", inferred=["mode", "length_distribution", "engine_version"],
        notes="vLLM benchmark_serving printout (format of mid-2024) of 1000 requests; the 215196 input tokens are the default ShareGPT sample of "
              "benchmark_serving with the Llama 3 tokenizer (the same total as other ShareGPT-1000 printouts), so the dataset is read as ShareGPT "
              "and the request rate as the default inf (all at once: offline_throughput) - inferred. Lengths = printout totals / 1000. vLLM "
              "version not stated (2024-08-19).",
        doubt="Only 43 generated tokens per request on average (ShareGPT answers average ~180 with this tokenizer): an output cap or early "
              "stops not stated; 'Median TTFT (ms): 0.00' in the printout is odd. A user report on shared hardware (the other 2 GPUs ran another model).",
    ))
    return pts


# ---------------------------------------------------------------- sources
def sources():
    rocm_url = f"https://github.com/ROCm/vllm/blob/{ROCM_SHA}/docs/dev-docker/README.md"
    return rocm_url, [
        {"source_id": "trtllm-perf-overview-v0.15.0", "url": TRT_URL,
         "title": "TensorRT-LLM performance overview (docs/source/performance/perf-overview.md), release v0.15.0 tables: 'LLaMA v3 70B' on H100 FP8",
         "kind": "docs", "date": "2024-12 (release v0.15.0: 'All data in the table below was generated using version 0.15.0')",
         "publisher": "NVIDIA (TensorRT-LLM)",
         "notes": "Read through the search tool's stored copy (read_file id 5939417815; the index did not name the commit); saved excerpt "
                  "raw/trtllm-perf-overview-v0.15.0.excerpt.md. Releases of this page used before: 0.5/0.6.1, 0.9, 0.13, 0.17, 0.19, 0.20, 1.0, dev "
                  "03e27c7 (same publisher: merge the trtllm-perf-overview-* ids when holding out by publisher)."},
        {"source_id": "rocm-vllm-dev-docker-0.7.3-2025-03-27", "url": rocm_url,
         "title": "ROCm/vllm dev-docker README at 25070a18: vLLM FP8 latency and throughput on MI300X (vLLM 0.7.3, 'Docs_update_20250327')",
         "kind": "docs", "date": "2025-03-28 (commit 25070a18 'Docs_update_20250327 (#493)')", "publisher": "AMD (ROCm/vllm)",
         "notes": "Read from the repository snapshot (git show 25070a184:docs/dev-docker/README.md, saved whole in raw/). Another release of the "
                  "README than rocm-vllm-dev-docker-0.10.0 (speed_points), -0.9.1 / -0.8.5 (batch2), -0.9.0.1 (batch3) and -0.7.3-2025-04-10 "
                  "(batch4, the next release, same vLLM 0.7.3, other figures): merge the rocm-vllm-dev-docker-* ids when holding out by publisher."},
        {"source_id": "lambdalabs-vllm-benchmark-v0-tp-scaling", "url": LAMBDA_URL,
         "title": "LambdaLabsML/vllm-benchmark 'LLMs inference benchmarks, using vLLM, on Lambda Cloud' (benchmark_v0.md): tensor-parallel table, 320 prompts",
         "kind": "repo", "date": "2024-09 (vLLM v0.5.4 runs; the page compares v0.6.0 of 2024-09-04)", "publisher": "Lambda (LambdaLabsML)",
         "notes": "Read with read_file at 0e8fc5d0 (excerpt saved in raw/ with the README's dataset and image lines). New publisher."},
        {"source_id": "gpustack-perf-lab-lmcache-qwen3-8b-rtx4090", "url": GS_URL,
         "title": "GPUStack Performance Lab reference: Evaluating LMCache Prefill Acceleration in vLLM (Qwen3-8B, RTX 4090, vLLM v0.10.1.1)",
         "kind": "docs", "date": "2025-11-20 (last change to the page, commit bf8f18c0; read at snapshot 47277d79)", "publisher": "GPUStack",
         "notes": "Page never used (the lab's quantization reference page and model pages were). Same lab as the gpustack-* ids of batches 2-5. "
                  "Read with git show from the snapshot (raw/gpustack-lmcache-prefill-47277d79.md)."},
        {"source_id": "sglang-issue-6681-qwen25-32b-h20", "url": "https://github.com/sgl-project/sglang/issues/6681",
         "title": "sgl-project/sglang issue #6681 'Are there bugs in benchmark data?' (Qwen2.5-32B-Instruct, H20 TP2, SGLang 0.4.3.post4)",
         "kind": "issue", "date": "2025-05-28", "publisher": "llc-kc (GitHub user, SGLang issue tracker)",
         "notes": "Excerpt of the issues corpus (search tool), raw/sglang-issue-6681.excerpt.md; stops inside the latency block. New publisher."},
        {"source_id": "sglang-pr-5877-qwen3-30b-l20", "url": "https://github.com/sgl-project/sglang/pull/5877",
         "title": "sgl-project/sglang PR #5877 '[qwen3] Add L20 fused moe config for qwen3 30b'", "kind": "issue", "date": "2025-04-29",
         "publisher": "Ximingwang-09 (GitHub user, SGLang PR)",
         "notes": "Excerpt of the issues corpus, raw/sglang-pr-5877.excerpt.md. Same author as batch 5's sglang-pr-10404 / -10467 ids (merge when "
                  "holding out by publisher)."},
        {"source_id": "vllm-pr-25398-qwen3-30b-fp8-h100pcie", "url": "https://github.com/vllm-project/vllm/pull/25398",
         "title": "vllm-project/vllm PR #25398 '[Perf] Add H100 fused MoE config' (Qwen3-30B-A3B-FP8 on H100 PCIe, TP2 + EP)",
         "kind": "issue", "date": "2025-09-22", "publisher": "skyloevil (GitHub user, vLLM PR)",
         "notes": "Excerpt of the issues corpus, raw/vllm-pr-25398.excerpt.md (stops inside the comparison table). New publisher."},
        {"source_id": "vllm-issue-12315-llama33-70b-4xa100", "url": "https://github.com/vllm-project/vllm/issues/12315",
         "title": "vllm-project/vllm issue #12315 '[Performance]: Unable to produce the result of throughput & latency claimed on vLLM dashboard v0'",
         "kind": "issue", "date": "2025-01-22", "publisher": "theneildave (GitHub user, vLLM issue tracker)",
         "notes": "Excerpt of the issues corpus, raw/vllm-issue-12315.excerpt.md. New publisher."},
        {"source_id": "llm-price-compass-issue-6-llama3-8b-2xa10g", "url": "https://github.com/arc53/llm-price-compass/issues/6",
         "title": "arc53/llm-price-compass issue #6 'Benchmark Results: 2 * A10G (24GB)' (vLLM, Llama-3-8B architecture, tp=2)",
         "kind": "issue", "date": "2024-08-19", "publisher": "KMouratidis (GitHub user, arc53/llm-price-compass)",
         "notes": "Excerpt of the issues corpus, raw/llm-price-compass-issue-6.excerpt.md (stops inside the TTFT block). New publisher."},
    ]


def main():
    rocm_url, srcs = sources()
    pts = trt_points() + rocm_points(rocm_url) + lambda_points() + gpustack_points() + thread_points()
    write_batch(OUT, "Batch 6 of published LLM-serving speed measurements from sources never used in benchmarks/published/speed_points.yaml, "
                     "prospective/batch1.yaml .. batch5.yaml, serving_curves.yaml or lora_points.yaml, gathered 2026-12-04 (21:52-22:10 UTC) for "
                     "prospective grading of the frozen profile 478a15ff4011 (issue 20). Same schema as speed_points.yaml.", srcs, pts)


if __name__ == "__main__":
    main()
