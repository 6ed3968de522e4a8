"""Build prospective/batch10.yaml (speed batch 10, facts only) from the saved raw text under raw/.

Every quote is a ' ... '-joined list of fragments; each fragment is checked here (and again by check.py) to occur
verbatim, whitespace collapsed, in the saved raw file named for its source. Deterministic: re-running gives the same bytes.
    python build.py            # writes ../batch10.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parents[3]) not in sys.path:  # run as a script: the repository root, for the shared source tools
    sys.path.insert(0, str(HERE.parents[3]))

from benchmarks.published.prospective.source_tools import metric, ms, point, quoter, write_batch  # noqa: E402

RAW = HERE / "raw"
OUT = HERE.parent / "batch10.yaml"
quote = quoter(RAW)


# ---------------------------------------------------------------- TensorRT-LLM issue #4043 (andyluo7): Llama 3.1 405B FP8, B200 and H200
TR_ID = "trtllm-issue-4043-llama31-405b-fp8-b200-h200"
TR_URL = "https://github.com/NVIDIA/TensorRT-LLM/issues/4043"
TR_RAW = "trtllm-issue-4043.excerpt.md"
TR_SETUP = ("-  TRTLLM v0.20.0rc0",
            "to benchmark https://huggingface.co/nvidia/Llama-3.1-405B-Instruct-FP8 with ISL 124, OSL 2048, number of prompt 3,000 "
            "with TP 8, PP 1.")
TR_ROWS = [  # GPU, as stated, memory line, figure, the sentence that states it
    ("B200", "B200 (GPU memory size: 180GB per GPU), TP 8", "- GPU Name: B200", "3396",
     "Here is what I got. You can see the output throughput is 3,396 token per second."),
    ("H200", "H200 ('the same things', TP 8)", None, "6051",
     "I ran the same things on H200 and I got 6,051 token per second which is aligned with NV published data on H200."),
]


def trtllm_points():
    pts = []
    for gpu, stated, gpu_line, val, sentence in TR_ROWS:
        frags = ("# LLama 3.1 405B FP8 perf low on B200",) + ((gpu_line,) if gpu_line else ()) + TR_SETUP + (sentence,)
        inferred = ["mode", "length_distribution", "weights_checkpoint"] + ([] if gpu == "B200" else ["engine_version", "tp"])
        pts.append(point(
            id=f"trtllm4043-{gpu.lower()}x8-llama31-405b-fp8-tp8-124-2048-n3000", source_id=TR_ID, source_url=TR_URL,
            quote=quote(TR_RAW, *frags),
            quote_context=f"Issue description: System Info, the benchmark setup sentence and the {gpu} output-throughput sentence",
            engine="trtllm", engine_version="0.20.0rc0" + ("" if gpu == "B200" else " (the B200 run's; H200 version not stated)"),
            engine_backend="trtllm-bench throughput (perf-overview recipe for systems other than GH200)",
            model="nvidia/Llama-3.1-405B-Instruct-FP8", catalog_model="meta-llama/Llama-3.1-405B", quantization="fp8",
            weights_checkpoint="nvidia/Llama-3.1-405B-Instruct-FP8 (ModelOpt FP8)", gpu=gpu, gpu_as_stated=stated, gpu_count=8,
            tp=8, mode="offline_throughput", num_requests=3000, input_tokens=124, output_tokens=2048,
            length_distribution="fixed", metrics={"output_tokens_per_s": metric(float(val), "single")},
            primary_metric="output_tokens_per_s", inferred=inferred,
            notes="TensorRT-LLM issue 'LLama 3.1 405B FP8 perf low on B200' (2025-05-03): trtllm-bench throughput following the "
                  "perf-overview recipe, nvidia/Llama-3.1-405B-Instruct-FP8, ISL 124 / OSL 2048, 3,000 prompts, TP 8, PP 1 (8 GPUs). "
                  "The reporter states the output throughput of the B200 run (TRTLLM v0.20.0rc0, driver 570.133.20) and of 'the same "
                  "things' on H200; the H200 figure is read as the same setup (TP 8 and version inferred). trtllm-bench throughput "
                  "sends all requests at once (offline throughput mode); the perf-overview synthetic dataset has fixed lengths "
                  "(inferred). Catalog model: the base Llama 3.1 405B with quantization fp8 (the project's convention).",
            doubt="The figures are written in prose (rounded to the token), not copied from the printout, which the stored excerpt "
                  "cuts after its engine details; the engine build flags (max batch size, max num tokens) are not in the excerpt; "
                  "the issue says the B200 figure is unexpectedly low (an early B200 FP8 software state); H200 memory variant and "
                  "engine version not stated.",
        ))
    return pts


# ---------------------------------------------------------------- ROCm/aiter PR #3422 (jin-amd comment): GLM-5.1-FP8 on 8x MI300X, vLLM, stock
AI_ID = "rocm-aiter-pr-3422-glm51-fp8-mi300x"
AI_URL = "https://github.com/ROCm/aiter/pull/3422"
AI_RAW = "rocm-aiter-pr-3422.excerpt.md"
AI_SETUP = ("**Setup:** `vllm serve zai-org/GLM-5.1-FP8`, TP=8, `--kv-cache-dtype fp8`, max-model-len 16384, gpu-memory-utilization "
            "0.85, expert-parallel, AITER enabled; MI300X ×8 (gfx942, cu_num 304).",
            "**Bench:** `vllm bench serve`, random dataset, 128 prompts, max-concurrency 32.",
            "| scenario | metric | baseline (stock) | with rows (baked) | delta |")
AI_ROWS = [  # output length, the quoted rows, output tok/s, median TTFT (ms) or None
    (1024, ("| in1024 / out1024 | output tok/s | 757.9 | 829.6 | **+9.5%** |", "| | median TTFT (ms) | 1771.8 | 1220.0 | **−31%** |"),
     "757.9", "1771.8"),
    (8192, ("| in1024 / out8192 | output tok/s | 778.7 | 813.9 |",), "778.7", None),
]


def aiter_points():
    pts = []
    for osl, rows, tput, ttft in AI_ROWS:
        metrics = {"output_tokens_per_s": metric(float(tput), "single")}
        if ttft:
            metrics["ttft_s"] = metric(ms(ttft), "median")
        pts.append(point(
            id=f"aiter3422-mi300x8-glm51-fp8-vllm-tp8-ep-c32-1024-{osl}-stock", source_id=AI_ID, source_url=AI_URL,
            quote=quote(AI_RAW, "# Add GLM-5.1 FP8 blockscale GEMM/FMoE tunings for gfx942 (MI300X/MI325)", *AI_SETUP, *rows),
            quote_context=f"jin-amd's comment on the PR: Setup and Bench lines and the 'baseline (stock)' cells of scenario in1024 / out{osl}",
            engine="vllm", engine_version=None, engine_backend="ROCm, AITER enabled (stock aiter configs), expert parallel",
            model="zai-org/GLM-5.1-FP8", catalog_model="zai-org/GLM-5.1-FP8", quantization="fp8",
            weights_checkpoint="zai-org/GLM-5.1-FP8 (block FP8 as shipped)", kv_cache_dtype="fp8", gpu="MI300X",
            gpu_as_stated="MI300X ×8 (gfx942, cu_num 304)", gpu_count=8, tp=8, mode="closed_loop", concurrency=32,
            num_requests=128, input_tokens=1024, output_tokens=osl, length_distribution="fixed", metrics=metrics,
            primary_metric="output_tokens_per_s", inferred=["length_distribution", "engine"],
            notes="ROCm/aiter PR 'Add GLM-5.1 FP8 blockscale GEMM/FMoE tunings for gfx942' (2026-05-29); jin-amd's end-to-end check: "
                  "vLLM serving zai-org/GLM-5.1-FP8 with TP=8 and expert parallelism on 8 x MI300X, fp8 KV cache, max-model-len 16384, "
                  "gpu-memory-utilization 0.85, AITER enabled; vllm bench serve random dataset, 128 prompts, max-concurrency 32. "
                  "'baseline (stock)' = aiter without the PR's tuned rows (the stock state). 'in1024 / out1024' read as 1024 input and "
                  "1024 output tokens; the random dataset's default lengths are fixed (range ratio 0 - inferred; --ignore-eos not "
                  "stated).",
            doubt="vLLM version and date of the build not stated (PR of 2026-05-29); whether --ignore-eos was set is not stated (the "
                  "output length may fall short of the scenario's); AITER/ROCm kernel paths and expert parallelism are not "
                  "expressible in the model; one run per cell; the out8192 row's delta cell is cut in the stored excerpt.",
        ))
    return pts


# ---------------------------------------------------------------- BBuf/AI-Infra-Auto-Driven-SKILLS PR #18: SGLang on 2x H100, Qwen2.5-7B/3B chat
BB_ID = "bbuf-ai-infra-skills-pr-18-sglang-h100"
BB_URL = "https://github.com/BBuf/AI-Infra-Auto-Driven-SKILLS/pull/18"
BB_RAW = "bbuf-ai-infra-skills-pr-18.excerpt.md"
BB_HEAD = ("| Scenario | Candidate | Status | SLA | Req/s | Output tok/s | Total tok/s | P99 TTFT ms | P99 TPOT ms | Success rate | "
           "GPUs | Server command | Artifacts |")
BB_ROWS = [  # model, catalog, row cells (candidate, req/s, out, total, p99 ttft, p99 tpot)
    ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", ("candidate_3", "0.84", "28.01", "245.45", "207.44", "9.00")),
    ("Qwen/Qwen2.5-3B-Instruct", "Qwen/Qwen2.5-3B-Instruct", ("candidate_1", "0.84", "28.01", "245.44", "189.76", "8.18")),
]


def bbuf_points():
    pts = []
    for model, cat, (cand, rps, out, tot, ttft, tpot) in BB_ROWS:
        row = (f"| chat | {cand} | ok | True | {rps} | {out} | {tot} | {ttft} | {tpot} | 1.00 | 2 | python -m sglang.launch_server "
               f"--model-path {model} --tokenizer-path {model} --tp-size 2")
        size = model.split("-")[1].lower()
        pts.append(point(
            id=f"bbuf18-h100x2-qwen25-{size}-sglang-tp2-rate1-c4-512-64", source_id=BB_ID, source_url=BB_URL,
            quote=quote(BB_RAW, f"### H100 validation: `{model}`",
                        "- Workloads: `chat` = random 512 input / 64 output, `summarization` = random 2048 input / 128 output.",
                        "- Request shape: 20 prompts per scenario, request rate 1, max concurrency 4, `/v1/completions`.",
                        "### `sglang`", BB_HEAD, row),
            quote_context=f"PR comment 'H100 validation: {model}': run metadata and the sglang 'chat' row of 'Best Commands By Framework'",
            engine="sglang", engine_version=None, model=model, catalog_model=cat, quantization="none", gpu="H100-80GB",
            gpu_as_stated="H100 (Docker device filter device=6,7; GPUs column 2)", gpu_count=2, tp=2, mode="open_loop",
            request_rate=1.0, concurrency=4, num_requests=20, input_tokens=512, output_tokens=64, length_distribution="fixed",
            metrics={"output_tokens_per_s": metric(float(out), "single"), "total_tokens_per_s": metric(float(tot), "single"),
                     "requests_per_s": metric(float(rps), "single"), "ttft_s": metric(ms(ttft), "p99"),
                     "tpot_s": metric(ms(tpot), "p99")},
            primary_metric="output_tokens_per_s", inferred=["gpu", "length_distribution", "engine_version"],
            notes=f"BBuf's LLM-serving auto-benchmark skill, validation run of 2026-04-22 on H100 (two cards, device=6,7): the 'chat' "
                  f"workload (random 512 input / 64 output), 20 prompts at request rate 1 with max concurrency 4 against "
                  f"/v1/completions; the row is the best of 4 sglang server-flag candidates ({cand}) chosen by the tool, served "
                  f"with --tp-size 2 (GPUs column 2). Open loop at 1 request/s capped at 4 in flight. H100 read as the 80 GB SXM "
                  f"part (inferred). SGLang version not stated.",
            doubt="The row is the tool's best of four flag candidates (its other flags are cut in the stored excerpt after '--trus'); "
                  "output tok/s 28.01 at 0.84 req/s means about 33 generated tokens per request, so answers likely stopped at EOS "
                  "before 64 (ignore-eos not stated); the load is rate-bound (20 prompts at 1 req/s), so throughput mostly reflects "
                  "the offered load; the PR text is tagged '[codex]' (written with an agent tool). Both models print the same "
                  "throughput, a sign of the rate bound.",
        ))
    return pts


# ---------------------------------------------------------------- llama.cpp PR #15451 (drrros): 'Master' llama-bench, gpt-oss 20B on 2x RTX A5000
LC_ID = "llamacpp-pr-15451-gptoss20b-2x-rtxa5000"
LC_ROWS = [("pp2048", "3830.22 ± 6.69"), ("tg128", "138.25 ± 0.17")]


def llamacpp_points():
    raw = "llamacpp-pr-15451.excerpt.md"
    pts = []
    for test, cell in LC_ROWS:
        val = float(cell.split(" ")[0])
        row = f"| gpt-oss 20B MXFP4 MoE | 11.27 GiB | 20.91 B | CUDA | 99 | 1 | 4096 | 4096 | 1 | {test} | {cell} |"
        prefill = test.startswith("pp")
        pts.append(point(
            id=f"llamacpp15451-rtxa5000x2-gptoss20b-master-{test}", source_id=LC_ID,
            source_url="https://github.com/ggml-org/llama.cpp/pull/15451",
            quote=quote(raw, "Master:", "./build/bin/llama-bench --model /mnt/ds1nfs/codellamaweights/gpt-oss-20b-mxfp4.gguf -t 1 "
                        "-fa 1 -b 4096 -ub 4096 -p 2048", "ggml_cuda_init: found 2 CUDA devices:",
                        "Device 0: NVIDIA RTX A5000, compute capability 8.6, VMM: yes",
                        "Device 1: NVIDIA RTX A5000, compute capability 8.6, VMM: yes", row, "build: b730706a (6263)"),
            quote_context=f"PR comment by drrros: the 'Master' llama-bench command, device lines and the {test} row",
            engine="llama.cpp", engine_version="build b730706a (6263), master before the PR", engine_backend="CUDA, flash attention",
            model="gpt-oss 20B MXFP4 MoE (gpt-oss-20b-mxfp4.gguf)", catalog_model="openai/gpt-oss-20b", quantization="none",
            weights_checkpoint="gpt-oss-20b-mxfp4.gguf (MXFP4 experts as shipped)", kv_cache_dtype="fp16", gpu="RTX-A5000",
            gpu_as_stated="NVIDIA RTX A5000 x2 (found 2 CUDA devices)", gpu_count=2, tp=1, pp=2,
            mode="prefill" if prefill else "batch1_decode", input_tokens=2048 if prefill else 0,
            output_tokens=0 if prefill else 128, length_distribution="fixed",
            metrics={("prefill_tokens_per_s" if prefill else "output_tokens_per_s_per_user"): metric(val, "mean")},
            primary_metric="prefill_tokens_per_s" if prefill else "output_tokens_per_s_per_user",
            inferred=["pp", "kv_cache_dtype", "catalog_model"],
            notes=f"llama-bench on llama.cpp master build b730706a (6263), gpt-oss-20b MXFP4 GGUF fully offloaded (-ngl 99) across "
                  f"the two RTX A5000 found (llama.cpp's default layer split: pp=2), flash attention on, batch/ubatch 4096, 1 CPU "
                  f"thread. {test}: " + ("a 2048-token prompt processed in one ubatch (prefill tokens/s)." if prefill else
                                         "128 tokens generated one at a time from an empty context (batch-1 decode).") +
                  " t/s is llama-bench's mean over its repetitions (± the std). KV cache f16 (llama-bench default; not stated).",
            doubt="Two GPUs with the default layer split (not tensor parallel): each token passes both cards in turn; the A5000s' "
                  "PCIe link is not stated; the stat is llama-bench's mean of its default 5 repetitions.",
        ))
    return pts



# ---------------------------------------------------------------- TGI PR #1243 (fxmarty): text-generation-benchmark on A100, Llama-2-13b-chat
TG_ID = "tgi-pr-1243-llama2-13b-a100-benchmark"
TG_URL = "https://github.com/huggingface/text-generation-inference/pull/1243"
TG_RAW = "tgi-pr-1243.excerpt.md"
TG_CMD = ("* On A100: `text-generation-benchmark --tokenizer-name meta-llama/Llama-2-13b-chat-hf --sequence-length 40 --decode-length 10 "
          "--runs 1 --warmups 1 -b 100 -b 150 -b 200 -b 250 -b 300 -b 350 -b 400 -b 450 -b 600 -b 700 -b 800`")
TG_HEAD = "| Step | Batch Size | Average | Lowest | Highest | p50 | p90 | p99 |"
TG_ROWS = [(100, "370.77"), (150, "587.97"), (200, "765.51"), (250, "1015.73"), (300, "1164.50")]


def tgi_points():
    pts = []
    for batch, val in TG_ROWS:
        cell = f"{val} ms"
        step = "Prefill" if batch == 100 else ""
        row = f"| {step} | {batch} | {cell} | {cell} | {cell} | {cell} | {cell} | {cell} |".replace("|  |", "| |")
        pts.append(point(
            id=f"tgi1243-a100-llama2-13b-chat-prefill-b{batch}-40-10", source_id=TG_ID, source_url=TG_URL,
            quote=quote(TG_RAW, "fxmarty · description · 2023-11-07",
                        "* Should we have a `ghcr.io/huggingface/text-generation-inference:1.1.0+rocm` hosted image, or is it too early?",
                        TG_CMD, "### A100", TG_HEAD, row),
            quote_context=f"PR description (date, TGI 1.1.0) and fxmarty's comment: the A100 text-generation-benchmark command and "
                          f"the Prefill row of batch size {batch}",
            engine="tgi", engine_version="main after 1.1.0 (PR branch of 2023-11; '1.1.0+rocm' image discussed)",
            engine_backend="text-generation-benchmark (direct to the model shards), flash attention v2, paged attention",
            model="meta-llama/Llama-2-13b-chat-hf", catalog_model="meta-llama/Llama-2-13b-hf", quantization="none", gpu="A100-80GB",
            gpu_as_stated="A100", gpu_count=1, tp=1, mode="static_batch", batch=batch, input_tokens=40, output_tokens=10,
            length_distribution="fixed", metrics={"ttft_s": metric(ms(val), "single")}, primary_metric="ttft_s",
            inferred=["gpu", "gpu_count", "tp", "metrics.ttft_s", "engine_version"],
            notes=f"TGI's text-generation-benchmark on an A100 (fxmarty, the PR adding ROCm support to TGI, 2023-11): "
                  f"meta-llama/Llama-2-13b-chat-hf, a static batch of {batch} sequences of 40 prompt tokens, decode length 10, one run "
                  f"after one warm-up. The Prefill step latency (the time to prefill the whole batch, which the benchmark tool "
                  f"reports per step) is recorded as the batch's TTFT (one run: average = lowest = highest). A100 memory variant, "
                  f"shard count (read as 1) and dtype (fp16 default) not stated.",
            doubt="The TGI build is the PR's branch of 2023-11 (after 1.1.0), not a release; A100 40 GB or 80 GB not stated; one run "
                  "per batch size; text-generation-benchmark talks to the shards over gRPC without the router, so no queueing is "
                  "included; the prefill figure is the whole batch's prefill step, which the model may or may not treat as TTFT.",
        ))
    return pts

# ---------------------------------------------------------------- sources
SOURCES = [
    {"source_id": TR_ID, "url": TR_URL,
     "title": "NVIDIA/TensorRT-LLM issue #4043 'LLama 3.1 405B FP8 perf low on B200' (trtllm-bench, B200 and H200)",
     "kind": "issue", "date": "2025-05-03", "publisher": "andyluo7 (TensorRT-LLM issue)",
     "notes": "Excerpt of the issues corpus (search tool), raw/trtllm-issue-4043.excerpt.md. New publisher."},
    {"source_id": AI_ID, "url": AI_URL,
     "title": "ROCm/aiter PR #3422 'Add GLM-5.1 FP8 blockscale GEMM/FMoE tunings for gfx942 (MI300X/MI325)': jin-amd's vLLM check",
     "kind": "issue", "date": "2026-05-29", "publisher": "jin-amd (ROCm/aiter PR comment)",
     "notes": "Excerpt of the issues corpus (search tool), raw/rocm-aiter-pr-3422.excerpt.md. New publisher."},
    {"source_id": BB_ID, "url": BB_URL,
     "title": "BBuf/AI-Infra-Auto-Driven-SKILLS PR #18 '[codex] Update LLM serving benchmark validation notes' (H100 validation)",
     "kind": "issue", "date": "2026-04-22", "publisher": "BBuf (AI-Infra-Auto-Driven-SKILLS)",
     "notes": "Two excerpts of the issues corpus (search tool), raw/bbuf-ai-infra-skills-pr-18.excerpt.md. New publisher."},
    {"source_id": LC_ID, "url": "https://github.com/ggml-org/llama.cpp/pull/15451",
     "title": "ggml-org/llama.cpp PR #15451 'CUDA: Accelerate MXFP4 table lookup using __byte_perm' ('Master' llama-bench)",
     "kind": "issue", "date": "2025-08-24 (comment)", "publisher": "drrros (llama.cpp PR comment)",
     "notes": "Excerpt of the issues corpus (search tool), raw/llamacpp-pr-15451.excerpt.md. New publisher."},
    {"source_id": TG_ID, "url": TG_URL,
     "title": "huggingface/text-generation-inference PR #1243 'Add RoCm support' (text-generation-benchmark on A100)",
     "kind": "issue", "date": "2023-11-07 (PR description; benchmark comment undated in the stored text)",
     "publisher": "fxmarty (Hugging Face, TGI PR)",
     "notes": "Two excerpts of the issues corpus (search tool), raw/tgi-pr-1243.excerpt.md. New publisher."},
]


def main():
    pts = trtllm_points() + aiter_points() + bbuf_points() + llamacpp_points() + tgi_points()
    write_batch(OUT, "Batch 10 of published LLM-serving speed measurements from sources never used in benchmarks/published (speed_points, "
                     "serving_curves, lora_points, prospective batch1-9 and every other data file), gathered 2026-12-05 (02:01-02:25 UTC) "
                     "for prospective grading of the profile frozen for batch 9 (478a15ff4011, main 395c9c7). Same schema as speed_points.yaml.",
                SOURCES, pts)


if __name__ == "__main__":
    main()
