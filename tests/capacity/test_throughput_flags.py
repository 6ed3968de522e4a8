"""The throughput-flag audit (benchmarks/published/throughput_flags.yaml) against the argv builder itself."""

from __future__ import annotations

from pathlib import Path

import yaml

from infer_advisor.engines.argv import llamacpp_flags
from infer_advisor.plan import advise

AUDIT = yaml.safe_load((Path(__file__).resolve().parents[2] / "benchmarks" / "published" / "throughput_flags.yaml")
                       .read_text(encoding="utf-8"))


def test_every_entry_says_what_is_emitted_assumed_and_where_it_came_from():
    for f in AUDIT["flags"]:
        assert f["status"] in ("matches", "fixed", "gap") and f["source"] and f["simulator"] and f["emitted"], f


def test_llama_server_gets_a_unified_kv_cache_and_no_host_prompt_cache_unless_a_prefix_is_shared():
    plan = advise(model="meta-llama/Llama-3.1-8B", gpu="H200", engine="llama.cpp", quantization="gguf-q4_k_m",
                  concurrency=4)
    argv = llamacpp_flags(plan, "model.gguf")
    assert "--kv-unified" in argv and argv[argv.index("--cache-ram") + 1] == "0"
    shared = advise(model="meta-llama/Llama-3.1-8B", gpu="H200", engine="llama.cpp", quantization="gguf-q4_k_m",
                    concurrency=4, input_tokens=2000, shared_prefix_tokens=1500)
    assert "--cache-ram" not in llamacpp_flags(shared, "model.gguf")
    one = advise(model="meta-llama/Llama-3.1-8B", gpu="H200", engine="llama.cpp", quantization="gguf-q4_k_m",
                 concurrency=1, goal="throughput", max_num_seqs=1)
    assert "--kv-unified" not in llamacpp_flags(one, "model.gguf")  # one slot: nothing to unify


def test_llama_server_slots_are_the_slots_the_plan_simulated():
    # llama-server reserves `--parallel N` slots; a request waits for a free one: the simulator must run the same N
    from infer_advisor import advise as advise_sized

    plan = advise_sized(model="meta-llama/Llama-3.1-8B", gpu="H200", engine="llama.cpp", quantization="gguf-f16",
                        input_tokens=1137, output_tokens=200, rate=1.0, headroom=False)
    argv = llamacpp_flags(plan, "model.gguf")
    chosen = plan.capacity.chosen
    assert int(argv[argv.index("--parallel") + 1]) == chosen.max_num_seqs == plan.engine.max_num_seqs
    assert int(argv[argv.index("-c") + 1]) == plan.engine.max_model_len * chosen.max_num_seqs
