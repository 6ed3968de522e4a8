"""The KV figures an engine prints, against its own logs and its source (data/engine_kv_report.yaml)."""

import pytest

from infer_advisor.engines.kv_report import kv_report
from infer_advisor.estimate.engine_kv import engine_kv_figures
from infer_advisor.estimate.memory import kv_bytes_per_token_per_gpu
from infer_advisor.model_facts import resolve_model

GiB = 2**30


def figures(name: str, version: str, free_gib: float, context: int, mnbt: int = 8192, engine: str = "vllm"):
    model = resolve_model(name, source="catalog")
    full, slide = kv_bytes_per_token_per_gpu(model, 2, tp=1, pp=1)
    return engine_kv_figures(
        model, kv_report(engine, version), free_bytes=free_gib * GiB, full_tok=full, slide_tok=slide, state=0.0, pp=1,
        context=context, mnbt=mnbt, block=16, capacity_tokens=int(free_gib * GiB // (full + slide)),
    )


def test_versions_pick_the_counting_rule_their_source_uses():
    assert kv_report("vllm", "0.6.4").printed_tokens == "all_layers"
    assert kv_report("vllm", "0.8.5").printed_tokens == "all_layers"
    assert kv_report("vllm", "0.19.0").printed_tokens == "layer_slots"
    assert kv_report("vllm", "0.20.0").printed_tokens == "layer_slots"
    assert kv_report("vllm", "0.21.0").printed_tokens == "concurrency"
    assert kv_report("vllm", "0.33.0").printed_tokens == "concurrency"
    assert kv_report("sglang", "0.5.9").printed_tokens == "pool_tokens"
    assert kv_report("tgi", "3.3.6").printed_tokens == "pool_tokens"  # no entry: the plan's own capacity


def test_gemma3_27b_slots_match_its_vllm_019_log():
    """llm-d-planner's vLLM 0.19 log: 'Available KV cache memory: 19.53 GiB', 'Add 8 padding layers', 'GPU KV cache size:
    36,560 tokens', 'Maximum concurrency for 8,192 tokens per request: 4.46x' (10 full + 52 sliding layers -> 7 groups
    of 10 = 70 slots of 8 KiB per token)."""
    figs = figures("google/gemma-3-27b-it", "0.19.0", 19.53, 8192)
    assert figs.tokens == 36_560
    assert figs.max_concurrency == pytest.approx(4.46, abs=0.01)
    assert figs.starts and figs.refusal is None


def test_full_attention_prints_the_effective_capacity_in_every_version():
    for version in ("0.6.4", "0.8.5", "0.19.0", "0.24.0"):
        figs = figures("meta-llama/Llama-3.1-8B", version, 58.11, 8192)
        assert abs(figs.tokens - 476_016) <= 8192 // 16 * 16, version  # llm-d: 58.11 GiB -> 476,016 tokens


def test_from_021_the_figure_is_concurrency_times_max_model_len():
    old = figures("google/gemma-3-27b-it", "0.20.0", 19.53, 32768, mnbt=2048)
    new = figures("google/gemma-3-27b-it", "0.21.0", 19.53, 32768, mnbt=2048)
    assert new.tokens == int(new.max_concurrency * 32768)
    assert new.tokens > 2 * old.tokens  # window-capped sliding layers: far more than the 70-slot count


def test_refusals_copy_the_engines_text_per_version():
    assert figures("openai/gpt-oss-120b", "0.10.1", -2.14, 131072).refusal.startswith("No available memory for the cache blocks.")
    late = figures("meta-llama/Llama-3.1-8B", "0.19.0", 3.69, 131072)
    assert not late.starts
    assert late.refusal.startswith("To serve at least one request with the models's max seq len (131072), (16.0 GiB KV cache")
    assert "estimated maximum model length is" in late.refusal and late.refusal.endswith("for more details.")
    newest = figures("meta-llama/Llama-3.1-8B", "0.33.0", 3.69, 131072)
    assert newest.refusal.startswith("To serve at least one request with the model's max seq len (131072)")
    v0 = figures("meta-llama/Llama-3.1-8B", "0.6.4", 2.89, 29000)
    assert v0.refusal == (
        f"The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache "
        f"({v0.tokens}). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
    )
    assert abs(v0.tokens - 23_648) <= 16  # vllm issue 10517: 2.89 GiB -> 1478 blocks = 23,648 tokens


@pytest.mark.parametrize("version, free_gib, context, mnbt, mtp, printed, pages", [
    # batch 7 (vLLM 0.21.1rc1, two DGX Spark, MTP): 'Available KV cache memory: 18.65 GiB' / 'GPU KV cache size: 1,001,650'
    ("0.21.1", 18.65, 200_000, 8192, 1, 1_001_650, 3756),
    # batch 8 (vLLM 0.25.1 inferred, MI355X): 'Available KV cache memory: 191.04 GiB' / 'GPU KV cache size: 1,041,802'
    ("0.25.1", 191.04, 4096, 2048, 0, 1_041_802, 774),
])
def test_deepseek_v4_printed_tokens_follow_vllms_page_groups(version, free_gib, context, mnbt, mtp, printed, pages):
    """From the printed KV memory, vLLM's DeepSeek-V4 page groups give the printed token figure within 2% (the plan's
    compressed bytes per token gave ~18x it). By hand: the full group's pages are 37,440 (21 ratio-4 layers: 64 rows of
    584 B, aligned to 576), 1,728 (20 ratio-128 layers: 2 rows) and 8,640 (21 indexers: 64 rows of 132 B), 1,002,240 B
    in all; one request holds ceil(context / 256) of them, 35 or 131 window pages per sliding layer (block 64), 515 or
    2,051 pages of each ratio-4 compressor state (block 4, window 8) and 273 or 1,041 of each ratio-128 one (block 8,
    window 128): ``pages`` full-group pages in all."""
    from infer_advisor.estimate.engine_kv_deepseek_v4 import deepseek_v4_printed

    model = resolve_model("deepseek-ai/DeepSeek-V4-Flash", source="catalog")
    tokens, concurrency = deepseek_v4_printed(model, version=version, free_bytes=free_gib * GiB, context=context, mnbt=mnbt,
                                              mtp_layers=mtp)
    assert tokens == pytest.approx(printed, rel=0.02)
    assert tokens == int(concurrency * context)
    blocks_per_gb = concurrency * pages / (free_gib * GiB)
    # up to 0.22: 47,808 B (the full group's three page sizes) x 22 layer tuples per block; from 0.23: the page-size
    # buckets, 37,440 x 22 + 1,728 x 20 + 8,640 x 21 = 1,039,680 B per block
    assert 1 / blocks_per_gb == pytest.approx(47_808 * 22 if version < "0.23" else 1_039_680, rel=1e-3)
    assert deepseek_v4_printed(resolve_model("Qwen/Qwen3-8B", source="catalog"), version=version, free_bytes=GiB,
                               context=4096, mnbt=2048, mtp_layers=0) is None
