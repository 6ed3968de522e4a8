"""CTranslate2 methods end to end in the dev venv (ctranslate2 4.8.5 is a dev dependency), through the CLI."""

from __future__ import annotations

import json

import pytest

from infer_advisor._output import MANIFEST, read_manifest
from infer_advisor.cli import main


def _run_json(capsys, *args: str) -> dict:
    code = main(["quantize", *args, "--json", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_ct2_int8_converts_and_generates(tiny_llama, tmp_path, capsys):
    out = tmp_path / "int8"
    result = _run_json(capsys, "--model", str(tiny_llama), "--method", "ct2-int8", "--out", str(out))
    assert result["method"] == "ct2-int8" and result["backend"] == "ct2"
    assert (out / "model.bin").is_file() and (out / "tokenizer.json").is_file()
    assert result["output_bytes"] == (out / "model.bin").stat().st_size
    assert result["ratio"] < 0.35  # int8 Linear weights vs float32 source (embeddings/lm_head also int8 in CT2)
    check = result["check"]
    assert check["status"] == "passed" and check["loaded"] and check["tokens_generated"] == 8
    assert "int8" in check["runtime"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging dir left behind

    # Ground truth outside the code under test: CTranslate2 itself loads the directory and generates.
    import ctranslate2
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(out)
    start = tokenizer.convert_ids_to_tokens(tokenizer("The quick brown fox")["input_ids"])
    generator = ctranslate2.Generator(str(out), device="cpu")
    step = generator.generate_batch([start], max_length=4, min_length=4, sampling_topk=1, include_prompt_in_result=False)
    assert len(step[0].sequences_ids[0]) == 4


def test_ct2_float32_perplexity_matches_transformers(tiny_llama, tmp_path, capsys):
    result = _run_json(
        capsys, "--model", str(tiny_llama), "--method", "ct2-float32", "--out", str(tmp_path / "f32"), "--eval"
    )
    check = result["check"]
    assert check["eval_tokens"] > 100
    # Same weights, same tokens: CTranslate2's float32 scores agree with transformers' to rounding.
    assert check["perplexity_after"] == pytest.approx(check["perplexity_before"], rel=1e-3)


def test_ct2_int8_float16_loads_on_cpu_with_a_note(tiny_llama, tmp_path, capsys):
    result = _run_json(
        capsys, "--model", str(tiny_llama), "--method", "ct2-int8_float16", "--out", str(tmp_path / "i8f16"), "--eval"
    )
    assert result["check"]["status"] == "passed"
    assert any("CPU cannot compute int8_float16" in note for note in result["notes"])
    before, after = result["check"]["perplexity_before"], result["check"]["perplexity_after"]
    assert after == pytest.approx(before, rel=0.1)  # int8 changes a random tiny model's perplexity only a little


def test_force_replaces_and_no_force_refuses(tiny_llama, tmp_path, capsys):
    out = tmp_path / "model"
    _run_json(capsys, "--model", str(tiny_llama), "--method", "ct2-int8", "--out", str(out))
    first = (out / "model.bin").stat().st_size
    (out / "marker").write_text("old output")

    code = main(["quantize", "--model", str(tiny_llama), "--method", "ct2-float32", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "exists already. Pass --force" in err
    assert (out / "marker").exists()

    # --force replaces only what infer-advisor wrote: a folder holding a file of the user's is refused, kept whole.
    code = main(["quantize", "--model", str(tiny_llama), "--method", "ct2-float32", "--out", str(out), "--force"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "did not write (marker)" in err
    assert (out / "marker").read_text() == "old output" and (out / "model.bin").stat().st_size == first

    (out / "marker").unlink()
    _run_json(capsys, "--model", str(tiny_llama), "--method", "ct2-float32", "--out", str(out), "--force")
    assert (out / "model.bin").stat().st_size > 3 * first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    assert sorted(read_manifest(out)["files"]) == sorted(p.name for p in out.iterdir() if p.name != MANIFEST)


def test_text_output_marks_every_figure_as_measured(tiny_llama, tmp_path, capsys):
    code = main(["quantize", "--model", str(tiny_llama), "--method", "ct2-int8", "--out", str(tmp_path / "o"), "--eval"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary, check, generated, perplexity, *notes = captured.out.splitlines()
    assert summary.startswith("ct2-int8 (ct2): 1.6 MiB -> ") and "(measured)" in summary
    assert check.startswith("check: passed [ctranslate2 4.8.5 (cpu")
    assert "generated 8 tokens (measured)" in generated
    assert "perplexity on" in perplexity and "(measured)" in perplexity
    assert notes == ["note: Converted with CTranslate2 4.8.5, quantization=int8."]
    assert "(measured)" not in captured.err  # the summary is printed once, on stdout
    assert "converting with CTranslate2" in captured.err  # progress goes to stderr
