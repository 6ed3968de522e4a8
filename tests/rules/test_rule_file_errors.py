"""Invalid rule files: one RuleFileError naming the file, the rule id and the field; the CLI prints one line, exit 2."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from infer_advisor.cli import main
from infer_advisor.errors import InferAdvisorError, RuleFileError
from infer_advisor.rules.loader import load_rules

GOOD = """\
  - id: site.good
    decides: engine
    effect: prefer
    value: vllm
    score: 1
    reason: A valid rule next to the broken one.
    source: test
"""


def _write(folder: Path, body: str, name: str = "site.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def _load_error(tmp_path: Path, body: str) -> tuple[RuleFileError, Path]:
    path = _write(tmp_path / "rules", "rules:\n" + GOOD + textwrap.indent(textwrap.dedent(body), "  "))
    with pytest.raises(RuleFileError) as info:
        load_rules(path.parent)
    err = info.value
    assert isinstance(err, InferAdvisorError) and isinstance(err, ValueError)
    assert "\n" not in str(err)
    assert err.path == str(path) and str(path) in str(err)
    return err, path


def test_unknown_key(tmp_path):
    err, _ = _load_error(tmp_path, """\
      - id: site.typo
        decides: engine
        effect: forbid
        value: tgi
        priority: 3
        reason: A typo must not be ignored.
        source: test
    """)
    assert err.rule_id == "site.typo" and err.field == "rules[1].priority"
    assert "rule 'site.typo'" in str(err) and "priority" in str(err)


def test_unknown_key_inside_a_condition(tmp_path):
    err, _ = _load_error(tmp_path, """\
      - id: site.cond-typo
        decides: engine
        when: {kind: compare, fact: request.goal, op: eq, value: latency, negate: true}
        effect: forbid
        value: tgi
        reason: Unknown keys in conditions are errors too.
        source: test
    """)
    assert err.rule_id == "site.cond-typo" and err.field == "rules[1].when.negate"


def test_unknown_condition_kind_lists_the_valid_kinds(tmp_path):
    err, _ = _load_error(tmp_path, """\
      - id: site.regex
        decides: engine
        when: {kind: regex, fact: model.name, pattern: "llama.*"}
        effect: forbid
        value: tgi
        reason: There is no regex condition.
        source: test
    """)
    assert err.rule_id == "site.regex" and err.field == "rules[1].when"
    for kind in ("always", "compare", "in", "divides", "all", "any", "not"):
        assert kind in str(err)


def test_duplicate_id_in_one_file(tmp_path):
    err, _ = _load_error(tmp_path, GOOD.replace("A valid rule next to the broken one.", "Same id again."))
    assert err.rule_id == "site.good" and err.field == "rules[1].id" and "duplicate" in str(err)


def test_duplicate_id_across_files_of_one_folder(tmp_path):
    folder = tmp_path / "rules"
    _write(folder, "rules:\n" + GOOD, "a.yaml")
    second = _write(folder, "rules:\n" + GOOD, "b.yaml")
    with pytest.raises(RuleFileError) as info:
        load_rules(folder)
    assert info.value.rule_id == "site.good" and "duplicate" in str(info.value)
    assert info.value.path == str(second) and "a.yaml" in str(info.value)


@pytest.mark.parametrize("reason", ['""', '"   "'])
def test_empty_reason(tmp_path, reason):
    err, _ = _load_error(tmp_path, f"""\
      - id: site.silent
        decides: engine
        effect: forbid
        value: tgi
        reason: {reason}
        source: test
    """)
    assert err.rule_id == "site.silent" and err.field == "rules[1].reason"


def test_prefer_without_score(tmp_path):
    err, _ = _load_error(tmp_path, """\
      - id: site.no-score
        decides: engine
        effect: prefer
        value: sglang
        reason: A preference with no weight ranks nothing.
        source: test
    """)
    assert err.rule_id == "site.no-score" and "score" in str(err)


def test_layout_rule_with_value(tmp_path):
    err, _ = _load_error(tmp_path, """\
      - id: site.layout-value
        decides: layout
        effect: forbid
        value: tp=8
        reason: Layout rules judge the candidate layout, not a named value.
        source: test
    """)
    assert err.rule_id == "site.layout-value" and "'value'" in str(err)


def test_bad_yaml_names_file_and_line(tmp_path):
    path = _write(tmp_path / "rules", "rules:\n  - id: site.x\n    reason: [unclosed\n")
    with pytest.raises(RuleFileError) as info:
        load_rules(path.parent)
    assert info.value.path == str(path) and "line" in str(info.value) and "\n" not in str(info.value)


def test_not_a_rule_list(tmp_path):
    path = _write(tmp_path / "rules", "rule:\n" + GOOD)
    with pytest.raises(RuleFileError) as info:
        load_rules(path.parent)
    assert "'rules'" in str(info.value)


def test_rules_dir_that_is_not_a_folder(tmp_path):
    with pytest.raises(RuleFileError) as info:
        load_rules(tmp_path / "missing")
    assert "missing" in str(info.value)


UNKNOWN_FACT = """\
rules:
  - id: site.unknown-fact
    decides: engine
    when: {kind: compare, fact: gpu.cc, op: lt, value: 8.0}
    effect: forbid
    value: vllm
    reason: gpu.cc is not a fact (gpu.compute_capability is).
    source: test
"""


def test_unknown_fact_at_evaluation(tmp_path):
    from tests.plan.planning import plan_for

    path = _write(tmp_path / "rules", UNKNOWN_FACT)
    with pytest.raises(RuleFileError) as info:
        plan_for("meta-llama/Llama-3.1-8B", "A100-80GB", rules=path.parent)
    err = info.value
    assert err.rule_id == "site.unknown-fact" and err.field == "when"
    assert str(path) in str(err), "the error names the file the rule came from"
    assert "gpu.cc" in str(err) and "gpu.compute_capability" in str(err)  # the known facts are listed


@pytest.mark.parametrize(
    "body, needle",
    [
        (UNKNOWN_FACT, "site.unknown-fact"),
        ("rules:\n" + GOOD + GOOD, "duplicate"),
        ("rules:\n  - id: site.x\n    decides: engine\n    when: {kind: nope}\n    effect: forbid\n    value: tgi\n"
         "    reason: r.\n    source: s\n", "always, compare"),
    ],
    ids=["unknown-fact", "duplicate-id", "unknown-kind"],
)
def test_cli_exits_2_with_one_line(tmp_path, capsys, body, needle):
    path = _write(tmp_path / "rules", body)
    code = main(["plan", "--model", "meta-llama/Llama-3.1-8B", "--model-source", "catalog", "--gpu", "A100-80GB",
                 "--rules", str(path.parent), "--json"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0] and str(path) in lines[0]


# ---- values checked against the decision they set (the probe found these accepted and silently ignored)


@pytest.mark.parametrize(
    ("decides", "value", "needle"),
    [
        ("engine", "notanengine", "value 'notanengine' is not a engine option; choose from vllm, sglang"),
        ("engine", "yes", "value True (YAML read it as bool) is not a engine option"),
        ("engine", "bfloat16", "value 'bfloat16' is not a engine option"),
        ("dtype", "vllm", "value 'vllm' is not a dtype option; choose from bfloat16, float16, float32"),
        ("kv_cache_dtype", "int4", "is not a kv_cache_dtype option; choose from auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2"),
        ("quantization", "int3", "is not a quantization option"),
    ],
)
def test_value_must_be_an_option_of_its_decision(tmp_path, decides, value, needle):
    err, _ = _load_error(tmp_path, f"""\
      - id: site.bad-value
        decides: {decides}
        effect: forbid
        value: {value}
        reason: A value the decision never offers would be ignored.
        source: test
    """)
    assert err.rule_id == "site.bad-value" and needle in str(err)


@pytest.mark.parametrize(
    ("decides", "value"),
    [("engine", "trtllm"), ("engine", "mlc"), ("engine", "exllamav2"), ("engine", "mistralrs"), ("quantization", "nvfp4"),
     ("quantization", "exl2"), ("quantization", "isq-q4k"), ("quantization", "mlc-q4f16_1"), ("quantization", "fp8-block"),
     ("quantization", "mxfp4-experts"), ("quantization", "exl2-8bpw"), ("quantization", "gguf-q4_0")],
)  # fmt: skip
def test_values_of_the_new_engines_and_formats_are_options(tmp_path, decides, value):
    """The engines and weight formats main added are options a rule may name (checkpoint-only formats included: a
    pre-quantized checkpoint's own format is judged by the same quantization rules)."""
    path = _write(tmp_path / "rules", f"""\
        rules:
          - id: site.new-option
            decides: {decides}
            effect: forbid
            value: {value}
            when: {{kind: compare, fact: gpu.vendor, op: eq, value: amd}}
            reason: A site forbids this option on AMD.
            source: test
    """)
    assert any(r.id == "site.new-option" and r.value == value for r in load_rules(path.parent))


def test_every_shipped_rule_file_loads_alone():
    """Each shipped rule file validates on its own (values against the decisions, including main's new engines)."""
    from infer_advisor._paths import shipped
    from infer_advisor.rules.loader import _load_file

    files = sorted(shipped("rules").glob("*.yaml"))
    assert {p.name for p in files} >= {"dtype.yaml", "engines.yaml", "parallelism.yaml", "quantization.yaml"}
    for path in files:
        assert _load_file(path), path


@pytest.mark.parametrize("score", [".nan", ".inf", "-.inf"])
def test_score_must_be_finite(tmp_path, score):
    err, _ = _load_error(tmp_path, f"""\
      - id: site.nan
        decides: engine
        effect: prefer
        value: vllm
        score: {score}
        reason: NaN sorts anywhere.
        source: test
    """)
    assert err.rule_id == "site.nan" and "finite" in str(err)


def test_ordering_against_text_is_refused_at_load(tmp_path):
    err, _ = _load_error(tmp_path, """\
      - id: site.text-order
        decides: engine
        when: {kind: compare, fact: gpu.compute_capability, op: lt, value: "8.0"}
        effect: forbid
        value: tgi
        reason: Quoted 8.0 is text.
        source: test
    """)
    assert err.rule_id == "site.text-order" and "value '8.0' is not a number" in str(err)


@pytest.mark.parametrize("operand", ['"4"', "4.0", "true"])
def test_divides_takes_whole_numbers_or_facts(tmp_path, operand):
    err, _ = _load_error(tmp_path, f"""\
      - id: site.divides
        decides: layout
        when: {{kind: divides, divisor: [{operand}], dividend: {{fact: model.num_kv_heads}}}}
        effect: forbid
        reason: A text divisor crashed the planner.
        source: test
    """)
    assert err.rule_id == "site.divides" and err.field.startswith("rules[1].when.divisor")


@pytest.mark.parametrize(
    "when",
    [
        "{kind: compare, fact: gpu.compute_capability, op: eq, value: '8.0'}",
        "{kind: compare, fact: gpu.name, op: gt, value: {fact: gpu.memory_gib}}",
        "{kind: in, fact: model.num_layers, values: ['32', '80']}",
        "{kind: divides, divisor: [{fact: gpu.name}], dividend: 8}",
    ],
)
def test_number_against_text_at_evaluation_is_one_line_exit_2(tmp_path, capsys, when):
    """The probe: a compare against a string was accepted and never matched; divides with text crashed."""
    _write(tmp_path / "rules", f"""\
    rules:
      - id: site.mismatch
        decides: engine
        when: {when}
        effect: forbid
        value: tgi
        reason: A comparison that can never be true is a mistake.
        source: test
    """)
    code = main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--rules", str(tmp_path / "rules")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "rule 'site.mismatch'" in err and "Traceback" not in err


def test_yaml_aliases_are_refused_and_nothing_is_cached(tmp_path, monkeypatch):
    """The probe: a 342-byte 'billion laughs' rules file ran until killed and wrote a multi-GB cache file."""
    monkeypatch.setenv("INFER_ADVISOR_CACHE", str(tmp_path / "cache"))
    laughs = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for i, (prev, name) in enumerate(zip("abcdefgh", "bcdefghi", strict=True)):
        laughs += f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]\n"
    _write(tmp_path / "rules", laughs + "rules: [*i]\n")
    import time

    start = time.monotonic()
    with pytest.raises(RuleFileError, match=r"YAML alias \(\*a\) at line 2: aliases are not allowed"):
        load_rules(tmp_path / "rules")
    assert time.monotonic() - start < 5
    _assert_not_cached(tmp_path / "rules" / "site.yaml", tmp_path / "cache")


def _assert_not_cached(path: Path, cache: Path) -> None:
    from infer_advisor._data import _cache_path

    assert not _cache_path(path, path.read_text(encoding="utf-8")).exists()
    assert sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) < 2**20  # the shipped files' caches only
    assert not list(cache.rglob("*.tmp"))


def test_an_invalid_rule_file_is_never_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("INFER_ADVISOR_CACHE", str(tmp_path / "cache"))
    _, path = _load_error(tmp_path, "- {id: site.x, decides: engine, effect: forbid, value: nope, reason: r, source: s}\n")
    _assert_not_cached(path, tmp_path / "cache")


def test_non_utf8_rule_file_is_one_line(tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "site.yaml").write_bytes(b"rules:\n  - id: caf\xe9\n")
    with pytest.raises(RuleFileError, match=r"not UTF-8 text \(byte 0xe9 at offset 18\)"):
        load_rules(tmp_path / "rules")
