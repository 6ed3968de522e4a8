"""The doctor for a launch command: the memory model's setup for it, the engine's start rule, its notes, and the
user's own flags (``--try-flags``) written into the command and run through the same model.

    >>> from infer_advisor.doctor.input_text import log_from_command
    >>> log, flags = log_from_command("vllm serve meta-llama/Llama-3.1-8B --max-model-len 8192")
    >>> facts, setup = model_setup(log, flags, model=None, gpu="L4", version=None)
    >>> any_kv("sglang", flags), min_slots(setup)
    (True, 1)
"""

from __future__ import annotations

from .edits import Edit, Scenario, StartRule
from ..engines.startup_log import StartupLog

# TGI's default warm-up batch (launcher --max-batch-prefill-tokens, 4096 from v2.4.1); above it two published failures
# (text-generation-inference#2301 at 131,122 and #3130 at 31,000 tokens) were predicted to start: docs/doctor.md
TGI_VALIDATED_PREFILL = 4096


def any_kv(engine: str, flags: dict) -> bool:
    """The engine starts with any KV pool: SGLang always, TGI (no --max-total-tokens) and vLLM (--max-model-len auto)
    when they size the context from memory themselves."""
    from .sglang_tgi import engine_flags

    return engine_flags(engine).start_check == "any_kv" or bool(flags.get("context-from-memory"))


def min_slots(setup: dict) -> int:
    """Slots whose whole context the engine allocates at load (llama.cpp's n_ctx): all must fit; else one request."""
    return int(setup.get("concurrency", 1)) if setup["engine"].kv_preallocated else 1


def model_setup(log: StartupLog, flags: dict, *, model, gpu, version) -> tuple[object, dict]:
    """(model facts, memory-model arguments) for the setup, with eager mode and LoRA slots where the input asks."""
    from ..calibrate.memory import setup_for_log

    facts, setup = setup_for_log(log, model=model, gpu=gpu, engine_version=version)
    if flags.get("enforce-eager"):
        setup["memory"] = setup["memory"].model_copy(update={"cuda_graph_bytes": 0})
    if flags.get("enable-lora") and log.engine == "vllm":
        from ..engines.lora import lora_profile

        prof = lora_profile("vllm", setup["engine_version"])
        setup["lora_slots"] = int(flags.get("max-loras") or prof.default_max_loras)
        setup["lora_rank"] = int(flags.get("max-lora-rank") or prof.default_max_lora_rank)
    return facts, setup


def setup_notes(log: StartupLog, flags: dict, facts, setup: dict) -> list[str]:
    """Where the ledger reads a command differently from the engine (the command line's own notes)."""
    notes = [str(v) for k, v in flags.items() if k.startswith("note-") and k != "note-fit"]  # note-fit: only when it fails
    if flags.get("enable-lora") and log.engine != "vllm":
        notes.append(f"LoRA buffers of {log.engine} are not in the ledger (vLLM's only).")
    layers = getattr(facts, "num_hidden_layers", None)
    if "gpu-layers" in flags and layers and flags["gpu-layers"] < layers:
        notes.append(f"-ngl {flags['gpu-layers']} of {layers} layers: the ledger counts every layer on the GPU (an upper bound on "
                     "its memory; the layers left on the CPU run at the CPU's memory bandwidth).")
    if log.engine == "tgi" and (setup.get("max_num_batched_tokens") or 0) > TGI_VALIDATED_PREFILL:
        notes.append(f"TGI warms up with {setup['max_num_batched_tokens']:,} prefill tokens: not validated above {TGI_VALIDATED_PREFILL:,}; "
                     "two published warm-up failures (31,000 and 131,122 tokens) were predicted to start by this ledger (docs/doctor.md).")
    if log.engine == "tgi":
        notes.append(f"TGI's KV budget: --cuda-memory-fraction x its wiggle room 0.90 (TGI_WIGGLE_ROOM) = {setup['memory_fraction']:.2f} of the total"
                     + ("; without --max-total-tokens TGI takes min(KV tokens, the model's length), so any KV pool starts."
                        if flags.get("context-from-memory") else "."))
    return notes


def engine_try_flags(engine: str, try_flags: list[str]) -> list[str]:
    """``--try-flags`` words (``--flag=value`` split) when every flag is one of ``engine``'s the ledger reads; else one line."""
    from ..engines.command_line import edit_pairs, engine_cli
    from ..errors import RequestError

    words = [part for w in try_flags for part in (w.split("=", 1) if w.startswith("-") and "=" in w else [w])]
    table = engine_cli(engine).flag_table()
    unknown = [flag for flag, _ in edit_pairs(engine, words) if flag not in table]
    if unknown:
        known = ", ".join(sorted(f for f in table if f.startswith("--")))
        raise RequestError(f"--try-flags: {unknown[0][:40]!r} is not a {engine} flag the ledger reads ({known}).")
    return words


def tried_command(log: StartupLog, try_flags: list[str], *, model, gpu, version) -> Edit:
    """SGLang, TGI, llama.cpp: the command with the user's own flags (the engine's spellings) run through the same model."""
    from ..errors import RequestError
    from ..estimate.memory import estimate_memory
    from .edits import scenario_edit
    from .input_text import apply_edit, log_from_command

    if log.command is None:
        raise RequestError(f"--try-flags for {log.engine} runs a command line through the memory model; pass the command, not a log.")
    words = engine_try_flags(log.engine, try_flags)
    tried, flags = log_from_command(apply_edit(log.command, words))
    facts, setup = model_setup(tried, flags, model=model, gpu=gpu, version=version)
    sc = Scenario(facts, setup, None, StartRule(any_kv=any_kv(log.engine, flags), min_slots=min_slots(setup)))
    return scenario_edit(sc, estimate_memory(facts, **setup), " ".join(words), words, "the edit asked for (--try-flags)", 0.0,
                         length=setup["context"])
