"""Probe: hostile rule files (`plan --rules DIR`) and calibration inputs (`calibrate --from FILE`), built by
hypothesis from valid ones by mutation, or from raw bytes. See contract.py for what is checked; a calibrate call
that fails must also leave no output file."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.probe.contract import DISK_LIMIT_BYTES, check, disk_bytes, probe_environment, run_cli

SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
REPO = Path(__file__).resolve().parents[2]

# Values a mutated field may take: every JSON/YAML type, the extremes, and nesting.
leaf = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.sampled_from(["vllm", "fp8", "bfloat16", "tp", "gpu.compute_capability", "compare", "divides", "all", "8.0", "trtllm",
                     "mlc", "exllamav2", "mistralrs", "nvfp4", "fp8-block", "exl2", "gpu.vendor", "request.stack", "quantization"]),
)  # fmt: skip
value = st.recursive(leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)

VALID_RULE = {
    "id": "site.probe",
    "decides": "engine",
    "when": {"kind": "all", "of": [
        {"kind": "compare", "fact": "gpu.compute_capability", "op": "ge", "value": 8.0},
        {"kind": "divides", "divisor": [{"fact": "model.num_kv_heads"}], "dividend": 64},
        {"kind": "in", "fact": "request.goal", "values": ["latency", "throughput"]},
        {"kind": "not", "of": {"kind": "compare", "fact": "model.is_moe", "op": "eq", "value": True}},
    ]},
    "effect": "prefer",
    "value": "vllm",
    "score": 5,
    "reason": "A valid rule the probe mutates.",
    "source": "test",
}  # fmt: skip


def _paths(node, prefix=()):
    """Every (path) inside a nested dict/list, to pick one to mutate."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


def _mutate(doc, path, new, delete: bool):
    doc = copy.deepcopy(doc)
    if not path:
        return new
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return doc


@st.composite
def mutated(draw, base):
    paths = list(_paths(base))
    doc = base
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        doc = _mutate(doc, draw(st.sampled_from(paths)), draw(value), draw(st.booleans()))
    return doc


def _dump_yaml(doc) -> bytes:
    try:
        return yaml.safe_dump(doc, allow_unicode=True).encode()
    except (yaml.YAMLError, ValueError, RecursionError):
        return json.dumps(doc, default=str).encode()


rule_file = st.one_of(
    mutated({"rules": [VALID_RULE]}).map(_dump_yaml),
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode()),
    st.sampled_from([
        b"rules: &a [*a]\n",
        b"a: &a [1,2]\nb: &b [*a,*a,*a]\nrules: [*b]\n",
        b"rules:\n" + b"  " * 0 + b"[" * 3000 + b"]" * 3000 + b"\n",
        b"rules: !!python/object/apply:os.system ['echo pwned']\n",
        b"\xef\xbb\xbfrules: []\n",
        b"rules: []\n\xff",
    ]),
)  # fmt: skip


@SETTINGS
@given(rule_file)
def test_hostile_rule_files(monkeypatch, content):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        probe_environment(monkeypatch, root / "cache")
        (root / "rules").mkdir()
        (root / "rules" / "site.yaml").write_bytes(content)
        argv = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--rules", str(root / "rules"), "--json"]
        check(run_cli(argv), argv)
        assert disk_bytes(root) < DISK_LIMIT_BYTES
        assert not list((root / "cache").rglob("*.tmp")) if (root / "cache").exists() else True


def _measure() -> dict:
    raw = json.loads((REPO / "benchmarks/results/h200/measure_transformers_warm.json").read_text())
    raw["models"] = [dict(m, points=m["points"][:3]) for m in raw["models"][:2]]
    for m in raw["models"]:
        for p in m["points"]:
            for key in [k for k in p if isinstance(p[k], list)]:
                del p[key]  # the raw step lists: large and unread
    return raw


def _bench() -> dict:
    from tests.estimate.test_calibrate_inputs import _bench as make

    return make()


calibration_input = st.one_of(
    mutated(_measure()).map(lambda d: json.dumps(d).encode()),
    mutated(_bench()).map(lambda d: json.dumps(d).encode()),
    st.binary(max_size=300),
    st.sampled_from([b"[" * 100000 + b"]" * 100000, b'{"models": [], "ceilings": {}}', b"\xff\xfe\x00", b"NaN"]),
)


@SETTINGS
@given(calibration_input)
def test_hostile_calibrate_from_files(monkeypatch, content):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        probe_environment(monkeypatch, root / "cache")
        (root / "in.json").write_bytes(content)
        out = root / "cal.json"
        argv = ["calibrate", "--engine", "transformers", "--from", str(root / "in.json"), "--gpu", "H200", "--out", str(out)]
        outcome = run_cli(argv)
        check(outcome, argv, allowed=(0, 2))
        assert out.exists() == (outcome.code == 0)
        assert sorted(p.name for p in root.iterdir() if p.name != "cache") == (["cal.json"] if out.exists() else []) + ["in.json"]


# ---------------------------------------------------------------- main's inputs: start-up logs, memory calibrations

LOGS = REPO / "tests" / "estimate" / "logs"
LOG_SETUPS = {  # log -> (GPU, model) the log does not always name
    "vllm_v1_0.19_h100_llama31_8b.log": ("H100-80GB", "meta-llama/Llama-3.1-8B"),
    "vllm_v0_0.6.4_rtx3090_llama31_8b.log": ("RTX-3090", "meta-llama/Llama-3.1-8B"),
    "sglang_0.5.9_h100_llama31_8b.log": ("H100-80GB", "meta-llama/Llama-3.1-8B"),
    "llamacpp_b7200_rtx4090_mistral7b.log": ("RTX-4090", "mistralai/Mistral-7B-v0.1"),
}
hostile_number = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["0", "-1", "nan", "inf", "1e400", "0.000", "99999999999999999999999", "", "1,2", "Ⅻ", "٣"]),
)


@st.composite
def mutated_log(draw):
    """A real start-up log with numbers replaced, lines dropped, repeated or garbled."""
    import re

    name = draw(st.sampled_from(sorted(LOG_SETUPS)))
    lines = (LOGS / name).read_text().splitlines()
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["number", "number", "drop", "repeat", "garble"]))
        if action == "number":
            numbers = list(re.finditer(r"\d+(?:\.\d+)?", lines[i]))
            if numbers:
                m = draw(st.sampled_from(numbers))
                lines[i] = lines[i][: m.start()] + draw(hostile_number) + lines[i][m.end() :]
        elif action == "drop":
            del lines[i]
        elif action == "repeat":
            lines.insert(i, lines[i])
        else:
            lines[i] = draw(st.text(max_size=80))
        if not lines:
            break
    return name, "\n".join(lines).encode("utf-8", "surrogatepass")


start_up_log = st.one_of(
    mutated_log(),
    st.tuples(st.sampled_from(sorted(LOG_SETUPS)), st.binary(max_size=400)),
    st.tuples(st.sampled_from(sorted(LOG_SETUPS)), st.sampled_from([b"\xff" * 100, b"[" * 100000, b"x" * (2**20), b""])),
)


@SETTINGS
@given(start_up_log, st.booleans())
def test_hostile_start_up_logs(monkeypatch, named, give_model):
    """`calibrate --from-log` on mutated logs: exit 0 or one line; a file only on success; and a file it writes is
    one `plan --calibration` accepts (never a calibration the plan then refuses as invalid)."""
    name, content = named
    gpu, model = LOG_SETUPS[name]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        probe_environment(monkeypatch, root / "cache")
        (root / "start.log").write_bytes(content)
        out = root / "mem.json"
        argv = ["calibrate", "--from-log", str(root / "start.log"), "--gpu", gpu, "--out", str(out)]
        argv += ["--model", model] if give_model else []
        outcome = run_cli(argv)
        check(outcome, argv, allowed=(0, 2))
        assert out.exists() == (outcome.code == 0)
        assert sorted(p.name for p in root.iterdir() if p.name != "cache") == (["mem.json"] if out.exists() else []) + ["start.log"]
        if outcome.code == 0:
            cal = json.loads(out.read_text())
            argv = ["plan", "--model", model, "--gpu", gpu, "--engine", cal["engine"], "--calibration", str(out),
                    "--calibration-mismatch", "warn", "--json"]  # fmt: skip
            check(run_cli(argv), argv, allowed=(0, 1))


def _memory_calibration() -> dict:
    from infer_advisor.calibrate.memory import fit_memory_calibration
    from infer_advisor.engines.startup_log import parse_startup_log

    log = parse_startup_log((LOGS / "vllm_v1_0.19_h100_llama31_8b.log").read_text())
    cal = fit_memory_calibration(log, source="probe", model="meta-llama/Llama-3.1-8B", gpu="H100-80GB")
    return json.loads(cal.model_dump_json())


calibration_file = st.one_of(
    mutated(_memory_calibration()).map(lambda d: json.dumps(d).encode()),
    st.binary(max_size=300),
    st.sampled_from([b"[" * 100000 + b"]" * 100000, b'{"kind": "memory"}', b'{"kind": "speed"}', b'{"kind": []}', b"NaN"]),
)


@SETTINGS
@given(calibration_file, st.sampled_from(["refuse", "warn"]))
def test_hostile_plan_calibration_files(monkeypatch, content, mismatch):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        probe_environment(monkeypatch, root / "cache")
        (root / "cal.json").write_bytes(content)
        argv = ["plan", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-80GB", "--engine", "vllm", "--engine-version", "0.19.0",
                "--calibration", str(root / "cal.json"), "--calibration-mismatch", mismatch, "--json"]  # fmt: skip
        check(run_cli(argv), argv)




VALID_GPU = {
    "name": "Probe-GPU", "memory_gib": 16, "memory_bandwidth_gb_s": 448, "tflops": {"fp16": 60, "bf16": 60},
    "compute_capability": 8.6, "interconnect": "pcie", "interconnect_gb_s": 16,
}  # fmt: skip


# GPU descriptions that validate, with figures from tiny to absurd: the plan must cope with whatever passes validation.
plausible_gpu = st.fixed_dictionaries({
    "name": st.just("Probe-GPU"),
    "memory_gib": st.floats(0.001, 1e6),
    "memory_bandwidth_gb_s": st.floats(0.001, 1e7),
    "tflops": st.floats(0.001, 1e6).map(lambda t: {"fp16": t, "bf16": t}),
    "compute_capability": st.sampled_from([3.5, 6.1, 7.0, 7.5, 8.0, 8.6, 8.9, 9.0, 10.0, 12.0]),
    "interconnect": st.sampled_from(["pcie", "nvlink"]),
    "interconnect_gb_s": st.floats(0.001, 1e5),
}).map(_dump_yaml)  # fmt: skip


@SETTINGS
@given(
    st.one_of(mutated(VALID_GPU).map(_dump_yaml), plausible_gpu, st.binary(max_size=300), st.just(b"a: &a [*a]\n")),
    st.sampled_from(["", ":2", ":9x2"]),
)
def test_hostile_gpu_description_files(monkeypatch, content, counts):
    """`--gpu FILE.yaml[:COUNT]`: an unlisted GPU from a file (main's hardware hardening), mutated."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        probe_environment(monkeypatch, root / "cache")
        (root / "gpu.yaml").write_bytes(content)
        argv = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", str(root / "gpu.yaml") + counts, "--json"]
        check(run_cli(argv), argv)
        assert disk_bytes(root) < DISK_LIMIT_BYTES
