"""Build prospective/batch7.yaml (speed batch 7, facts only) from the saved raw text under raw/.

Every quote is a ' ... '-joined list of fragments; each fragment is checked here (and again by check.py) to occur
verbatim, whitespace collapsed, in the saved raw file named for its source. Deterministic: re-running gives the same bytes.
    python build.py            # writes ../batch7.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parents[3]) not in sys.path:  # run as a script: the repository root, for the shared source tools
    sys.path.insert(0, str(HERE.parents[3]))

from benchmarks.published.prospective.source_tools import metric, ms, point, quoter, write_batch  # noqa: E402

RAW = HERE / "raw"
OUT = HERE.parent / "batch7.yaml"
quote = quoter(RAW)


# ---------------------------------------------------------------- ROCm/vllm dev-docker README @16d2b92e (AMD)
ROCM_SHA = "16d2b92ebcf90fe55cf73fa0b9329a6c9d3dede8"
ROCM_URL = f"https://github.com/ROCm/vllm/blob/{ROCM_SHA}/docs/dev-docker/README.md"
ROCM_RAW = "rocm-vllm-dev-docker-README-16d2b92eb.md"
ROCM_ID = "rocm-vllm-dev-docker-0.8.5-2025-05-19"
ROCM_ROWS = [  # size, catalog, checkpoint, isl, osl, prompts (= max num seqs), value as printed
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 128, 2048, 3200, "16892.6"),
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 128, 4096, 1500, "13916.7"),
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 500, 2000, 2000, "13616.1"),
    ("70B", "meta-llama/Llama-3.1-70B", "amd/Llama-3.1-70B-Instruct-FP8-KV", 2048, 2048, 1500, "8491.8"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 128, 2048, 1500, "4380.3"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 128, 4096, 1500, "3404.2"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 500, 2000, 2000, "3251.3"),
    ("405B", "meta-llama/Llama-3.1-405B", "amd/Llama-3.1-405B-Instruct-FP8-KV", 2048, 2048, 500, "2249.3"),
]


def rocm_points():
    pts, seen = [], set()
    for size, cat, ckpt, isl, osl, n, val in ROCM_ROWS:
        first = size not in seen
        seen.add(size)
        row = (f"| Llama 3.1 {size} ({ckpt}) | FP8 | 8 | {isl} | {osl} | {n} | {n} | {val} |" if first
               else f"| | | | {isl} | {osl} | {n} | {n} | {val} |")
        pts.append(point(
            id=f"rocm-vllm085-may19-mi300x-llama31-{size.lower()}-fp8-tp8-offline-{isl}-{osl}", source_id=ROCM_ID, source_url=ROCM_URL,
            quote=quote(ROCM_RAW, "- vLLM 0.8.5", "### Throughput Measurements",
                        "| Model | Precision | TP Size | Input | Output | Num Prompts | Max Num Seqs | Throughput (tokens/s) |", row),
            quote_context="Throughput Measurements table ('a local inference client is fed requests at an infinite rate'); columns Model | "
                          "Precision | TP Size | Input | Output | Num Prompts | Max Num Seqs | Throughput (tokens/s)",
            engine="vllm", engine_version="0.8.5 (ROCm 6.3.1 docker rocm/vllm-dev, README of 2025-05-19)", model=ckpt, catalog_model=cat,
            quantization="fp8", weights_checkpoint=ckpt, kv_cache_dtype="fp8", dtype="float16", gpu="MI300X",
            gpu_as_stated="8x AMD Instinct MI300X (192GiB, 750W) GPUs", gpu_count=8, tp=8, mode="offline_throughput", num_requests=n,
            input_tokens=isl, output_tokens=osl, length_distribution="fixed",
            metrics={"total_tokens_per_s": metric(float(val), "single")}, primary_metric="total_tokens_per_s",
            inferred=["kv_cache_dtype", "dtype", "catalog_model"],
            notes="Supermicro AS-8125GS-TNMR2 with 2x AMD EPYC 9575F, 8x AMD Instinct MI300X (192GiB, 750W). Settings from the README's "
                  "reproduce command: benchmark_throughput.py --distributed-executor-backend mp --quantization fp8 --kv-cache-dtype fp8 "
                  "--dtype float16 --gpu-memory-utilization 0.9 --num-scheduler-steps 10 --enable-chunked-prefill False --max-model-len 8192 "
                  f"--max-num-batched-tokens 131072 --max-seq-len-to-capture 131072 --tensor-parallel-size 8 --num-prompts {n} --max-num-seqs {n}; "
                  "VLLM_USE_TRITON_FLASH_ATTN=0; 'Benchmarks were run with benchmark scripts from v0.6.5'. All prompts queued at once. "
                  "'Throughput (tokens/s)' read as benchmark_throughput's total tokens/s (input + output), as for the other README releases. "
                  "kv_cache_dtype / dtype are the reproduce command's (the table states only 'FP8').",
            doubt="The table does not say whether 'Throughput (tokens/s)' is total or output tokens/s; --num-scheduler-steps 10 is a V0 "
                  "multi-step flag. Another release of the rocm-vllm-dev-docker-* README family (AMD; batch 2 used the 0.8.5 README of "
                  "2025-05-29, 7bb0618b, whose table rows differ): merge the family when holding out by publisher.",
        ))
    return pts


# ---------------------------------------------------------------- sglang benchmark/benchmark_dsv3 README (DataCrunch research)
DC_SHA = "26db155e335cd6e00d6f1ec161a3fc4c65dae4c0"
DC_URL = f"https://github.com/sgl-project/sglang/blob/{DC_SHA}/benchmark/benchmark_dsv3/README.md"
DC_RAW = "sglang-benchmark_dsv3-README-26db155e.excerpt.md"
DC_ID = "sglang-benchmark-dsv3-datacrunch-8xh200-v041"
DC_HEAD = "| RPS | Num Prompts | Median E2E Latency (ms) | Median TTFT (ms) | Median TPOT (ms) | Median ITL (ms) | Output token throughput (tok/s) |"
DC_ROWS = {  # precision: [(rps, prompts, e2e, ttft, tpot, itl, out)]
    "BF16": [(1, 300, "214,924.09", "587.15", "209.48", "159.64", "639.99"), (2, 600, "235,524.70", "598.77", "229.30", "162.99", "1313.74"),
             (4, 1200, "324,438.44", "766.70", "316.35", "237.99", "2378.26"), (8, 2400, "686,261.57", "1191.74", "516.67", "255.96", "2249.03")],
    "FP8": [(1, 300, "147,735.43", "563.41", "143.71", "101.78", "773.15"), (2, 600, "234,757.13", "684.33", "228.78", "149.46", "1401.77"),
            (4, 1200, "376,040.67", "865.26", "366.48", "287.95", "2214.76"), (8, 2400, "692,710.83", "1358.77", "675.95", "515.18", "2864.31")],
}
DC_LAUNCH = {
    "BF16": "python3 -m sglang.launch_server --model deepseek-ai/DeepSeek-V3 --tp 8 --trust-remote-code --enable-torch-compile "
            "--enable-dp-attention --mem-fraction-static 0.8 --disable-cuda-graph",
    "FP8": "python3 -m sglang.launch_server --model deepseek-ai/DeepSeek-V3 --tp 8 --quantization fp8 --kv-cache-dtype fp8_e5m2 "
           "--trust-remote-code --enable-dp-attention",
}


def datacrunch_points():
    pts = []
    for prec, rows in DC_ROWS.items():
        for rps, n, e2e, ttft, tpot, itl, out in rows:
            bench = (f"python3 -m sglang.bench_serving --backend sglang --dataset-name random --random-range-ratio 1 --num-prompt {n} "
                     f"--request-rate {rps} --random-input 1024 --random-output 1024")
            pts.append(point(
                id=f"datacrunch-sglang041-8xh200-deepseek-v3-{prec.lower()}-tp8-rate{rps}-n{n}-1024-1024", source_id=DC_ID, source_url=DC_URL,
                quote=quote(DC_RAW, "## Benchmark for SGLang v0.4.1 - DeepSeek v3 on Different H200 configurations",
                            "- Single-node 8xH200 (BF16/FP8)", "## DeepSeek V3 on 8xH200 (single-node)", f"### {prec}", DC_HEAD,
                            f"| {rps} | {n} | {e2e} | {ttft} | {tpot} | {itl} | {out} |", DC_LAUNCH[prec], bench),
                quote_context=f"'DeepSeek V3 on 8xH200 (single-node)', table '{prec}' row RPS {rps}; the section's launch and bench commands "
                              "under 'Online benchmarks'",
                engine="sglang", engine_version="0.4.1", model="deepseek-ai/DeepSeek-V3", catalog_model="deepseek-ai/DeepSeek-V3",
                quantization="fp8", weights_checkpoint="deepseek-ai/DeepSeek-V3", kv_cache_dtype="fp8" if prec == "FP8" else None,
                gpu="H200", gpu_as_stated="8xH200 (single-node)", gpu_count=8, tp=8, mode="open_loop", request_rate=float(rps),
                num_requests=n, input_tokens=1024, output_tokens=1024, length_distribution="fixed",
                metrics={"output_tokens_per_s": metric(float(out), "single"), "ttft_s": metric(ms(ttft), "median"),
                         "tpot_s": metric(ms(tpot), "median"), "itl_s": metric(ms(itl), "median"), "e2e_s": metric(ms(e2e), "median")},
                primary_metric="output_tokens_per_s", inferred=["quantization"] + (["kv_cache_dtype"] if prec == "FP8" else []),
                notes=f"'{prec}' section. Server: {DC_LAUNCH[prec]} (TP 8 with DP attention). Client: sglang.bench_serving random 1024/1024 with "
                      f"--random-range-ratio 1 (fixed lengths), {n} prompts at {rps} req/s (Poisson arrivals, bench_serving's default). "
                      "SGLang v0.4.1 as the heading states (docker lmsysorg/sglang:dev / :latest of the time). The checkpoint deepseek-ai/DeepSeek-V3 "
                      "ships block-FP8 weights, so both sections run FP8 weights (quantization fp8, inferred); the 'BF16' label names the run without "
                      "--quantization fp8 / FP8 KV cache (KV cache then bf16, not stated). "
                      + ("kv_cache_dtype fp8 from --kv-cache-dtype fp8_e5m2. " if prec == "FP8" else "")
                      + "The README points to datacrunch-research/h200-benchmarks for the logs (DataCrunch research, the publisher of speed_points' "
                      "datacrunch-h200-sglang, whose used points are Llama 3.3 70B / 405B).",
                doubt=("CUDA graphs disabled and torch.compile on in the BF16 run (--disable-cuda-graph --enable-torch-compile); " if prec == "BF16"
                       else "") + "DP attention (--enable-dp-attention) is not expressible in the schema; the table's 8 req/s rows are past saturation "
                      "(output below the offered load). Same publisher family as datacrunch-h200-sglang (merge when holding out by publisher).",
            ))
    return pts


# ---------------------------------------------------------------- France-Travail/results_benchmark_llm_serving (France Travail)
FT_SHA = "b286c24807dd914031e380036787e6bf02a7b181"
FT_ID = "francetravail-results-benchmark-llm-serving"
FT_METRIC = "Mean generation speed for 10 parallel requests with a prompt of 1024 tokens and 128 tokens generated"
FT_ROWS = [  # path, title model, title gpu, catalog model, gpu, as stated, tp, vllm version, dtype, speed, id stem
    ("H100/Llama-3.1-8B/vllm_060/meta-llama--Meta-Llama-3.1-8B-Instruct", "Meta-Llama-3.1-8B-Instruct", "H100",
     "meta-llama/Llama-3.1-8B", "H100-80GB", 1, "0.6.1.post1", "auto", "84", "h100-llama31-8b"),
    ("2xH100/Llama-3.3-70b/vllm_071/meta-llama--Meta-Llama-3.3-70B-Instruct", "Llama-3.3-70B-Instruct", "H100",
     "meta-llama/Llama-3.3-70B-Instruct", "H100-80GB", 2, "0.7.1", "auto", "17", "h100x2-llama33-70b"),
    ("A100-80g/Llama-3.1-8B/vllm_060/meta-llama--Meta-Llama-3.1-8B-Instruct", "Meta-Llama-3.1-8B-Instruct", "A100-80g",
     "meta-llama/Llama-3.1-8B", "A100-80GB", 1, "0.6.0", "auto", "49", "a100-80g-llama31-8b"),
    ("A100-80g/Llama-3.1-8B/vllm_063", "Meta-Llama-3.1-8B-Instruct", "A100-80g",
     "meta-llama/Llama-3.1-8B", "A100-80GB", 1, "0.6.3.post1", "auto", "51", "a100-80g-llama31-8b"),
    ("A100-80g/Llama-3-8B/meta-llama--Meta-Llama-3-8B-Instruct/vllm_043", "Meta-Llama-3-8B-Instruct", "A100-80g",
     "meta-llama/Meta-Llama-3-8B", "A100-80GB", 1, "0.4.3", "auto", "43", "a100-80g-llama3-8b"),
    ("A100-80g/Llama-3-8B/meta-llama--Meta-Llama-3-8B-Instruct/vllm_v060", "Meta-Llama-3-8B-Instruct", "A100-80g",
     "meta-llama/Meta-Llama-3-8B", "A100-80GB", 1, "0.6.0", "auto", "48", "a100-80g-llama3-8b"),
    ("A100-40g/Llama-3-8B/meta-llama--Meta-Llama-3-8B-Instruct", "Meta-Llama-3-8B-Instruct", "A100-40g",
     "meta-llama/Meta-Llama-3-8B", "A100-40GB", 1, "0.4.3", "auto", "39", "a100-40g-llama3-8b"),
    ("V100-32g/Llama-3-8B/meta-llama--Meta-Llama-3-8B-Instruct", "Meta-Llama-3-8B-Instruct", "V100-32g",
     "meta-llama/Meta-Llama-3-8B", "V100-32GB", 1, "0.4.3", "float16", "20", "v100-32g-llama3-8b"),
    ("A100-80g/Qwen2-7B-Instruct/Qwen--Qwen2-7B-Instruct", "Qwen2-7B-Instruct", "A100-80g",
     "Qwen/Qwen2-7B-Instruct", "A100-80GB", 1, "0.6.0", "auto", "50", "a100-80g-qwen2-7b"),
]


def ft_raw(path):
    return "francetravail-" + path.replace("/", "_") + "-README.md"


def francetravail_points():
    pts = []
    for path, title_model, title_gpu, cat, gpu, tp, ver, dt, speed, stem in FT_ROWS:
        raw = ft_raw(path)
        hf = {"Qwen2-7B-Instruct": "Qwen/Qwen2-7B-Instruct"}.get(title_model, f"meta-llama/{title_model}")
        inferred = ["gpu", "length_distribution", "metrics.output_tokens_per_s_per_user"] + (["dtype"] if dt == "auto" else [])
        pts.append(point(
            id=f"francetravail-{stem}-vllm{ver.replace('.', '')}-tp{tp}-c10-1024-128", source_id=FT_ID,
            source_url=f"https://github.com/France-Travail/results_benchmark_llm_serving/blob/{FT_SHA}/{path}/report/README.md",
            quote=quote(raw, f"Model card for {title_model} on {title_gpu}", "|Metric|Value|", f"|{FT_METRIC}|~{speed} t/s for each request|",
                        f"|vllm_version|{ver}|", f"|tensor_parallel_size|{tp}|", f"|dtype|{dt}|", f"|gpu_name|{title_gpu}|"),
            quote_context="report README: title, 'Main metrics' table row, and rows of the 'Parameters' table (happy_vllm launch arguments)",
            engine="vllm", engine_version=ver, engine_backend="happy_vllm (vLLM OpenAI-compatible API wrapper)", model=hf, catalog_model=cat,
            quantization="none", dtype="float16" if dt == "float16" else "bfloat16", gpu=gpu, gpu_as_stated=title_gpu + (" (x2, TP 2)" if tp == 2 else ""),
            gpu_count=tp, tp=tp, mode="closed_loop", concurrency=10, input_tokens=1024, output_tokens=128, length_distribution="fixed",
            metrics={"output_tokens_per_s_per_user": metric(float(speed), "approx")}, primary_metric="output_tokens_per_s_per_user",
            inferred=inferred,
            notes="France Travail's benchmark suite (benchmark_llm_serving) against happy_vllm (a vLLM API server) with the launch arguments of "
                  f"the report's Parameters table (vllm_version {ver}, tensor_parallel_size {tp}, dtype {dt}, kv_cache_dtype auto, "
                  "quantization None, enable_prefix_caching False/None, max_num_seqs 256 or default). The figure is the 'Main metrics' row: the "
                  "mean generation speed of each request while 10 requests run in parallel (closed loop of 10), prompts of 1024 tokens, 128 "
                  "generated; recorded as per-request output tokens/s ('~' = approx). "
                  + ("dtype 'auto' = the checkpoint's bfloat16 (inferred). " if dt == "auto" else "")
                  + f"GPU '{title_gpu}' mapped to the catalog's {gpu} (form factor not stated: inferred). Number of requests not stated.",
            doubt="Per-request speed: whether the time to first token is inside it is not stated (the report's graphs show TTFT apart); "
                  "'~' values are rounded; the report's graph captions say 'prompt size of roughly' N tokens, so lengths may not be exact."
                  + (" The same report also sits under H100/Llama-3.3-70b/ (moved copy); taken once." if tp == 2 else ""),
        ))
    return pts


# ---------------------------------------------------------------- llama.cpp PR #16834 (am17an)
LC_URL = "https://github.com/ggml-org/llama.cpp/pull/16834"
LC_RAW = "llamacpp-pr-16834.excerpt.md"
LC_HEAD = "| Model | Test | t/s master | t/s set-row | Speedup |"
LC_ROWS = [("gpt-oss 20B MXFP4 MoE", "gptoss-20b-mxfp4", 128, "186.10", "187.25", "1.01"),
           ("gpt-oss 20B MXFP4 MoE", "gptoss-20b-mxfp4", 256, "184.63", "187.19", "1.01"),
           ("gpt-oss 20B MXFP4 MoE", "gptoss-20b-mxfp4", 512, "183.95", "184.45", "1.00"),
           ("qwen3moe 30B.A3B Q4_0", "qwen3-30b-a3b-q4_0", 128, "161.55", "163.48", "1.01"),
           ("qwen3moe 30B.A3B Q4_0", "qwen3-30b-a3b-q4_0", 256, "162.39", "163.33", "1.01"),
           ("qwen3moe 30B.A3B Q4_0", "qwen3-30b-a3b-q4_0", 512, "159.14", "160.86", "1.01")]


def llamacpp_points():
    pts = []
    for name, stem, n, master, pr, speed in LC_ROWS:
        gptoss = name.startswith("gpt-oss")
        pts.append(point(
            id=f"llamacpp16834-rtx4090-{stem}-tg{n}-master", source_id="llamacpp-pr-16834-rtx4090-moe-tg", source_url=LC_URL,
            quote=quote(LC_RAW, "# CUDA: use fastdiv in set-rows", "Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes", LC_HEAD,
                        f"| {name} | tg{n} | {master} | {pr} | {speed} |"),
            quote_context=f"PR description: llama-bench comparison table (compare-llama-bench format), row '{name}' tg{n}, column 't/s master'",
            engine="llama.cpp", engine_version=None, engine_backend="CUDA",
            model=name, catalog_model="openai/gpt-oss-20b" if gptoss else "Qwen/Qwen3-30B-A3B",
            quantization="none" if gptoss else "gguf-q4_0",
            weights_checkpoint="gpt-oss-20b GGUF with MXFP4 MoE experts (file not named)" if gptoss else "Qwen3-30B-A3B GGUF Q4_0 (file not named)",
            kv_cache_dtype="fp16", gpu="RTX-4090", gpu_as_stated="NVIDIA GeForce RTX 4090", gpu_count=1, tp=1, mode="batch1_decode",
            input_tokens=0, output_tokens=n, length_distribution="fixed",
            metrics={"output_tokens_per_s_per_user": metric(float(master), "mean")}, primary_metric="output_tokens_per_s_per_user",
            inferred=["catalog_model", "kv_cache_dtype", "weights_checkpoint", "metrics.output_tokens_per_s_per_user"],
            notes=f"llama-bench tg{n}: one sequence generating {n} tokens from an empty context (batch-1 decode), all layers on the one GPU "
                  "(compare-llama-bench output of the PR author, 'master' = llama.cpp master of 2025-10-29 before the PR; build number not "
                  "stated). The t/s value is llama-bench's average over its repetitions (stat 'mean' inferred from the tool). "
                  + ("'gpt-oss 20B MXFP4 MoE' is llama.cpp's type name for the gpt-oss-20b GGUF with its native MXFP4 experts (as shipped: "
                     "quantization 'none', as batches 2-4 record gpt-oss). " if gptoss else
                     "'qwen3moe 30B.A3B Q4_0' read as Qwen3-30B-A3B (the only 30B-A3B qwen3moe) in Q4_0. ")
                  + "KV cache f16 (llama-bench default; not stated).",
            doubt="Engine build not stated (master of the PR date); the GGUF files are not named; llama-bench flags (flash attention, "
                  "ubatch) not shown in the excerpt.",
        ))
    return pts


# ---------------------------------------------------------------- vLLM PR #23696 (djmmoss) and SGLang PR #4918 (BBuf)
def vllm23696_point():
    raw = "vllm-pr-23696.excerpt.md"
    return point(
        id="vllm23696-b200x8-gptoss-120b-tp8-sharegpt-n1000-flashinfer", source_id="vllm-pr-23696-gptoss-120b-b200",
        source_url="https://github.com/vllm-project/vllm/pull/23696",
        quote=quote(raw, "# [Kernel][B200] `mxfp4` fused cutlass moe", "**FlashInfer:**", "vllm serve gpt-oss-120b --max-model-len 32768 -tp 8",
                    "vllm bench serve --backend vllm --model gpt-oss-120b --dataset-name sharegpt --dataset-path ShareGPT_V3_unfiltered_cleaned_split.json",
                    "Successful requests: 1000", "Total input tokens: 215312", "Total generated tokens: 197144",
                    "Request throughput (req/s): 37.56", "Output token throughput (tok/s): 7404.72", "Total Token throughput (tok/s): 15491.84",
                    "Mean TTFT (ms): 3449.17", "Mean TPOT (ms): 94.12", "Mean ITL (ms): 45.75"),
        quote_context="PR title and description: 'Peformance' section, the 'FlashInfer:' serve/bench commands and printout",
        engine="vllm", engine_version=None, engine_backend="FlashInfer MXFP4 MoE (the stock B200 path; the PR adds an opt-in CUTLASS path)",
        model="gpt-oss-120b", catalog_model="openai/gpt-oss-120b", quantization="none",
        weights_checkpoint="gpt-oss-120b (MXFP4 experts as shipped; local path)", gpu="B200", gpu_as_stated="B200 (PR title)",
        gpu_count=8, tp=8, mode="offline_throughput", num_requests=1000, input_tokens=215.312, output_tokens=197.144,
        length_distribution="sharegpt",
        metrics={"output_tokens_per_s": metric(7404.72, "single"), "total_tokens_per_s": metric(15491.84, "single"),
                 "requests_per_s": metric(37.56, "single"), "ttft_s": metric(3.44917, "mean"), "tpot_s": metric(0.09412, "mean"),
                 "itl_s": metric(0.04575, "mean")},
        primary_metric="output_tokens_per_s", inferred=["gpu_count", "mode", "engine_backend", "catalog_model"],
        notes="Server: vllm serve gpt-oss-120b --max-model-len 32768 -tp 8 (8 GPUs inferred from -tp 8; B200 from the PR title). Client: vllm "
              "bench serve ShareGPT_V3, default 1000 prompts at the default request rate inf (all at once: offline_throughput, as batch 5 "
              "records all-at-once runs). Lengths = printout totals / 1000. The 'FlashInfer:' run is read as the stock path of vLLM main of "
              "late August 2025 (the PR's CUTLASS runs set VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8_CUTLASS=1; the accuracy run is dated 20250826); "
              "vLLM version not stated.",
        doubt="vLLM version not stated (main of late August 2025); that 'FlashInfer' is the default backend is inferred; ShareGPT answers stop "
              "at EOS (no --ignore-eos).",
    )


def sglang4918_point():
    raw = "sglang-pr-4918.excerpt.md"
    return point(
        id="sglang4918-h200x8-deepseek-v3-tp8-rate4-sharegpt-n300-nofusion", source_id="sglang-pr-4918-deepseek-v3-h200",
        source_url="https://github.com/sgl-project/sglang/pull/4918",
        quote=quote(raw, "# Add DeepSeek V3/R1 shared experts fusion", "## Acc in H200",
                    "python3 -m sglang.launch_server --model /DeepSeek-V3 --tp 8 --trust-remote-code --port 30001 --disable-shared-experts-fusion",
                    "python3 -m sglang.bench_serving --backend sglang --num-prompts 300 --request-rate 4 --port 30001",
                    "Traffic request rate: 4.0", "Successful requests: 300", "Total input tokens: 95293", "Total generated tokens: 60411",
                    "Request throughput (req/s): 2.10", "Output token throughput (tok/s): 422.36", "Total token throughput (tok/s): 1088.59",
                    "Mean E2E Latency (ms): 33845.89", "Mean TTFT (ms): 2630.26"),
        quote_context="PR description: the 'Acc in H200' heading, and the baseline run (shared-experts fusion disabled): commands and printout",
        engine="sglang", engine_version=None, model="/DeepSeek-V3 (local copy of deepseek-ai/DeepSeek-V3)", catalog_model="deepseek-ai/DeepSeek-V3",
        quantization="fp8", weights_checkpoint="deepseek-ai/DeepSeek-V3 (block FP8 as shipped)", gpu="H200", gpu_as_stated="H200 (section heading)",
        gpu_count=8, tp=8, mode="open_loop", request_rate=4.0, num_requests=300, input_tokens=317.643, output_tokens=201.37,
        length_distribution="sharegpt",
        metrics={"output_tokens_per_s": metric(422.36, "single"), "total_tokens_per_s": metric(1088.59, "single"),
                 "requests_per_s": metric(2.10, "single"), "ttft_s": metric(2.63026, "mean"), "e2e_s": metric(33.84589, "mean")},
        primary_metric="output_tokens_per_s", inferred=["gpu", "gpu_count", "quantization", "length_distribution"],
        notes="Server: sglang.launch_server --tp 8 with --disable-shared-experts-fusion (the stock path before the PR's fusion). Client: "
              "bench_serving --backend sglang, 300 prompts at 4 req/s (Poisson), default dataset ShareGPT (inferred: no --dataset-name). "
              "Lengths = printout totals / 300. GPU: the PR's section heading 'Acc in H200' and its H200 results (inferred for this run; 8 "
              "GPUs from --tp 8). SGLang version: main of 2025-03-30 (not stated).",
        doubt="GPU inferred from a heading; SGLang version not stated; block-FP8 checkpoint.",
    )


# ---------------------------------------------------------------- sources
SOURCES = [
    {"source_id": ROCM_ID, "url": ROCM_URL,
     "title": "ROCm/vllm dev-docker README at 16d2b92e: vLLM FP8 throughput on MI300X (vLLM 0.8.5, ROCm 6.3.1, 'Updated README.md (#546)')",
     "kind": "docs", "date": "2025-05-19 (commit 16d2b92e)", "publisher": "AMD (ROCm/vllm)",
     "notes": "Read from the repository snapshot (git show 16d2b92eb:docs/dev-docker/README.md, saved whole in raw/). Another release of the "
              "README than those used in speed_points (040de12d), batch 2 (5486e7bc, 7bb0618b - the next README, same vLLM 0.8.5, other "
              "figures), batch 3 (68af0558), batch 4 (c43debd4) and batch 6 (25070a18): merge the rocm-vllm-dev-docker-* ids when holding "
              "out by publisher."},
    {"source_id": DC_ID, "url": DC_URL,
     "title": "sgl-project/sglang benchmark/benchmark_dsv3/README.md: 'Benchmark for SGLang v0.4.1 - DeepSeek v3 on Different H200 configurations'",
     "kind": "repo", "date": "2025-01 (SGLang v0.4.1; file read at 26db155e)", "publisher": "DataCrunch research (in the sgl-project/sglang benchmark folder)",
     "notes": "Read with read_file (id 4581093105); excerpt saved in raw/ (single-node tables and commands; multi-node part omitted). The "
              "file's results point to datacrunch-research/h200-benchmarks, the repository of speed_points' datacrunch-h200-sglang (whose used "
              "points are Llama 3.3 70B / 405B): merge with it when holding out by publisher."},
    {"source_id": FT_ID, "url": f"https://github.com/France-Travail/results_benchmark_llm_serving/tree/{FT_SHA}",
     "title": "France-Travail/results_benchmark_llm_serving: happy_vllm benchmark reports (report/README.md 'Main metrics') per GPU and model",
     "kind": "repo", "date": "2024-07 to 2025-02 (each report's suite_id; snapshot b286c24 of 2025-03-27)", "publisher": "France Travail",
     "notes": "Read with git show from the local snapshot; each used report README saved whole in raw/. Never used as a speed source "
              "(startup_logs.yaml names the repository only as a rejected memory source). New publisher."},
    {"source_id": "llamacpp-pr-16834-rtx4090-moe-tg", "url": LC_URL,
     "title": "ggml-org/llama.cpp PR #16834 'CUDA: use fastdiv in set-rows' (llama-bench tg on RTX 4090: gpt-oss 20B MXFP4, qwen3moe 30B.A3B Q4_0)",
     "kind": "issue", "date": "2025-10-29", "publisher": "am17an (GitHub user, llama.cpp PR)",
     "notes": "Excerpt of the issues corpus (search tool), raw/llamacpp-pr-16834.excerpt.md. New publisher."},
    {"source_id": "vllm-pr-23696-gptoss-120b-b200", "url": "https://github.com/vllm-project/vllm/pull/23696",
     "title": "vllm-project/vllm PR #23696 '[Kernel][B200] mxfp4 fused cutlass moe' (gpt-oss-120b -tp 8, ShareGPT 1000)",
     "kind": "issue", "date": "2025-08-26 (the PR's accuracy run date)", "publisher": "djmmoss (GitHub user, vLLM PR)",
     "notes": "Excerpts of the issues corpus, raw/vllm-pr-23696.excerpt.md. New publisher."},
    {"source_id": "sglang-pr-4918-deepseek-v3-h200", "url": "https://github.com/sgl-project/sglang/pull/4918",
     "title": "sgl-project/sglang PR #4918 'Add DeepSeek V3/R1 shared experts fusion' (DeepSeek-V3 TP8 on H200, 4 req/s ShareGPT)",
     "kind": "issue", "date": "2025-03-30", "publisher": "BBuf (GitHub user, SGLang PR)",
     "notes": "Excerpts of the issues corpus, raw/sglang-pr-4918.excerpt.md. New publisher (batch 6 only looked at and left out BBuf's "
              "AI-Infra-Auto-Driven-SKILLS)."},
]


def main():
    pts = (rocm_points() + datacrunch_points() + francetravail_points() + llamacpp_points() + [vllm23696_point(), sglang4918_point()])
    write_batch(OUT, "Batch 7 of published LLM-serving speed measurements from sources never used in benchmarks/published/speed_points.yaml, "
                     "prospective/batch1.yaml .. batch6.yaml, serving_curves.yaml or lora_points.yaml, gathered 2026-12-05 (00:33-00:45 UTC) "
                     "for prospective grading of the profile frozen by speedfix7 (session 10). Same schema as speed_points.yaml.", SOURCES, pts)


if __name__ == "__main__":
    main()
