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

MODELS = [
    "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-3.1-70B", "Qwen/Qwen3-30B-A3B", "mistralai/Mixtral-8x7B-v0.1",
    "openai/gpt-oss-20b", "nvidia/Qwen3-235B-A22B-NVFP4", "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-Next-80B-A3B-Thinking",
]  # fmt: skip
GPUS = [
    "A100-80GB", "H100-80GB:8", "L40S:4", "T4", "cpu", "H200:8x2", "RTX4090", "MI300X", "B200:8", "MI355X:8", "DGX-Spark",
    "RTX-5090", "H20:8", "MI250X:2",
]  # fmt: skip
ENGINES = ["vllm", "sglang", "tgi", "ctranslate2", "llama.cpp", "transformers", "trtllm", "mlc", "exllamav2", "mistralrs"]
QUANTS = ["none", "awq", "fp8", "gguf-q4_k_m", "int8", "nvfp4", "mlc-q4f16_1", "exl2", "isq-q4k", "gguf-f16", "fp8-block"]

# Text a user (or a script gone wrong) may pass: empty, blanks, control characters, other scripts, quotes and
# shell metacharacters, option-looking values.
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


# Model ids of any length: a 300-character id was a traceback (File name too long) before the model-facts hardening.
long_id = st.one_of(
    st.integers(97, 5000).map(lambda n: "a/" + "b" * n),
    st.integers(100, 5000).map(lambda n: "x" * n),
    st.text(min_size=100, max_size=400),
)
# An unlisted GPU given inline as a YAML mapping (main's --gpu '{...}[:COUNT]'), its values hostile or plausible.
inline_gpu = st.builds(
    lambda fields, counts: "{" + ", ".join(f"{k}: {v}" for k, v in fields.items()) + "}" + counts,
    st.fixed_dictionaries(
        {"name": st.one_of(st.just("Probe-GPU"), hostile_text)},
        optional={
            "memory_gib": st.one_of(number_text, st.integers(1, 2048).map(str)),
            "memory_bandwidth_gb_s": st.one_of(number_text, st.integers(1, 20000).map(str)),
            "tflops": st.one_of(number_text, st.integers(1, 5000).map(lambda t: f"{{fp16: {t}, bf16: {t}}}")),
            "compute_capability": st.one_of(number_text, st.sampled_from(["7.5", "8.0", "8.6", "9.0", "10.0"])),
            "interconnect": st.sampled_from(["pcie", "nvlink", "x"]),
            "interconnect_gb_s": number_text,
            "vendor": st.sampled_from(["nvidia", "amd", "intel", "other"]),
        },
    ),
    st.sampled_from(["", ":2", ":0", ":99", ":2x2", ":x"]),
)


plan_args = st.tuples(
    st.one_of(st.sampled_from(MODELS), hostile_text, long_id),
    st.one_of(
        st.sampled_from(GPUS), hostile_text, inline_gpu,
        st.builds(lambda n, c, x: f"{n}:{c}x{x}", st.sampled_from(GPUS[:3]), number_text, number_text),
    ),
    _opt("--goal", st.one_of(st.sampled_from(["latency", "throughput", "balanced"]), hostile_text)),
    _opt("--context", number_text),
    _opt("--concurrency", number_text),
    _opt("--input-tokens", number_text),
    _opt("--output-tokens", number_text),
    _opt("--engine", st.one_of(st.sampled_from(ENGINES), hostile_text)),
    _opt("--quantization", st.one_of(st.sampled_from(QUANTS), hostile_text)),
    _opt("--dtype", st.sampled_from(["auto", "bfloat16", "float16", "float32", "int4"])),
    _opt("--kv-cache-dtype", st.sampled_from(["auto", "fp8", "fp4"])),
    _opt("--gpu-memory-utilization", number_text),
    _opt("--max-num-batched-tokens", number_text),
    _opt("--format", st.sampled_from(["table", "markdown", "json", "yaml"])),
    st.lists(st.sampled_from(["--json", "--explain"]), max_size=2, unique=True),
)

# The flags main added with the new engines, memory profiles and capacity planning (issues 10-12): each drawn rarely
# enough that most calls still get past the parser to the planner.
new_flag_args = st.lists(
    st.one_of(
        _opt("--serving", st.one_of(st.sampled_from(["auto", "server", "library"]), hostile_text)),
        _opt("--stack", st.one_of(st.sampled_from(["auto", "nvidia", "nvidia-triton"]), hostile_text)),
        _opt("--speculative", st.sampled_from(["auto", "off", "on"])),
        _opt("--shared-prefix-tokens", number_text),
        _opt("--download-speed", number_text),
        _opt("--startup-timeout", number_text),
        _opt("--engine-version", st.one_of(st.sampled_from(["0.7.3", "0.19.0", "0.33.0", "0.1.0", "99", "1.2.1", "b7200"]), hostile_text)),
        _opt("--calibration-mismatch", st.sampled_from(["refuse", "warn", "ignore"])),
        _opt("--rate", number_text),
        _opt("--input-distribution", st.sampled_from(["fixed", "uniform", "exponential", "lognormal", "normal", "zipf"])),
        _opt("--output-distribution", st.sampled_from(["fixed", "lognormal", "pareto"])),
        _opt("--ttft-p90", number_text),
        _opt("--ttft-p99", number_text),
        _opt("--itl-p99", number_text),
        _opt("--e2e-p90", number_text),
        _opt("--price-per-gpu-hour", st.one_of(number_text, st.builds(lambda g, p: f"{g}={p}", st.sampled_from(GPUS[:4]), number_text))),
        _opt("--tensor-parallel-size", number_text),
        _opt("--pipeline-parallel-size", number_text),
        _opt("--replicas", number_text),
        _opt("--data-parallel-size", number_text),
        _opt("--max-num-seqs", number_text),
        st.sampled_from([["--enable-expert-parallel"], ["--no-enable-expert-parallel"]]),
        _opt("--lengths-file", st.sampled_from(["/nonexistent.jsonl", "/dev/null", "/proc/self/status", ""])),
        _opt("--calibration", st.sampled_from(["/nonexistent.json", "/dev/null", "/etc/passwd", ",", "a.json,b.json"])),
    ),
    max_size=3,
)


@settings(SETTINGS, max_examples=120)
@given(plan_args, new_flag_args)
def test_plan_with_hostile_options(monkeypatch, args, more):
    model, gpu, *options = args
    argv = ["plan", "--model", model, "--gpu", gpu, *[a for opt in [*options, *more] for a in opt]]
    with tempfile.TemporaryDirectory() as tmp:
        probe_environment(monkeypatch, Path(tmp) / "cache")
        check(run_cli(argv), argv)
        assert disk_bytes(Path(tmp)) < DISK_LIMIT_BYTES


def _int_text(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.integers(lo, hi).map(str)


# Options a user would plausibly combine (nearly all pass the parser), so the planner, the renderers and the merged
# search (new engines and formats, fp8-KV fallback, speculative decoding, prefix caching, --explain groups) run
# on many combinations; the hostile test above mostly ends at the parser.
plausible_args = st.tuples(
    st.sampled_from(MODELS),
    st.sampled_from(GPUS),
    _opt("--goal", st.sampled_from(["latency", "throughput", "balanced"])),
    _opt("--context", _int_text(1, 200_000)),
    _opt("--concurrency", _int_text(1, 4096)),
    _opt("--engine", st.sampled_from(ENGINES)),
    _opt("--quantization", st.sampled_from(QUANTS[:-1])),
    _opt("--kv-cache-dtype", st.sampled_from(["auto", "fp8"])),
    _opt("--serving", st.sampled_from(["auto", "server", "library"])),
    _opt("--stack", st.sampled_from(["auto", "nvidia"])),
    _opt("--speculative", st.sampled_from(["auto", "off"])),
    _opt("--shared-prefix-tokens", _int_text(1, 400)),
    _opt("--format", st.sampled_from(["table", "markdown", "json"])),
    st.lists(st.sampled_from(["--explain"]), max_size=1),
)


@settings(SETTINGS, max_examples=60)
@given(plausible_args)
def test_plan_with_plausible_options(monkeypatch, args):
    model, gpu, *options = args
    argv = ["plan", "--model", model, "--gpu", gpu, *[a for opt in options for a in opt]]
    with tempfile.TemporaryDirectory() as tmp:
        probe_environment(monkeypatch, Path(tmp) / "cache")
        outcome = run_cli(argv)
        check(outcome, argv)
        if outcome.code in (0, 1) and ["--format", "json"] in options:
            import json

            plan = json.loads(outcome.out)
            assert plan["feasible"] == (outcome.code == 0)
            assert ("--explain" in argv) == (plan["explain"] is not None)


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
        ["plan", "--gpu", "{name: X, memory_gib: 1e400, memory_bandwidth_tb_s: .nan}"],
        ["plan", "--gpu", "/nonexistent-gpu.yaml"],
        ["calibrate", "--from-log", "/proc/self/status", "--out", "/proc/x/c.json"],
        ["calibrate", "--from-log", "/nonexistent.log", "--gpu", "H100-80GB", "--out", "c.json", "--tp", "0"],
        ["models", "add", "/nonexistent/config.json", "--id", "a/b", "--catalog-dir", "/proc/x"],
        ["models", "add", "/etc/passwd", "--id", "x" * 300],
    ],
)
def test_fixed_hostile_command_lines(monkeypatch, tmp_path, argv):
    probe_environment(monkeypatch, tmp_path / "cache")
    monkeypatch.chdir(tmp_path)
    check(run_cli(argv), argv)


@pytest.mark.parametrize("command", ["plan", "bench", "quantize", "models", "calibrate"])
@pytest.mark.parametrize("model", ["a/" + "b" * 298, "b" * 300, "a/" + "b" * 5000])
def test_long_model_id_is_bad_input(monkeypatch, tmp_path, command, model):
    """A 300-character model id (the probe's `File name too long` traceback, exit 1 then 3) is exit 2 with one line
    for every command that takes a model, now that model facts bound names and paths."""
    probe_environment(monkeypatch, tmp_path / "cache")
    argv = {
        "plan": ["plan", "--model", model, "--gpu", "A100-80GB"],
        "bench": ["bench", "--engine", "transformers", "--model", model, "--no-progress", "--out", str(tmp_path / "b")],
        "quantize": ["quantize", "--model", model, "--method", "awq", "--out", str(tmp_path / "q"), "--no-progress"],
        "models": ["models", model],
        "calibrate": ["calibrate", "--engine", "transformers", "--model", model, "--out", str(tmp_path / "c.json")],
    }[command]
    outcome = run_cli(argv)
    check(outcome, argv, allowed=(2,))
    assert "not found" in outcome.err or "not a Hub id" in outcome.err or "Repo id" in outcome.err, outcome.err
