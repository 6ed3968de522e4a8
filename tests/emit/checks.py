"""The real tools that judge emitted files: bash -n, shellcheck, hadolint, kubernetes-validate, compose-spec schema."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

import yaml

DATA = Path(__file__).parent / "data"
BIN = Path(sys.executable).parent
# Kubernetes version the manifests are validated against (the newest schema kubernetes-validate ships).
K8S_VERSION = "1.37.0"


def flag_value(argv: list[str], flag: str) -> str:
    """The value of ``flag`` in ``argv``, written ``--flag value`` or ``--flag=value``."""
    for i, word in enumerate(argv):
        if word == flag:
            return argv[i + 1]
        if word.startswith(flag + "="):
            return word[len(flag) + 1 :]
    raise AssertionError(f"{flag} not in {argv}")


def has_flag(argv: list[str], flag: str) -> bool:
    return any(w == flag or w.startswith(flag + "=") for w in argv)


def _tool(name: str) -> str:
    path = BIN / name
    found = str(path) if path.exists() else shutil.which(name)
    assert found, f"{name} is not installed (dev extra)"
    return found


def _run(args: list[str], text: str, suffix: str) -> subprocess.CompletedProcess:
    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as f:
        f.write(text)
    try:
        return subprocess.run([*args, f.name], capture_output=True, text=True, timeout=60)
    finally:
        Path(f.name).unlink()


def check_shell(text: str) -> None:
    r = _run(["bash", "-n"], text, ".sh")
    assert r.returncode == 0, f"bash -n: {r.stderr}"
    r = _run([_tool("shellcheck"), "--severity=style", "--shell=bash"], text, ".sh")
    assert r.returncode == 0, f"shellcheck:\n{r.stdout}{r.stderr}"


def check_dockerfile(text: str) -> None:
    r = _run([_tool("hadolint"), "--no-color", "--failure-threshold", "info"], text, ".Dockerfile")
    assert r.returncode == 0 and not r.stdout.strip(), f"hadolint:\n{r.stdout}{r.stderr}"


def check_python(text: str) -> None:
    compile(text, "generate.py", "exec")


@cache
def compose_schema() -> dict:
    return json.loads((DATA / "compose-spec.json").read_text())


def check_compose(text: str) -> None:
    import jsonschema

    doc = yaml.safe_load(text)
    jsonschema.Draft7Validator(compose_schema()).validate(doc)
    for name, svc in doc["services"].items():
        devices = svc.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
        for d in devices:
            assert d["driver"] == "nvidia" and d["capabilities"] == ["gpu"], name
            assert ("count" in d) != ("device_ids" in d), name  # the compose spec allows one of them
            assert d.get("count", 1) >= 1 and all(str(i).isdigit() for i in d.get("device_ids", [])), name


# Top-level fields of LeaderWorkerSet v1 (kubernetes-sigs/lws config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml).
_LWS_SPEC = {"replicas", "leaderWorkerTemplate", "rolloutStrategy", "startupPolicy", "networkConfig"}
_LWS_TEMPLATE = {"leaderTemplate", "workerTemplate", "size", "restartPolicy", "subGroupPolicy", "resizePolicy"}


def _validate_k8s(doc: dict) -> None:
    import kubernetes_validate

    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def check_k8s(text: str) -> list[dict]:
    """Every document validates against the Kubernetes schema; a LeaderWorkerSet is checked structurally and its
    pod templates are validated as Pods against the real schema. Returns the documents."""
    docs = [d for d in yaml.safe_load_all(text) if d]
    assert docs
    for doc in docs:
        if doc["apiVersion"] == "leaderworkerset.x-k8s.io/v1":
            assert doc["kind"] == "LeaderWorkerSet"
            spec = doc["spec"]
            assert set(spec) <= _LWS_SPEC, set(spec) - _LWS_SPEC
            tmpl = spec["leaderWorkerTemplate"]
            assert set(tmpl) <= _LWS_TEMPLATE, set(tmpl) - _LWS_TEMPLATE
            assert isinstance(tmpl["size"], int) and tmpl["size"] >= 2
            assert tmpl["restartPolicy"] in {"RecreateGroupOnPodRestart", "None", "Default"}
            for key in ("leaderTemplate", "workerTemplate"):
                pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "check", **tmpl[key].get("metadata", {})}, "spec": tmpl[key]["spec"]}
                _validate_k8s(pod)
        else:
            _validate_k8s(doc)
    return docs


def check_file(name: str, text: str) -> None:
    if name.endswith(".sh"):
        check_shell(text)
    elif name == "Dockerfile":
        check_dockerfile(text)
    elif name.endswith(".py"):
        check_python(text)
    elif name == "docker-compose.yml":
        check_compose(text)
    elif name == "k8s.yaml":
        check_k8s(text)
    elif name.endswith(".yaml"):  # a file the engine reads (TensorRT-LLM's options, Triton's model.yaml)
        assert isinstance(yaml.safe_load(text), dict), name
    elif name.endswith(".pbtxt"):  # Triton model configuration; parsed by Triton's protobuf in test_triton_contract.py
        body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        assert body.count("{") == body.count("}") and body.count("[") == body.count("]"), name
        assert 'backend: "python"' in body and "name: " in body, name
    else:
        assert name == "README.md", name
        assert text.strip()
