"""Measure transformers (eager, random weights) on one GPU: peak memory, TTFT and per-step decode time.

Run on the lent H200 (see benchmarks/results/README.md for the exact command):

    python3 benchmarks/gpu/measure_transformers.py --out measure.json --budget-s 420

For each catalog model (config from src/infer_advisor/data/models/, weights random, built on the GPU)
and each batch size: a warm-up, then one timed run of prefill + decode by hand, as ``generate`` does it:

- TTFT: one forward over the prompt (logits of the last position only, as ``generate`` asks) plus the
  greedy sample, synchronised.
- decode: ``output_tokens - 1`` single-token forwards with the KV cache, each synchronised and timed.
- memory: ``torch.cuda.max_memory_allocated`` / ``max_memory_reserved`` over the timed run (cache
  emptied and peaks reset before it) and NVML device memory used read right after it, before the cache is
  emptied: the caching allocator keeps its peak segments, so that reading is the device-level peak.
  (A first version sampled NVML every 5 ms in a thread: the thread's GIL hand-offs slowed the launch-bound
  decode loop up to 3x; see benchmarks/results/h200/measure_run1_nvml_thread.log.)
- the same again with the allocator warm (no ``empty_cache``): the first timed run grows a fresh caching
  allocator with the KV cache (cudaMalloc per step) and ran 2-3x slower per step on the lent H200 VM.
- then ``model.generate`` for the same batch, timed end to end (what users of generate see).

Also measures the two ceilings once: device-to-device copy bandwidth and a bf16 matrix product rate.
Needs torch, transformers, nvidia-ml-py; nothing from infer_advisor (the predictions are computed
afterwards, on any machine, by benchmarks/gpu/compare.py). Writes ``--out`` after every point.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

CATALOG = Path(__file__).resolve().parents[2] / "src" / "infer_advisor" / "data" / "models"
DEFAULT_MODELS = [
    "meta-llama/Llama-2-7b-hf",
    "meta-llama/Meta-Llama-3-8B",
    "meta-llama/Llama-2-13b-hf",
    "mistralai/Mixtral-8x7B-v0.1",
    "Qwen/Qwen3-30B-A3B",
]


class Nvml:
    """NVML 'used' memory of GPU 0 (all processes, the driver's own reservation included)."""

    def __init__(self):
        import pynvml

        pynvml.nvmlInit()
        self.nvml = pynvml
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)

    def used(self) -> int:
        return int(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used)


def ceilings(torch) -> dict:
    """Measured copy bandwidth (read + write bytes / s) and bf16 matmul FLOP/s on random data."""
    n = 4 * 2**30
    a = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(10):
        start.record()
        b.copy_(a)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    copy_bw = 2 * n / statistics.median(times)
    del a, b
    m = 8192
    xs = [torch.randn(m, m, dtype=torch.bfloat16, device="cuda") for _ in range(4)]
    for _ in range(3):
        xs[0] @ xs[1]
    times = []
    for i in range(20):
        start.record()
        xs[i % 4] @ xs[(i + 1) % 4]
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    mm = 2 * m**3 / statistics.median(times)
    del xs
    torch.cuda.empty_cache()
    return {"copy_bandwidth_bytes_per_s": copy_bw, "bf16_matmul_flops_per_s": mm, "copy_bytes": n, "matmul_n": m}


def build(torch, name: str):
    from transformers import AutoConfig, AutoModelForCausalLM

    raw = dict(json.loads((CATALOG / (name.replace("/", "--") + ".json")).read_text())["config"])
    raw.pop("quantization_config", None)
    raw.pop("architectures", None)
    model_type = raw.pop("model_type")
    cfg = AutoConfig.for_model(model_type, **raw)
    dtype_name = raw.get("torch_dtype") or raw.get("dtype") or "bfloat16"
    dtype = getattr(torch, dtype_name) if dtype_name in ("float16", "bfloat16") else torch.bfloat16
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    model.eval()
    return model, str(dtype).removeprefix("torch.")


def prefill_decode(torch, model, ids, steps: int) -> tuple[float, list[float]]:
    """(TTFT seconds, per-step decode seconds) of greedy decoding by hand with the model's KV cache."""
    with torch.inference_mode():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        nxt = out.logits[:, -1, :].argmax(-1, keepdim=True)
        torch.cuda.synchronize()
        ttft = time.perf_counter() - t0
        past = out.past_key_values
        del out
        step_times = []
        for _ in range(steps):
            t = time.perf_counter()
            out = model(input_ids=nxt, past_key_values=past, use_cache=True)
            nxt = out.logits[:, -1, :].argmax(-1, keepdim=True)
            torch.cuda.synchronize()
            step_times.append(time.perf_counter() - t)
            past = out.past_key_values
            del out
        del past
    return ttft, step_times


def timed_generate(torch, model, ids, new_tokens: int) -> float:
    with torch.inference_mode():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model.generate(
            input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens, min_new_tokens=new_tokens,
            do_sample=False, pad_token_id=0,
        )
        torch.cuda.synchronize()
        return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--input-tokens", type=int, default=512)
    ap.add_argument("--output-tokens", type=int, default=64)
    ap.add_argument("--budget-s", type=float, default=420, help="start no new model after this many seconds")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    began = time.perf_counter()

    nvml = Nvml()
    baseline_used = nvml.used()  # before this process creates a CUDA context
    import torch
    import transformers

    torch.cuda.init()
    torch.zeros(1, device="cuda")
    context_used = nvml.used()
    result = {
        "schema": "infer_advisor.benchmarks.gpu.measure_transformers/1",
        "command": " ".join(["python3", *sys.argv]),
        "gpu": torch.cuda.get_device_name(0),
        "gpu_total_bytes": torch.cuda.get_device_properties(0).total_memory,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version()},
        "input_tokens": args.input_tokens,
        "output_tokens": args.output_tokens,
        "nvml_used_before_cuda_bytes": baseline_used,
        "nvml_used_after_cuda_init_bytes": context_used,
        "ceilings": ceilings(torch),
        "models": [],
    }
    out = Path(args.out)

    def save():
        out.write_text(json.dumps(result, indent=1))

    save()
    print(f"ceilings: {result['ceilings']}", flush=True)
    for name in args.models.split(","):
        if time.perf_counter() - began > args.budget_s:
            result["models"].append({"model": name, "skipped": "time budget spent"})
            save()
            continue
        entry = {"model": name, "points": []}
        result["models"].append(entry)
        try:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            t = time.perf_counter()
            model, dtype = build(torch, name)
            torch.cuda.synchronize()
            entry.update(
                dtype=dtype, build_s=time.perf_counter() - t,
                weights_allocated_bytes=torch.cuda.memory_allocated(),
                attn_implementation=getattr(model.config, "_attn_implementation", None),
                experts_implementation=getattr(model.config, "_experts_implementation", None),
                num_parameters=sum(p.numel() for p in model.parameters()),
            )
            vocab = model.config.vocab_size
            for batch in [int(b) for b in args.batches.split(",")]:
                ids = torch.randint(100, vocab - 1, (batch, args.input_tokens), device="cuda")
                prefill_decode(torch, model, ids, 3)  # warm-up
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
                ttft, steps = prefill_decode(torch, model, ids, args.output_tokens - 1)
                nvml_peak = nvml.used()
                peak_alloc, peak_reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
                # again with the allocator warm (its cached blocks kept), as a server after its first requests
                ttft_warm, steps_warm = prefill_decode(torch, model, ids, args.output_tokens - 1)
                point = {
                    "batch": batch,
                    "ttft_s": ttft,
                    "decode_step_s_median": statistics.median(steps),
                    "decode_step_s_mean": statistics.fmean(steps),
                    "decode_step_s_min": min(steps),
                    "decode_step_s": steps,
                    "peak_allocated_bytes": peak_alloc,
                    "peak_reserved_bytes": peak_reserved,
                    "ttft_s_warm": ttft_warm,
                    "decode_step_s_warm_median": statistics.median(steps_warm),
                    "decode_step_s_warm": steps_warm,
                    "nvml_peak_used_bytes": nvml_peak,
                }
                point["decode_tokens_per_s_aggregate"] = batch / point["decode_step_s_median"]
                try:
                    e2e = timed_generate(torch, model, ids, args.output_tokens)
                    point["generate_e2e_s"] = e2e
                    point["generate_tokens_per_s_per_request"] = args.output_tokens / e2e
                    point["generate_tokens_per_s_aggregate"] = batch * args.output_tokens / e2e
                except Exception as err:  # noqa: BLE001 - keep the hand-timed point
                    point["generate_error"] = f"{type(err).__name__}: {err}"[:300]
                entry["points"].append(point)
                save()
                print(
                    f"{name} b={batch}: ttft {ttft * 1e3:.1f} ms, step {point['decode_step_s_median'] * 1e3:.2f} ms "
                    f"({point['decode_tokens_per_s_aggregate']:.0f} tok/s), warm: ttft {ttft_warm * 1e3:.1f} ms step {point['decode_step_s_warm_median'] * 1e3:.2f} ms, gen {point.get('generate_tokens_per_s_aggregate', 0):.0f} tok/s, "
                    f"peak alloc {point['peak_allocated_bytes'] / 2**30:.2f} GiB, nvml {nvml_peak / 2**30:.2f} GiB",
                    flush=True,
                )
                del ids
            del model
        except Exception as err:  # noqa: BLE001 - record and go on with the next model
            entry["error"] = f"{type(err).__name__}: {err}"[:500]
            print(f"{name}: {entry['error']}", flush=True)
            model = None
        torch.cuda.empty_cache()
        save()
    result["elapsed_s"] = time.perf_counter() - began
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
