"""The import graph of ``src/infer_advisor``: no circles, and no stage imports a stage above it.

The graph is read with ``ast`` from the source (nothing is imported), so it sees every import: module level,
inside functions (a lazy import is still a dependency), under ``if TYPE_CHECKING:``, and a module named in a
string for ``importlib`` (``"infer_advisor.plan"``; a name that does not exist fails the test). An edge is a module
importing another module of the package (``from .x import name`` counts as importing ``x``, or ``x.name`` when
that is a module).

The stages, lowest first, are data (``STAGES``); a module belongs to the stage of its longest matching prefix
(``MODULE_STAGE`` names the few single modules that sit in another stage than their folder). A module may import
its own stage and any lower stage; the packages of an ``INDEPENDENT`` stage (emit, quantize, bench) do not import
each other. docs/architecture.md draws this graph (``python benchmarks/import_graph.py``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "infer_advisor"
_DOTTED = re.compile(r"^infer_advisor(\.[a-z_]+)+$")

# Lowest first. Each entry: a stage and the module prefixes (relative to infer_advisor) in it.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    # shared infrastructure: errors, environment, data-file loading, output files, the request, formatting
    ("base", ("errors", "constants", "units", "_data", "_snapshot", "_cache_files", "_paths", "_callable", "_version", "_output", "_output_folders", "formatting", "_field_defaults",
              "request", "untrusted", "bounded_read")),
    ("model_facts", ("model_facts",)),
    ("hardware", ("hardware",)),
    # every engine fact: profiles, memory behaviour, speculative heads, Triton, launch commands and argv builders
    ("engines", ("engines",)),
    # memory and step-time models and the calibration *data* they read (never the fitting)
    ("estimate", ("estimate",)),
    # the scheduler simulator over the step-time model
    ("simulate", ("simulate",)),
    # the performance of one plan at a concurrency: runs the simulator (see MODULE_STAGE)
    ("performance", ()),
    ("rules", ("rules",)),
    ("plan", ("plan",)),
    # fleet sizing for a traffic rate: plans options through the plan stage, simulates them
    ("capacity", ("capacity",)),
    # what a plan turns into: artifacts, quantized checkpoints, measurements
    ("outputs", ("emit", "quantize", "bench")),
    # fits speed and memory calibrations from bench reports and start-up logs (runs planner and simulator)
    ("calibrate", ("calibrate",)),
    # the start-up doctor: reads a failed start-up, runs the memory model and the start-up-log calibration
    ("doctor", ("doctor",)),
    # the public functions that compose stages (advise with a rate = capacity over plan) and the lazy top package
    ("api", ("api", "")),
    ("cli", ("cli",)),
]

# Stages whose packages are siblings: none of them imports another.
INDEPENDENT = {"outputs"}

# Single modules whose stage is not their folder's, with the reason.
MODULE_STAGE = {
    # PerformanceEstimate: the simulator run at the plan's concurrency; a plan reads it, so it sits below plan.
    "estimate.speed": "performance",
    # The typed result of sizing and its latency targets are fields of DeploymentPlan (plan.capacity, the published
    # JSON schema); they import only simulate's result type, so they sit in the plan stage.
    "capacity.result": "plan",
    "capacity.targets": "plan",
}

# Upward or circular edges that are allowed, each with its reason. Keep this short.
ALLOWED = {
    # DeploymentPlan.render("docker", out=...) is the public convenience the README shows; it delegates to the emit
    # stage from inside the method.
    ("plan.models", "emit"): "DeploymentPlan.render() facade over emit.render (lazy, public API)",
    # The engines' command builders take the plan as their (typed) argument; under TYPE_CHECKING only, never
    # imported at run time.
    ("engines.argv", "plan.models"): "type annotation only (TYPE_CHECKING)",
    ("engines.launch", "plan.models"): "type annotation only (TYPE_CHECKING)",
    ("engines.prepare", "plan.models"): "type annotation only (TYPE_CHECKING)",
    ("engines.triton_launch", "plan.models"): "type annotation only (TYPE_CHECKING)",
    ("engines.front_server", "plan.models"): "type annotation only (TYPE_CHECKING)",
}


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    root = SRC / PACKAGE
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (names relative to infer_advisor; '' is the package itself)."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        here = [PACKAGE, *name.split(".")] if name else [PACKAGE]
        if not is_pkg:
            here = here[:-1]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    absolute = ".".join(base + ([node.module] if node.module else []))
                else:
                    absolute = node.module or ""
                if absolute != PACKAGE and not absolute.startswith(PACKAGE + "."):
                    continue
                rel = absolute[len(PACKAGE) + 1:]
                for alias in node.names:
                    sub = f"{rel}.{alias.name}" if rel else alias.name
                    targets.add(sub if sub in mods else rel)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(PACKAGE + "."):
                        rel = alias.name[len(PACKAGE) + 1:]
                        if rel in mods:
                            targets.add(rel)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _DOTTED.match(node.value):
                # a module named for importlib (the lazy top-level names, `infer-advisor schema`): an import too
                rel = node.value[len(PACKAGE) + 1:]
                if rel not in mods:
                    raise AssertionError(f"{path}: names module {node.value!r}, which does not exist")
                targets.add(rel)
        targets.discard(name)
        graph[name] = targets
    return graph


def stage_of(module: str) -> str:
    if module in MODULE_STAGE:
        return MODULE_STAGE[module]
    best, best_len = None, -1
    for stage, prefixes in STAGES:
        for prefix in prefixes:
            if prefix == "" and module == "":
                return stage
            if prefix and (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = stage, len(prefix)
    if best is None:
        raise AssertionError(f"module infer_advisor.{module} is in no stage: add it to STAGES in {__file__}")
    return best


def _allowed(src: str, dst: str) -> bool:
    return any((src == a or src.startswith(a + ".")) and (dst == b or dst.startswith(b + ".")) for a, b in ALLOWED)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            child = next(it, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _level(stage: str) -> int:
    return [s for s, _ in STAGES].index(stage)


def _package(module: str) -> str:
    return module.split(".")[0]


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for src, targets in sorted(graph.items()):
        for dst in sorted(targets):
            if _allowed(src, dst):
                continue
            s, d = stage_of(src), stage_of(dst)
            if _level(d) < _level(s):
                continue
            if _level(d) == _level(s) and (s not in INDEPENDENT or _package(src) == _package(dst)):
                continue
            bad.append(f"infer_advisor.{src} ({s}) imports infer_advisor.{dst} ({d})")
    return bad


def test_every_module_has_a_stage():
    for module in import_graph():
        stage_of(module)


def test_no_import_circles():
    graph = {src: {dst for dst in targets if not _allowed(src, dst)} for src, targets in import_graph().items()}
    cycles = _cycles(graph)
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_stage_imports_a_stage_above_it():
    bad = layer_violations(import_graph())
    assert not bad, "upward or sideways imports between stages:\n" + "\n".join(bad)


def test_allowed_exceptions_are_still_needed():
    graph = import_graph()
    stale = [f"{a} -> {b}" for a, b in ALLOWED if not any(
        (src == a or src.startswith(a + ".")) and any(dst == b or dst.startswith(b + ".") for dst in targets)
        for src, targets in graph.items())]
    assert not stale, f"ALLOWED lists edges that no longer exist (remove them): {stale}"


def test_architecture_doc_draws_this_graph():
    """docs/architecture.md's picture is generated from this graph; regenerate with python benchmarks/import_graph.py."""
    from benchmarks.import_graph import DOC, updated

    text = DOC.read_text(encoding="utf-8")
    assert updated(text) == text, "docs/architecture.md is out of date: run python benchmarks/import_graph.py"


def test_the_checks_catch_an_upward_import_and_a_circle():
    """The checker itself: an estimate module importing plan is upward, two modules importing each other a circle."""
    graph = {"estimate.memory": {"plan.layouts"}, "plan.layouts": {"estimate.memory"}, "emit.context": {"bench.report"},
             "bench.report": set()}
    assert layer_violations(graph) == [
        "infer_advisor.emit.context (outputs) imports infer_advisor.bench.report (outputs)",
        "infer_advisor.estimate.memory (estimate) imports infer_advisor.plan.layouts (plan)",
    ]
    assert _cycles(graph) == [["estimate.memory", "plan.layouts"]]
