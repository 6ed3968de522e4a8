"""Probe (issue 18, terminal; secaudit session 8): a user's value that reaches an error, usage or warning line on
stderr (an --emit kind, a --plot or --out path, an unknown option, a doctor --gpu spec, a `models add` field) never
reaches the terminal raw. Before the fix `plan ... --emit $'script\\e[31m' --out x` printed a live escape sequence
(cli._one_line joined whitespace but did not escape ESC, OSC 8 links, C1 or bidi controls).

Each call must keep the CLI contract (tests/probe/contract.py: exit 0/1/2, one error line for 2), print no unsafe
character on stdout or stderr (only "\\n" between lines), and leave nothing behind in a refused --out.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from infer_advisor.untrusted import unsafe_chars
from tests.probe.contract import check, probe_environment, run_cli
from tests.probe.hostile import FORMAT_CONTROLS, LINE_BREAKS, MARKUP_SPECIAL

PLAN = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB"]
COMMAND = "vllm serve meta-llama/Llama-2-7b-hf --max-model-len 4096"
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# A value with at least one character a terminal acts on (ESC, CSI, OSC 8, C1, bidi, line breaks), mixed with text,
# markup and quotes; never "/" (a path piece) and never NUL (argv cannot hold it).
_PIECES = st.sampled_from([c for c in LINE_BREAKS + FORMAT_CONTROLS if "\x00" not in c] + ["\x9d", "\x07", "\x08"])
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), max_size=12)
hostile = st.builds(lambda a, bad, b, m: a + bad + b + m, _TEXT, _PIECES, _TEXT,
                    st.sampled_from(["", *[m for m in MARKUP_SPECIAL if "/" not in m]]))

_CASES = itertools.count()
# Where the value goes: (arguments, the --out folder that must not appear).
SLOTS = {
    # inside the word: surrounding whitespace (\n, NEL, U+2028 ...) is stripped from a kind, which is then valid
    "emit-kind": lambda v, tmp: ([*PLAN, "--emit", "scr" + v + "ipt", "--out", str(tmp / "o")], tmp / "o"),
    "emit-out": lambda v, tmp: ([*PLAN, "--emit", "all", "--out", str(tmp / ("o" + v))], tmp / ("o" + v)),
    "plot-path": lambda v, tmp: ([*PLAN, "--rate", "1", "--plot", str(tmp / ("p" + v + ".txt"))], tmp / ("p" + v + ".txt")),
    "plot-png": lambda v, tmp: ([*PLAN, "--rate", "1", "--plot", str(tmp / ("p" + v + ".png"))], tmp / ("p" + v + ".png")),
    "unknown-option": lambda v, tmp: ([*PLAN, "--no-such-option" + v], None),
    "positional": lambda v, tmp: (["gpus", "x" + v], None),
    "doctor-gpu": lambda v, tmp: (["doctor", COMMAND, "--gpu", "A100-80GB" + v], None),
    "doctor-try-flags": lambda v, tmp: (["doctor", COMMAND, "--gpu", "A100-80GB", "--try-flags", "--max-model-len x" + v], None),
    "calibrate-out": lambda v, tmp: (["calibrate", "--from", str(tmp / "none.json"), "--engine", "vllm", "--gpu", "A100-80GB",
                                      "--out", str(tmp / ("c" + v + ".json"))], tmp / ("c" + v + ".json")),
}


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    probe_environment(monkeypatch, tmp_path / "cache")
    monkeypatch.chdir(tmp_path)


def _no_raw_controls(text: str, args: list[str]) -> None:
    bad = unsafe_chars(text.replace("\n", ""))
    assert not bad, f"raw {[hex(ord(c)) for c in bad]} on the terminal for {args!r}:\n{text[-600:]!r}"


@SETTINGS
@given(slot=st.sampled_from(sorted(SLOTS)), value=hostile)
@example(slot="emit-kind", value="\x1b]8;;http://evil/\x1b\\x\x1b[31mRED")
@example(slot="plot-path", value="\x1b[2J\x1b]0;title\x07")
@example(slot="doctor-gpu", value="\u202e\x9b31m")
@example(slot="unknown-option", value="\x1b[31m")
def test_values_in_error_lines_are_escaped(slot, value, tmp_path):
    tmp = tmp_path / f"case{next(_CASES)}"  # tmp_path is shared by the examples: one fresh folder each
    tmp.mkdir()
    args, out = SLOTS[slot](value, tmp)
    outcome = run_cli(args)
    check(outcome, args)
    _no_raw_controls(outcome.err + outcome.out, args)
    if out is not None:
        assert outcome.code == 2, (args, outcome.err)
        assert not out.exists(), f"{out!r} was written for {args!r}"


@SETTINGS
@given(field=st.sampled_from(["--alias", "--variant", "--family", "--config-source", "--retrieved-from"]), value=hostile)
def test_models_add_refuses_unsafe_fields(field, value, tmp_path):
    """`models add` keeps these fields in the catalog and `models` shows them: refused where they enter."""
    from infer_advisor.model_facts.catalog import find_entry

    config = tmp_path / "config.json"
    config.write_text(json.dumps({**find_entry("meta-llama/Llama-2-7b-hf").config, "_name_or_path": "acme/probe-7b"}))
    catalog = tmp_path / "catalog"
    text = ("acme/v" + value) if field == "--variant" else value
    args = ["models", "add", str(config), "--catalog-dir", str(catalog), field, text]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 2 and field in outcome.err, (args, outcome.err)
    _no_raw_controls(outcome.err + outcome.out, args)
    assert not list(Path(catalog).glob("*.json")) if catalog.exists() else True


def test_models_add_keeps_safe_special_text(tmp_path):
    """Quotes, markup and YAML specials are text, not refused: the catalog holds them exactly and `models` shows them
    escaped."""
    from infer_advisor.model_facts.catalog import find_entry

    config = tmp_path / "config.json"
    config.write_text(json.dumps({**find_entry("meta-llama/Llama-2-7b-hf").config, "_name_or_path": "acme/probe-7b"}))
    catalog = tmp_path / "catalog"
    alias, source = "probe [/] x: {a} #c", "https://example.invalid/a?b=$(id)&c='d' [link=x]"
    args = ["models", "add", str(config), "--catalog-dir", str(catalog), "--alias", alias, "--config-source", source]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 0, outcome.err
    entry = json.loads((catalog / "acme--probe-7b.json").read_text())
    assert entry["aliases"] == [alias] and entry["source"] == source


@pytest.mark.parametrize("command", [
    "vllm serve m " + "--max-model-len 4096 " * 2_000,  # over MAX_COMMAND_CHARS: was OSError 'File name too long', exit 3
    "llama-server -m x.gguf " + "-c 4096 " * 5_000,
    "vllm serve " + "m" * 300 + " --max-model-len 4096",  # a word over NAME_MAX, under the command limit
    "x" * 300,
])
def test_doctor_long_command_lines_are_one_line(command):
    args = ["doctor", command, "--gpu", "H100-80GB", "--model", "meta-llama/Llama-3.1-8B"]
    outcome = run_cli(args)
    check(outcome, args)


def test_json_output_is_exact_and_inert(tmp_path):
    """--format json keeps every value exact (issue 18) and now also writes C1 controls, line separators and bidi
    controls (which JSON writers leave raw) as JSON escapes: the same value for a parser, nothing a terminal acts on."""
    from infer_advisor.model_facts.catalog import find_entry

    arch = "Llama\x9b2J\x1b]8;;http://evil/\x1b\\\u202e\u2028\x85\U000e0041ForCausalLM"
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**find_entry("meta-llama/Llama-2-7b-hf").config, "architectures": [arch]}))
    args = ["plan", "--model", str(folder), "--gpu", "A100-80GB", "--format", "json"]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 0, outcome.err
    _no_raw_controls(outcome.out, args)
    assert json.loads(outcome.out)["model"]["architecture"] == arch
