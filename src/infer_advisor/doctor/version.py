"""Which engine version a doctor input is read as: the one given, the log's own, or dated by its lines (V0 messages are
the newest V0 memory profile's); moved out of :mod:`.diagnosis` by docfix12 (module size), unchanged."""

from __future__ import annotations

import re
from typing import Literal

from .startup_errors import StartupError
from ..engines.startup_log import StartupLog
from ..engines.versions import version_key

# setuptools-scm's version for a source tree without tags (vLLM's banner then prints "version 0.1.dev1+g<sha>")
_SCM_PLACEHOLDER = re.compile(r"0\.1\.dev\d+")


def is_release(version: str | None) -> bool:
    """A version the data files' ranges can compare (0.8.5, b7200); a commit hash or a build's name is not one."""
    from ..errors import RequestError

    try:
        return bool(version) and bool(version_key(version))
    except RequestError:
        return False


def release_or_none(version: str | None, notes: list[str]) -> str | None:
    """docfix17 (retrospective, batch 14's sf283: llama.cpp 'build on master branch: c8a0090...'): a version that is not
    a release number (a build's commit hash) is read as an unknown version, said in a note, never a refusal to read the log."""
    if version and not is_release(version):
        notes.append(f"Engine version '{version[:40]}' is not a release number (a build's commit hash or name): read as an unknown "
                     "version; pass --engine-version with the release (e.g. b4500) for its version's rules.")
        return None
    return version


def version_of(log: StartupLog, given: str | None, error: StartupError | None = None) -> tuple[str | None, str]:
    from ..engines.profiles import engine_profile
    from .startup_errors import V0_ONLY_KINDS

    unknown = [v for v in (given, log.engine_version) if v and not is_release(v)]
    if unknown:  # docfix17 (sf283): a commit hash is no release: read as if none were given
        version, how = version_of(log.model_copy(update={"engine_version": None if log.engine_version in unknown else log.engine_version}),
                                  None if given in unknown else given, error)
        return version, f"{how}; '{unknown[0][:40]}' is not a release number (a build's commit hash or name): an unknown version"
    placeholder = next((v for v in (given, log.engine_version) if v and _SCM_PLACEHOLDER.match(v)), None)
    if given and not placeholder:
        return given, "given"
    if log.engine_version and not placeholder:
        return log.engine_version, "log"
    if placeholder:  # not a release: date the log by its lines as if it printed none
        version, how = version_of(log.model_copy(update={"engine_version": None}), None, error)
        return version, f"{how}; '{placeholder[:40]}' is a source build's placeholder version (setuptools-scm), not a release"
    if log.engine == "vllm" and (log.generation == "V0" or (error is not None and error.kind in V0_ONLY_KINDS)):
        how = "its V0 log lines" if log.generation == "V0" else "the engine's V0 message"
        return newest_v0(), f"dated V0 by {how}: the newest V0 profile (the log prints no version: pass --engine-version)"
    try:
        return engine_profile(log.engine).version, "pinned default (the log does not print it: pass --engine-version)"
    except Exception:  # noqa: BLE001 - an engine without a profile: no version
        return None, "unknown"


def newest_v0() -> str:
    """The first version of the newest vLLM memory profile before V1 became the default (data/engine_memory.yaml)."""
    from ..engines.memory import memory_profiles
    from .startup_errors import V1_FIRST

    v0 = [p for p in memory_profiles()["vllm"] if p.below is not None and version_key(p.below) <= version_key(V1_FIRST)]
    return max(v0, key=lambda p: version_key(p.first)).first


def generation_of(engine: str, version: str | None) -> Literal["V0", "V1"] | None:
    if engine != "vllm" or not version:
        return None
    return "V0" if version_key(version) < (0, 8) else "V1"
