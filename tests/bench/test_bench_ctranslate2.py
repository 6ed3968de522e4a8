"""CT2 int8 conversion (infer_advisor.quantize) -> bench --engine ctranslate2; and --random-weights with transformers."""

from __future__ import annotations

import pytest

from infer_advisor.bench import BenchReport, bench
from tests.bench.checks import check_consistent as _check_consistent


def test_ctranslate2_int8_bench(tiny_ct2, tmp_path):
    import ctranslate2
    from transformers import AutoTokenizer

    out = tmp_path / "ct2"
    report = bench(
        "ctranslate2", tiny_ct2, concurrency=[1, 4], output_tokens=10, num_prompts=4, out=out, progress=False
    )
    assert report.complete and report.metadata.engine == "ctranslate2"
    assert report.metadata.versions["ctranslate2"] == ctranslate2.__version__
    _check_consistent(report, 10)
    # Token counts agree with CTranslate2 generating the same prompt by itself (no callback, no bench code).
    tok = AutoTokenizer.from_pretrained(tiny_ct2)
    gen = ctranslate2.Generator(str(tiny_ct2), device="cpu")
    prompt = tok.convert_ids_to_tokens(tok("Why is the sky blue during the day and red at sunset?")["input_ids"])
    res = gen.generate_batch([prompt], max_length=10, min_length=10, sampling_topk=1, include_prompt_in_result=False)
    assert len(res[0].sequences_ids[0]) == 10
    assert BenchReport.model_validate_json((out / "bench.json").read_text()).levels == report.levels


def test_ctranslate2_without_ignore_eos_counts_to_eos(tiny_ct2):
    report = bench(
        "ctranslate2", tiny_ct2, concurrency=[2], output_tokens=30, num_prompts=2, ignore_eos=False, progress=False
    )
    for s in report.requests:
        assert 1 <= s.output_tokens <= 30
        assert len(s.itl_s) == s.output_tokens - 1


def test_random_weights_from_config(tiny_llama, monkeypatch):
    """--random-weights builds the architecture from model_facts' config: no weights are read."""
    import transformers

    def no_weights(*a, **k):  # the real weights must not be loaded on this path
        raise AssertionError("from_pretrained called with --random-weights")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_weights)
    report = bench(
        "transformers", tiny_llama, random_weights=True, concurrency=[2], output_tokens=5, num_prompts=2, progress=False
    )
    assert report.metadata.random_weights is True
    assert any("random weights" in n for n in report.notes)
    _check_consistent(report, 5)


def test_random_weights_catalog_model_without_tokenizer(monkeypatch):
    """A catalog model (no local files, offline): prompts become random ids of about the prompt's length."""
    monkeypatch.setenv("INFER_ADVISOR_OFFLINE", "1")
    report = bench(
        "transformers",
        "Qwen/Qwen2.5-0.5B",
        random_weights=True,
        concurrency=[1],
        output_tokens=2,
        num_prompts=1,
        warmup=0,
        progress=False,
    )
    assert report.metadata.random_weights and any("No tokenizer" in n for n in report.notes)
    s = report.requests[0]
    text = "Write a short story about a robot who learns to paint."
    assert s.input_tokens == round(len(text) / 4.0) and s.output_tokens == 2


def test_random_weights_rejected_for_other_engines():
    from infer_advisor.errors import RequestError

    with pytest.raises(RequestError, match="random-weights"):
        bench("ctranslate2", "x", random_weights=True)
