"""Hostile values through the real CLI path into artifacts (secaudit, session 8): the values sessions 6-8 added or left
untested end to end.

- a local model folder whose name holds Markdown and HTML (a name `models`, `plan` and the README all print): the
  README's Markdown has exactly the structure of a benign rendering (no link, image, raw HTML or code span added) and
  its heading reads back as the path (before: `# vLLM ... deployment of /m <img src=x onerror=...>` was raw HTML);
- `--speculative-config` JSON holding shell, YAML and control text (one argv word): every artifact passes its real
  tool, the word reaches the engine whole in serve.sh (run with a stub `vllm`), compose, Kubernetes and the Dockerfile,
  and no injected command runs;
- a start-up log whose name and lines carry markup and terminal escapes, through `calibrate --from-log` and
  `plan --calibration`: nothing raw on the terminal, the README's structure unchanged;
- HF_TOKEN / HUGGING_FACE_HUB_TOKEN set to a sentinel: it appears in no written file and no output.

Emphasis (``*x*``, ``_x_``) is not escaped by :func:`infer_advisor.untrusted.markdown_cell` on purpose (model names
hold underscores); the folder names here leave it out.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from infer_advisor.untrusted import unsafe_chars
from tests.emit.checks import check_file, flag_value
from tests.probe.contract import check, probe_environment, run_cli

LOGS = Path(__file__).parents[1] / "estimate" / "logs"
SPEC_MODEL = ["--model", "nvidia/Qwen3.6-27B-NVFP4", "--gpu", "RTX-PRO-6000", "--engine", "vllm", "--context", "65536"]
# Inline structure a value must not add to the README (emphasis aside, see the module docstring).
_CASES = itertools.count()  # a fresh folder per hypothesis example (tmp_path is shared by a test's examples)
STRUCTURE = {"link_open", "image", "html_inline", "html_block", "code_inline", "autolink"}


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    probe_environment(monkeypatch, tmp_path / "cache")
    monkeypatch.chdir(tmp_path)


def _markdown_shape(text: str) -> tuple[list[str], Counter]:
    """Block token types in order, and a count of the inline structure tokens."""
    tokens = MarkdownIt().parse(text)
    inline = Counter(c.type for t in tokens for c in (t.children or []) if c.type in STRUCTURE)
    return [t.type for t in tokens if t.type != "inline"], inline


def _heading_text(text: str) -> str:
    tokens = MarkdownIt().parse(text)
    i = next(i for i, t in enumerate(tokens) if t.type == "heading_open")
    return "".join(c.content for c in tokens[i + 1].children)  # markdown-it has resolved escapes and entities


def _emit(args: list[str], out: Path) -> dict[str, str]:
    outcome = run_cli([*args, "--emit", "all", "--out", str(out), "--format", "json"])
    check(outcome, args)
    assert outcome.code == 0, outcome.err
    assert not unsafe_chars(outcome.err.replace("\n", ""))
    return {p.name: p.read_text() for p in out.iterdir() if p.is_file() and not p.name.startswith(".")}


def _model_folder(root: Path, name: str) -> Path:
    from infer_advisor.model_facts.catalog import find_entry

    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(find_entry("meta-llama/Llama-2-7b-hf").config))
    return folder


# Printable folder-name characters with Markdown's and HTML's specials over-represented (no '/', no emphasis marks).
MARKDOWN_NAME = st.lists(st.sampled_from(list("<>[]()|`\\!&;#:=\"' ab.-") + ["img", "src=x", "http:e", "&lt;", "&#60;"]),
                         min_size=1, max_size=16).map("".join).filter(lambda s: s.strip(" .") != "" and s == s.rstrip())  # --model is stripped


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(name=MARKDOWN_NAME)
@example(name="#")  # a trailing " #" closed the README's ATX heading and was dropped (final CI of 2026-12-04 on b9c0fac)
@example(name="<img src=x onerror=alert(1)>")
@example(name="[click](http:\\\\e) | `x` &amp;")
def test_markdown_in_a_local_folder_name_stays_text_in_the_readme(name, tmp_path):
    base = tmp_path / f"case{next(_CASES)}"
    benign = _emit(["plan", "--model", str(_model_folder(base, "models benign")), "--gpu", "A100-80GB"], base / "benign")
    folder = _model_folder(base, f"models {name}")
    files = _emit(["plan", "--model", str(folder), "--gpu", "A100-80GB"], base / "out")
    assert _markdown_shape(files["README.md"]) == _markdown_shape(benign["README.md"]), name
    heading = _heading_text(files["README.md"])
    assert heading.endswith(f"deployment of {folder}"), (heading, str(folder))
    check_file("serve.sh", files["serve.sh"])
    assert shlex.split(files["serve.sh"].rsplit("exec ", 1)[1].replace("\\\n", " "))[2] == str(folder)
    # The Markdown report of the same plan (`plan --format markdown`): the structure of the benign one.
    reports = [run_cli(["plan", "--model", str(f), "--gpu", "A100-80GB", "--format", "markdown", "--explain"])
               for f in (folder, base / "models benign")]
    assert all(r.code == 0 for r in reports), reports[0].err
    assert _markdown_shape(reports[0].out) == _markdown_shape(reports[1].out), name


# JSON string values with every target's special characters; JSON itself escapes the controls.
SPEC_TEXT = st.lists(st.sampled_from(list(" '\"$();&|`\\!*?#~{}[]<>,:=%@^-\n\r\t\x1b\x85\u2028\u202e") + ["$(touch CANARY)", "`touch CANARY`", "!!python/object:os.system", "&a", "*a", "- ", ": "]),
                     max_size=12).map("".join)


def _stub_vllm(tmp: Path) -> dict[str, str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "vllm"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(key=SPEC_TEXT, value=SPEC_TEXT, dflash=st.booleans())
@example(key="$(touch CANARY)", value="'; touch CANARY; '\n--- !!python/object:os.system\u2028x", dflash=False)
@example(key="a", value="`touch CANARY` #: {&a *b}", dflash=True)
def test_speculative_config_is_one_word_in_every_artifact(key, value, dflash, tmp_path):
    config = {"method": "mtp", "num_speculative_tokens": 3, key or "k": value}
    if dflash:
        config = {"method": "dflash", "model": f"/drafts/{value.replace('/', '')}/Qwen3.6-27B-DFlash", "num_speculative_tokens": 3}
    given_text = json.dumps(config, ensure_ascii=False)
    out = tmp_path / f"out{next(_CASES)}"
    files = _emit(["plan", *SPEC_MODEL, "--speculative-config", given_text], out)

    def spec(argv: list[str]) -> dict:
        return json.loads(flag_value([a.replace("$$", "$") if a.startswith("--spec") else a for a in argv], "--speculative-config"))

    for name, text in files.items():
        assert not unsafe_chars(text.replace("\n", "")), name
        check_file(name, text)
    compose = yaml.safe_load(files["docker-compose.yml"])
    assert spec(compose["services"]["server"]["entrypoint"]) == config
    pod = next(d for d in yaml.safe_load_all(files["k8s.yaml"]) if d and d["kind"] == "Deployment")
    assert spec(pod["spec"]["template"]["spec"]["containers"][0]["command"]) == config
    entry = next(line for line in files["Dockerfile"].splitlines() if line.startswith("ENTRYPOINT "))
    assert spec(json.loads(entry.removeprefix("ENTRYPOINT "))) == config
    run = subprocess.run(["bash", str(out / "serve.sh")], capture_output=True, text=True, env=_stub_vllm(tmp_path),
                         cwd=tmp_path, timeout=60)
    assert run.returncode == 0, run.stderr
    assert spec(json.loads(run.stdout.splitlines()[-1])) == config
    assert not list(tmp_path.rglob("CANARY*")), "an injected command ran"


ESC = "\x1b]8;;http://evil/\x1b\\x\x1b]8;;\x1b\\\x1b[31m\u202e"


def _calibrate(tmp: Path, name: str, extra: str) -> Path:
    text = (LOGS / "vllm_v1_0.19_h100_llama31_8b.log").read_text()
    text = text.replace("GPU KV cache size: 476,016 tokens", f"GPU KV cache size: 476,016 tokens{extra}")
    log = tmp / name
    log.write_text(text + f"\nINFO{extra}\n")
    cal = tmp / f"{len(list(tmp.iterdir()))}.json"
    args = ["calibrate", "--from-log", str(log), "--gpu", "H100-80GB", "--model", "meta-llama/Llama-3.1-8B", "--out", str(cal)]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 0, outcome.err
    assert not unsafe_chars((outcome.out + outcome.err).replace("\n", ""))
    return cal


def test_hostile_start_up_log_through_calibrate_and_plan(tmp_path):
    """The log's file name (safe characters, Markdown in them) and its lines (terminal escapes) reach the calibration,
    the plan's table, markdown and explain output and the artifacts only escaped: the README has the structure of the
    same calibration made from a benign log."""
    cal = _calibrate(tmp_path, "vllm <img src=x> [l](http:e) `t` |p|.log", f" {ESC}[/] <b>x</b> [bold]x[/bold]")
    benign_cal = _calibrate(tmp_path, "vllm-benign.log", "")
    plan = ["plan", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-80GB", "--engine", "vllm", "--engine-version", "0.19.0",
            "--context", "8192", "--gpu-memory-utilization", "0.95"]
    for fmt in (["--format", "table", "--explain"], ["--format", "markdown", "--explain"]):
        outcome = run_cli([*plan, "--calibration", str(cal), *fmt])
        check(outcome, plan)
        assert outcome.code == 0 and "calibrated (log)" in outcome.out, outcome.err
        assert not unsafe_chars((outcome.out + outcome.err).replace("\n", "")), fmt
        if "markdown" in fmt:
            assert _markdown_shape(outcome.out)[1].keys() <= {"code_inline"}, "a link, image or raw HTML in the markdown"
    # The artifacts' templates start at vLLM 0.33: the 0.19 calibration is applied there with a warning naming it.
    current = [a for a in plan if a not in ("--engine-version", "0.19.0")] + ["--calibration-mismatch", "warn"]
    benign = _emit([*current, "--calibration", str(benign_cal)], tmp_path / "benign")
    files = _emit([*current, "--calibration", str(cal)], tmp_path / "out")
    assert files["README.md"] != benign["README.md"], "the calibration's text reached no artifact"
    assert _markdown_shape(files["README.md"]) == _markdown_shape(benign["README.md"])
    for name, body in files.items():
        assert not unsafe_chars(body.replace("\n", "")), name


SENTINEL = "hf_SecAuditSentinelToken0123456789"


def test_the_hub_token_is_written_nowhere(tmp_path, monkeypatch):
    """'No token is written into any file': with both token variables set, no artifact, calibration, catalog entry or
    printed output holds it (the artifacts read it from the environment or a Secret at run time)."""
    monkeypatch.setenv("HF_TOKEN", SENTINEL)
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", SENTINEL)
    from infer_advisor.model_facts.catalog import find_entry

    config = tmp_path / "config.json"
    config.write_text(json.dumps({**find_entry("meta-llama/Llama-2-7b-hf").config, "_name_or_path": "acme/token-7b"}))
    runs = [
        ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--emit", "all", "--out", str(tmp_path / "a")],
        ["plan", "--model", "meta-llama/Llama-3.1-405B", "--gpu", "H100-80GB:8x2", "--emit", "all", "--out", str(tmp_path / "b")],
        ["plan", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-80GB", "--stack", "nvidia-triton", "--emit", "all",
         "--out", str(tmp_path / "c"), "--format", "json"],
        ["calibrate", "--from-log", str(LOGS / "vllm_v1_0.19_h100_llama31_8b.log"), "--gpu", "H100-80GB", "--model",
         "meta-llama/Llama-3.1-8B", "--out", str(tmp_path / "cal.json"), "--format", "json"],
        ["models", "add", str(config), "--catalog-dir", str(tmp_path / "catalog")],
        ["doctor", str(LOGS / "vllm_v1_0.19_h100_llama31_8b.log"), "--gpu", "H100-80GB", "--json"],
    ]
    for args in runs:
        outcome = run_cli(args)
        check(outcome, args)
        assert outcome.code in (0, 1), (args, outcome.err)
        assert SENTINEL not in outcome.out + outcome.err, args
    written = [p for p in tmp_path.rglob("*") if p.is_file() and "cache" not in p.relative_to(tmp_path).parts]
    assert len(written) > 20
    for path in written:
        assert SENTINEL.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("value", ["a\u2028b\x85c\u202e", "tag\U000e0041\U000e007f", "\U000f0000private", 'q"\\', "\x9b2J"])
def test_the_dockerfile_json_escaper_round_trips(value):
    """emit/templating.json_value (Dockerfile exec form) writes unsafe characters as escapes that parse back to the
    same value: a character beyond U+FFFF (Unicode tag characters, private use) as its surrogate pair (before:
    '\\ue0041', which JSON reads as U+E004 followed by '1')."""
    from infer_advisor.emit.templating import json_value

    text = str(json_value([value]))
    assert not unsafe_chars(text), text
    assert json.loads(text) == [value]
