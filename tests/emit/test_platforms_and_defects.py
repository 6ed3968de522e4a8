"""Issue 12: AMD and CPU artifacts, and the artifact defects found off the single-node NVIDIA path. Each test here
fails on the code before the issue (named in its docstring)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import pytest
import yaml

from infer_advisor.emit import render
from infer_advisor.emit.platform import platform_for
from infer_advisor.errors import EmitError
from tests.emit.checks import check_file, check_k8s, flag_value, has_flag
from tests.emit.plans import local_plan, make_plan


def _deployment(files: dict[str, str]) -> dict:
    return next(d for d in yaml.safe_load_all(files["k8s.yaml"]) if d and d["kind"] in ("Deployment", "LeaderWorkerSet"))


# ---- AMD -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gpu", ["MI300X", "MI325X"])
def test_amd_plan_emits_nothing_nvidia_specific(gpu):
    """Before: a Llama-3.1-70B plan on MI300X wrote FROM vllm/vllm-openai, nvidia.com/gpu and `driver: nvidia`."""
    plan = make_plan(model="meta-llama/Llama-3.1-70B", gpu=gpu)
    files = render(plan, "all")
    for name, text in files.items():
        check_file(name, text)
        assert "nvidia" not in text.lower(), name
        assert "--gpus" not in text and "CUDA_VISIBLE_DEVICES" not in text, name
    assert "FROM vllm/vllm-openai-rocm:v0.33.0" in files["Dockerfile"]
    assert "--device=/dev/kfd --device=/dev/dri --group-add=video --group-add=render" in files["Dockerfile"]
    server = yaml.safe_load(files["docker-compose.yml"])["services"]["server"]
    assert server["devices"] == ["/dev/kfd", "/dev/dri"] and server["group_add"] == ["video", "render"]
    pod = _deployment(files)["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"] == {"amd.com/gpu": 1}
    term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"][0]["key"] == "amd.com/gpu.product-name"


def test_rocm_images_per_engine():
    assert platform_for(make_plan(model="meta-llama/Llama-3.1-8B", gpu="MI300X", engine="sglang"), 1).image == (
        "lmsysorg/sglang:v0.5.9-rocm700-mi30x"
    )
    llama = make_plan(model="meta-llama/Llama-3.1-8B", gpu="MI300X", engine="llama.cpp", quantization="gguf-q8_0")
    assert "FROM ghcr.io/ggml-org/llama.cpp:server-rocm-b7200" in render(llama, "docker")["Dockerfile"]
    assert platform_for(make_plan(model="meta-llama/Llama-3.1-8B", gpu="MI300X", engine="tgi"), 1).image.endswith("3.3.6-rocm")


@pytest.mark.parametrize("engine", ["trtllm", "mistralrs", "exllamav2", "mlc", "ctranslate2", "transformers"])
def test_engines_without_a_rocm_build_are_refused_with_the_reason(engine):
    plan = make_plan(model="meta-llama/Llama-3.1-8B", gpu="MI300X", engine=engine)
    assert not plan.feasible and "refused by rule" in plan.infeasible_reason
    with pytest.raises(EmitError, match="not feasible"):
        render(plan, "all")


# ---- CPU -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine, image", [("llama.cpp", "ghcr.io/ggml-org/llama.cpp:server-b7200"),
                                            ("mistralrs", "ghcr.io/ericlbuehler/mistral.rs:cpu-0.9.2")])
def test_cpu_plans_keep_cpu_images_and_say_per_socket(engine, image):
    """Before: the memory rows of CPU plans said 'per GPU'."""
    plan = make_plan(model="meta-llama/Llama-3.1-8B", gpu="cpu", engine=engine, context=8192)
    files = render(plan, "all")
    assert f"FROM {image}" in files["Dockerfile"]
    for name, text in files.items():
        assert "per GPU" not in text and "cuda" not in text.lower(), name
    assert "memory per socket (host RAM)" in files["README.md"]
    assert "deploy" not in yaml.safe_load(files["docker-compose.yml"])["services"]["server"]
    assert "limits" not in _deployment(files)["spec"]["template"]["spec"]["containers"][0]["resources"]


def test_mistralrs_cuda_image_matches_the_gpu_architecture():
    for gpu, sm in [("A100-80GB", "80"), ("L40S", "89"), ("H100-80GB", "90"), ("B200", "100"), ("RTX-3090", "86")]:
        plan = make_plan(model="meta-llama/Llama-3.1-8B", gpu=gpu, engine="mistralrs", context=8192)
        assert platform_for(plan, 1).image == f"ghcr.io/ericlbuehler/mistral.rs:cuda128-sm{sm}-0.9.2", gpu


# ---- Defects -----------------------------------------------------------------------------------------------
def test_latency_on_rtx4090_gets_a_server_not_a_script():
    """Before: the latency goal on an RTX 4090 picked CTranslate2 and emitted a compose service and a k8s Job that ran
    generate.py with no prompt (exit 2 at once)."""
    plan = make_plan(model="meta-llama/Llama-3.1-8B", gpu="RTX-4090", goal="latency")
    assert plan.engine.http_server and plan.engine.name != "ctranslate2"
    files = render(plan, "all")
    assert "generate.py" not in files and _deployment(files)["kind"] == "Deployment"
    assert yaml.safe_load(files["docker-compose.yml"])["services"]["server"]["healthcheck"]


def _compose_interpolate(doc: dict, env: dict[str, str]) -> None:
    """Compose's interpolation (compose-spec 12-interpolation.md), applied to every service before profiles are
    filtered: ${VAR:?err} fails when VAR is unset or empty, ${VAR?err} when unset; $$ is a literal $."""
    pattern = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([?-])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")

    def sub(text: str) -> str:
        def one(m: re.Match) -> str:
            if m.group(0) == "$$":
                return "$"
            name = m.group(1) or m.group(5)
            value = env.get(name)
            if m.group(3) == "?" and (value is None or (m.group(2) and not value)):
                raise ValueError(f"required variable {name} is missing a value: {m.group(4)}")
            if m.group(3) == "-" and (value is None or (m.group(2) and not value)):
                return m.group(4)
            return value or ""

        return pattern.sub(one, text)

    def walk(node):
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return sub(node) if isinstance(node, str) else node

    walk(doc["services"])


def test_multinode_compose_head_starts_without_the_worker_variable():
    """Before: the worker service held ${RAY_HEAD_ADDRESS:?...}; compose interpolates every service before it
    filters profiles, so `docker compose up -d head` stopped with 'required variable RAY_HEAD_ADDRESS is missing'."""
    files = render(make_plan(model="meta-llama/Llama-3.1-405B", gpu="H100-80GB:8x2"), "compose")
    doc = yaml.safe_load(files["docker-compose.yml"])
    _compose_interpolate(doc, env={})  # the head node has no RAY_HEAD_ADDRESS
    assert doc["services"]["worker"]["command"] == ["worker", "${RAY_HEAD_ADDRESS:-}"]


def test_ray_node_script_refuses_an_empty_head_address(tmp_path):
    files = render(make_plan(model="meta-llama/Llama-3.1-405B", gpu="H100-80GB:8x2"), "docker")
    script = tmp_path / "ray-node.sh"
    script.write_text(files["ray-node.sh"])
    env = {**os.environ, "NCCL_SOCKET_IFNAME": "lo"}
    r = subprocess.run(["bash", str(script), "worker", ""], capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode == 2 and "usage" in r.stderr
    r = subprocess.run(["bash", str(script), "head"], capture_output=True, text=True, env={"PATH": os.environ["PATH"]}, timeout=30)
    assert r.returncode != 0 and "NCCL_SOCKET_IFNAME" in r.stderr  # the interface between the nodes must be named


def test_multinode_artifacts_carry_network_settings_and_rdma():
    """Before: no NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME / VLLM_HOST_IP and no RDMA resources for multi-node.
    RDMA is opt-in (--network rdma, issue 22 finding 6); tests/emit/test_operator_check.py covers the tcp default."""
    files = render(make_plan(model="meta-llama/Llama-3.1-405B", gpu="H100-80GB:8x2", network="rdma"), "all")
    for name in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "VLLM_HOST_IP"):
        assert name in files["serve.sh"] and name in files["docker-compose.yml"] and name in files["k8s.yaml"]
    head = yaml.safe_load(files["docker-compose.yml"])["services"]["head"]
    assert "/dev/infiniband" in head["devices"] and head["cap_add"] == ["IPC_LOCK"] and head["ulimits"]["memlock"] == -1
    lws = _deployment(files)
    for role in ("leaderTemplate", "workerTemplate"):
        container = lws["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"][0]
        assert container["resources"]["limits"]["rdma/rdma_shared_device_a"] == 1
        assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
        host_ip = next(e for e in container["env"] if e["name"] == "VLLM_HOST_IP")
        assert host_ip["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert "--device=/dev/infiniband" in files["Dockerfile"]


def test_kubernetes_gpu_deployment_scheduling_strategy_and_requests():
    """Before: no GPU-type node selection or tolerations, rolling updates (twice the GPUs), no CPU/memory requests."""
    files = render(make_plan(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB"), "k8s")
    docs = check_k8s(files["k8s.yaml"])
    dep = next(d for d in docs if d["kind"] == "Deployment")
    assert dep["spec"]["strategy"] == {"type": "Recreate"}
    pod = dep["spec"]["template"]["spec"]
    expr = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert expr == {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-80GB-PCIe", "NVIDIA-A100-SXM4-80GB"]}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    requests = pod["containers"][0]["resources"]["requests"]
    assert requests["cpu"] == "4" and int(requests["memory"].removesuffix("Gi")) >= 13 + 8  # 12.6 GiB of weights + 8


def test_read_write_many_is_explained():
    """Before: replicas > 1 switched the cache PVC to ReadWriteMany without a word on storage classes."""
    text = render(make_plan(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB:4"), "k8s")["k8s.yaml"]
    pvc = next(d for d in yaml.safe_load_all(text) if d and d["kind"] == "PersistentVolumeClaim")
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert "ReadWriteOnce only" in text and "storageClassName" in text
    single = render(make_plan(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB"), "k8s")["k8s.yaml"]
    assert "ReadWriteMany" not in single


def test_tgi_serve_script_does_not_bind_port_80():
    """Before: TGI's serve.sh bound port 80 (root outside a container)."""
    script = render(make_plan(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", engine="tgi"), "script")["serve.sh"]
    argv = shlex.split(script.rsplit("exec ", 1)[1].replace("\\\n", " "))
    assert int(flag_value(argv, "--port")) >= 1024


def test_startup_allowance_states_its_assumption_and_takes_overrides():
    """Before: 300 s + 20 s/GiB became start_period and failureThreshold, called 'estimated', with no override."""
    base = dict(model="meta-llama/Llama-3.1-70B", gpu="H100-80GB:4")
    default = render(make_plan(**base), "all")
    assert "assumed 50 MB/s (not measured; set --download-speed or --startup-timeout)" in default["README.md"]
    fast = render(make_plan(**base, download_speed=1000), "all")
    slow_start = int(re.search(r"start_period: (\d+)s", default["docker-compose.yml"]).group(1))
    fast_start = int(re.search(r"start_period: (\d+)s", fast["docker-compose.yml"]).group(1))
    assert fast_start < slow_start and "1000 MB/s (--download-speed)" in fast["README.md"]
    fixed = render(make_plan(**base, startup_timeout=1234), "all")
    assert "start_period: 1234s" in fixed["docker-compose.yml"] and "--start-period=1234s" in fixed["Dockerfile"]
    # Kubernetes downloads in an init container; the startup probe then covers loading only.
    pod = _deployment(default)["spec"]["template"]["spec"]
    assert pod["initContainers"][0]["command"][:3] == ["hf", "download", "meta-llama/Llama-3.1-70B"]
    probe = pod["containers"][0]["startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] < slow_start


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tgi"])
def test_user_values_use_the_equals_form(engine, tmp_path):
    """Before: a model folder named `-x` became its own argv word after --served-model-name and was read as a flag."""
    plan = local_plan(str(tmp_path / "-x"), engine=engine)
    argv = shlex.split(render(plan, "script")["serve.sh"].rsplit("exec ", 1)[1].replace("\\\n", " "))
    assert not any(word == "-x" for word in argv)
    if engine in ("vllm", "sglang"):
        assert "--served-model-name=-x" in argv
    assert has_flag(argv, {"vllm": "--served-model-name", "sglang": "--model-path", "tgi": "--model-id"}[engine])


def test_argparse_reads_a_dash_name_only_in_the_equals_form():
    """The reason for the form, checked on Python's argparse (the parser family of vLLM and SGLang)."""
    import argparse

    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--served-model-name")
    assert parser.parse_args(["--served-model-name=-x"]).served_model_name == "-x"
    with pytest.raises((argparse.ArgumentError, SystemExit)):
        parser.parse_args(["--served-model-name", "-x"])


def test_ctranslate2_dockerfile_pins_the_base_digest_not_apt_versions():
    """Before: FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04 with python3=3.12.3-0ubuntu1 apt pins."""
    text = render(make_plan(engine="ctranslate2"), "docker")["Dockerfile"]
    assert "FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04@sha256:ac55d124da4882b497f732d8dfd9a702d5447a5f29d08d56da6f64f0a1eb34bc" in text
    install = next(line for line in text.splitlines() if "apt-get install" in line)
    assert "=" not in install.split("install", 1)[1]
    check_file("Dockerfile", text)


# ---- Techniques --------------------------------------------------------------------------------------------
def test_fast_downloads_with_the_cache_on_a_volume():
    files = render(make_plan(), "all")
    assert "ENV HF_XET_HIGH_PERFORMANCE=1" in files["Dockerfile"] and 'VOLUME ["/root/.cache/huggingface"]' in files["Dockerfile"]
    assert 'export HF_XET_HIGH_PERFORMANCE="${HF_XET_HIGH_PERFORMANCE:-1}"' in files["serve.sh"]
    assert "HF_XET_HIGH_PERFORMANCE=1" in yaml.safe_load(files["docker-compose.yml"])["services"]["server"]["environment"]
    env = _deployment(files)["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "HF_XET_HIGH_PERFORMANCE", "value": "1"} in env


def test_shared_prefix_keeps_prefix_caching_on_and_says_so():
    plan = make_plan(shared_prefix_tokens=1500, input_tokens=2000)
    assert plan.prefix_caching.enabled and plan.prefix_caching.shared_prefix_tokens == 1500
    readme = render(plan, "readme")["README.md"]
    assert "prefix caching: on by default in vLLM; the artifacts keep it on for the 1500 shared prompt tokens" in readme
    ct2 = make_plan(engine="ctranslate2", shared_prefix_tokens=1500, input_tokens=2000)
    assert not ct2.prefix_caching.enabled and "every request pays" in ct2.prefix_caching.how


def test_shared_prefix_longer_than_the_prompt_is_refused():
    from infer_advisor.errors import RequestError

    with pytest.raises(RequestError, match="shared-prefix-tokens"):
        make_plan(shared_prefix_tokens=5000, input_tokens=1000)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_speculative_decoding_for_latency_with_its_memory(engine):
    options = dict(model="meta-llama/Llama-3.3-70B-Instruct", gpu="H100-80GB:4", goal="latency", engine=engine)
    plan, off = make_plan(**options), make_plan(**options, speculative="off")
    assert plan.speculative.draft_model == "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B" and off.speculative is None
    # Counted by the memory model: 1.4 B bf16 parameters split over TP 4 = 0.7 GB per GPU, less KV cache.
    assert plan.memory.draft_weights_bytes_per_gpu == int(1.4e9 * 2 / 4)
    assert plan.memory.weights_bytes_per_gpu - off.memory.weights_bytes_per_gpu == plan.memory.draft_weights_bytes_per_gpu
    assert plan.memory.kv_cache_tokens < off.memory.kv_cache_tokens
    files = render(plan, "all")
    if engine == "vllm":
        argv = shlex.split(files["serve.sh"].rsplit("exec ", 1)[1].replace("\\\n", " "))
        assert json.loads(flag_value(argv, "--speculative-config")) == {
            "method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", "num_speculative_tokens": 3}
    elif engine == "sglang":
        assert "--speculative-algorithm EAGLE3" in files["serve.sh"]
    else:
        assert yaml.safe_load(files["trtllm-options.yaml"])["speculative_config"]["decoding_type"] == "Eagle3"


def test_no_speculative_decoding_without_a_published_head_or_off_the_latency_goal():
    assert make_plan(model="meta-llama/Llama-3.1-70B", gpu="H100-80GB:4", goal="latency").speculative is None
    assert make_plan(model="meta-llama/Llama-3.3-70B-Instruct", gpu="H100-80GB:4").speculative is None


# ---- Replicas on one node (issue 10) -----------------------------------------------------------------------
def test_vllm_replicas_use_data_parallelism_and_k8s_carries_replicas():
    plan = make_plan(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB:4")
    assert plan.parallelism.replicas == 4
    files = render(plan, "all")
    argv = shlex.split(files["serve.sh"].rsplit("exec ", 1)[1].replace("\\\n", " "))
    assert flag_value(argv, "--data-parallel-size") == "4"
    (device,) = yaml.safe_load(files["docker-compose.yml"])["services"]["server"]["deploy"]["resources"]["reservations"]["devices"]
    assert device["count"] == 4
    dep = _deployment(files)
    assert dep["spec"]["replicas"] == 4
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 1} and "--data-parallel-size" not in container["command"]


def test_replica_groups_start_every_replica(tmp_path):
    """TGI has no data parallelism: serve.sh starts one process per GPU with its device and port (run here with a
    stand-in launcher that records what it was given), and compose runs one service per GPU."""
    plan = make_plan(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB:2", engine="tgi")
    out = tmp_path / "out"
    files = render(plan, "all", out=out)
    services = yaml.safe_load(files["docker-compose.yml"])["services"]
    assert [s["ports"] for s in services.values()] == [["8080:8080"], ["8081:8080"]]
    assert [s["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] for s in services.values()] == [["0"], ["1"]]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "started.jsonl"
    fake = bin_dir / "text-generation-launcher"
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys, time\n"
        f"open({str(log)!r}, 'a').write(json.dumps([os.environ.get('CUDA_VISIBLE_DEVICES'), sys.argv[1:]]) + '\\n')\n"
        "time.sleep(0.5 if os.environ.get('CUDA_VISIBLE_DEVICES') == '0' else 3)\n"
    )
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    r = subprocess.run(["bash", str(out / "serve.sh")], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 1  # one replica exited, so the script stopped the others and failed
    started = sorted(json.loads(line) for line in log.read_text().splitlines())
    assert [(dev, flag_value(argv, "--port")) for dev, argv in started] == [("0", "8080"), ("1", "8081")]


def test_engine_version_picks_the_image_of_that_version_on_every_platform():
    """--engine-version (memory side) names the image of that version; main's per-platform images (ROCm builds,
    llama.cpp's CUDA build) follow it too, not only engines.yaml's image."""
    rocm = make_plan(model="meta-llama/Llama-3.1-8B", gpu="MI300X", engine="vllm", engine_version="0.8.5")
    assert rocm.engine.version == "0.8.5" and platform_for(rocm, 1).image == "vllm/vllm-openai-rocm:v0.8.5"
    cuda = make_plan(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", engine="llama.cpp", quantization="gguf-q4_k_m",
                     engine_version="b6000")
    assert platform_for(cuda, 1).image == "ghcr.io/ggml-org/llama.cpp:server-cuda-b6000"
    pinned = make_plan(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", engine="llama.cpp", quantization="gguf-q4_k_m")
    assert platform_for(pinned, 1).image == "ghcr.io/ggml-org/llama.cpp:server-cuda-b7200"
