"""Emit stage: a :class:`~infer_advisor.plan.models.DeploymentPlan` -> ready-to-run files from Jinja templates.

    >>> from infer_advisor import advise
    >>> plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
    >>> sorted(render(plan, "all"))
    ['Dockerfile', 'README.md', 'docker-compose.yml', 'k8s.yaml', 'serve.sh']

``render(plan, "docker", out="deploy/")`` also writes deploy/Dockerfile and deploy/README.md.

Kinds: ``script`` (serve.sh, or generate.py for engines without a server), ``docker`` (Dockerfile),
``compose`` (docker-compose.yml), ``k8s`` (k8s.yaml), ``readme`` (README.md alone), ``all``. A README.md
always comes along. Everything is
rendered in memory first; files are written only when all rendered, into a temp dir renamed onto ``out``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EmitError

if TYPE_CHECKING:  # pragma: no cover
    from ..plan.models import DeploymentPlan

ARTIFACT_KINDS: tuple[str, ...] = ("script", "docker", "compose", "k8s", "readme")

# (artifact template stem, extension, output file name)
_SERVE = ("serve", ".sh", "serve.sh")
_RAY_NODE = ("serve", ".sh", "ray-node.sh")
_ENTRYPOINT = ("serve", ".sh", "entrypoint.sh")  # container role: prepare steps, then the server (MLC, ExLlamaV2)
_CONTAINER_SCRIPTS = ("ray-node.sh", "entrypoint.sh")
_GENERATE = ("generate", ".py", "generate.py")
_DOCKERFILE = ("Dockerfile", "", "Dockerfile")
_COMPOSE = ("compose", ".yaml", "docker-compose.yml")
_K8S = ("k8s", ".yaml", "k8s.yaml")
_README = ("README", ".md", "README.md")


def parse_kinds(kind: str | list[str] | tuple[str, ...]) -> list[str]:
    """``"script,docker"`` / ``["k8s"]`` / ``"all"`` -> the kinds, in order, without repeats; unknown ones raise."""
    if not isinstance(kind, (str, list, tuple)) or not all(isinstance(k, str) for k in ([kind] if isinstance(kind, str) else kind)):
        raise EmitError(f"The artifact kind is a string or a list of strings ({', '.join(ARTIFACT_KINDS)} or all), not {kind!r}.")
    asked = [kind] if isinstance(kind, str) else list(kind)
    asked = [k.strip() for a in asked for k in a.split(",") if k.strip()]
    if not asked:
        raise EmitError(f"No artifact kind given; choose from {', '.join(ARTIFACT_KINDS)} or all.")
    out: list[str] = []
    for k in asked:
        for name in ARTIFACT_KINDS if k == "all" else [k.lower()]:
            if name not in ARTIFACT_KINDS:
                raise EmitError(f"Unknown artifact kind '{name}'; choose from {', '.join(ARTIFACT_KINDS)} or all.")
            if name not in out:
                out.append(name)
    return out


def _files_for(
    kinds: list[str], http_server: bool, multi_node: bool, builds_image: bool = False, entrypoint: bool = True
) -> list[tuple[str, str, str]]:
    image_files = (
        [_DOCKERFILE] + ([_RAY_NODE] if multi_node else []) + ([_ENTRYPOINT] if builds_image and entrypoint else [])
        + ([] if http_server else [_GENERATE])
    )
    own_image = multi_node or not http_server or builds_image  # compose and Kubernetes need the image the Dockerfile builds
    wanted: list[tuple[str, str, str]] = []
    for k in kinds:
        if k == "script":
            wanted.append(_SERVE if http_server else _GENERATE)
        elif k == "docker":
            wanted += image_files
        elif k == "compose":
            wanted += [_COMPOSE, *(image_files if own_image else [])]
        elif k == "k8s":
            wanted += [_K8S, *(image_files if (builds_image or not http_server) else [])]
    wanted.append(_README)
    unique: list[tuple[str, str, str]] = []
    for item in wanted:
        if item[2] not in [u[2] for u in unique]:
            unique.append(item)
    return unique


def render(
    plan: DeploymentPlan, kind: str | list[str] = "all", out: str | Path | None = None, *, force: bool = False
) -> dict[str, str]:
    """Render ``kind`` artifacts for ``plan``: file name -> text; with ``out``, also write them there.

    Raises :class:`~infer_advisor.errors.EmitError` (unknown kind, a plan that cannot be emitted) and
    :class:`~infer_advisor.errors.OutputExistsError` (``out`` is not empty and ``force`` is False).
    """
    from ..errors import EmitError
    from .context import build_context
    from .templating import template_name

    from ..plan.models import DeploymentPlan as _Plan

    if not isinstance(plan, _Plan):
        raise EmitError(f"render() needs a DeploymentPlan, not {type(plan).__name__}.")
    if out is not None and not isinstance(out, (str, Path)):
        raise EmitError(f"out must be a folder path (str or Path), not {type(out).__name__}.")
    kinds = parse_kinds(kind)
    if not plan.feasible:
        hint = f" Try {plan.suggestion}." if plan.suggestion else ""
        raise EmitError(f"The plan is not feasible ({plan.infeasible_reason}); nothing was written.{hint}")
    from ..engines.launch_facts import engine_facts

    ctx = build_context(plan)
    wanted = _files_for(kinds, ctx.http_server, ctx.multi_node, ctx.builds_image, engine_facts(plan).entrypoint_script)
    names = [filename for _, _, filename in wanted]
    # Files the engine reads: Kubernetes holds them in a ConfigMap, unless they are baked into the image it runs.
    baked = ctx.builds_image and any(not f.k8s_configmap for f in ctx.config_files)
    if set(kinds) & {"script", "docker", "compose"} or ("k8s" in kinds and baked):
        names += [f.name for f in ctx.config_files]
    files: dict[str, str] = {}
    for stem, ext, filename in wanted:
        name = template_name(ctx.engine, stem, ext, ctx.engine_version)
        files[filename] = _render_one(name, plan, ctx, filename, kinds, names)
    for f in ctx.config_files:
        if f.name in names:
            files[f.name] = f.text
    if out is not None:
        from .write import write_tree

        write_tree(files, Path(out), force=force)
    return files


def _render_one(name: str, plan, ctx, filename: str, kinds: list[str], names: list[str]) -> str:
    from .templating import render_template

    role = "container" if filename in _CONTAINER_SCRIPTS else "host"
    argv = ctx.argv_container if role == "container" else ctx.argv_host
    model = ctx.ref.container if role == "container" else ctx.ref.host
    from ..engines.launch_facts import emit_facts

    facts = emit_facts().engines[ctx.engine]
    command_len = len(facts.container_command if role == "container" else facts.host_command)
    return render_template(
        name, plan=plan, c=ctx, argv=argv, model=model, role=role, template=name, filename=filename, kinds=kinds,
        files=names, command_len=command_len, prepare=ctx.prepare_container if role == "container" else ctx.prepare_host,
    )


def write_artifacts(plan: DeploymentPlan, kinds: list[str], out: Path, force: bool = False) -> list[Path]:
    """What `infer-advisor plan --emit KINDS --out DIR [--force]` calls: render, then write; the written paths."""
    files = render(plan, kinds, out=None)
    from .write import write_tree

    return write_tree(files, Path(out), force=force)


__all__ = ["ARTIFACT_KINDS", "parse_kinds", "render", "write_artifacts"]
