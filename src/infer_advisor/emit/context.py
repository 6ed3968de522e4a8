"""Everything a template may use, computed once from the plan: argument lists, names, paths, probe timings.

Templates only loop over these values and quote them; any decision lives here, in :mod:`.argv`, :mod:`.platform`
or :mod:`.prepare`.
"""

from __future__ import annotations

import json
import math

from pydantic import BaseModel, Field

from .._version import __version__
from ..errors import EmitError
from .boundary import check_plan_values
from ..plan.models import DeploymentPlan
from ..engines import argv as A
from ..engines.front_server import front_server, launch_files
from ..engines.launch_facts import emit_facts, emit_key
from .templating import render_template, template_name
from .platform import Platform, platform_for
from ..engines.launch import launch_argv, prepare_steps
from ..engines.prepare import PrepareStep
from .quote import sh_join, sh_quote
from ..engines.launch_facts import download_args
from .startup import served_repo, startup_budget, stored_bytes
from ..units import GIB

# Label values and resource names are DNS-1123 labels: at most 63 characters (Kubernetes object names docs).
_K8S_NAME_LIMIT = 63
# Default request for the README's first completion (tokens); small so the check is quick.
FIRST_REQUEST_MAX_TOKENS = 32
# generate.py's default output length when the plan's request gave none (same as defaults.yaml output_tokens).
DEFAULT_NEW_TOKENS = 200
# Variables each multi-node container passes through from its host: which interface NCCL and Gloo use between
# the nodes, and the address this node's vLLM/Ray worker announces (vLLM docs, distributed serving troubleshooting).
MULTI_NODE_ENV = ["NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "VLLM_HOST_IP"]


class ReplicaGroup(BaseModel):
    """One replica on one node: its GPUs (device ids) and its port."""

    index: int
    devices: str = Field(description="Comma-separated device ids, e.g. '0,1'.")
    port: int
    ports: list = Field(default_factory=list, description="Every port of this replica when the server has several (Triton).")
    argv_host: list[str] = Field(description="The launch command with this replica's port.")
    argv_container: list[str]


class ConfigFile(BaseModel):
    """A file the engine reads at start (TensorRT-LLM's options YAML): written beside the artifacts, copied into the
    image, bind-mounted by compose and held in a ConfigMap on Kubernetes."""

    name: str
    text: str
    container_dir: str
    k8s_configmap: bool = Field(default=True, description="Held in a ConfigMap on Kubernetes (false: baked into the built image).")


class NamedPort(BaseModel):
    """A port the server listens on (Triton: http, grpc, metrics)."""

    name: str
    port: int


class EmitContext(BaseModel):
    """The values templates receive (with ``plan`` itself)."""

    tool_version: str = __version__
    engine: str
    engine_display: str
    engine_version: str
    image: str = Field(description="Pinned engine image the artifacts run on.")
    from_image: str = Field(description="Dockerfile FROM: the image, pinned by digest where known.")
    built_image: str = Field(description="Tag of the image the generated Dockerfile builds.")
    builds_image: bool = Field(description="The Dockerfile installs the engine; compose and Kubernetes run the built image.")
    entrypoint_script: bool = Field(default=True, description="The built image starts entrypoint.sh (false: its ENTRYPOINT is the server).")
    app: str = Field(description="Kubernetes/compose name (DNS-1123, never 'vllm').")
    http_server: bool
    port: int | None
    health_path: str | None
    health_url: str | None = Field(description="Health URL from inside the container / on the host.")
    argv_host: list[str]
    argv_container: list[str]
    argv_k8s: list[str] = Field(description="The container command in a Kubernetes pod (one replica per pod).")
    ref: A.ModelRef
    platform: Platform
    gpu: bool
    gpus_per_node: int = Field(description="GPUs one container/pod uses.")
    gpus_per_pod: int = Field(description="GPUs one Kubernetes pod uses (one replica).")
    nodes: int
    replicas: int
    replica_groups: list[ReplicaGroup] = Field(description="Replicas started as separate processes on one node (empty: one).")
    local_replicas: int = Field(default=1, description="Replicas serve.sh and compose start on one machine of the plan's GPUs.")
    multi_node: bool
    multi_node_env: list[str]
    rdma_resource: str
    rdma: bool = Field(default=False, description="Multi-node with --network rdma: InfiniBand devices, IPC_LOCK and the RDMA resource.")
    download_bytes: int = Field(default=0, description="Bytes of the checkpoint downloaded and read, in its stored format.")
    served_repo: str = Field(default="", description="The Hub repository the engine loads (and the artifacts download).")
    host_download: list[str] | None = Field(default=None, description="hf download of the served repository, for the README.")
    ray_head_argv: list[str]
    ray_worker_argv: list[str] = Field(description="With HEAD_ADDRESS as the placeholder for the head's address.")
    ray_port: int
    ray_wait: str = Field(description="Shell line that waits until every node has joined the Ray cluster.")
    leader_script: str = Field(description="bash -c body for a Ray head that waits for its workers, then serves.")
    lws_worker_script: str = Field(description="bash -c body for a LeaderWorkerSet worker joining its leader (LWS_LEADER_ADDRESS).")
    compose_services: list[dict] = Field(description="Compose services: name, build, command, profiles, health, head_env, port, devices.")
    cache_dir: str
    cache_storage: str = Field(description="PVC size for the Hugging Face cache, e.g. '17Gi'.")
    models_storage: str
    cache_access_mode: str
    download_env: dict[str, str] = Field(description="High-performance download variables (hf_xet) for the engine's hub client.")
    init_download: list[str] | None = Field(description="Init-container command that fills the cache before the server starts.")
    prepare_host: list[PrepareStep]
    prepare_container: list[PrepareStep]
    config_files: list[ConfigFile]
    startup_seconds: int
    startup_assumption: str = Field(description="How the start-up allowance was reached, in words.")
    k8s_startup_seconds: int = Field(description="Start-up allowance of a pod whose init container already downloaded/prepared.")
    k8s_startup_assumption: str = Field(default="", description="How the pod's start-up allowance was reached, in words.")
    probe_period: int
    startup_failures: int
    k8s_cpu_request: str
    k8s_memory_request: str
    docker_run: str = Field(description="A shell line that runs the built image.")
    quantize_lines: list[str] = Field(description="Shell lines of the quantize steps, quoted.")
    literal_shell_specials: bool = Field(
        default=False, description="A quoted value holds a literal $ or backquote (shellcheck SC2016 must be told it is meant)."
    )
    ports: list[NamedPort] = Field(description="Ports the server listens on; the first is the HTTP port.")
    image_build_steps: list[PrepareStep] = Field(
        default_factory=list, description="Steps the Dockerfile runs at build time (Triton: install the LLM API model code)."
    )
    model_repository: str | None = Field(default=None, description="Triton model repository inside the image.")
    model_code_ref: str | None = Field(default=None, description="TensorRT-LLM tag whose Triton model code is installed.")
    unlimited_memlock: bool = Field(default=False, description="Containers get an unlimited memlock (Triton's documented docker run).")
    request_path: str
    request_line: str = Field(description="curl line for a first completion, quoted.")
    health_line: str | None
    pip_packages: list[str]
    pip_find_links: str | None
    apt_packages: list[str]
    tabbyapi_git: str
    hf_cli_package: str
    device: str
    max_new_tokens: int
    max_batch: int
    summary: list[str] = Field(description="Plan lines for comments and the README.")
    warnings: list[str]


def _storage(num_bytes: float) -> str:
    return f"{max(math.ceil(num_bytes * emit_facts().cache_headroom / GIB), 1)}Gi"


def _app_name(plan: DeploymentPlan) -> str:
    model = A.slug(plan.engine.served_model_name.split("/")[-1], limit=40)
    if plan.engine.served_model_name == "default" or plan.engine.server:  # the server's own model name says nothing
        model = A.slug(plan.model.name.split("/")[-1], limit=40)
    name = f"{model}-{A.slug(plan.engine.server or plan.engine.name)}"[:_K8S_NAME_LIMIT].strip("-")
    # A Service called 'vllm' makes Kubernetes inject VLLM_PORT etc., which vLLM reads as its own settings.
    return name if not name.startswith("vllm") else f"serve-{name}"[:_K8S_NAME_LIMIT].strip("-")


def _docker_run(ctx: dict, image: str) -> str:
    parts = [sh_join(["docker", "run", "--rm"])]
    platform: Platform = ctx["platform"]
    if ctx["gpu"] and platform.docker_device_args:
        parts.append(sh_join(platform.docker_device_args))
    parts.append("--ipc=host")
    if ctx["multi_node"]:
        parts.append("--network=host")  # Ray and NCCL reach the other nodes at the hosts' addresses
        if ctx["rdma"]:  # --network rdma: InfiniBand/RoCE for NCCL between the nodes (vLLM docs, distributed serving)
            parts.append(sh_join(["--device=/dev/infiniband", "--cap-add=IPC_LOCK", "--ulimit", "memlock=-1"]))
        parts.append(sh_join([x for name in MULTI_NODE_ENV for x in ("-e", name)]))
    elif ctx["port"]:
        parts.append(sh_join([x for p in ctx["ports"] for x in ("-p", f"{p.port}:{p.port}")]))
    if ctx["unlimited_memlock"] and not ctx["multi_node"]:
        parts.append(sh_join(["--ulimit", "memlock=-1"]))
    parts.append(sh_join(["-e", "HF_TOKEN", "-v", f"hf-cache:{ctx['cache_dir']}"]))
    ref: A.ModelRef = ctx["ref"]
    if ref.mount_source:
        if ref.mount_relative:  # a folder under the output dir: slug-safe, so "$(pwd)" may stay unquoted-expanding
            parts.append(f'--mount "type=bind,source=$(pwd)/{ref.mount_source},target={ref.mount_target},readonly"')
        else:
            # docker parses --mount as one CSV record: a field with a comma or a quote is CSV-quoted.
            source, target = (_csv_field(f"{k}={v}") for k, v in (("source", ref.mount_source), ("target", ref.mount_target)))
            parts.append(sh_join(["--mount", f"type=bind,{source},{target},readonly"]))
    parts.append(sh_quote(image))
    if ctx["multi_node"]:
        parts.append("head")
    return " ".join(parts)


def _csv_field(field: str) -> str:
    return '"' + field.replace('"', '""') + '"' if any(c in field for c in ',"') else field


def _download_and_startup(plan: DeploymentPlan, ef, ref: A.ModelRef, prepare_container: list[PrepareStep]) -> dict:
    """What is downloaded (the served repository, only the files the engine loads) and the start-up allowances: with
    the download for serve.sh, Docker and compose, without it for a pod whose init container downloaded first."""
    # Images whose entrypoint.sh prepares (MLC, ExLlamaV2) download in it; the others fill the cache with the hub CLI.
    needs_download = (ef.download.command is not None and ref.mount_source is None and plan.engine.http_server
                      and not (ef.builds_image and ef.entrypoint_script))
    init_download = _init_download(plan, ef.download.command) if needs_download else None
    if prepare_container:  # the init container runs the entrypoint's prepare steps (download, conversion)
        init_download = ["/opt/infer-advisor/entrypoint.sh", "prepare"]
    budget = startup_budget(plan, downloads=ref.mount_source is None)
    k8s_budget = startup_budget(plan, downloads=False) if init_download else budget
    period = emit_facts().probe_period_seconds
    return dict(
        download_bytes=int(stored_bytes(plan)[0]), served_repo=served_repo(plan), init_download=init_download,
        host_download=init_download if init_download and init_download[:2] == ["hf", "download"] else None,
        startup_seconds=budget.seconds, startup_assumption=budget.words,
        k8s_startup_seconds=k8s_budget.seconds, k8s_startup_assumption=k8s_budget.words,
        probe_period=period, startup_failures=math.ceil(k8s_budget.seconds / period),
    )


def _init_download(plan: DeploymentPlan, command: list[str]) -> list[str]:
    """The init container's download: the served repository only, and (hf download) only the files the engine loads."""
    argv = [*command, served_repo(plan)]
    return [*argv, *download_args()] if command[:2] == ["hf", "download"] else argv


def _replica_groups(plan: DeploymentPlan, per_replica: int, host: list[str], container: list[str]) -> list[ReplicaGroup]:
    replicas = A.local_replicas(plan)
    if replicas <= 1 or plan.engine.name in A.DATA_PARALLEL_ENGINES or not plan.engine.http_server:
        return []
    groups = []
    server = front_server(plan)
    for i in range(replicas):
        devices = ",".join(str(d) for d in range(i * per_replica, (i + 1) * per_replica))
        if server is not None:  # the server's own ports (and, for Triton, shared-memory prefix) per replica
            groups.append(ReplicaGroup(
                index=i, devices=devices, port=server.ports(i)[0].port, ports=server.ports(i),
                argv_host=server.argv(plan, "host", i), argv_container=server.argv(plan, "container", i),
            ))
            continue
        port = plan.engine.port + i
        groups.append(ReplicaGroup(
            index=i, devices=devices, port=port, argv_host=A.with_port(host, port), argv_container=A.with_port(container, port)
        ))
    return groups


def _config_files(plan: DeploymentPlan, ref: A.ModelRef) -> list[ConfigFile]:
    """The files the engine (or the server in front of it) reads at start (engines.front_server.launch_files)."""

    def render(kind: str, suffix: str, **values) -> str:
        name = template_name(emit_key(plan), kind, suffix, plan.engine.version)
        return render_template(name, plan=plan, tool_version=__version__, **values)

    return [ConfigFile(name=f.name, text=f.text, container_dir=f.container_dir, k8s_configmap=f.k8s_configmap)
            for f in launch_files(plan, ref, render)]


def _ray_scripts(nodes: int, argv_k8s: list[str]) -> tuple[str, str, str]:
    """Multi-node (Ray) shell lines: wait until ``nodes`` are alive, the leader pod's script, the worker pod's."""
    wait = (
        f'until [ "$(python3 -c \'import ray; ray.init(address="auto", logging_level="ERROR"); '
        f'print(sum(1 for n in ray.nodes() if n["Alive"]))\')" -ge {nodes} ]; do sleep 5; done'
    )
    leader = f"{sh_join(A.ray_head_argv())} && {wait} && exec {sh_join(argv_k8s)}"
    # LeaderWorkerSet injects LWS_LEADER_ADDRESS into every pod; `$$` survives Kubernetes' $(VAR) expansion.
    worker = f'exec ray start --block "--address=$${{LWS_LEADER_ADDRESS}}:{A.RAY_PORT}"'
    return wait, leader, worker


def build_context(plan: DeploymentPlan) -> EmitContext:
    """All template values for ``plan``; raises :class:`~infer_advisor.errors.EmitError` for what cannot be emitted."""
    facts = emit_facts()
    e, p = plan.engine, plan.parallelism
    key = emit_key(plan)
    if key not in facts.engines:
        raise EmitError(f"No templates for engine '{key}'. Known: {', '.join(facts.engines)}.")
    ef, server = facts.engines[key], front_server(plan)
    if ef.single_gpu_reason and p.tensor_parallel_size * p.pipeline_parallel_size > 1:
        raise EmitError(ef.single_gpu_reason)
    gpu = plan.hardware.kind == "gpu"
    ref = server.model_ref(A.model_ref(plan)) if server else A.model_ref(plan)
    app = _app_name(plan)
    per_replica = max(p.tensor_parallel_size * p.pipeline_parallel_size // max(p.nodes, 1), 1) if gpu else 0
    data_parallel = A.local_replicas(plan) > 1 and e.name in A.DATA_PARALLEL_ENGINES
    gpus_per_node = per_replica * (A.local_replicas(plan) if data_parallel else 1)
    platform = platform_for(plan, gpus_per_node)
    argv_host = launch_argv(plan, ref, "host")
    argv_container = launch_argv(plan, ref, "container")
    argv_k8s = launch_argv(plan, ref, "k8s")
    groups = _replica_groups(plan, per_replica, argv_host, argv_container)
    ports = [NamedPort(name=x.name, port=x.port) for x in server.ports(0)] if server else [NamedPort(name="http", port=e.port or 0)]
    health_url = f"http://localhost:{e.port}{e.health_path}" if e.http_server and e.health_path else None
    multi = p.nodes > 1
    wait, leader, worker = _ray_scripts(p.nodes, argv_k8s)
    request_path = "/v1/completions"
    named = {"model": e.served_model_name} if ef.request_names_model else {}
    body = json.dumps({**named, "prompt": "Hello, my name is", "max_tokens": FIRST_REQUEST_MAX_TOKENS})
    if server:  # the server's own request (Triton: its generate extension, with the model's own input names)
        request_path, first = server.first_request(plan, FIRST_REQUEST_MAX_TOKENS)
        body = json.dumps(first)
    request_line = (
        sh_join(["curl", "-sS", f"http://localhost:{e.port}{request_path}", "-H", "Content-Type: application/json", "-d", body])
        if e.http_server
        else sh_join([*argv_host[:2], "--prompt", "Hello, my name is"])
    )
    prepare_container = prepare_steps(plan, ref, "container")
    fetch = _download_and_startup(plan, ef, ref, prepare_container)
    resident = plan.memory.weights_bytes_per_gpu * max(gpus_per_node, 1) if gpu else plan.memory.total_bytes_per_gpu
    replicas_anywhere = p.replicas > 1 or multi
    check_plan_values(plan, platform.image, platform.from_image, f"infer-advisor/{app}:{A.slug(key)}-{e.version}")
    ctx = dict(
        engine=key, engine_display=_display(plan), engine_version=e.version, image=platform.image,
        from_image=platform.from_image, built_image=f"infer-advisor/{app}:{A.slug(key)}-{e.version}",
        builds_image=ef.builds_image, entrypoint_script=ef.entrypoint_script, app=app,
        http_server=e.http_server, port=e.port, health_path=e.health_path, health_url=health_url,
        argv_host=argv_host, argv_container=argv_container, argv_k8s=argv_k8s, ref=ref, platform=platform, gpu=gpu,
        gpus_per_node=gpus_per_node, gpus_per_pod=per_replica, nodes=p.nodes, replicas=p.replicas, replica_groups=groups,
        local_replicas=A.local_replicas(plan),
        multi_node=multi, multi_node_env=MULTI_NODE_ENV, rdma_resource=facts.rdma_resource,
        rdma=multi and plan.request.network == "rdma", **fetch,
        ray_head_argv=A.ray_head_argv(), ray_worker_argv=A.ray_worker_argv("HEAD_ADDRESS"), ray_port=A.RAY_PORT,
        ray_wait=wait, leader_script=leader, lws_worker_script=worker,
        compose_services=_compose_services(e.http_server, multi, groups, e.port, ef.builds_image, ports), cache_dir=ef.cache_dir,
        cache_storage=_storage(fetch["download_bytes"] * (3 if prepare_container else 1)),
        models_storage=_storage(plan.memory.weights_bytes),
        cache_access_mode="ReadWriteMany" if replicas_anywhere else "ReadWriteOnce",
        download_env=dict(ef.download.env),
        prepare_host=prepare_steps(plan, ref, "host"), prepare_container=prepare_container, config_files=_config_files(plan, ref),
        k8s_cpu_request=str(max(facts.k8s_cpu_per_gpu * max(per_replica, 1), 1)),
        k8s_memory_request=f"{math.ceil(resident / max(A.local_replicas(plan), 1) / GIB) + facts.k8s_memory_base_gib}Gi",
        quantize_lines=[sh_join(s) for s in ref.quantize_steps], request_path=request_path, request_line=request_line,
        ports=ports, unlimited_memlock=bool(server and server.unlimited_memlock),
        model_repository=server.model_repository if server else None,
        model_code_ref=server.model_code_ref(e.version) if server else None,
        image_build_steps=server.image_build_steps(plan) if server else [],
        health_line=sh_join(["curl", "-fsS", health_url]) if health_url else None,
        pip_packages=facts.pip_packages.get(e.name, []), pip_find_links=facts.pip_find_links.get(e.name),
        apt_packages=facts.apt_packages.get(e.name, []), tabbyapi_git=facts.tabbyapi_git, hf_cli_package=facts.hf_cli_package,
        device="cuda" if gpu else "cpu", max_new_tokens=plan.request.output_tokens or DEFAULT_NEW_TOKENS,
        max_batch=e.max_num_seqs, summary=_summary(plan, gpus_per_node, fetch["startup_assumption"]), warnings=list(plan.warnings),
    )
    ctx["docker_run"] = _docker_run(ctx, ctx["built_image"])
    values = [*argv_host, *argv_container, str(ref.host), str(ref.container), *(x for step in ref.quantize_steps for x in step)]
    values += [x for step in (*ctx["prepare_host"], *prepare_container) for x in step.argv]
    ctx["literal_shell_specials"] = any("$" in v or "`" in v for v in values)
    return EmitContext(**ctx)


def _compose_services(
    http_server: bool, multi: bool, groups: list[ReplicaGroup], port: int | None, builds: bool, ports: list[NamedPort]
) -> list[dict]:
    """Services with their host:container port mappings (a replica's host ports move with it; Triton's three together)."""
    mapped = [f"{p.port}:{p.port}" for p in ports]
    base = dict(build=builds, command=None, entrypoint=None, profiles=None, health=http_server, head_env=False, port=port,
                ports=mapped, devices=None, visible=None)
    if multi:
        # `${RAY_HEAD_ADDRESS:-}`: compose interpolates every service before it filters profiles, so a required
        # `:?` variable would stop `docker compose up -d head` too; ray-node.sh refuses an empty address itself.
        worker_cmd = ["worker", "${RAY_HEAD_ADDRESS:-}"]
        return [
            {**base, "name": "head", "build": True, "command": ["head"]},
            {**base, "name": "worker", "build": True, "command": worker_cmd, "profiles": ["worker"], "health": False, "head_env": True},
        ]
    if not http_server:
        return [{**base, "name": "generate", "build": True}]
    if groups:
        return [
            {**base, "name": f"server-{g.index}", "port": g.port, "devices": g.devices.split(","), "visible": g.devices,
             "ports": [f"{h.port}:{c.port}" for h, c in zip(g.ports, ports, strict=True)] if g.ports else [f"{g.port}:{port}"],
             # Triton: each replica's own ports and shared-memory prefix, as launch_triton_server.py gives each rank one
             "entrypoint": g.argv_container if g.ports else None}
            for g in groups
        ]
    return [{**base, "name": "server"}]


def _display(plan: DeploymentPlan) -> str:
    from ..engines.profiles import engine_profile

    server = front_server(plan)
    return server.display(plan) if server else engine_profile(plan.engine.name).display


def _summary(plan: DeploymentPlan, gpus_per_node: int, startup_words: str) -> list[str]:
    p, m, q = plan.parallelism, plan.memory, plan.quantization
    cpu = plan.hardware.kind == "cpu"
    hw = "CPU" if cpu else f"{plan.hardware.gpus_per_node}x {plan.hardware.gpus[0].name}" + (
        f" x {plan.hardware.nodes} nodes" if plan.hardware.nodes > 1 else ""
    )
    unit = "socket (host RAM)" if cpu else "GPU"
    lines = [
        f"model: {plan.model.name} ({plan.model.source})",
        f"hardware: {hw} ({plan.hardware.source})",
        f"engine: {_display(plan)} {plan.engine.version}, dtype {plan.dtype}, quantization {q.method}, "
        f"KV cache {plan.engine.kv_cache_dtype}",
        f"layout: tensor parallel {p.tensor_parallel_size}, pipeline parallel {p.pipeline_parallel_size}, nodes {p.nodes}, "
        f"replicas {p.replicas}",
        f"context: max_model_len {plan.engine.max_model_len}, {plan.engine.max_num_seqs} sequences at once",
        f"memory per {unit} ({m.source}): {m.total_bytes_per_gpu / GIB:.1f} GiB of {m.gpu_memory_bytes / GIB:.1f} GiB, "
        f"weights {m.weights_bytes_per_gpu / GIB:.1f} GiB, KV cache {m.kv_cache_tokens} tokens",
    ]
    if plan.prefix_caching is not None:
        lines.append(f"prefix caching: {plan.prefix_caching.how}")
    if plan.speculative is not None:
        s = plan.speculative
        lines.append(
            f"speculative decoding: {s.method} with {s.draft_model}, {s.num_speculative_tokens} draft tokens per step "
            f"({s.draft_params / 1e9:.2f} B draft parameters counted in memory)"
        )
    if plan.engine.http_server:
        lines.append(startup_words)
    if not plan.feasible:
        lines.append(f"NOT FEASIBLE: {plan.infeasible_reason}")
    return lines
