"""Build prospective/batch9.yaml (speed batch 9, facts only) from the saved raw text under raw/.

Every quote is a ' ... '-joined list of fragments; each fragment is checked here (and again by check.py) to occur
verbatim, whitespace collapsed, in the saved raw file named for its source. Deterministic: re-running gives the same bytes.
    python build.py            # writes ../batch9.yaml
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parents[3]) not in sys.path:  # run as a script: the repository root, for the shared source tools
    sys.path.insert(0, str(HERE.parents[3]))

from benchmarks.published.prospective.batch8_sources.build import GC_SHA, gc_fragment, gc_raw  # noqa: E402
from benchmarks.published.prospective.source_tools import metric, point, quoter, write_batch  # noqa: E402

RAW = HERE / "raw"
OUT = HERE.parent / "batch9.yaml"
quote = quoter(RAW)


# ---------------------------------------------------------------- Qwen team: Qwen3 'Speed Benchmark' page (SGLang on H20)
QS_SHA = "ac7272455d45483d2f579a88295e81586d60ff6f"
QS_URL = f"https://github.com/QwenLM/Qwen2.5/blob/{QS_SHA}/docs/source/getting_started/speed_benchmark.md"
QS_RAW = "qwen3-speed-benchmark-ac727245.excerpt.md"
QS_ID = "qwen3-speed-benchmark-sglang-h20"
QS_QUANT = {"BF16": ("none", "Qwen/Qwen3-0.6B"), "FP8": ("fp8", "Qwen/Qwen3-0.6B-FP8"),
            "GPTQ-Int8": ("gptq", "Qwen/Qwen3-0.6B-GPTQ-Int8")}
QS_ROWS = [  # input length, quantization label, speed as printed, first row of its input-length group (page order, first 7 rows)
    (1, "BF16", "414.17", True), (1, "FP8", "458.03", False), (1, "GPTQ-Int8", "344.92", False),
    (6144, "BF16", "1426.46", True), (6144, "FP8", "1572.95", False), (6144, "GPTQ-Int8", "1234.29", False),
    (14336, "BF16", "2478.02", True),
]


def qwen_row_fragment(isl, label, val, first):
    cells = f"<td>{label}</td><td>1</td><td>{val}</td><td></td>"
    return f'<td rowspan="3">{isl}</td>{cells}' if first else cells


def qwen_points():
    pts = []
    for isl, label, val, first in QS_ROWS:
        quant, ckpt = QS_QUANT[label]
        pts.append(point(
            id=f"qwen3speed-h20-qwen3-0.6b-{label.lower()}-sglang-bs1-{isl}-2048", source_id=QS_ID, source_url=QS_URL,
            quote=quote(QS_RAW, "- NVIDIA H20 96GB", "- SGLang 0.4.6.post1",
                        "We use a **batch size of 1** and the **minimum number of GPUs** possible for evaluation.",
                        "We test the **speed and memory usage** when generating **2048 tokens**, with input lengths of",
                        r"\text{Speed} = \frac{\text{tokens}_{\text{prompt}} + \text{tokens}_{\text{generation}}}{\text{time}}",
                        "### Qwen3-0.6B (SGLang)", qwen_row_fragment(isl, label, val, first)),
            quote_context=f"'Speed Benchmark' page: SGLang environment, Notes (speed formula, batch 1, 2048 generated tokens) and the "
                          f"'Qwen3-0.6B (SGLang)' table row input length {isl}, {label}",
            engine="sglang", engine_version="0.4.6.post1 (SGL-kernel 0.1.0, PyTorch 2.6.0+cu124)", model=f"Qwen3-0.6B ({label})",
            catalog_model="Qwen/Qwen3-0.6B", quantization=quant, weights_checkpoint=ckpt, gpu="H20", gpu_as_stated="NVIDIA H20 96GB",
            gpu_count=1, tp=1, mode="closed_loop", concurrency=1, input_tokens=isl, output_tokens=2048, length_distribution="fixed",
            metrics={"total_tokens_per_s": metric(float(val), "unstated")}, primary_metric="total_tokens_per_s",
            inferred=["mode", "concurrency", "gpu_count", "tp", "weights_checkpoint", "length_distribution"],
            notes="Qwen team's Qwen3 speed benchmark (docs of the QwenLM/Qwen3 repository, stored as QwenLM/Qwen2.5 at ac727245). SGLang "
                  "0.4.6.post1 on one NVIDIA H20 96GB ('minimum number of GPUs': one for 0.6B, inferred), batch size 1 (one request at a "
                  "time: recorded as closed loop, concurrency 1), 2048 generated tokens after a prompt of the row's input length, "
                  "mem_fraction_static 0.85, context_length 140000, enable_mixed_chunk, skip_tokenizer_init with input_ids. 'Speed' is "
                  "(prompt + generated tokens) / time, i.e. total tokens/s of the single request, TTFT included. Checkpoints read as the "
                  "Qwen releases Qwen/Qwen3-0.6B, -FP8 and -GPTQ-Int8 (inferred from the Quantization cell; GPTQ-Int8 recorded as 'gptq'). "
                  "Rows taken by page order (first 7 SGLang rows; Tenstorrent-style cap of 7 written before reading).",
            doubt="Number of repetitions and the statistic (single run or mean) are not stated; whether the 2048 tokens were forced "
                  "(ignore_eos) is implied by 'when generating 2048 tokens' but not stated as a flag; the 'gptq' quantization here is "
                  "8-bit (GPTQ-Int8), not the usual 4-bit; SGLang's FP8 path on H20 (Hopper) uses the checkpoint's block FP8.",
        ))
    return pts


# ---------------------------------------------------------------- tenstorrent/tt-inference-server issues #521 and #143 (Tenstorrent)
TT_HEAD = ("| ISL | OSL | Concurrency | N Req | TTFT (ms) | TPOT (ms) | Tput User (TPS) | Tput Decode (TPS) | Tput Prefill (TPS) | "
           "E2EL (ms) | Req Tput (RPS) |")
TT_THREADS = [  # number, source id, raw file, model as stated, catalog model, GPU, count, title fragments, rows (thread order)
    (521, "tenstorrent-issue-521-gemma3-4b-a100", "tenstorrent-issue-521.excerpt.md", "gemma-3-4b-it", "google/gemma-3-4b-it",
     "A100-80GB", 1, ("# [Model Readiness Support]: gemma-3-4b-it", "## Performance Benchmark Sweeps for gemma-3-4b-it on A100",
                      "#### Text-to-Text Performance Benchmark Sweeps for gemma-3-4b-it on A100"),
     [(128, 128, 1, 8, "16.8", "8.4", "118.72", "118.7", "7633.2", "1086.5", "0.92"),
      (128, 1024, 1, 4, "19.1", "9.6", "104.71", "104.7", "6687.5", "9789.2", "0.102"),
      (1024, 128, 1, 4, "62.7", "10.8", "92.3", "92.3", "16326.4", "1438.7", "0.695"),
      (2048, 128, 1, 4, "107.7", "10.1", "98.91", "98.9", "19021.3", "1391.6", "0.718"),
      (3072, 128, 1, 4, "157.6", "10.1", "99.18", "99.2", "19486.3", "1438.2", "0.695")]),
    (143, "tenstorrent-issue-143-qwen25-72b-2xh100", "tenstorrent-issue-143.excerpt.md", "Qwen2.5-72B-Instruct",
     "Qwen/Qwen2.5-72B-Instruct", "H100-80GB", 2,
     ("# confirm Qwen2.5 72B MMLU_pro and GPQA on GPU", "### Performance Benchmarks for Qwen2.5-72B-Instruct on 2xH100"),
     [(128, 128, 1, 8, "41.1", "30.9", "32.37", "32.4", "3115.7", "3964.6", "0.252"),
      (128, 1024, 1, 4, "35.0", "30.9", "32.34", "32.3", "3656.3", "31664.4", "0.032")]),
]


def tt_point(num, sid, raw, name, cat, gpu, count, heads, row):
    isl, osl, conc, n, ttft, tpot, user, dec, pre, e2e, rps = row
    line = f"| {isl} | {osl} | {conc} | {n} | {ttft} | {tpot} | {user} | {dec} | {pre} | {e2e} | {rps} |"
    gpu_words = "A100" if count == 1 else "2xH100"
    return point(
        id=f"tenstorrent{num}-{gpu.lower()}x{count}-{name.lower().replace('.', '')}-c{conc}-{isl}-{osl}", source_id=sid,
        source_url=f"https://github.com/tenstorrent/tt-inference-server/issues/{num}",
        quote=quote(raw, *heads, TT_HEAD, line),
        quote_context=f"Issue comment: sweep table for {name} on {gpu_words}, row ISL {isl} / OSL {osl}",
        engine="vllm", engine_version=None, model=name, catalog_model=cat, quantization="none", dtype=None, gpu=gpu,
        gpu_as_stated=gpu_words, gpu_count=count, tp=count, mode="closed_loop", concurrency=conc, num_requests=n, input_tokens=isl,
        output_tokens=osl, length_distribution="fixed",
        metrics={"ttft_s": metric(round(float(ttft) / 1000, 6), "mean"), "tpot_s": metric(round(float(tpot) / 1000, 6), "mean"),
                 "output_tokens_per_s_per_user": metric(float(user), "mean"),
                 "e2e_s": metric(round(float(e2e) / 1000, 6), "mean"), "requests_per_s": metric(float(rps), "mean")},
        primary_metric="tpot_s", inferred=["engine", "gpu", "tp", "quantization", "length_distribution"],
        notes=f"Tenstorrent's GPU reference runs (tt-inference-server benchmark sweep tables, columns ISL | OSL | Concurrency | N Req | "
              f"TTFT | TPOT | Tput User | Tput Decode | Tput Prefill | E2EL | Req Tput, as batches 3 and 8). Concurrency {conc}, {n} "
              f"requests. Engine read as vLLM (the team's GPU reference workflow runs vLLM's benchmark client against vLLM; not named in "
              f"the excerpt) - inferred, version not stated. GPU '{gpu_words}': {gpu} inferred ({'80 GB' if count == 1 else 'SXM 80 GB'} "
              f"not stated), TP {count} inferred from the GPU count; BF16 checkpoint as shipped. TTFT/TPOT read as means. Rows in table "
              "order under the Tenstorrent cap of 7 (#521's 5 complete rows, then #143's first 2).",
        doubt="Engine, engine version, server flags and GPU memory/form factor are not stated in the excerpt; the statistic is not "
              "stated (mean assumed); whether prefix caching served the repeated prompts is not stated. Same publisher family as "
              "batches 3 and 8 (tenstorrent-issue-356 / -340): merge the tenstorrent-issue-* ids when holding out by publisher.",
    )


def tenstorrent_points():
    return [tt_point(num, sid, raw, name, cat, gpu, count, heads, row)
            for num, sid, raw, name, cat, gpu, count, heads, rows in TT_THREADS for row in rows]


# ---------------------------------------------------------------- ROCm/aiter PR #1930 (benenzhu): 'Before' column, DeepSeek-R1 on MI300X
AI_URL = "https://github.com/ROCm/aiter/pull/1930"
AI_RAW = "rocm-aiter-pr-1930.excerpt.md"
AI_ID = "rocm-aiter-pr-1930-deepseek-r1-mi300x"
AI_ROWS = [(4, "28.76", "22.05", "**-23.3%**"), (8, "37.19", "25.56", "**-31.3%**"), (16, "47.17", "30.83", "**-34.6%**")]


def aiter_points():
    pts = []
    for conc, before, after, gain in AI_ROWS:
        row = f"| {conc} | {before} | {after} | {gain} |"
        pts.append(point(
            id=f"aiter1930-mi300x-deepseek-r1-fp8-sglang-c{conc}-1024-1024-before", source_id=AI_ID, source_url=AI_URL,
            quote=quote(AI_RAW, "- Benchmarked with sglang serving workload for Deepseek-R1 model with Mi300x gpus.",
                        "- Tested across multiple concurrency levels (4, 8, 16, 32, 64)", "- Input/Output length is set for 1k/1k",
                        "*Metric: Median TPOT (Time Per Output Token)*", "| Concurrency | Before (ms) | After (ms) | Improvement |", row),
            quote_context=f"PR description: Test Plan and the Test Result table row concurrency {conc} ('Before (ms)' column)",
            engine="sglang", engine_version=None, model="Deepseek-R1", catalog_model="deepseek-ai/DeepSeek-R1", quantization="fp8",
            weights_checkpoint="deepseek-ai/DeepSeek-R1 (block FP8 as shipped)", gpu="MI300X", gpu_as_stated="Mi300x gpus",
            gpu_count=8, tp=8, mode="closed_loop", concurrency=conc, input_tokens=1024, output_tokens=1024,
            length_distribution="fixed", metrics={"tpot_s": metric(round(float(before) / 1000, 6), "median")},
            primary_metric="tpot_s",
            inferred=["gpu_count", "tp", "quantization", "weights_checkpoint", "input_tokens", "output_tokens", "length_distribution"],
            notes="ROCm/aiter PR '[Triton] Add tune config on Mi300x/Mi325x for gemm_A8W8_blockscale used in Deepseek models' (2026-01-29): "
                  "the 'Before' column is SGLang with aiter's default Triton A8W8 block-scale GEMM parameters for the (N=2112, K=7168) "
                  "shape (the stock state the PR tunes). Median TPOT of an SGLang serving benchmark at the stated concurrency, "
                  "'1k/1k' read as 1024/1024 fixed lengths. GPU count not stated: 8 x MI300X and TP 8 inferred (DeepSeek-R1 FP8 needs "
                  "8 x 192 GB). Rows 4/8/16 complete in the excerpt; the 32 row is cut after its cells and 64 is not in the excerpt.",
            doubt="SGLang version, GPU count/TP, prompt count, dataset and server flags are not stated; 1k/1k may be 1000/1000; "
                  "aiter-specific kernel paths (ROCm) are not expressible. Publisher benenzhu (aiter PR author) - new.",
        ))
    return pts


# ---------------------------------------------------------------- sglang PR #6939 (Fridge003): 'Before tuning' on 8 x B200
def sglang6939_point():
    raw = "sglang-pr-6939.excerpt.md"
    return point(
        id="sglang6939-b200x8-deepseek-v3-0324-tp8-c16-1000-1000-before", source_id="sglang-pr-6939-deepseek-v3-b200",
        source_url="https://github.com/sgl-project/sglang/pull/6939",
        quote=quote(raw, "# Add triton fused moe kernel config for E=257 on B200",
                    "SGLANG_ENABLE_FLASHINFER_GEMM=1 python3 -m sglang.launch_server --model /dev/shm/DeepSeek-V3-0324 --tp 8 "
                    "--trust-remote-code --attention-backend triton",
                    "--random-input-len 1000 --random-output-len 1000 --random-range-ratio 1 --num-prompts 128 --max-concurrency 16",
                    "Before tuning:", "Max request concurrency: 16", "Successful requests: 128", "Benchmark duration (s): 221.31",
                    "Total input tokens: 128000", "Total generated tokens: 128000", "Request throughput (req/s): 0.58",
                    "Output token throughput (tok/s): 578.37", "Total token throughput (tok/s): 1156.75"),
        quote_context="PR description: launch and bench_serving commands and the 'Before tuning' printout (default fused-MoE config)",
        engine="sglang", engine_version=None, engine_backend="triton attention, FlashInfer GEMM",
        model="/dev/shm/DeepSeek-V3-0324 (deepseek-ai/DeepSeek-V3-0324)", catalog_model="deepseek-ai/DeepSeek-V3", quantization="fp8",
        weights_checkpoint="deepseek-ai/DeepSeek-V3-0324 (block FP8 as shipped)", gpu="B200", gpu_as_stated="B200, --tp 8",
        gpu_count=8, tp=8, mode="closed_loop", concurrency=16, num_requests=128, input_tokens=1000, output_tokens=1000,
        length_distribution="fixed",
        metrics={"output_tokens_per_s": metric(578.37, "single"), "total_tokens_per_s": metric(1156.75, "single"),
                 "requests_per_s": metric(0.58, "single")},
        primary_metric="output_tokens_per_s", inferred=["gpu_count", "quantization", "weights_checkpoint"],
        notes="sglang PR 'Add triton fused moe kernel config for E=257 on B200' (2025-06-07): 'Before tuning' = SGLang without a tuned "
              "fused-MoE config for E=257 on B200 (the default config after #6736), DeepSeek-V3-0324 with --tp 8 (8 B200 inferred), "
              "--attention-backend triton and SGLANG_ENABLE_FLASHINFER_GEMM=1; bench_serving random 1000/1000 with range ratio 1 "
              "(fixed lengths; 128000 input and 128000 generated tokens printed), 128 prompts at --max-concurrency 16, request rate inf. "
              "SGLang main of June 2025 (version not stated).",
        doubt="SGLang version not stated; the triton attention backend is not the default on B200; one run; the 'Before' state is "
              "the untuned default MoE kernel config, which later releases replaced. Publisher Fridge003 - new.",
    )


# ---------------------------------------------------------------- sariekr/gpu_conc H100 PCIe summary (AIMultiple; batch 8 took H200/b200)
GC9_PATH = "H100/benchmark_summary_20250811_091131.json"
GC9_ID = "gpu-conc-sariekr-gptoss20b-h100pcie-20250811"
GC9_LEVELS = (1, 8, 64)


def gpu_conc_h100_points():
    raw = gc_raw(GC9_PATH)
    data = json.loads((RAW / raw).read_text(encoding="utf-8"))
    gpu = data["test_info"]["gpu_info"]
    pts = []
    for r in data["results"]:
        c = r["concurrency"]
        if c not in GC9_LEVELS:
            continue
        pts.append(point(
            id=f"gpuconc-h100pcie-gptoss20b-vllm-c{c}-1000-1000-20250811", source_id=GC9_ID,
            source_url=f"https://github.com/sariekr/gpu_conc/blob/{GC_SHA}/{GC9_PATH}",
            quote=quote(raw, '"input_tokens": 1000, "output_tokens": 1000,', '"model": "openai/gpt-oss-20b"',
                        f'"gpu_info": {{ "model": "{gpu["model"]}", "memory": "{gpu["memory"]}", "count": 1 }}', gc_fragment(r),
                        f'"median_ttft": {json.dumps(r["median_ttft"])},',
                        f'"median_output_speed_per_query": {json.dumps(r["median_output_speed_per_query"])},'),
            quote_context=f"H100/ benchmark summary JSON of 2025-08-11: test_info config and gpu_info, and the results entry of concurrency {c}",
            engine="vllm", engine_version=None, model="openai/gpt-oss-20b", catalog_model="openai/gpt-oss-20b", quantization="none",
            weights_checkpoint="openai/gpt-oss-20b (MXFP4 experts as shipped)", gpu="H100-PCIe",
            gpu_as_stated=f"{gpu['model']} ({gpu['memory']}), count 1", gpu_count=1, tp=1, mode="closed_loop", concurrency=c,
            num_requests=r["total_requests_sent"], input_tokens=1000, output_tokens=1000, length_distribution="fixed",
            metrics={"output_tokens_per_s": metric(r["system_output_throughput"], "single"),
                     "requests_per_s": metric(r["requests_per_second"], "single"),
                     "ttft_s": metric(round(r["median_ttft"] / 1000, 6), "median"),
                     "e2e_s": metric(round(r["median_end_to_end_latency"] / 1000, 6), "median"),
                     "output_tokens_per_s_per_user": metric(r["median_output_speed_per_query"], "median")},
            primary_metric="output_tokens_per_s", inferred=["tp", "quantization", "length_distribution"],
            notes="sariekr/gpu_conc (AsyncOpenAI streaming client against a vLLM OpenAI server), run of 2025-08-11 on one NVIDIA H100 "
                  "PCIe (gpu_info of the file): phases of 180 s per concurrency level after a 30 s ramp-up, synthetic prompts of ~1000 "
                  "tokens asking for 1000 output tokens, request timeout 30 s. The figure is 'system_output_throughput' (output tokens/s "
                  "of all requests in the phase), as batch 8's H200/B200 points. Levels 1, 8, 64 fixed before reading; TP 1 inferred; "
                  "gpt-oss-20b as shipped (quantization 'none', as earlier batches record gpt-oss). vLLM version not stated.",
            doubt="The same summary blob (09fd76c2) also sits in the repository's H200/, b200/ and results/ folders; its gpu_info says "
                  "H100 PCIe, which is taken as the GPU. The author's later commits fix the client's concurrency and token counting "
                  "(2025-10), after this run: real concurrency and chunk-counted tokens are in doubt; 30 s request timeout may drop long "
                  "requests at high levels. Same publisher as batch 8's gpu-conc-sariekr-* id (merge when holding out by publisher).",
        ))
    return pts


# ---------------------------------------------------------------- sources
SOURCES = [
    {"source_id": QS_ID, "url": QS_URL,
     "title": "Qwen3 'Speed Benchmark' (QwenLM/Qwen3 docs, stored as QwenLM/Qwen2.5 at ac727245): SGLang 0.4.6.post1 on NVIDIA H20 96GB",
     "kind": "docs", "date": "2025 (Qwen3 release docs; commit ac727245)", "publisher": "Qwen team (Alibaba, QwenLM docs)",
     "notes": "read_file of the search tool (stored file id 18174588058); the page's opening through the Qwen3-0.6B SGLang table saved "
              "verbatim in raw/. New publisher."},
    {"source_id": "tenstorrent-issue-521-gemma3-4b-a100", "url": "https://github.com/tenstorrent/tt-inference-server/issues/521",
     "title": "tenstorrent/tt-inference-server issue #521 '[Model Readiness Support]: gemma-3-4b-it': sweep on A100",
     "kind": "issue", "date": "2025-09-03 (comment)", "publisher": "Tenstorrent (tt-inference-server team)",
     "notes": "Excerpt of the issues corpus (search tool), raw/tenstorrent-issue-521.excerpt.md. Same publisher as batches 3 and 8 "
              "(issues #356, #340)."},
    {"source_id": "tenstorrent-issue-143-qwen25-72b-2xh100", "url": "https://github.com/tenstorrent/tt-inference-server/issues/143",
     "title": "tenstorrent/tt-inference-server issue #143 'confirm Qwen2.5 72B MMLU_pro and GPQA on GPU': benchmarks on 2xH100",
     "kind": "issue", "date": "2025-04-01 (comment)", "publisher": "Tenstorrent (tt-inference-server team)",
     "notes": "Excerpt of the issues corpus (search tool), raw/tenstorrent-issue-143.excerpt.md. Same publisher as #521."},
    {"source_id": AI_ID, "url": AI_URL,
     "title": "ROCm/aiter PR #1930 '[Triton] Add tune config on Mi300x/Mi325x for gemm_A8W8_blockscale used in Deepseek models'",
     "kind": "issue", "date": "2026-01-29", "publisher": "benenzhu (ROCm/aiter PR)",
     "notes": "Excerpt of the issues corpus (search tool), raw/rocm-aiter-pr-1930.excerpt.md. New publisher."},
    {"source_id": GC9_ID, "url": f"https://github.com/sariekr/gpu_conc/tree/{GC_SHA}/H100",
     "title": "sariekr/gpu_conc: vLLM multi-level concurrency benchmark, gpt-oss-20b on one H100 PCIe (benchmark_summary of 2025-08-11)",
     "kind": "repo", "date": "2025-08-11 (run; snapshot c848ef1 of 2025-10-10)", "publisher": "AIMultiple (sariekr, gpu_conc)",
     "notes": "Read with git show from the local snapshot (fetched by batch 8); the summary saved whole in raw/. Same publisher as batch "
              "8's gpu-conc-sariekr-gptoss20b-h200-b200 (other files)."},
    {"source_id": "sglang-pr-6939-deepseek-v3-b200", "url": "https://github.com/sgl-project/sglang/pull/6939",
     "title": "sgl-project/sglang PR #6939 'Add triton fused moe kernel config for E=257 on B200' ('Before tuning' run)",
     "kind": "issue", "date": "2025-06-07", "publisher": "Fridge003 (sglang PR)",
     "notes": "Excerpt of the issues corpus (search tool), raw/sglang-pr-6939.excerpt.md. New publisher."},
]


def main():
    pts = qwen_points() + tenstorrent_points() + gpu_conc_h100_points() + aiter_points() + [sglang6939_point()]
    write_batch(OUT, "Batch 9 of published LLM-serving speed measurements from sources never used in benchmarks/published (speed_points, "
                     "serving_curves, lora_points, prospective batch1-8 and every other data file), gathered 2026-12-05 (01:36-01:50 UTC) "
                     "for prospective grading of the profile frozen by speedfix9 (session 10). Same schema as speed_points.yaml.",
                SOURCES, pts)


if __name__ == "__main__":
    main()
