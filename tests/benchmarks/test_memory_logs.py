"""benchmarks/memory_logs.py and its data: every published log is complete, sourced, and predicted end to end."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.support.modules import module_from_path

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def ml():
    return module_from_path(ROOT / "benchmarks" / "memory_logs.py")


REQUIRED = ("id", "source", "published", "quoted", "engine", "engine_version", "gpu", "tp", "model", "dtype", "quantization",
            "max_model_len", "gpu_memory_utilization", "measured", "kv_cache_tokens_from")


def test_every_log_is_complete_and_sourced(ml):
    logs = ml.entries()
    assert len(logs) >= 15
    ids = [e["id"] for e in logs]
    assert len(ids) == len(set(ids))
    for e in logs:
        for key in REQUIRED:
            if key == "gpu_memory_utilization" and e["engine"] == "sglang" and e.get("gpu_memory_utilization_note"):
                continue  # SGLang computes mem_fraction_static itself; a log that neither prints nor passes it says so
            assert e.get(key) not in (None, ""), (e["id"], key)
        if e.get("outcome") == "refused" or e.get("weights_only"):  # no KV capacity: what the engine printed instead
            assert e["measured"]["kv_cache_tokens"] == 0 and (e["measured"].get("kv_cache_gib") is not None or e["measured"].get("weights_gib"))
        else:
            assert e["measured"]["kv_cache_tokens"] > 0
        for other in e.get("calibrate_from", []):
            assert other in ids and other != e["id"]
        if e.get("derived"):
            assert e["kv_cache_tokens_from"].startswith("derived")
    assert len({e["gpu"] for e in logs}) >= 6 and {e["tp"] for e in logs} >= {1, 2, 4, 8}
    assert len({e["engine_version"] for e in logs}) >= 8


def test_before_figures_cover_every_log(ml):
    import json

    before = json.loads(ml.BEFORE.read_text())["predictions"]
    assert set(before) == {e["id"] for e in ml.entries() if e.get("collected") not in ml.BATCHES}


def test_each_prospective_batch_was_predicted_before_it_was_used(ml):
    """Every log of a prospective batch has a prediction in that batch's file, made by the code named there."""
    import json

    for batch, (path, _code) in ml.BATCHES.items():
        frozen = json.loads(path.read_text())["predictions"]
        assert set(frozen) == {e["id"] for e in ml.entries() if e.get("collected") == batch}, batch


def test_new_logs_have_frozen_predictions(ml):
    """Every log collected for issue 23 was predicted by the code frozen before any issue-23 change (prospective)."""
    import json

    frozen = json.loads(ml.PROSPECTIVE.read_text())["predictions"]
    new = [e for e in ml.entries() if e.get("collected") == "issue-23"]
    assert len(new) >= 20 and set(frozen) == {e["id"] for e in new}
    for e in new:
        assert e["source"].startswith("https://github.com/") and e["quoted"]
        assert {"kv_cache_tokens", "kv_cache_gib", "weights_gib", "outcome"} <= set(frozen[e["id"]])


def test_one_log_end_to_end(ml):
    by_id = {e["id"]: e for e in ml.entries()}
    e = by_id["issue10517-llama31-8b-rtx3090-29k"]
    with tempfile.TemporaryDirectory() as tmp:
        model = ml.model_ref(e, by_id, Path(tmp))
        now = ml.predict(e, model)
        same = ml.predict(e, model, ml.calibration_from(e, model))
        other = ml.predict(e, model, ml.calibration_from(by_id["issue10517-llama31-8b-rtx3090-20k"], model))
    assert abs(ml.err(same, 23_648)) < 0.5
    assert abs(ml.err(other, 23_648)) < abs(ml.err(now, 23_648))


def test_a_model_outside_the_catalog_gets_its_transcribed_config(ml):
    by_id = {e["id"]: e for e in ml.entries()}
    with tempfile.TemporaryDirectory() as tmp:
        ref = ml.model_ref(by_id["llmd-017-qwen3-14b-h100"], by_id, Path(tmp))
        assert (Path(ref) / "config.json").is_file()
        assert ml.predict(by_id["llmd-017-qwen3-14b-h100"], ref) > 0


def test_batch3_was_predicted_before_it_was_graded(ml):
    """Batch 3 (issue 23, session 3): at least 20 logs never used before, each sourced and quoted, with the token figure it
    printed in its quote (derived figures say so), and predicted by the frozen code (recorded in the file) before any change made in response."""
    import json

    path, frozen = ml.BATCHES["issue-23c"]
    data = json.loads(path.read_text())
    new = [e for e in ml.entries() if e.get("collected") == "issue-23c"]
    assert len(new) >= 20 and data["batch"] == "issue-23c" and data["code_commit"] and frozen
    older = {e["source"] for e in ml.entries() if e.get("collected") != "issue-23c"}
    for e in new:
        assert e["source"].startswith("https://github.com/") and e["source"] not in older, e["id"]
        tokens = e["measured"]["kv_cache_tokens"]
        if tokens and not e.get("derived"):  # a printed figure is in the quote as the engine (or the sweep's record) wrote it
            assert f"{tokens:,}" in e["quoted"] or f'"kv_cache_tokens": {tokens}' in e["quoted"], e["id"]
        elif tokens:
            assert e["kv_cache_tokens_from"].startswith("derived"), e["id"]
        p = data["predictions"][e["id"]]
        assert p["outcome"] in ("starts", "refused") and p["kv_cache_gib"] >= 0 and 0 < p["weights_gib"] < 200, e["id"]


def test_batch4_was_predicted_before_it_was_graded(ml):
    """Batch 4 (issue 23, session 4): at least 20 logs never used before, each sourced and quoted (a URL, or a public GitHub
    file named by its stored-index id where the repository name was not recovered), the printed token figure in its quote,
    and predicted by the frozen code of the session's merged main (recorded in the file) before any grading."""
    import json

    path, frozen = ml.BATCHES["issue-23d"]
    data = json.loads(path.read_text())
    new = [e for e in ml.entries() if e.get("collected") == "issue-23d"]
    assert len(new) >= 20 and data["batch"] == "issue-23d" and data["code_commit"] and frozen
    older = {e["source"] for e in ml.entries() if e.get("collected") != "issue-23d"}
    for e in new:
        s = e["source"]
        assert (s.startswith("https://") or "stored-index file id" in s) and s not in older, e["id"]
        assert e["quoted"] and len({e["gpu"], e["model"]}) == 2, e["id"]
        tokens = e["measured"]["kv_cache_tokens"]
        if tokens and not e.get("derived"):  # the printed figure (or the blocks it is counted from) is in the quote
            blocks = e["kv_cache_tokens_from"].split(" blocks")[0]
            assert f"{tokens:,}" in e["quoted"] or str(tokens) in e["quoted"] or (blocks.isdigit() and blocks in e["quoted"]), e["id"]
        p = data["predictions"][e["id"]]
        assert p["outcome"] in ("starts", "refused") and p["kv_cache_gib"] >= 0 and 0 < p["weights_gib"] < 300, e["id"]


def test_batch5_was_predicted_before_it_was_graded(ml):
    """Batch 5 (issue 23, session 4, memlogs5): at least 15 logs never used before, each sourced and quoted (a URL, or a
    public GitHub file named by its stored-index id), the printed token figure in its quote, TP > 1 among them, and
    predicted by the frozen code of the session's merged main (recorded in the file) before any grading."""
    import json

    path, frozen = ml.BATCHES["issue-23e"]
    data = json.loads(path.read_text())
    new = [e for e in ml.entries() if e.get("collected") == "issue-23e"]
    assert len(new) >= 15 and data["batch"] == "issue-23e" and data["code_commit"] and frozen
    assert {e["tp"] for e in new} >= {1, 2, 4} and {e["quantization"] for e in new} >= {"none", "awq", "gptq", "fp8"}
    older = {e["source"] for e in ml.entries() if e.get("collected") != "issue-23e"}
    for e in new:
        s = e["source"]
        assert (s.startswith("https://") or "stored-index file id" in s) and s not in older, e["id"]
        tokens = e["measured"]["kv_cache_tokens"]
        if tokens:  # the printed (or stated) figure is in the quote as written
            assert f"{tokens:,}" in e["quoted"] or str(tokens) in e["quoted"], e["id"]
        else:
            assert e.get("outcome") == "refused" and e["measured"]["weights_gib"], e["id"]
        p = data["predictions"][e["id"]]
        assert p["outcome"] in ("starts", "refused") and p["kv_cache_gib"] >= 0 and 0 < p["weights_gib"] < 300, e["id"]


def _batch(ml, batch: str, min_logs: int) -> tuple[list[dict], dict]:
    """A prospective batch's new entries and its predictions file, after the checks every batch shares: enough logs,
    the file names its batch and the commit that predicted it, and each source is new, sourced, and predicted."""
    import json

    path, frozen = ml.BATCHES[batch]
    data = json.loads(path.read_text())
    new = [e for e in ml.entries() if e.get("collected") == batch]
    assert len(new) >= min_logs and data["batch"] == batch and data["code_commit"] and frozen
    older = {e["source"] for e in ml.entries() if e.get("collected") != batch}
    for e in new:
        s = e["source"]
        assert (s.startswith("https://") or "stored-index file id" in s) and s not in older, e["id"]
        p = data["predictions"][e["id"]]
        assert p["outcome"] in ("starts", "refused") and p["kv_cache_gib"] >= 0 and 0 < p["weights_gib"] < 300, e["id"]
    return new, data


def _weights_and_printed_tokens(e: dict) -> None:
    """The 'Model loading took' figure in the quote, and the printed token figure as written (or a refusal)."""
    assert e["measured"]["weights_gib"] > 0 and str(e["measured"]["weights_gib"]) in e["quoted"], e["id"]
    tokens = e["measured"]["kv_cache_tokens"]
    if tokens:  # the printed figure is in the quote as written
        assert f"{tokens:,}" in e["quoted"] or str(tokens) in e["quoted"], e["id"]
    else:
        assert e.get("outcome") == "refused", e["id"]


def _printed_figures(new: list[dict], min_weights: int) -> None:
    """Each log's token figure printed and in its quote as written; where a weights figure is entered, it too is in the
    quote (or the log was refused); at least ``min_weights`` logs carry a weights figure."""
    for e in new:
        assert e["kv_cache_tokens_from"] == "printed", e["id"]
        if e["measured"].get("weights_gib"):
            _weights_and_printed_tokens(e)
        else:  # no weights line: the printed token figure alone, as written
            tokens = e["measured"]["kv_cache_tokens"]
            assert tokens > 0 and f"{tokens:,}" in e["quoted"], e["id"]
    assert sum(1 for e in new if e["measured"].get("weights_gib")) >= min_weights


def _unused_quotes(ml, batch: str, new: list[dict]) -> None:
    """No new entry's source or quote is one an earlier batch already used."""
    older = [e for e in ml.entries() if e.get("collected") != batch]
    used = {e["source"] for e in older} | {e["quoted"] for e in older}
    for e in new:
        assert e["source"] not in used and e["quoted"] not in used, e["id"]


def _file_id_sources(new: list[dict], min_sources: int, max_per_source: int = 3, id_digits: str = "10,12") -> None:
    """At least ``min_sources`` stored-index files among the new entries, at most ``max_per_source`` logs from one."""
    import re
    from collections import Counter

    per_source = Counter(re.search(rf"file ids? (\d{{{id_digits}}})", e["source"])[1] for e in new)
    assert len(per_source) >= min_sources and max(per_source.values()) <= max_per_source


def _tokens_quoted(e: dict) -> None:
    """The printed token figure, positive and in the quote as written (with or without thousands separators)."""
    tokens = e["measured"]["kv_cache_tokens"]
    assert tokens > 0 and (f"{tokens:,}" in e["quoted"] or str(tokens) in e["quoted"]), e["id"]


def _tokens_and_weights_quoted(e: dict) -> None:
    """The token figure as written, and the weights figure in the quote wherever one is entered."""
    _tokens_quoted(e)
    if e["measured"].get("weights_gib"):
        assert str(e["measured"]["weights_gib"]) in e["quoted"], e["id"]


def _source_counts(new: list[dict]) -> dict[str, int]:
    """Logs per source: its stored-index file id where the source names one, else the source itself (a URL)."""
    import re
    from collections import Counter

    found = [re.search(r"file ids? (\d{9,12})", e["source"]) for e in new]
    return Counter(m[1] if m else e["source"] for m, e in zip(found, new))


def _kv_figures_traced(e: dict, version_notes: tuple[str, ...] = ("stated", "inferred")) -> None:
    """The token figure as written in the quote (a V0 log's printed GPU blocks x 16, where it was derived from them), the
    weights figure as written wherever one is entered, and a version not in the quote said to be one of ``version_notes``."""
    import re

    tokens, how = e["measured"]["kv_cache_tokens"], e["kv_cache_tokens_from"]
    if how.startswith("derived"):
        blocks = re.search(r"(\d+) printed GPU blocks x 16", how)
        assert blocks and tokens == int(blocks[1]) * 16 and f"# GPU blocks: {blocks[1]}" in e["quoted"], e["id"]
    else:
        _tokens_and_weights_quoted(e)
        assert how.startswith(("printed", "stated")), e["id"]
    if e["engine_version"] not in e["quoted"]:
        assert e["version_note"].startswith(version_notes), e["id"]


def test_batch6_was_predicted_before_it_was_graded(ml):
    """Batch 6 (issue 23, session 5, memlogs6): at least 20 logs never used before, each sourced and quoted (a URL, or a
    public GitHub file named by its stored-index id), the printed token figure in its quote, every one with a
    'Model loading took' figure, and predicted by the frozen code of the session's merged main before any grading."""
    new, _ = _batch(ml, "issue-23f", 20)
    assert {e["tp"] for e in new} >= {1, 4} and {e["quantization"] for e in new} >= {"none", "awq", "gptq", "fp8", "nvfp4"}
    for e in new:
        _weights_and_printed_tokens(e)


def test_batch7_was_predicted_before_it_was_graded(ml):
    """Batch 7 (issue 23, session 5, memlogs7): at least 20 logs never used before, each sourced and quoted (a URL, or a
    public GitHub file named by its stored-index id), the printed token figure in its quote, every one with a
    'Model loading took' figure, TP 1, 2, 4 and 8 among them, and predicted by the frozen code of the session's merged
    main before any grading."""
    new, _ = _batch(ml, "issue-23g", 20)
    assert {e["tp"] for e in new} >= {1, 2, 4, 8} and {e["quantization"] for e in new} >= {"none", "gptq", "fp8", "nvfp4"}
    assert sum(1 for e in new if e.get("enforce_eager")) >= 4
    for e in new:
        _weights_and_printed_tokens(e)


def test_batch8_was_predicted_before_it_was_graded(ml):
    """Batch 8 (issue 23, session 5, memlogs8): at least 15 logs never used before, each sourced and quoted (a public
    GitHub file named by its stored-index id), every one with a 'Model loading took' figure in its quote and the printed
    token figure in its quote (one V0 log derives its tokens from the printed KV GiB and says so), TP 1, 2 and 8 among
    them, and predicted by the frozen code of the session's merged main before any grading."""
    new, _ = _batch(ml, "issue-23h", 15)
    assert {e["tp"] for e in new} >= {1, 2, 8}
    # both compressed-tensors int4 logs are graded as the experts-only layout since the retrospectives (memfix9, memfix10)
    formats = {e["quantization"].removesuffix("-experts") for e in new}
    assert formats >= {"none", "awq", "gptq", "mxfp4", "nvfp4", "compressed-tensors-w4a16"}
    assert sum(1 for e in new if e.get("enforce_eager")) >= 2
    for e in new:
        assert "Model loading took" in e["quoted"] or "Model loading memory" in e["quoted"], e["id"]
        assert e["measured"]["weights_gib"] > 0 and str(e["measured"]["weights_gib"]) in e["quoted"], e["id"]
        tokens = e["measured"]["kv_cache_tokens"]
        assert tokens > 0, e["id"]
        if e["kv_cache_tokens_from"] == "printed":  # the printed figure is in the quote as written
            assert f"{tokens:,}" in e["quoted"] or str(tokens) in e["quoted"], e["id"]
        else:
            assert e["kv_cache_tokens_from"].startswith("derived") and str(e["measured"]["kv_cache_gib"]) in e["quoted"], e["id"]


def test_batch9_was_predicted_before_it_was_graded(ml):
    """Batch 9 (issue 23, session 6, memlogs9): at least 15 logs never used before, each sourced and quoted (a URL, or a
    public GitHub file named by its stored-index id), the printed token figure in its quote, the 'Model loading took'
    figure in the quote wherever one is entered, TP 1, 2 and 4 among them, and predicted by the frozen code of the
    session's merged main (6c3b7eb, memfix9) before any grading."""
    new, data = _batch(ml, "issue-23i", 15)
    assert ml.BATCHES["issue-23i"][1] == "6c3b7eb"
    assert {e["tp"] for e in new} >= {1, 2, 4} and {e["quantization"] for e in new} >= {"none", "awq", "gptq", "fp8", "nvfp4"}
    assert sum(1 for e in new if e.get("enforce_eager")) >= 4 and len({e["gpu"] for e in new}) >= 8
    _printed_figures(new, min_weights=6)


def test_batch10_was_predicted_before_it_was_graded(ml):
    """Batch 10 (issue 23, session 6, memlogs10): at least 12 logs never used before, each sourced and quoted (a public
    GitHub file named by its stored-index id), the printed token figure in its quote, the weights figure in the quote
    wherever one is entered, TP 1, 2 and 4, hybrid MoE and int4 MoE among them, and predicted by the frozen code of the
    session's merged main (5006226, memfix10) before any grading."""
    new, data = _batch(ml, "issue-23j", 12)
    assert ml.BATCHES["issue-23j"][1] == "5006226" and data["code_commit"].startswith("2bad013")
    assert {e["tp"] for e in new} >= {1, 2, 4} and {e["quantization"] for e in new} >= {"none", "gptq", "fp8", "nvfp4"}
    assert len({e["gpu"] for e in new}) >= 6 and len({e["engine_version"] for e in new}) >= 5
    assert sum(1 for e in new if e["model"] == "Qwen/Qwen3.6-35B-A3B") >= 2  # the hybrid Gated-DeltaNet MoE, twice
    _printed_figures(new, min_weights=9)


def test_batch11_was_predicted_before_it_was_graded(ml):
    """Batch 11 (issue 23, session 6, memlogs11): at least 13 logs never used before, each sourced and quoted (a public
    GitHub file named by its stored-index id), the printed token figure in its quote, the weights figure in the quote
    wherever one is entered, TP 1 and 2, bf16, AWQ, GPTQ and FP8 among them, and predicted by the frozen code of the
    session's merged main (172b7db, memfix11) before any grading."""
    new, data = _batch(ml, "issue-23k", 13)
    assert ml.BATCHES["issue-23k"][1] == "172b7db" and data["code_commit"].startswith("1ac85bd")
    assert {e["tp"] for e in new} >= {1, 2} and {e["quantization"] for e in new} >= {"none", "awq", "gptq", "fp8"}
    assert len({e["gpu"] for e in new}) >= 4 and len({e["engine_version"] for e in new}) >= 4
    _printed_figures(new, min_weights=7)


def test_batch12_was_predicted_before_it_was_graded(ml):
    """Batch 12 (issue 23, session 6, memlogs12): at least 10 logs never used before from at least 8 sources (at most 3
    from any one), each sourced and quoted (a public GitHub file named by its stored-index id), the token figure in its
    quote as written, the weights figure in the quote (or the two free-memory readings it is derived from), vLLM and
    SGLang, TP 1 and 4, bf16, MXFP4, NVFP4 and block FP8 among them, and predicted by the frozen code of the session's
    merged main (memfix12) before any grading."""
    from collections import Counter

    new, data = _batch(ml, "issue-23l", 10)
    assert ml.BATCHES["issue-23l"][1] == "dda3d1e" and data["code_commit"].startswith("2c40295")
    assert {e["tp"] for e in new} >= {1, 4} and {e["engine"] for e in new} == {"vllm", "sglang"}
    assert {e["quantization"] for e in new} >= {"none", "mxfp4", "nvfp4", "fp8-block"}
    assert len({e["gpu"] for e in new}) >= 7 and len({e["engine_version"] for e in new}) >= 6
    per_source = Counter(e["source"].split("stored-index file id ")[1].split(";")[0].split(")")[0] for e in new)
    assert len(per_source) >= 8 and max(per_source.values()) <= 3
    for e in new:
        tokens = e["measured"]["kv_cache_tokens"]
        assert tokens > 0 and (f"{tokens:,}" in e["quoted"] or str(tokens) in e["quoted"]), e["id"]
        w = e["measured"].get("weights_gib")
        if w and "derived" not in e["kv_cache_tokens_from"]:
            assert str(w) in e["quoted"], e["id"]
    assert sum(1 for e in new if e["measured"].get("weights_gib")) >= 6


def test_batch13_was_predicted_before_it_was_graded(ml):
    """Batch 13 (issue 23, session 7, memlogs13), gathered as facts before memfix13's model was frozen in main: at least
    10 logs never used before from at least 6 sources (at most 3 from any one), each a public GitHub file named by its
    stored-index id, the token figure in its quote as written, the weights figure in the quote unless derived (and then
    the two free-memory readings it comes from are), vLLM and SGLang, TP 1, 2 and 4, bf16 and AWQ among them, and
    predicted by the frozen code of the session's merged main (52f5148, memfix13) before any grading."""
    import re

    new, data = _batch(ml, "issue-23m", 10)
    assert ml.BATCHES["issue-23m"][1] == "52f5148" and data["code_commit"].startswith("5d88753")
    _unused_quotes(ml, "issue-23m", new)
    _file_id_sources(new, min_sources=6)
    assert {e["engine"] for e in new} == {"vllm", "sglang"} and {e["tp"] for e in new} >= {1, 2, 4}
    assert {e["quantization"] for e in new} >= {"none", "awq"} and len({e["gpu"] for e in new}) >= 6
    for e in new:
        _tokens_quoted(e)
        w = e["measured"].get("weights_gib")
        if w and "derived" in e["kv_cache_tokens_from"]:
            assert all(r in e["quoted"] for r in re.findall(r"\d+\.\d+", e["kv_cache_tokens_from"].split("derived")[1])[:2]), e["id"]
        elif w:
            assert str(w) in e["quoted"], e["id"]


def test_batch14_was_predicted_before_it_was_graded(ml):
    """Batch 14 (issue 23, session 7, memlogs14), gathered as facts before memfix14's model was frozen in main: at least
    10 logs never used before from at least 7 sources (at most 3 from any one), each named by stored-index file id (and URL
    where known), the token figure in its quote as written, the weights figure in the quote wherever one is entered,
    vLLM and SGLang, TP 1, 2 and 4, bf16, fp16 and block FP8 among them, on at least 4 GPU types, and predicted by the
    frozen code of the session's merged main (84961fe, memfix14) before any grading."""
    new, data = _batch(ml, "issue-23n", 10)
    assert ml.BATCHES["issue-23n"][1] == "84961fe" and data["code_commit"].startswith("a3bcee9")
    _unused_quotes(ml, "issue-23n", new)
    _file_id_sources(new, min_sources=7)
    assert {e["engine"] for e in new} == {"vllm", "sglang"} and {e["tp"] for e in new} >= {1, 2, 4}
    assert {e["quantization"] for e in new} >= {"none", "fp8-block"} and len({e["gpu"] for e in new}) >= 4
    assert {e["dtype"] for e in new} >= {"bfloat16", "float16"}
    for e in new:
        _tokens_and_weights_quoted(e)


def test_batch15_was_predicted_before_it_was_graded(ml):
    """Batch 15 (issue 23, session 7, memlogs15), gathered as facts before memfix15's model was frozen in main: at least
    8 logs never used before, each from its own source file named by stored-index file id (and URL where known), the
    token figure in its quote as written, the weights figure in the quote wherever one is entered, vLLM and SGLang, TP 1
    and 8, bf16, NVFP4, block FP8 and INT4 experts among them, on at least 7 GPU types, every version that is not printed
    marked inferred, and predicted by the frozen code of the session's merged main (21208f9, memfix15) before any
    grading."""
    new, data = _batch(ml, "issue-23o", 8)
    assert ml.BATCHES["issue-23o"][1] == "21208f9" and data["code_commit"].startswith("5308047")
    _unused_quotes(ml, "issue-23o", new)
    _file_id_sources(new, min_sources=len(new), max_per_source=1, id_digits="9,12")  # each log from its own file
    assert {e["engine"] for e in new} == {"vllm", "sglang"} and len({e["gpu"] for e in new}) >= 7
    assert {e["tp"] for e in new} == {1, 8}
    assert {e["quantization"] for e in new} >= {"none", "nvfp4", "fp8-block", "compressed-tensors-w4a16-experts"}
    for e in new:
        _tokens_and_weights_quoted(e)
        if e["engine_version"] not in e["quoted"]:
            assert e["version_note"].startswith("inferred"), e["id"]


def test_sglang_stand_in_profiles_give_way_to_a_covering_range(ml):
    """memfix15 (retrospective): an old SGLang entry whose note says the 0.5 profile stands in takes its own version's range
    (0.4.4: 0.3-0.4.5; 0.4.9: the 0.5 range, which starts at 0.4.6); pinned vLLM stand-ins (0.11.0 graded with 0.13.0) stay."""
    by_id = {e["id"]: e for e in ml.entries()}
    assert ml.version_for(by_id["sglang14-h100-llama31-8b-fa3-v044"]) == "0.4.4"
    assert ml.version_for(by_id["sglang21348-qwen3-235b-fp8-4xh100"]) == "0.4.9"
    assert ml.version_for(by_id["llmdb-llama31-8b-h100-v011"]) == "0.13.0"


def test_batch16_was_predicted_before_it_was_graded(ml):
    """Batch 16 (issue 23, session 7, memlogs16), gathered as facts before the merged main's model predicted it: at least
    5 logs never used before from at least 4 sources (at most 3 from any one), each named by stored-index file id, the
    token figure in its quote as written, the weights figure in the quote wherever one is entered, vLLM and SGLang,
    TP 1 and 2, unquantized, FP8 and AWQ weights, bf16 and fp16, on at least 4 GPU types, and predicted by main's code as
    merged after memlogs15 (eda7ca3, memfix15's model) before any grading."""
    new, data = _batch(ml, "issue-23p", 5)
    assert ml.BATCHES["issue-23p"][1] == "eda7ca3" and data["code_commit"].startswith("6f4a33c")
    _unused_quotes(ml, "issue-23p", new)
    _file_id_sources(new, min_sources=4)
    assert {e["engine"] for e in new} == {"vllm", "sglang"} and {e["tp"] for e in new} >= {1, 2}
    assert {e["quantization"] for e in new} >= {"none", "fp8", "awq"} and len({e["gpu"] for e in new}) >= 4
    assert {e["dtype"] for e in new} >= {"bfloat16", "float16"}
    for e in new:
        _tokens_and_weights_quoted(e)
        if e["engine_version"] not in e["quoted"]:
            assert e["version_note"].startswith("inferred"), e["id"]



def test_batch17_was_predicted_before_it_was_graded(ml):
    """Batch 17 (issue 23, session 8, memlogs17), gathered as facts before the merged main's model predicted it: at least
    5 logs never used before (source and quote new) from at least 3 sources (at most 3 from any one, a source being its
    stored-index file id or its URL), the token figure in its quote as written, every inferred GPU, model or version said
    so in its note, vLLM 0.17-0.28 on CUDA and ROCm, TP 1 and 2, BF16 and FP8 weights, BF16 and FP8 KV, on at least 3 GPU
    types, and predicted by main 25dc7a8 (memfix16's frozen model cc289cc as merged) before any grading."""
    new, data = _batch(ml, "issue-23q", 5)
    assert ml.BATCHES["issue-23q"][1] == "25dc7a8" and data["code_commit"].startswith("c9b5329")
    _unused_quotes(ml, "issue-23q", new)
    per_source = _source_counts(new)
    assert len(per_source) >= 3 and max(per_source.values()) <= 3
    for e in new:
        _tokens_quoted(e)
        assert e["kv_cache_tokens_from"].startswith(("printed", "stated")), e["id"]
        if e["engine_version"] not in e["quoted"]:
            assert e["version_note"].startswith(("stated", "inferred")), e["id"]
    assert {e["engine"] for e in new} == {"vllm"} and {e["tp"] for e in new} >= {1, 2}
    assert {e["quantization"] for e in new} >= {"none", "fp8"} and {e["kv_cache_dtype"] for e in new} >= {"auto", "fp8"}
    assert len({e["gpu"] for e in new}) >= 3 and len({e["engine_version"] for e in new}) >= 3
    assert all("inferred" in e["gpu_note"] for e in new if e["gpu"] == "RTX-PRO-6000-Blackwell")


def test_batch18_was_predicted_before_it_was_graded(ml):
    """Batch 18 (issue 23, session 9, memlogs18), gathered as facts before the merged main's model predicted it: at least
    5 logs never used before (source and quote new), each from its own source (a stored-index file id or a URL), the token
    figure in its quote as written (or, for a V0 log, its printed GPU blocks x 16), every token figure printed, stated or
    derived from printed blocks, every version not in the quote said to be stated or inferred, vLLM and SGLang, TP 1, 2
    and 4, unquantized, FP8, block-FP8 and int4 weights, BF16 and FP8 KV, one speculative config, on at least 5 GPU types,
    and predicted by main 95b6e72 (memfix18's frozen model 7f2cd29 as merged) before any grading."""
    new, data = _batch(ml, "issue-23r", 5)
    assert ml.BATCHES["issue-23r"][1] == "95b6e72" and data["code_commit"].startswith("f59f685")
    _unused_quotes(ml, "issue-23r", new)
    assert max(_source_counts(new).values()) == 1  # each log from its own source
    for e in new:
        _kv_figures_traced(e)
    assert {e["engine"] for e in new} == {"vllm", "sglang"} and {e["tp"] for e in new} >= {1, 2, 4}
    # int4: the RTX 5090 log's export, set to its experts-only format by memfix19 (retrospective, quantization_retrospective_note)
    assert {e["quantization"] for e in new} >= {"none", "fp8", "fp8-block", "compressed-tensors-w4a16-experts"}
    assert {e["kv_cache_dtype"] for e in new} >= {"auto", "fp8"} and sum("speculative_config" in e for e in new) == 1
    assert len({e["gpu"] for e in new}) >= 5


def test_batch19_was_predicted_before_it_was_graded(ml):
    """Batch 19 (issue 23, session 9, memlogs19), gathered as facts before the merged main's model predicted it: at least
    5 logs never used before (source and quote new), at most 2 from one source (a stored-index file id or a URL), the
    token figure in its quote as written (or, for a V0 log, its printed GPU blocks x 16), every token figure printed,
    stated or derived from printed blocks, every version not in the quote said to be stated or inferred, vLLM and SGLang,
    TP 1, 8 and 16, unquantized and FP8 weights, BF16 and FP8 KV, no speculative config, on at least 5 GPU types (an
    AMD one among them), and predicted by main 8224577 (memfix19's frozen model f092eec as merged) before any grading."""
    new, data = _batch(ml, "issue-23s", 5)
    assert ml.BATCHES["issue-23s"][1] == "8224577" and data["code_commit"].startswith("3564a78")
    _unused_quotes(ml, "issue-23s", new)
    keys = _source_counts(new)
    assert len(keys) >= 4 and max(keys.values()) <= 2
    for e in new:
        _kv_figures_traced(e, ("stated", "inferred", "not printed"))
    assert {e["engine"] for e in new} == {"vllm", "sglang"} and {e["tp"] for e in new} >= {1, 8, 16}
    assert {e["quantization"] for e in new} >= {"none", "fp8"} and {e["kv_cache_dtype"] for e in new} >= {"auto", "fp8"}
    assert not any("speculative_config" in e for e in new)
    assert len({e["gpu"] for e in new}) >= 5 and "MI300X" in {e["gpu"] for e in new}


def test_batch20_was_predicted_before_it_was_graded(ml):
    """Batch 20 (issue 23, session 10, memlogs20), gathered as facts before the merged main's model predicted it: at least
    6 logs never used before (source and quote new), each from its own file (a stored-index file id or a URL) and at most
    5 from one repository, the token figure in its quote as written and every token figure printed or stated, every
    version not in the quote said to be stated or inferred, vLLM and SGLang, TP 1 and 2, unquantized, FP8 and AWQ weights,
    BF16 and FP8 KV, one speculative config, on at least 2 GPU types, and predicted by main 43dc411 (memfreeze20, memfix20's
    model a02c04b as merged) before any grading."""
    import re
    from collections import Counter

    new, data = _batch(ml, "issue-23t", 6)
    assert ml.BATCHES["issue-23t"][1] == "43dc411" and data["code_commit"].startswith("aacd516")
    _unused_quotes(ml, "issue-23t", new)
    assert max(_source_counts(new).values()) == 1  # each log from its own file
    repos = Counter(m[1] if (m := re.match(r"https://github\.com/([^/]+/[^/]+)/", e["source"])) else e["source"] for e in new)
    assert max(repos.values()) <= 5
    for e in new:
        _kv_figures_traced(e)
    assert {e["engine"] for e in new} == {"vllm", "sglang"} and {e["tp"] for e in new} >= {1, 2}
    assert {e["quantization"] for e in new} >= {"none", "fp8", "awq"} and {e["kv_cache_dtype"] for e in new} >= {"auto", "fp8"}
    assert sum("speculative_config" in e for e in new) == 1
    assert len({e["gpu"] for e in new}) >= 2
