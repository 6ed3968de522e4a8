"""Hostile values rendered into every artifact kind of every engine (issue 18): each file is parsed back by the real
tool and compared with the same plan rendered from a benign value. Nothing may escape its slot:

- serve.sh / entrypoint.sh / ray-node.sh: `bash -n` and shellcheck pass, and the script, *run* with every engine
  binary replaced by a stub that records its argv, creates no CANARY file and hands the value to the engine as one
  argument;
- docker-compose.yml and k8s.yaml: the same number of documents and the same tree of keys as the benign rendering
  (a value that adds a key or a document fails), the compose schema and the Kubernetes schema pass;
- Dockerfile: hadolint passes and the instructions are those of the benign rendering;
- every file: no raw control, line-separator or bidi character outside "\\n".
"""

from __future__ import annotations

import ast
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infer_advisor.emit import render
from infer_advisor.errors import EmitError
from infer_advisor.untrusted import unsafe_chars
from tests.emit.checks import check_file
from tests.emit.regen import stored_plan
from tests.probe.hostile import BAD_VERSIONS, QUOTABLE, REFUSED

# Cases that together reach every template: each engine's server, the multi-node (Ray, LeaderWorkerSet), replica,
# library (generate.py), CPU, AMD, Triton and speculative paths.
CASES = ["vllm", "vllm-multinode", "vllm-replicas", "vllm-mi300x", "sglang", "tgi", "llama.cpp", "ctranslate2",
         "transformers", "trtllm", "trtllm-triton", "mlc", "exllamav2", "mistralrs-cpu"]
# Values that hit every target's special characters at once (one rendering per case keeps the test fast).
VALUES = ["org/m$(touch CANARY)`touch CANARY`'\";x #[/]<b>&a *b: c\\", "org/key: value #", "org/- [link=x]y[/link] | z"]
BENIGN = "org/benign-model"
# Commands the emitted scripts may run; each is replaced by a stub that records its arguments.
STUBS = ["vllm", "python3", "python", "text-generation-launcher", "llama-server", "trtllm-serve", "mlc_llm",
         "mistralrs-server", "tritonserver", "hf", "huggingface-cli", "ray", "infer-advisor", "curl", "trtllm-build",
         "ct2-transformers-converter", "git", "pip", "sglang", "mpirun", "hostname", "sleep", "nvidia-smi", "exllamav2"]
_INSTRUCTION = re.compile(r"^([A-Z]+)\b")


def _with(case: str, model: str, gpu_name: str | None = None):
    plan = stored_plan(case)
    model_facts = plan.model.model_copy(update={"name": model})
    hardware = plan.hardware
    if gpu_name is not None and hardware.gpus:
        hardware = hardware.model_copy(update={"gpus": [g.model_copy(update={"name": gpu_name}) for g in hardware.gpus]})
    engine = plan.engine.model_copy(update={"served_model_name": model})
    return plan.model_copy(update={"model": model_facts, "hardware": hardware, "engine": engine})


def _shape(node):
    """The tree of keys and list lengths, leaves reduced to their type: what a value must not change."""
    if isinstance(node, dict):
        return {k: _shape(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_shape(v) for v in node]
    return type(node).__name__


def _instructions(dockerfile: str) -> list[str]:
    return [m.group(1) for line in dockerfile.splitlines() if (m := _INSTRUCTION.match(line))]


def _scalars(node):
    if isinstance(node, dict):
        for v in node.values():
            yield from _scalars(v)
    elif isinstance(node, list):
        for v in node:
            yield from _scalars(v)
    else:
        yield node


def _constants(source: str) -> list:
    """Values of the module's ``NAME = <literal>`` assignments (generate.py's MODEL, DEVICE ...)."""
    tree = ast.parse(source)
    return [n.value.value for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)]


def _stub_dir(tmp: Path) -> Path:
    bin_dir = tmp / "stub-bin"
    bin_dir.mkdir()
    stub = '#!/bin/bash\nprintf "%s\\0" "$(basename "$0")" "$@" >> "$CALLS"; printf "\\n" >> "$CALLS"\n' \
           'case "$*" in *-c*) echo 99 ;; esac\nexit 0\n'
    for name in STUBS:
        path = bin_dir / name
        path.write_text(stub)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def _run_script(tmp: Path, name: str, text: str, args: list[str]) -> list[list[str]]:
    """Run ``text`` with stubbed engines; return the recorded calls (argv lists)."""
    work = tmp / "run"
    work.mkdir(exist_ok=True)
    script = work / name
    script.write_text(text)
    script.chmod(0o755)
    calls = tmp / "calls"
    calls.write_bytes(b"")
    env = {"PATH": f"{_stub_dir(tmp) if not (tmp / 'stub-bin').exists() else tmp / 'stub-bin'}:/usr/bin:/bin",
           "CALLS": str(calls), "HOME": str(tmp), "NCCL_SOCKET_IFNAME": "lo", "VLLM_HOST_IP": "127.0.0.1"}
    subprocess.run(["bash", str(script), *args], cwd=work, env=env, capture_output=True, timeout=30, check=False)
    assert not list(tmp.rglob("CANARY*")), f"{name}: an injected command ran"
    return [rec.split("\0") for rec in calls.read_text(errors="replace").split("\0\n") if rec] or []


@pytest.mark.parametrize("case", CASES)
def test_hostile_model_names_stay_in_their_slots(case, tmp_path):
    benign = render(_with(case, BENIGN, gpu_name="GPU benign"), "all")  # an unknown GPU name, as the hostile one is
    for value in VALUES:
        files = render(_with(case, value, gpu_name="GPU $(touch CANARY) [/] *x: y"), "all")
        assert sorted(files) == sorted(benign), value
        for name, text in files.items():
            assert not unsafe_chars(text.replace("\n", "")), f"{case}/{name}: raw unsafe character for {value!r}"
            check_file(name, text)
            if name == "Dockerfile":
                assert _instructions(text) == _instructions(benign[name]), f"{case}: Dockerfile instructions changed"
            elif name in ("docker-compose.yml", "k8s.yaml"):
                docs, base = list(yaml.safe_load_all(text)), list(yaml.safe_load_all(benign[name]))
                assert [_shape(d) for d in docs] == [_shape(d) for d in base], f"{case}/{name}: {value!r} changed the keys"
                if name == "docker-compose.yml" and "entrypoint" in str(docs):
                    assert any(value in str(s).replace("$$", "$") for d in docs for s in _scalars(d)), f"{case}/{name}: value not kept whole"
            elif name.endswith(".py"):
                if BENIGN in _constants(benign[name]):
                    assert value in _constants(text), f"{case}/{name}: MODEL is not the value"
        for name in ("serve.sh", "entrypoint.sh", "ray-node.sh"):
            if name in files:
                args = ["head"] if "multinode" in case else []
                calls = _run_script(tmp_path, name, files[name], args)
                engine_calls = [c for c in calls if c and c[0] not in ("hostname", "sleep", "python3")]
                benign_words = [w for c in _run_script(tmp_path, name, benign[name], args) for w in c]
                if any(w == BENIGN or w.endswith("=" + BENIGN) for w in benign_words):
                    assert any(w == value or w.endswith("=" + value) for c in engine_calls for w in c), f"{case}/{name}: {value!r} not one argument: {engine_calls}"


@pytest.mark.parametrize("value", REFUSED)
def test_unsafe_names_are_refused_at_emit(value):
    """A plan built outside `advise()` (JSON, the Python API) with a raw line break or bidi control in a name is
    refused by render(), as `advise()` refuses it at the request."""
    for model, gpu in (("org/" + value, None), (BENIGN, value)):
        with pytest.raises(EmitError, match="not allowed"):
            render(_with("vllm", model, gpu_name=gpu), "all")


def test_comments_escape_what_outside_files_supply():
    """Text the emit boundary does not check (a config.json architecture, a warning) is escaped in comments."""
    plan = stored_plan("vllm")
    odd = "Llama\u2028key: x\x85---\ntouch CANARY #\u202e"
    plan = plan.model_copy(update={"model": plan.model.model_copy(update={"architecture": odd}),
                                   "warnings": [odd]})
    for name, text in render(plan, "all").items():
        assert not unsafe_chars(text.replace("\n", "")), name
        assert "\ntouch CANARY" not in text, name
        check_file(name, text)


@pytest.mark.parametrize("version", BAD_VERSIONS)
def test_bad_engine_versions_are_refused_at_emit(version):
    plan = stored_plan("vllm")
    plan = plan.model_copy(update={"engine": plan.engine.model_copy(update={"version": version})})
    with pytest.raises(EmitError):
        render(plan, "all")


def test_quotable_corpus_is_accepted_by_the_boundary():
    """Values whose characters are all safe are not refused (they are quoted instead)."""
    from infer_advisor.untrusted import refuse_unsafe

    for value in QUOTABLE:
        assert refuse_unsafe(value, "x") == value
    assert sys.platform != "win32" and os.sep == "/"
