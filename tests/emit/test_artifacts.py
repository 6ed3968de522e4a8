"""Every artifact of one real plan per engine passes the real tools (bash -n, shellcheck, hadolint,
kubernetes-validate, the compose-spec schema); plus the content each artifact promises."""

from __future__ import annotations

import json
import re
import shlex

import pytest
import yaml
from tests.emit.plans import GOLDEN, make_plan

from infer_advisor.emit import render
from tests.emit.checks import check_file, check_k8s, flag_value, has_flag


@pytest.fixture(scope="module", params=sorted(GOLDEN))
def rendered(request):
    plan = make_plan(**GOLDEN[request.param])
    return request.param, plan, render(plan, "all")


def test_every_file_passes_its_tool(rendered):
    name, _, files = rendered
    for filename, text in files.items():
        check_file(filename, text)


def test_engine_version_is_named_in_every_artifact(rendered):
    _, plan, files = rendered
    for filename, text in files.items():
        assert plan.engine.version in text, filename


def test_no_token_and_no_latest_anywhere(rendered, monkeypatch):
    _, _, files = rendered
    for filename, text in files.items():
        assert ":latest" not in text, filename
        assert not re.search(r"hf_[A-Za-z0-9]{30,}", text), filename  # a Hugging Face token (hf_ + 34 characters)


def test_dockerfile_is_pinned_with_exec_form_healthcheck_and_cache_volume(rendered):
    _, plan, files = rendered
    lines = files["Dockerfile"].splitlines()
    base = next(line for line in lines if line.startswith("FROM "))
    assert ":" in base.split()[1].rsplit("/", 1)[-1]
    health = next(line for line in lines if line.startswith("HEALTHCHECK"))
    assert "VOLUME [" in files["Dockerfile"]
    if plan.engine.http_server:
        cmd = json.loads(health.split(" CMD ", 1)[1])
        assert cmd[-1].endswith(plan.engine.health_path) and str(plan.engine.port) in cmd[-1]
        assert "--ipc=host" in files["Dockerfile"] and "-e HF_TOKEN" in files["Dockerfile"]
        vendor = plan.hardware.gpus[0].vendor if plan.hardware.kind == "gpu" else "cpu"
        assert ("--gpus" in files["Dockerfile"]) == (vendor == "nvidia")
        assert ("--device=/dev/kfd" in files["Dockerfile"]) == (vendor == "amd")
    else:
        assert health == "HEALTHCHECK NONE"
    entry = next(line for line in lines if line.startswith("ENTRYPOINT "))
    assert isinstance(json.loads(entry.removeprefix("ENTRYPOINT ")), list)


def test_compose_reserves_gpus_and_passes_token_from_environment(rendered):
    _, plan, files = rendered
    doc = yaml.safe_load(files["docker-compose.yml"])
    p = plan.parallelism
    per_replica = p.tensor_parallel_size * p.pipeline_parallel_size // p.nodes
    vendor = plan.hardware.gpus[0].vendor if plan.hardware.kind == "gpu" else "cpu"
    gpus = 0
    for svc in doc["services"].values():
        assert svc["environment"][0] == "HF_TOKEN"
        if vendor == "nvidia":
            (device,) = svc["deploy"]["resources"]["reservations"]["devices"]
            assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
            gpus += device.get("count") or len(device["device_ids"])
        else:
            assert "deploy" not in svc
        if vendor == "amd":
            assert {"/dev/kfd", "/dev/dri"} <= set(svc["devices"]) and set(svc["group_add"]) == {"video", "render"}
    if vendor == "nvidia" and p.nodes == 1 and plan.engine.http_server:  # every replica of the node is started
        assert gpus == per_replica * p.replicas


def test_kubernetes_objects(rendered):
    _, plan, files = rendered
    docs = check_k8s(files["k8s.yaml"])
    kinds = [d["kind"] for d in docs]
    for d in docs:
        assert d["metadata"]["name"] != "vllm"
    if not plan.engine.http_server:
        assert "Job" in kinds
        return
    assert "Service" in kinds
    workload = next(d for d in docs if d["kind"] in {"Deployment", "LeaderWorkerSet"})
    if plan.parallelism.nodes > 1:
        assert workload["kind"] == "LeaderWorkerSet" and workload["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
        assert workload["spec"]["leaderWorkerTemplate"]["size"] == plan.parallelism.nodes
        pod = workload["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    else:
        assert workload["kind"] == "Deployment"
        pod = workload["spec"]["template"]["spec"]
    assert pod["enableServiceLinks"] is False
    container = pod["containers"][0]
    vendor = plan.hardware.gpus[0].vendor if plan.hardware.kind == "gpu" else "cpu"
    resources = container["resources"]
    assert resources["requests"]["cpu"] and resources["requests"]["memory"].endswith("Gi")
    if vendor == "cpu":
        assert "limits" not in resources and "strategy" not in workload["spec"]
    else:
        resource = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}[vendor]
        assert resources["limits"] == {resource: plan.parallelism.tensor_parallel_size * plan.parallelism.pipeline_parallel_size
                                       // plan.parallelism.nodes} | ({"rdma/rdma_shared_device_a": 1} if plan.request.network == "rdma" and plan.parallelism.nodes > 1 else {})
        assert {"key": resource, "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
        if plan.parallelism.nodes == 1:
            assert workload["spec"]["strategy"] == {"type": "Recreate"}
            assert workload["spec"]["replicas"] == plan.parallelism.replicas
    token = next(e for e in container["env"] if e["name"] == "HF_TOKEN")
    assert token["valueFrom"]["secretKeyRef"]["optional"] is True
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["path"] == plan.engine.health_path
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"


def test_readme_says_how_to_start_check_and_ask(rendered):
    _, plan, files = rendered
    readme = files["README.md"]
    if plan.engine.http_server:
        assert f"curl -fsS http://localhost:{plan.engine.port}{plan.engine.health_path}" in readme
        line = next(line for line in readme.splitlines() if line.startswith("curl -sS"))
        words = shlex.split(line)
        body = json.loads(words[words.index("-d") + 1])
        assert body.get("model", plan.engine.served_model_name) == plan.engine.served_model_name
        if plan.engine.server == "triton":  # Triton's generate extension, the model named in the path
            assert words[2].endswith(f"/v2/models/{plan.engine.served_model_name}/generate") and "text_input" in body
        else:
            assert words[2].endswith("/v1/completions")
    else:
        assert "no HTTP server" in readme
    if plan.quantization.needs_quantize_step or plan.engine.name == "ctranslate2":
        assert "infer-advisor quantize --model" in readme


def _argv(plan) -> list[str]:
    return shlex.split(render(plan, "script")["serve.sh"].split("exec ", 1)[1].replace("\\\n", " "))


def test_vllm_script_flags():
    plan = make_plan(**GOLDEN["vllm"])
    argv = _argv(plan)
    assert argv[:3] == ["vllm", "serve", "meta-llama/Llama-2-7b-hf"]
    for flag in ("--tensor-parallel-size", "--dtype", "--max-model-len", "--served-model-name", "--host", "--port"):
        assert has_flag(argv, flag), flag
    assert flag_value(argv, "--served-model-name") == "meta-llama/Llama-2-7b-hf"
    # settings equal to vLLM 0.33's own defaults on an A100 (2048 tokens, 256 sequences, 0.92, auto KV) are left to it
    assert plan.engine.defaults["max_num_batched_tokens"] == 2048 and plan.engine.defaults["max_num_seqs"] == 256
    for flag in ("--pipeline-parallel-size", "--gpu-memory-utilization", "--max-num-seqs", "--max-num-batched-tokens", "--kv-cache-dtype"):
        assert not has_flag(argv, flag), flag
    assert "--quantization" not in argv  # the plan's engine_flag is None: vLLM detects the format itself


def test_vllm_script_passes_settings_that_differ_from_the_defaults():
    argv = _argv(make_plan(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", goal="latency", gpu_memory_utilization=0.8,
                           max_num_batched_tokens=4096, kv_cache_dtype="fp8", context=8192, max_num_seqs=1))
    assert argv[argv.index("--max-num-seqs") + 1] == "1"  # asked for, not H100's default 1024
    latency = _argv(make_plan(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", goal="latency", concurrency=1))
    assert "--max-num-seqs" not in latency  # the goal alone keeps the engine's default (issue 23)
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.8"
    assert argv[argv.index("--max-num-batched-tokens") + 1] == "4096"
    assert argv[argv.index("--kv-cache-dtype") + 1] == "fp8"


def test_llamacpp_quantized_kv_cache_flags():
    argv = _argv(make_plan(**{**GOLDEN["llama.cpp"], "gpu": "H100-80GB"}, kv_cache_dtype="fp8"))  # fp8 KV needs CC 8.9+
    assert argv[argv.index("--cache-type-k") + 1] == "q8_0" and argv[argv.index("--cache-type-v") + 1] == "q8_0"
    assert argv[argv.index("--flash-attn") + 1] == "on"  # llama.cpp needs flash attention for a quantized V cache
    assert "--batch-size" not in argv and "--cache-type-k" not in _argv(make_plan(**GOLDEN["llama.cpp"]))


def test_multinode_script_starts_ray_head_and_workers():
    files = render(make_plan(**GOLDEN["vllm-multinode"]), "all")
    script = files["serve.sh"]
    assert "ray start --head --port=6379" in script
    assert 'ray start --block "--address=${head_address}:6379"' in script
    assert "--distributed-executor-backend ray" in script
    assert "ray-node.sh" in files


def test_llamacpp_context_is_per_slot_times_slots():
    plan = make_plan(**GOLDEN["llama.cpp"])
    argv = shlex.split(render(plan, "script")["serve.sh"].split("exec ", 1)[1].replace("\\\n", " "))
    assert argv[argv.index("-c") + 1] == str(plan.engine.max_model_len * plan.engine.max_num_seqs)
    assert argv[argv.index("--parallel") + 1] == str(plan.engine.max_num_seqs)
    assert argv[argv.index("-ngl") + 1] == "999"
    assert argv[argv.index("-m") + 1].endswith("model-q4_k_m.gguf")
