"""`plan --speculative-config`: the draft vLLM would load is in the plan's memory and in its command, and nothing else
pretends to take it (engines/draft_shape.py, estimate/draft.py)."""

from __future__ import annotations

import json

import pytest

from infer_advisor.errors import RequestError
from infer_advisor.plan import advise

MODEL = "nvidia/Qwen3.6-27B-NVFP4"  # 16 full-attention + 48 gated-DeltaNet layers and 1 MTP layer in its config
MTP = '{"method": "mtp", "num_speculative_tokens": 3}'


def _plan(**options):
    return advise(model=MODEL, gpu="RTX-PRO-6000", engine="vllm", context=65536, speed=False, **options)


def test_mtp_is_in_the_memory_and_the_command():
    plain, spec = _plan(), _plan(speculative_config=MTP)
    assert spec.speculative is not None and spec.speculative.method == "mtp"
    assert spec.memory.draft_weights_bytes_per_gpu > 0 == plain.memory.draft_weights_bytes_per_gpu
    # one more full-attention layer per token and 3 more state pages per request: fewer tokens from the same bytes
    assert spec.memory.kv_cache_bytes_per_token_per_gpu == pytest.approx(plain.memory.kv_cache_bytes_per_token_per_gpu * 17 / 16)
    assert spec.memory.engine_kv_cache_tokens < plain.memory.engine_kv_cache_tokens
    from infer_advisor.engines.argv import vllm_flags

    argv = vllm_flags(spec, MODEL)
    word = next(w for w in argv if w.startswith("--speculative-config"))
    value = word.split("=", 1)[1] if "=" in word else argv[argv.index(word) + 1]
    assert json.loads(value) == json.loads(MTP)
    assert not any(w.startswith("--speculative-config") for w in vllm_flags(plain, MODEL))


def test_other_engines_refuse_it_and_bad_configs_are_refused():
    plan = advise(model=MODEL, gpu="RTX-PRO-6000", engine="sglang", context=65536, speed=False, speculative_config=MTP)
    assert not plan.feasible and "--speculative-config is planned for vllm only" in plan.infeasible_reason
    with pytest.raises(RequestError):
        _plan(speculative_config='{"method": "mtp", "num_speculative_tokens": 0}')
    with pytest.raises(RequestError, match="no MTP layers"):
        advise(model="meta-llama/Llama-3.1-8B", gpu="H100", engine="vllm", speed=False, speculative_config=MTP)
