"""`infer-advisor doctor`: why an engine's start-up fails (or will), and the smallest edits that make it start.

    >>> text = ("INFO 05-01 12:00:01 [api_server.py:1043] vLLM API server version 0.19.0\\n"
    ...         "ValueError: The model's max seq len (29000) is larger than the maximum number of tokens that can be "
    ...         "stored in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`")
    >>> d = diagnose(text, gpu="RTX-3090", model="meta-llama/Llama-3.1-8B")
    >>> d.error.kind, d.binding, "--max-model-len 23552" in [edit.change for edit in d.edits]
    ('max_len_exceeds_kv', 'KV cache', True)

Input: a start-up log (failed or successful; vLLM V0 or V1, SGLang, TGI or llama.cpp, read by
:mod:`infer_advisor.engines.startup_log`; the error by :mod:`.startup_errors`) or the launch command about to be run
(vLLM, SGLang, TGI or llama.cpp, read by :mod:`infer_advisor.engines.command_line`; :mod:`.input_text` turns it into
the setup). A command goes through the memory model with the engine's own start rule; its edits are written in the
engine's own flags and the first that starts is applied to the command (``fixed_command``). For vLLM the figures the log printed calibrate the memory model for that setup (:func:`.memory.fit_memory_calibration`: the same fit as
``calibrate --from-log``), so the ledger reproduces the log where it printed a figure and estimates the rest; every
edit is the same memory model run with one setting changed (:mod:`.edits`). No byte is added up here.
SGLang, TGI and llama.cpp logs are worked by each engine's own start-up arithmetic on the figures they printed
(:mod:`.sglang_tgi`), with the memory model's KV bytes per token where the model and GPU resolve.

Where the model or GPU cannot be resolved (a local folder, a GPU outside the catalog: pass ``--model``/``--gpu``; the
GPU is otherwise inferred from the log's own lines, :mod:`.gpu`), the diagnosis names the error in the engine's
words and offers what the engine's own message or figures decide.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .edits import (Edit, LedgerLine, Scenario, StartRule, graph_pool_bytes, rank_edits, room_outside_budget, starts,
                           tried_edit)
from .figures import engine_figure_edits, free_memory_note, printed_v0_check, within_engine_figures
from .command import any_kv, engine_try_flags, min_slots, model_setup, setup_notes, tried_command
from .engine_table import model_flags, own_arithmetic, predicted_error
from .ledger import binding, ledger, logged_only
from .version import generation_of as _generation, release_or_none, version_of as _version
from .startup_errors import StartupError, find_startup_error
from ..engines.startup_log import StartupLog

SCHEMA_VERSION = 5  # 4 (docfix8): the error kind mamba_cache_blocks; 5 (docfix13): llamacpp_refused, host_oom_killed

class Diagnosis(BaseModel):
    """What `infer-advisor doctor` found; ``model_json_schema()`` is the published contract (add fields, never rename)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = Field(default=SCHEMA_VERSION, description="2: edits carry confidence and basis, the error kind "
                                "kv_cache_check and first-try edits were added (1: before; no field); 3: gpu_count, gpu_count_source, pp, "
                                "engine_source and each edit's gpus_needed; 4: the error kind mamba_cache_blocks; 5: the error kinds "
                                "llamacpp_refused (llama.cpp declining its settings, not memory) and host_oom_killed (exit code 137).")
    input_kind: Literal["log", "command"]
    engine: str
    engine_version: str | None
    version_source: str = Field(description="log, given (--engine-version), the container image's tag (a command), or pinned default.")
    generation: Literal["V0", "V1"] | None = None
    model: str | None = None
    gpu: str | None = None
    gpu_source: str | None = Field(default=None, description="given (--gpu), or how it was inferred from the log's own lines.")
    tp: int = Field(default=1, description="GPUs the run uses (tensor-parallel x pipeline-parallel).")
    pp: int = Field(default=1, description="Pipeline stages among them (schema 3).")
    gpu_count: int | None = Field(default=None, description="GPUs the machine has (schema 3): --gpus, or read from the log "
                                  "(CUDA_VISIBLE_DEVICES, device lines, nvidia-smi rows, an instance type); None: not known.")
    gpu_count_source: str | None = Field(default=None, description="given (--gpus), or the log's line it was read from (schema 3).")
    engine_source: str = Field(default="log", description="log (its lines name the engine), command, or how it was chosen when "
                               "no line names it (schema 3).")
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    gpu_memory_bytes: int | None = None
    budget_bytes: int | None = None
    budget_base: str | None = Field(default=None, description="What the memory fraction is of: total (vLLM, TGI), free before loading "
                                    "(SGLang), free at start (llama.cpp, which has no fraction).")
    ledger: list[LedgerLine] = Field(default_factory=list)
    binding: str | None = Field(default=None, description="The ledger term that decides whether it starts.")
    error: StartupError | None = Field(default=None, description="The error the engine raised (in the log) or will raise.")
    error_logged: bool = Field(default=False, description="True: the engine printed it; False: predicted here.")
    starts: bool | None = Field(default=None, description="The setup as given starts (None: not known without the model).")
    kv_cache_tokens: int | None = None
    max_concurrency: int | None = None
    memory_model: bool = Field(default=False, description="The memory model ran for this setup (model and GPU resolved).")
    edits: list[Edit] = Field(default_factory=list, description="Ranked: those that start first, then by cost.")
    tried: Edit | None = Field(default=None, description="The edit asked for with --try-flags, run through the same model.")
    fixed_command: str | None = Field(default=None, description="For a command line: it with the first edit that starts applied (shell-quoted).")
    command_settings: dict[str, int | float | str | bool] | None = Field(
        default=None, description="For a command line: the settings read from it (setting -> value, as the engine's own flags, "
        "`-e NAME=value` words or the image tag gave them; engines/command_line.py, data/engine_cli.yaml).")
    notes: list[str] = Field(default_factory=list)


def diagnose(text: str, *, gpu: str | None = None, model: str | None = None, engine_version: str | None = None,
             tp: int | None = None, max_model_len: int | None = None, gpu_memory_utilization: float | None = None,
             try_flags: list[str] | None = None, gpus: int | None = None) -> Diagnosis:
    """Diagnose a start-up log or a vLLM command line (``text``); the options fill what it does not say (the log's
    own figures win where it printed them)."""
    from .gpu import infer_gpu
    from .hardware_rank import gpu_count_from_log
    from .engine_words import engines_in_words, unnamed_source
    from .input_text import extras_from_log, log_from_command, looks_like_command
    from .model import infer_model
    from ..engines.startup_log import detect_engine, parse_startup_log

    gpu_source, model_source = ("given" if gpu else None), None
    if gpu:  # a GPU or model the user named must resolve: one line and exit 2 otherwise
        from ..hardware import resolve_hardware

        resolve_hardware(gpu)
    if model:
        from ..model_facts import resolve_model

        resolve_model(model, source="auto")
    hw = (gpus, None, "given") if gpus else gpu_count_from_log(text)
    unnamed, words = False, []
    if looks_like_command(text):
        log, flags = log_from_command(text)
        error, kind = None, "command"
        if try_flags and not model_flags(log.engine):
            engine_try_flags(log.engine, try_flags)  # checked before the model is resolved: a bad flag is one line, exit 2
    else:
        error = find_startup_error(text)
        words = engines_in_words(text)  # docfix18 (sf294): several engines named, no engine's line
        unnamed = (detect_engine(text) is None or bool(words)) and error is not None and error.kind.startswith("cuda_oom")
        engine = detect_engine(text) or (_OTHER_ENGINES.get(error.kind.split("_")[0]) if error is not None else None)
        if engine is None and error is None:
            from ..errors import RequestError

            raise RequestError("Nothing in this input looks like a vLLM, SGLang, TGI or llama.cpp start-up log or a vLLM command line "
                               "(no engine line, no start-up error); pass the engine's start-up log.")
        if own_arithmetic(engine):
            if try_flags:
                from ..errors import RequestError

                raise RequestError(f"--try-flags for a {engine} log is not supported: its figures are worked by the engine's own arithmetic; "
                                   f"pass the {engine} command line (with --gpu) to try flags through the memory model.")
            return _finish(_other_engine(text, engine, error, gpu=gpu, model=model, engine_version=engine_version, tp=tp,
                                         max_model_len=max_model_len, memory_fraction=gpu_memory_utilization), hw, text=text)
        log = parse_startup_log(text, "vllm", require_kv=False)
        flags = extras_from_log(text)
        _merge_error_figures(log, error)
        kind = "log"
        if not gpu:
            gpu, gpu_source = infer_gpu(text, log.gpu_name)
        if not model:
            model, model_source = infer_model(log.model)
    tp_stated, log.tp = bool(log.tp or tp), log.tp or tp
    log.max_model_len = log.max_model_len or max_model_len
    log.gpu_memory_utilization = log.gpu_memory_utilization or gpu_memory_utilization
    version, version_source = _version(log, engine_version, error)
    version_source = "the container image's tag" if (kind == "command" and version_source == "log") else version_source
    diag = Diagnosis(input_kind=kind, engine=log.engine, engine_version=version, version_source=version_source,
                     generation=log.generation or _generation(log.engine, version), model=model or log.model, gpu=gpu or log.gpu_name,
                     gpu_source=gpu_source, tp=(log.tp or 1) * (log.pp or 1), max_model_len=log.max_model_len,
                     gpu_memory_utilization=log.gpu_memory_utilization, gpu_memory_bytes=log.total_gpu_memory_bytes, error=error,
                     error_logged=error is not None)
    if gpu_source and gpu_source != "given":
        diag.notes.append(f"GPU {gpu}: {gpu_source}; pass --gpu to say which.")
    if model_source:
        diag.notes.append(f"Model {model}: {model_source}; pass --model to say which.")
    if kind == "command":
        from ..engines.command_line import parse_command

        read = parse_command(text)
        diag.command_settings = dict(read.settings) | ({"image_version": read.image_version} if read.image_version else {})
    diag.pp = log.pp or 1
    if kind == "command":
        diag.engine_source = "command"
    elif unnamed:
        diag.engine_source = unnamed_source(words)
    refused = _refused_command(diag, flags, log.command) if kind == "command" else None  # docfix13: declined before allocating
    return _finish(refused or _with_model(diag, log, flags, model=model, gpu=gpu, version=version, try_flags=try_flags), hw, log.command, text, tp_stated)


def _refused_command(diag: Diagnosis, flags: dict, command: str | None) -> Diagnosis | None:
    """A llama.cpp command its engine will refuse before any allocation (:mod:`.refusal_edits`): the refusal,
    predicted, and the edits that meet the engine's condition; the first applied to the command (None: no refusal)."""
    from .input_text import apply_edit
    from .engine_table import command_refusal
    from .refusal_edits import refusal_findings

    refusal = command_refusal(diag.engine, flags)
    if refusal is None:
        return None
    diag.error, diag.error_logged, diag.starts = refusal, False, False
    found = refusal_findings(diag.error)
    diag.edits, diag.notes = found.edits, diag.notes + found.notes
    diag.fixed_command = apply_edit(command, diag.edits[0].argv) if (command and diag.edits) else None
    return diag


def _finish(diag: Diagnosis, hw: tuple = (None, None, None), command: str | None = None, text: str = "", tp_stated: bool = False) -> Diagnosis:
    """Where nothing gave an edit, what an on-call engineer tries first (:mod:`.first_try`); every edit then says
    how sure it is and why; an edit that needs GPUs the machine lacks does not start, and one that needs more than the
    run uses goes after those that run on them where the count is not known (:mod:`.hardware_rank`)."""
    from .engine_words import unnamed_edits
    from .engine_table import after_hardware, before_hardware, first_try_edits
    from .first_try import label_edits, larger_than_gpu, ollama_note
    from .hardware_rank import nothing_runs_edit, place_by_hardware, shared_device_note
    from .refusal_edits import HOST_KILL_NOTE, host_kill_edits, in_effect
    from .weights_fit import tp_first_when_weights_exceed

    diag.gpu_count, diag.gpu_count_source = hw[0], hw[2] if (hw[0] or hw[1]) else None
    if diag.error is not None and diag.error.kind == "host_oom_killed":  # docfix13: host RAM, so no GPU setting (sf191)
        diag.edits, diag.starts, diag.binding = host_kill_edits(diag.engine, diag.engine_version, text, diag.tp), False, "host memory"
        diag.notes.append(HOST_KILL_NOTE)

    if not diag.edits and (diag.starts is not True or diag.error_logged):
        diag.edits = first_try_edits(diag.error, diag.engine, diag.max_model_len, diag.gpu_memory_utilization, diag.tp,
                                     free_memory_note(diag.error))
        if not diag.edits and diag.error is None:
            diag.notes.append("No start-up error was found in this text (a traceback cut before its message?): no edit is offered; "
                              "paste the lines after the traceback's last frame.")
    whole = larger_than_gpu(diag.error)
    if whole is not None:  # docfix12: one allocation larger than the whole GPU, which no memory setting frees
        diag.edits = [whole]
    elif diag.engine_source.startswith("not named"):  # docfix15 (sf221), docfix18 (sf294): no engine's flag first
        diag.edits = unnamed_edits(diag, text, first_try_edits)
    diag.edits, already = in_effect(text, diag.edits)
    shared = shared_device_note(text, diag.engine, diag.gpu_memory_utilization)  # docfix13 (sf171): other servers on the device
    diag.notes += already + [n for n in (shared, ollama_note(text, diag.engine)) if n]
    diag.edits = label_edits(diag.edits, diag.memory_model, diag.error)
    before_hardware(diag, text, hw[0], tp_stated)  # the engine's own passes, in order (engine_table, engine_passes)
    diag.edits, stuck = place_by_hardware(diag.edits, hw[0], hw[1], diag.tp, diag.pp, diag.error)
    if stuck:
        diag.edits.insert(0, nothing_runs_edit(diag.edits, hw[0], diag.tp))
    else:
        tp_first_when_weights_exceed(diag, text)  # docfix14 (sf225, sf224): weights alone over one GPU
    after_hardware(diag, text)  # docfix16, docfix19 (sf260-sf262, sf305, sf316): V1's free-memory check, the engine's refusals
    first = next((e for e in diag.edits if e.starts), None)
    if diag.fixed_command and command:
        from .input_text import apply_edit

        diag.fixed_command = apply_edit(command, first.argv) if first is not None else None
    if hw[2] and hw[0] is None:
        diag.notes.append(f"GPUs present: not known ({hw[2]}); pass --gpus N so that edits needing more GPUs are ranked by it.")
    return diag


_OTHER_ENGINES = {"sglang": "sglang", "tgi": "tgi", "llamacpp": "llama.cpp"}


def _other_engine(text: str, engine: str, error: StartupError | None, *, gpu, model, engine_version, tp, max_model_len,
                  memory_fraction) -> Diagnosis:
    """SGLang, TGI, llama.cpp: the engine's own arithmetic on the log's figures (:mod:`.sglang_tgi`), with the memory
    model's KV bytes per token where the model and GPU are known and the log does not print them."""
    from ..errors import InferAdvisorError
    from .sglang_tgi import engine_findings
    from .gpu import infer_gpu
    from .model import infer_model
    from ..engines.startup_log import parse_startup_log

    try:
        log = parse_startup_log(text, engine=engine, require_kv=False)
    except InferAdvisorError:
        log = StartupLog(engine=engine)
    log.tp, log.max_model_len = log.tp or tp, log.max_model_len or max_model_len
    log.gpu_memory_utilization = log.gpu_memory_utilization or memory_fraction
    gpu_source = "given" if gpu else None
    if not gpu:
        gpu, gpu_source = infer_gpu(text, log.gpu_name)
    model_source = None
    if not model:
        model, model_source = infer_model(log.model)
    version = release_or_none(engine_version or log.engine_version, notes := [])
    diag = Diagnosis(input_kind="log", engine=engine, engine_version=version, version_source="given" if engine_version else
                     ("log" if log.engine_version else "unknown"), model=model or log.model, gpu=gpu, gpu_source=gpu_source,
                     tp=(log.tp or 1) * (log.pp or 1), pp=log.pp or 1, max_model_len=log.max_model_len,
                     gpu_memory_utilization=log.gpu_memory_utilization,
                     error=error, error_logged=error is not None, notes=notes)
    cell, total = _model_cell(log, model or log.model, gpu, version, diag.notes)
    diag.memory_model = cell is not None
    found = engine_findings(log, error, kv_bytes_per_token=cell, gpu_memory_bytes=total)
    diag.ledger, diag.binding, diag.starts, diag.edits = found.ledger, found.binding, found.starts, found.edits
    diag.kv_cache_tokens, diag.budget_bytes, diag.gpu_memory_bytes = found.kv_cache_tokens, found.budget_bytes, found.gpu_memory_bytes
    diag.budget_base = found.budget_base
    diag.notes += found.notes
    if gpu_source and gpu_source != "given":
        diag.notes.append(f"GPU {gpu}: {gpu_source}; pass --gpu to say which.")
    if model_source:
        diag.notes.append(f"Model {model}: {model_source}; pass --model to say which.")
    return diag


def _catalog_total(gpu: str | None) -> int | None:
    from ..errors import InferAdvisorError
    from ..hardware import resolve_hardware

    try:
        return resolve_hardware(gpu).gpu.budget_memory_bytes if gpu else None
    except InferAdvisorError:  # an inferred name the catalog does not hold
        return None


def _model_cell(log: StartupLog, model: str | None, gpu: str | None, version: str | None, notes: list[str]) -> tuple[float | None, int | None]:
    """(KV bytes per token per GPU, the GPU's CUDA-visible total) from the memory model, where the model and GPU resolve."""
    from ..errors import InferAdvisorError
    from ..calibrate.memory import setup_for_log

    if not (model and gpu):
        return None, _catalog_total(gpu)
    try:
        from ..estimate.memory import estimate_memory

        facts, setup = setup_for_log(log.model_copy(update={"model": model}), model=model, gpu=gpu, engine_version=version)
        est = estimate_memory(facts, **setup)
    except (InferAdvisorError, ValueError) as err:
        notes.append(f"Without the memory model: {err}")
        return None, None
    return est.kv_cache_bytes_per_token_per_gpu, est.gpu_memory_bytes


def _merge_error_figures(log: StartupLog, error: StartupError | None) -> None:
    """The numbers in the engine's error message are figures of the log too."""
    if error is None:
        return
    f = error.figures
    if "max_model_len" in f and log.max_model_len is None:
        log.max_model_len = int(f["max_model_len"])
    if error.kind == "max_len_exceeds_kv" and log.kv_cache_tokens is None and "kv_cache_tokens" in f:
        log.kv_cache_tokens = int(f["kv_cache_tokens"])
        log.lines["kv_cache_tokens"] = error.line
    if error.kind == "kv_needed_exceeds_available" and log.kv_cache_bytes is None:
        log.kv_cache_bytes = int(f["kv_available_bytes"])
        log.lines["kv_cache_bytes"] = error.line
    if error.kind == "free_memory_below_utilization":
        log.total_gpu_memory_bytes = log.total_gpu_memory_bytes or int(f["total_bytes"])
        log.gpu_memory_utilization = log.gpu_memory_utilization or f["gpu_memory_utilization"]


def _figure_edits(diag: Diagnosis, log: StartupLog) -> Diagnosis:
    """Without the memory model: the edits the engine's own figures give, and what to do when none is a flag."""
    if diag.error is None and diag.generation == "V0":  # the check V0 makes on the lines it printed (docfix12: sf175)
        diag.error = printed_v0_check(log)
    diag.edits = engine_figure_edits(diag.error, log.max_model_len, log.gpu_memory_utilization, log)
    note = free_memory_note(diag.error, diag.edits)
    if note:
        diag.notes.append(note)
    return diag


def _with_model(diag: Diagnosis, log: StartupLog, flags: dict, *, model, gpu, version, try_flags=None) -> Diagnosis:
    from ..errors import InferAdvisorError
    from ..calibrate.memory import fit_memory_calibration

    missing = [flag for flag, value in (("--gpu NAME", gpu or log.gpu_name), ("--model NAME", model or log.model)) if not value]
    if missing:
        diag.notes.append(f"The {'log' if diag.input_kind == 'log' else 'command'} does not name the "
                          f"{' or the '.join(m.split()[0][2:] for m in missing)}: pass {' and '.join(missing)} for the memory model's ledger and ranked edits.")
        diag.ledger = logged_only(log)
        return _figure_edits(diag, log)
    try:
        facts, setup = model_setup(log, flags, model=model, gpu=gpu, version=version)
    except InferAdvisorError as err:
        diag.notes.append(f"Without the memory model: {err}" + (" (pass --model with the catalog name of the model this file holds)"
                                                                 if log.engine == "llama.cpp" and not model else ""))
        diag.ledger = logged_only(log)
        return _figure_edits(diag, log)
    diag.gpu = gpu or log.gpu_name
    diag.model = model or log.model
    diag.notes += setup_notes(log, flags, facts, setup)
    cal = None
    if diag.input_kind == "log" and _has_figures(log):
        try:
            cal = fit_memory_calibration(log, source="doctor input", model=model, gpu=gpu, engine_version=version)
        except InferAdvisorError as err:  # figures the model cannot be fitted to (another layout, another checkpoint)
            diag.notes.append(f"The log's figures were not used to calibrate the model ({err}); the ledger is the model's alone.")
    sc = Scenario(facts, setup, cal)
    base = _estimate(sc)
    diag.memory_model = True
    sc.rule = _rule(diag.error, base, setup, flags)
    sc.rule.any_kv = any_kv(log.engine, flags)
    sc.rule.min_slots = min_slots(setup)
    diag.starts = starts(base, sc.rule)
    diag.gpu_memory_bytes, diag.budget_bytes = base.gpu_memory_bytes, base.budget_bytes_per_gpu
    diag.budget_base = "free at start" if setup["memory"].budget_base == "free_at_start" else "total"
    diag.gpu_memory_utilization = setup["memory_fraction"]
    diag.max_model_len = setup["context"]
    diag.kv_cache_tokens, diag.max_concurrency = base.kv_cache_tokens, base.max_concurrency
    diag.ledger = ledger(base, log, diag.error)
    if "free-at-start" in flags and not (diag.error and diag.error.kind == "free_memory_below_utilization"):
        used = int(flags["total-at-start"] - flags["free-at-start"])
        diag.ledger.insert(-1, LedgerLine(term="other processes (used at start)", bytes_per_gpu=used, in_budget=False, source="logged"))
    residual = cal.for_layout(diag.tp).residual_bytes if cal is not None else 0
    if residual and "residual" in base.figure_sources:  # what the log's KV says the engine used that no term explains
        diag.ledger.insert(-1, LedgerLine(term="not explained by the model (from the log's KV figure)", bytes_per_gpu=-residual,
                                          in_budget=True, source="calibrated (log)"))
    diag.binding = binding(base, sc.rule, diag.error)
    if setup["engine"].kv_preallocated and diag.binding == "weights" and base.weights_bytes_per_gpu < base.gpu_memory_bytes:
        diag.binding = "KV cache"  # llama.cpp: the weights fit; the n_ctx cells asked for do not
    if diag.error is None and not diag.starts:
        diag.error = predicted_error(base, setup, diag.generation, log.engine)
    _edits_and_fix(diag, log, flags, sc, base, try_flags, model=model, gpu=gpu, version=version)
    note = free_memory_note(diag.error, diag.edits)
    if note:
        diag.notes.append(note)
    return diag


def _edits_and_fix(diag: Diagnosis, log: StartupLog, flags: dict, sc: Scenario, base, try_flags, *, model, gpu, version) -> None:
    """The ranked edits (in the engine's own flags), the tried edit, and the command with the first edit that starts."""
    if not diag.starts and "note-fit" in flags:
        diag.notes.append(str(flags["note-fit"]))
    if not diag.starts:
        from .sglang_tgi import in_engine_flags

        edits = rank_edits(sc, base)
        diag.edits = edits if model_flags(log.engine) else in_engine_flags(edits, log.engine, context_slots=int(flags.get("ctx-slots", 1)),
                                                                        max_input_tokens=flags.get("max-input-tokens"))
        if model_flags(log.engine):
            diag.edits = within_engine_figures(diag.edits, diag.error if diag.error_logged else None, diag.max_model_len)
    if diag.starts and not model_flags(log.engine) and base.max_concurrency < 1:
        diag.notes.append(f"The KV pool holds {base.kv_cache_tokens:,} tokens, less than one request of {sc.setup['context']:,}: "
                          f"{log.engine} starts, but refuses longer prompts.")
    if try_flags:
        diag.tried = tried_edit(sc, try_flags) if model_flags(log.engine) else tried_command(log, try_flags, model=model, gpu=gpu, version=version)
    first = next((e for e in diag.edits if e.starts), None)
    if diag.input_kind == "command" and first is not None and log.command:
        from .input_text import apply_edit

        diag.fixed_command = apply_edit(log.command, first.argv)
    if diag.starts and diag.error is not None:
        diag.notes.append("The engine raised this error, but the memory model with the log's figures finds the setup starts: "
                          "the log lacks the figure that decided it, so the edits are the engine's own figures only.")
        diag.edits = engine_figure_edits(diag.error, diag.max_model_len, diag.gpu_memory_utilization)


def _has_figures(log: StartupLog) -> bool:
    return any(getattr(log, k) is not None for k in ("weights_bytes", "kv_cache_bytes", "kv_cache_tokens", "non_torch_bytes", "activation_bytes"))


def _estimate(sc: Scenario):
    from ..estimate.memory import estimate_memory

    cal = sc.calibration.for_layout(sc.setup["tp"] * sc.setup["pp"]) if sc.calibration is not None else None
    return estimate_memory(sc.facts, **sc.setup, calibration=cal)


def _rule(error: StartupError | None, base, setup: dict, flags: dict) -> StartRule:
    """What a logged failure adds to the start checks (see edits); vLLM 0.11+ also refuses a budget above the
    memory free when it started (other processes' memory), which its log prints."""
    if error is None:
        return StartRule(max_budget_bytes=flags.get("free-at-start"))
    if error.kind == "cuda_oom_graph_capture":  # the pool this setup captures (sizes x layers where the profile scales it)
        graph_pool = graph_pool_bytes(base) or setup["memory"].cuda_graph_bytes or 0
        return StartRule(min_room_bytes=room_outside_budget(base) + graph_pool, graph_pool_bytes=graph_pool)
    if error.kind == "free_memory_below_utilization":
        return StartRule(max_budget_bytes=error.figures["free_bytes"])
    return StartRule()
