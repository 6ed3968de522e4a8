"""Everything a template may use, computed once from the plan: argument lists, names, paths, probe timings.

Templates only loop over these values and quote them; any decision lives here or in :mod:`.argv`.
"""

from __future__ import annotations

import json
import math

from pydantic import BaseModel, Field

from .. import __version__
from ..errors import EmitError
from ..estimate.formats import dtype_bytes
from ..plan.models import DeploymentPlan
from . import argv as A
from .facts import emit_facts
from .quote import sh_join, sh_quote

_GIB = 2**30
# Label values and resource names are DNS-1123 labels: at most 63 characters (Kubernetes object names docs).
_K8S_NAME_LIMIT = 63
# Default request for the README's first completion (tokens); small so the check is quick.
FIRST_REQUEST_MAX_TOKENS = 32
# generate.py's default output length when the plan's request gave none (same as defaults.yaml output_tokens).
DEFAULT_NEW_TOKENS = 200


class EmitContext(BaseModel):
    """The values templates receive (with ``plan`` itself)."""

    tool_version: str = __version__
    engine: str
    engine_display: str
    engine_version: str
    image: str = Field(description="Pinned engine image the artifacts run on.")
    built_image: str = Field(description="Tag of the image the generated Dockerfile builds.")
    app: str = Field(description="Kubernetes/compose name (DNS-1123, never 'vllm').")
    http_server: bool
    port: int | None
    health_path: str | None
    health_url: str | None = Field(description="Health URL from inside the container / on the host.")
    argv_host: list[str]
    argv_container: list[str]
    ref: A.ModelRef
    gpu: bool
    gpus_per_node: int = Field(description="GPUs one container/pod uses.")
    nodes: int
    replicas: int
    multi_node: bool
    ray_head_argv: list[str]
    ray_worker_argv: list[str] = Field(description="With HEAD_ADDRESS as the placeholder for the head's address.")
    ray_port: int
    ray_wait: str = Field(description="Shell line that waits until every node has joined the Ray cluster.")
    leader_script: str = Field(description="bash -c body for a Ray head that waits for its workers, then serves.")
    lws_worker_script: str = Field(description="bash -c body for a LeaderWorkerSet worker joining its leader (LWS_LEADER_ADDRESS).")
    compose_services: list[dict] = Field(description="Compose services: name, build, command, profiles, health, head_env.")
    cache_dir: str
    cache_storage: str = Field(description="PVC size for the Hugging Face cache, e.g. '17Gi'.")
    models_storage: str
    cache_access_mode: str
    startup_seconds: int
    probe_period: int
    startup_failures: int
    docker_run: str = Field(description="A shell line that runs the built image.")
    quantize_lines: list[str] = Field(description="Shell lines of the quantize steps, quoted.")
    literal_shell_specials: bool = Field(
        default=False, description="A quoted value holds a literal $ or backquote (shellcheck SC2016 must be told it is meant)."
    )
    request_path: str
    request_line: str = Field(description="curl line for a first completion, quoted.")
    health_line: str | None
    pip_packages: list[str]
    apt_packages: list[str]
    device: str
    max_new_tokens: int
    max_batch: int
    summary: list[str] = Field(description="Plan lines for comments and the README.")
    warnings: list[str]


def _storage(num_bytes: float) -> str:
    return f"{max(math.ceil(num_bytes * emit_facts().cache_headroom / _GIB), 1)}Gi"


def _app_name(plan: DeploymentPlan) -> str:
    model = A.slug(plan.engine.served_model_name.split("/")[-1], limit=40)
    name = f"{model}-{A.slug(plan.engine.name)}"[:_K8S_NAME_LIMIT].strip("-")
    # A Service called 'vllm' makes Kubernetes inject VLLM_PORT etc., which vLLM reads as its own settings.
    return name if not name.startswith("vllm") else f"serve-{name}"[:_K8S_NAME_LIMIT].strip("-")


def _docker_run(ctx: dict, image: str) -> str:
    parts = [sh_join(["docker", "run", "--rm"])]
    if ctx["gpu"]:
        parts.append(sh_join(["--gpus", str(ctx["gpus_per_node"])]))
    parts.append("--ipc=host")
    if ctx["multi_node"]:
        parts.append("--network=host")
    elif ctx["port"]:
        parts.append(sh_join(["-p", f"{ctx['port']}:{ctx['port']}"]))
    parts.append(sh_join(["-e", "HF_TOKEN", "-v", f"hf-cache:{ctx['cache_dir']}"]))
    ref: A.ModelRef = ctx["ref"]
    if ref.mount_source:
        if ref.mount_relative:  # a folder under the output dir: slug-safe, so "$(pwd)" may stay unquoted-expanding
            parts.append(f'--mount "type=bind,source=$(pwd)/{ref.mount_source},target={ref.mount_target},readonly"')
        else:
            field = f"source={ref.mount_source}"
            if any(c in field for c in ',"'):
                field = '"' + field.replace('"', '""') + '"'  # docker parses --mount as one CSV record
            parts.append(sh_join(["--mount", f"type=bind,{field},target={ref.mount_target},readonly"]))
    parts.append(sh_quote(image))
    if ctx["multi_node"]:
        parts.append("head")
    return " ".join(parts)


def build_context(plan: DeploymentPlan) -> EmitContext:
    """All template values for ``plan``; raises :class:`~infer_advisor.errors.EmitError` for what cannot be emitted."""
    facts = emit_facts()
    e, p = plan.engine, plan.parallelism
    if e.name not in facts.engines:
        raise EmitError(f"No templates for engine '{e.name}'. Known: {', '.join(facts.engines)}.")
    if e.name == "ctranslate2" and p.tensor_parallel_size * p.pipeline_parallel_size > 1:
        raise EmitError("CTranslate2 tensor parallelism needs an MPI launch, which is not emitted; plan on one GPU.")
    ef = facts.engines[e.name]
    gpu = plan.hardware.kind == "gpu"
    image = (ef.gpu_image or e.image) if gpu else e.image
    if image.endswith(":latest") or ":" not in image.rsplit("/", 1)[-1]:
        raise EmitError(f"Image '{image}' is not pinned to a version; fix data/engines.yaml.")
    ref = A.model_ref(plan)
    app = _app_name(plan)
    gpus_per_node = max(p.tensor_parallel_size * p.pipeline_parallel_size // max(p.nodes, 1), 1) if gpu else 0
    argv_host = A.launch_argv(plan, ref, "host")
    argv_container = A.launch_argv(plan, ref, "container")
    health_url = f"http://localhost:{e.port}{e.health_path}" if e.http_server and e.health_path else None
    weights_gib = plan.memory.weights_bytes / _GIB
    startup = int(facts.startup_seconds_base + facts.startup_seconds_per_gib * weights_gib)
    period = facts.probe_period_seconds
    checkpoint_bytes = plan.model.num_parameters * dtype_bytes(plan.model.torch_dtype if plan.model.torch_dtype in ("float16", "bfloat16", "float32") else "bfloat16")
    multi = p.nodes > 1
    wait = (
        f'until [ "$(python3 -c \'import ray; ray.init(address="auto", logging_level="ERROR"); '
        f'print(sum(1 for n in ray.nodes() if n["Alive"]))\')" -ge {p.nodes} ]; do sleep 5; done'
    )
    leader = f"{sh_join(A.ray_head_argv())} && {wait} && exec {sh_join(argv_container)}"
    # LeaderWorkerSet injects LWS_LEADER_ADDRESS into every pod; `$$` survives Kubernetes' $(VAR) expansion.
    worker = f'exec ray start --block "--address=$${{LWS_LEADER_ADDRESS}}:{A.RAY_PORT}"'
    request_path = "/v1/completions"
    body = json.dumps({"model": e.served_model_name, "prompt": "Hello, my name is", "max_tokens": FIRST_REQUEST_MAX_TOKENS})
    request_line = (
        sh_join(["curl", "-sS", f"http://localhost:{e.port}{request_path}", "-H", "Content-Type: application/json", "-d", body])
        if e.http_server
        else sh_join([*argv_host[:2], "--prompt", "Hello, my name is"])
    )
    ctx = dict(
        engine=e.name, engine_display=_display(e.name), engine_version=e.version, image=image,
        built_image=f"infer-advisor/{app}:{A.slug(e.name)}-{e.version}", app=app,
        http_server=e.http_server, port=e.port, health_path=e.health_path, health_url=health_url,
        argv_host=argv_host, argv_container=argv_container, ref=ref, gpu=gpu, gpus_per_node=gpus_per_node,
        nodes=p.nodes, replicas=p.replicas, multi_node=multi,
        ray_head_argv=A.ray_head_argv(), ray_worker_argv=A.ray_worker_argv("HEAD_ADDRESS"), ray_port=A.RAY_PORT,
        ray_wait=wait, leader_script=leader, lws_worker_script=worker,
        compose_services=_compose_services(e.http_server, multi), cache_dir=ef.cache_dir,
        cache_storage=_storage(checkpoint_bytes), models_storage=_storage(plan.memory.weights_bytes),
        cache_access_mode="ReadWriteOnce" if p.replicas == 1 and not multi else "ReadWriteMany",
        startup_seconds=startup, probe_period=period, startup_failures=math.ceil(startup / period),
        quantize_lines=[sh_join(s) for s in ref.quantize_steps], request_path=request_path, request_line=request_line,
        health_line=sh_join(["curl", "-fsS", health_url]) if health_url else None,
        pip_packages=facts.pip_packages.get(e.name, []), apt_packages=facts.apt_packages if e.name == "ctranslate2" else [],
        device="cuda" if gpu else "cpu", max_new_tokens=plan.request.output_tokens or DEFAULT_NEW_TOKENS,
        max_batch=e.max_num_seqs, summary=_summary(plan, gpus_per_node), warnings=list(plan.warnings),
    )
    ctx["docker_run"] = _docker_run(ctx, f"infer-advisor/{app}:{A.slug(e.name)}-{e.version}")
    values = [*argv_host, *argv_container, str(ref.host), str(ref.container), *(x for step in ref.quantize_steps for x in step)]
    ctx["literal_shell_specials"] = any("$" in v or "`" in v for v in values)
    return EmitContext(**ctx)


def _compose_services(http_server: bool, multi: bool) -> list[dict]:
    if multi:
        worker_cmd = ["worker", "${RAY_HEAD_ADDRESS:?set RAY_HEAD_ADDRESS to the head node's address}"]
        return [
            dict(name="head", build=True, command=["head"], profiles=None, health=True, head_env=False),
            dict(name="worker", build=True, command=worker_cmd, profiles=["worker"], health=False, head_env=True),
        ]
    if not http_server:
        return [dict(name="generate", build=True, command=None, profiles=None, health=False, head_env=False)]
    return [dict(name="server", build=False, command=None, profiles=None, health=True, head_env=False)]


def _display(name: str) -> str:
    from ..engines import engine_profile

    return engine_profile(name).display


def _summary(plan: DeploymentPlan, gpus_per_node: int) -> list[str]:
    p, m, q = plan.parallelism, plan.memory, plan.quantization
    hw = "CPU" if plan.hardware.kind == "cpu" else f"{plan.hardware.gpus_per_node}x {plan.hardware.gpus[0].name}" + (
        f" x {plan.hardware.nodes} nodes" if plan.hardware.nodes > 1 else ""
    )
    lines = [
        f"model: {plan.model.name} ({plan.model.source})",
        f"hardware: {hw} ({plan.hardware.source})",
        f"engine: {_display(plan.engine.name)} {plan.engine.version}, dtype {plan.dtype}, quantization {q.method}, "
        f"KV cache {plan.engine.kv_cache_dtype}",
        f"layout: tensor parallel {p.tensor_parallel_size}, pipeline parallel {p.pipeline_parallel_size}, nodes {p.nodes}, "
        f"replicas {p.replicas}",
        f"context: max_model_len {plan.engine.max_model_len}, {plan.engine.max_num_seqs} sequences at once",
        f"memory per GPU ({m.source}): {m.total_bytes_per_gpu / _GIB:.1f} GiB of {m.gpu_memory_bytes / _GIB:.1f} GiB, "
        f"weights {m.weights_bytes_per_gpu / _GIB:.1f} GiB, KV cache {m.kv_cache_tokens} tokens",
    ]
    if not plan.feasible:
        lines.append(f"NOT FEASIBLE: {plan.infeasible_reason}")
    return lines
