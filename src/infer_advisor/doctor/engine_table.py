"""What the doctor asks of each engine, in one table (like :mod:`infer_advisor.engines.front_server`).

The engine-neutral modules (:mod:`.diagnosis`) pick an engine's start rule, first tries, budget floor and the way its
edits are spelt from its :class:`EngineDoctor`; a new engine's doctor is an entry in ``DOCTORS`` and its functions in
its own module. ``doctor_for`` gives None for an engine the doctor does not cover. ollama and llama-cpp-python logs are
llama.cpp logs here (their engine line is llama.cpp's; :mod:`.ollama` and :mod:`.llamacpp_python` read their own lines).
Moved here from name branches without any change of behaviour (the grade, benchmarks/results/doctor_grade.json, is its
golden).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .budget_floor import tgi_input_within_prefill
from .edits import Edit
from .engine_passes import llamacpp_passes, sglang_passes, tgi_passes, vllm_after_hardware, vllm_passes
from .first_try import first_try_common, no_first_try, sglang_first, tgi_first, vllm_first
from .ledger import llamacpp_error, sglang_error, tgi_error, vllm_error
from .refusal_edits import predicted_refusal
from .sglang_floor import fraction_floor
from .startup_errors import StartupError

# (error, max_model_len, utilization, tp) -> the engine's ranked first tries where no figure decides an edit
FirstTry = Callable[[StartupError, "int | None", "float | None", "int | None"], list[Edit]]


@dataclass(frozen=True)
class EngineDoctor:
    """One engine's doctor: every value the engine-neutral modules once picked by the engine's name."""

    name: str
    model_flags: bool  # the memory model's edits are this engine's flags as they are, and --try-flags run through it (vLLM)
    predicted_error: Callable  # (estimate, setup, generation) -> the error the engine raises where the model finds no start
    first_try: FirstTry  # its own first tries (after those every engine shares, :func:`first_try_edits`)
    passes: Callable  # (diag, text, GPUs present, TP stated): its own passes before the hardware ranking, in order (:mod:`.engine_passes`)
    after_hardware: Callable | None  # (diag, text): its passes after it, edits it would refuse at start (docfix16, docfix19)
    command_refusal: Callable | None = None  # (command's extras) -> the refusal its command line meets before any allocation


VLLM = EngineDoctor("vllm", model_flags=True, predicted_error=vllm_error, first_try=vllm_first, passes=vllm_passes,
                    after_hardware=vllm_after_hardware)
SGLANG = EngineDoctor("sglang", model_flags=False, predicted_error=sglang_error, first_try=sglang_first, passes=sglang_passes,
                      after_hardware=fraction_floor)  # docfix21: no static fraction under the weights
TGI = EngineDoctor("tgi", model_flags=False, predicted_error=tgi_error, first_try=tgi_first, passes=tgi_passes,
                   after_hardware=tgi_input_within_prefill)
LLAMACPP = EngineDoctor("llama.cpp", model_flags=False, predicted_error=llamacpp_error, first_try=no_first_try, passes=llamacpp_passes,
                        after_hardware=None, command_refusal=predicted_refusal)
DOCTORS: dict[str, EngineDoctor] = {d.name: d for d in (VLLM, SGLANG, TGI, LLAMACPP)}


def doctor_for(engine: str | None) -> EngineDoctor | None:
    """The doctor of ``engine``, or None where the doctor does not cover it (no engine named, another engine)."""
    return DOCTORS.get(engine) if engine else None


def model_flags(engine: str | None) -> bool:
    doctor = doctor_for(engine)
    return doctor is not None and doctor.model_flags


def own_arithmetic(engine: str | None) -> bool:
    """A covered engine whose log's figures are worked by its own arithmetic (not vLLM's memory-model path)."""
    doctor = doctor_for(engine)
    return doctor is not None and not doctor.model_flags


def command_refusal(engine: str | None, flags: dict) -> StartupError | None:
    """The refusal the engine's command line meets before any allocation (llama.cpp, :mod:`.refusal_edits`), or None."""
    doctor = doctor_for(engine)
    return doctor.command_refusal(flags) if doctor is not None and doctor.command_refusal is not None else None


def predicted_error(est, setup: dict, generation: str | None, engine: str | None) -> StartupError:
    doctor = doctor_for(engine)
    return (doctor.predicted_error if doctor is not None else vllm_error)(est, setup, generation)


def first_try_edits(error: StartupError | None, engine: str | None, max_model_len: int | None, utilization: float | None,
                    tp: int | None, free_note: str | None = None) -> list[Edit]:
    """The ranked first tries for ``error`` where no figure decides an edit (empty: none is a first try)."""
    if error is None:
        return []
    common = first_try_common(error, max_model_len, free_note)
    if common is not None:
        return common
    doctor = doctor_for(engine)
    return doctor.first_try(error, max_model_len, utilization, tp) if doctor is not None else []


def after_hardware(diag, text: str) -> None:
    """The engine's own passes after the hardware ranking: V1's free-memory check, edits it would refuse at start
    (:mod:`.free_memory`, :mod:`.budget_floor`)."""
    doctor = doctor_for(diag.engine)
    if doctor is not None and doctor.after_hardware is not None:
        doctor.after_hardware(diag, text)


def before_hardware(diag, text: str, count: int | None, tp_stated: bool) -> None:
    """The engine's own passes over the ranked edits, just before the hardware ranking (none for an engine not covered)."""
    doctor = doctor_for(diag.engine)
    if doctor is not None:
        doctor.passes(diag, text, count, tp_stated)
