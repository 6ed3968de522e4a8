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
    st.sampled_from(["vllm", "fp8", "bfloat16", "tp", "gpu.compute_capability", "compare", "divides", "all", "8.0"]),
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
