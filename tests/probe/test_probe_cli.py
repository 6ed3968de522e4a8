"""Probe: hostile command lines for every command (hypothesis). See contract.py for what is checked."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.probe.contract import DISK_LIMIT_BYTES, check, disk_bytes, probe_environment, run_cli

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

MODELS = ["meta-llama/Llama-2-7b-hf", "meta-llama/Llama-3.1-70B", "Qwen/Qwen3-30B-A3B", "mistralai/Mixtral-8x7B-v0.1"]
GPUS = ["A100-80GB", "H100-80GB:8", "L40S:4", "T4", "cpu", "H200:8x2", "RTX4090", "MI300X"]

# Text a user (or a script gone wrong) may pass: empty, blanks, control characters, other scripts, quotes and
# shell metacharacters, option-looking values. Model ids stay under 100 characters: longer ones are the
# catalog engineer's open item (300-character ids, File name too long) and are probed there.
hostile_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "-1", "0", "nan", "inf", "1e400", "auto", "--json", "$(id)", "`id`", "../..", "\x00", "é", "🙂"]),
)
number_text = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: repr(f) if math.isfinite(f) else str(f)),
    hostile_text,
)


def _opt(name: str, values) -> st.SearchStrategy[list[str]]:
    return st.one_of(st.just([]), values.map(lambda v: [name, v]))


plan_args = st.tuples(
    st.one_of(st.sampled_from(MODELS), hostile_text.filter(lambda s: len(s.encode()) < 100)),
    st.one_of(st.sampled_from(GPUS), hostile_text, st.builds(lambda n, c, x: f"{n}:{c}x{x}", st.sampled_from(GPUS[:3]), number_text, number_text)),
    _opt("--goal", st.one_of(st.sampled_from(["latency", "throughput", "balanced"]), hostile_text)),
    _opt("--context", number_text),
    _opt("--concurrency", number_text),
    _opt("--input-tokens", number_text),
    _opt("--output-tokens", number_text),
    _opt("--engine", st.one_of(st.sampled_from(["vllm", "sglang", "tgi", "ctranslate2", "llama.cpp", "transformers"]), hostile_text)),
    _opt("--quantization", st.one_of(st.sampled_from(["none", "awq", "fp8", "gguf-q4_k_m", "int8"]), hostile_text)),
    _opt("--dtype", st.sampled_from(["auto", "bfloat16", "float16", "float32", "int4"])),
    _opt("--kv-cache-dtype", st.sampled_from(["auto", "fp8", "fp4"])),
    _opt("--gpu-memory-utilization", number_text),
    _opt("--max-num-batched-tokens", number_text),
    _opt("--format", st.sampled_from(["table", "markdown", "json", "yaml"])),
    st.lists(st.sampled_from(["--json", "--explain"]), max_size=2, unique=True),
)


@settings(SETTINGS, max_examples=120)
@given(plan_args)
def test_plan_with_hostile_options(monkeypatch, args):
    model, gpu, *options = args
    argv = ["plan", "--model", model, "--gpu", gpu, *[a for opt in options for a in opt]]
    with tempfile.TemporaryDirectory() as tmp:
        probe_environment(monkeypatch, Path(tmp) / "cache")
        check(run_cli(argv), argv)
        assert disk_bytes(Path(tmp)) < DISK_LIMIT_BYTES


out_places = st.sampled_from(["new", "new/deeper", "FILE", "FILE/sub", "/proc/x", "/sys/x", ".", "existing", "n" * 300])


@SETTINGS
@given(
    st.lists(st.one_of(st.sampled_from(["script", "docker", "compose", "k8s", "readme", "all"]), hostile_text), min_size=1, max_size=3),
    out_places,
    st.booleans(),
)
def test_plan_emit_with_hostile_outputs(monkeypatch, kinds, where, force):
    """--emit into places that cannot or must not be written: one line, and the user's file is intact."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        probe_environment(monkeypatch, root / "cache")
        (root / "FILE").write_text("mine")
        (root / "existing").mkdir()
        (root / "existing" / "notes.md").write_text("mine")
        monkeypatch.chdir(root / "existing")
        out = where if where.startswith("/") or where == "." else str(root / where)
        argv = ["plan", "--model", MODELS[0], "--gpu", "A100-80GB", "--emit", ",".join(kinds), "--out", out]
        argv += ["--force"] if force else []
        outcome = run_cli(argv)
        check(outcome, argv)
        assert (root / "FILE").read_text() == "mine" and (root / "existing" / "notes.md").read_text() == "mine"
        if where in (".", "existing", "FILE", "FILE/sub") or where.startswith("/"):
            assert outcome.code == 2, (argv, outcome.err)


@SETTINGS
@given(
    st.one_of(st.sampled_from(["transformers", "ctranslate2", "vllm", "openai"]), hostile_text),
    _opt("--concurrency", st.one_of(number_text, st.lists(st.integers(-5, 5), min_size=0, max_size=4).map(lambda v: ",".join(map(str, v))))),
    _opt("--output-tokens", number_text),
    _opt("--input-tokens", number_text),
    _opt("--num-prompts", number_text),
    _opt("--warmup", number_text),
    _opt("--url", st.one_of(hostile_text, st.just("http://127.0.0.1:9"), st.just("ftp://x"))),
    _opt("--out", st.sampled_from(["/proc/x", "/sys/x"])),
)
def test_bench_with_hostile_options(monkeypatch, engine, conc, out_tokens, in_tokens, prompts, warmup, url, out):
    """Bench options that cannot run are refused before any model loads (the model named is a folder without
    weights, so a call that got as far as loading would say so in one line too)."""
    with tempfile.TemporaryDirectory() as tmp:
        probe_environment(monkeypatch, Path(tmp) / "cache")
        model = Path(tmp) / "m"
        model.mkdir()
        (model / "config.json").write_text('{"model_type": "llama", "max_position_embeddings": 64}')
        options = (conc, out_tokens, in_tokens, prompts, warmup, url, out)
        argv = ["bench", "--engine", engine, "--model", str(model), "--no-progress", *[a for opt in options for a in opt]]
        check(run_cli(argv), argv, allowed=(2,))


@SETTINGS
@given(
    st.one_of(st.sampled_from(["awq", "w4a16", "ct2-int8", "gguf-q4_k_m", "int4"]), hostile_text),
    _opt("--group-size", number_text),
    _opt("--num-samples", number_text),
    _opt("--backend", st.one_of(st.sampled_from(["llmcompressor", "autoawq", "ct2"]), hostile_text)),
    _opt("--calibration", st.sampled_from(["/nonexistent.txt", "/proc/self/status", "/dev/null"])),
    st.sampled_from(["/proc/x", "FILE", "FILE/sub", "src"]),
)
def test_quantize_with_hostile_options(monkeypatch, method, group, samples, backend, calibration, where):
    """Nothing quantizes here: the source has a config but no weights, so every call must end in one line."""
    opts = (group, samples, backend, calibration)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        probe_environment(monkeypatch, root / "cache")
        (root / "src").mkdir()
        (root / "src" / "config.json").write_text('{"model_type": "llama", "hidden_size": 128}')
        (root / "FILE").write_text("mine")
        out = where if where.startswith("/") else str(root / where)
        argv = ["quantize", "--model", str(root / "src"), "--method", method, "--out", out, "--no-progress"]
        argv += [a for opt in opts for a in opt]
        check(run_cli(argv), argv, allowed=(2,))
        assert sorted(p.name for p in root.iterdir() if p.name != "cache") == ["FILE", "src"]


@pytest.mark.parametrize(
    "argv",
    [
        ["gpus", "--gpu", "H100-80GB:99999999999999999999"],
        ["gpus", "--gpu", "x" * 5000],
        ["models", "--json", "--bogus"],
        ["schema", "nonsense"],
        ["calibrate"],
        ["calibrate", "--engine", "transformers", "--out", "/proc/x/c.json", "--from", "/nonexistent.json"],
        ["plan", "--model"],
        ["plan", "--rules", "/nonexistent"],
        ["plan", "--calibration", "/etc/passwd"],
        ["--debug"],
        ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--revision", "\x00"],
    ],
)
def test_fixed_hostile_command_lines(monkeypatch, tmp_path, argv):
    probe_environment(monkeypatch, tmp_path / "cache")
    check(run_cli(argv), argv)
