"""Every error infer_advisor raises on purpose.

Each class names a situation the user can act on, carries typed attributes,
and also inherits the matching builtin so callers can catch either::

    try:
        advise(model="meta-llama/Llama-2-7b-hf", gpu="H10")
    except UnknownGPUError as err:       # or: except ValueError
        print(err.suggestions)

The CLI catches :class:`InferAdvisorError`, prints its message on one line to
stderr and exits with code 2. Anything else escaping is a bug.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def _suggest(suggestions: Sequence[str], hint: str = "") -> str:
    parts = []
    if suggestions:
        quoted = ", ".join(f"'{s}'" for s in suggestions[:3])
        parts.append(f"Did you mean {quoted}?")
    if hint:
        parts.append(hint)
    return (" " + " ".join(parts)) if parts else ""


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Names from ``candidates`` close to ``word`` (case-insensitive), best first."""
    import difflib

    pool = list(candidates)
    lowered = {c.lower(): c for c in pool}
    w = word.lower()
    hits = difflib.get_close_matches(w, list(lowered), n=n, cutoff=0.5)
    contains = [c for c in pool if w and (w in c.lower() or c.lower().split("/")[-1] in w)]
    out: list[str] = []
    for name in [*(lowered[h] for h in hits), *contains]:
        if name not in out:
            out.append(name)
    return out[:n]


class InferAdvisorError(Exception):
    """Root of every error raised on purpose; the CLI turns it into one line and exit code 2."""


class ModelNotFoundError(InferAdvisorError, LookupError):
    """The model is not a local directory, not reachable on the Hub, and not in the catalog."""

    def __init__(self, model: str, suggestions: Sequence[str] = (), detail: str = ""):
        self.model = model
        self.suggestions = list(suggestions)
        msg = f"Model '{model}' not found"
        msg += f" ({detail})." if detail else "."
        msg += _suggest(
            self.suggestions,
            "Pass a local directory with config.json, go online for the Hub, or see `infer-advisor models`.",
        )
        super().__init__(msg)


class ModelConfigError(InferAdvisorError, ValueError):
    """A model's config.json or safetensors header is unreadable or lacks a needed field."""

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class UnsupportedArchitectureError(InferAdvisorError, ValueError):
    """The model's architecture has no analytic parameter count here yet."""

    def __init__(self, model: str, architecture: str, supported: Sequence[str] = ()):
        self.model = model
        self.architecture = architecture
        msg = f"Model '{model}' has architecture '{architecture}', which infer_advisor cannot size yet."
        if supported:
            msg += f" Supported: {', '.join(sorted(supported))}."
        super().__init__(msg)


class UnknownGPUError(InferAdvisorError, ValueError):
    """A GPU name that is not in the catalog."""

    def __init__(self, name: str, suggestions: Sequence[str] = ()):
        self.name = name
        self.suggestions = list(suggestions)
        super().__init__(
            f"Unknown GPU '{name}'." + _suggest(self.suggestions, "See `infer-advisor gpus`.")
        )


class HardwareSpecError(InferAdvisorError, ValueError):
    """A `--gpu` spec that does not parse, or impossible counts (0 GPUs, 3 nodes of -1)."""

    def __init__(self, spec: str, problem: str):
        self.spec = spec
        self.problem = problem
        super().__init__(
            f"Bad GPU spec '{spec}': {problem}. Use NAME[:COUNT][xNODES], e.g. 'H100-80GB:8x2', 'T4', 'cpu' or 'auto'."
        )


class RuleFileError(InferAdvisorError, ValueError):
    """A rule file that does not validate; names the file, the rule id and the field."""

    def __init__(self, path: str, problem: str, rule_id: str | None = None, field: str | None = None):
        self.path = path
        self.rule_id = rule_id
        self.field = field
        where = path
        if rule_id:
            where += f": rule '{rule_id}'"
        if field:
            where += f": field '{field}'"
        super().__init__(f"{where}: {problem}")


class DataFileError(InferAdvisorError, ValueError):
    """A shipped or user-supplied data file (catalog, profile, calibration) that does not validate."""

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class CalibrationMismatchError(InferAdvisorError, ValueError):
    """A calibration file was made for another engine, engine version or GPU than the plan's."""

    def __init__(self, path: str, made_for: str, plan_for: str):
        self.path, self.made_for, self.plan_for = path, made_for, plan_for
        super().__init__(
            f"{path} was made for {made_for}, the plan is for {plan_for}; calibrate on that setup, "
            "or pass --calibration-mismatch warn to apply it anyway."
        )


class RequestError(InferAdvisorError, ValueError):
    """An option value that is out of range or contradicts another option."""


class DoesNotFitError(InferAdvisorError, ValueError):
    """A request that cannot run on the given hardware (used where a plan cannot say so itself)."""


class EngineNotInstalledError(InferAdvisorError, ImportError):
    """An engine or backend needed for this command is not installed; names the extra to install."""

    def __init__(self, engine: str, extra: str, detail: str = ""):
        self.engine = engine
        self.extra = extra
        msg = f"{engine} is not installed here. Install it with: pip install 'infer-advisor[{extra}]'"
        if detail:
            msg += f" ({detail})"
        super().__init__(msg)


class HubError(InferAdvisorError, ConnectionError):
    """The Hugging Face Hub could not be reached or refused the request."""


class OutputExistsError(InferAdvisorError, FileExistsError):
    """The output directory exists already; pass --force (force=True) to replace it."""

    def __init__(self, path: str, option: str = "--out"):
        self.path = path
        super().__init__(f"{path} exists already. Pass --force to replace it, or choose another {option}.")


class OutputPathError(InferAdvisorError, OSError):
    """An output path infer-advisor may not or cannot write: it cannot be created, is not a folder, or
    holds files infer-advisor did not write (which ``--force`` never removes)."""

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class BenchmarkError(InferAdvisorError, RuntimeError):
    """A benchmark could not run: unreachable server, bad workload, engine failure."""


class GPURequiredError(InferAdvisorError, RuntimeError):
    """The command needs an NVIDIA GPU and none was found (no driver, or no device)."""


class EmitError(InferAdvisorError, ValueError):
    """A plan the emit stage cannot turn into artifacts (unknown kind, missing template, unsupported layout)."""
