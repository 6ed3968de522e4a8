"""The edits for a start-up refusal that is not memory (:mod:`.startup_refusals`; docfix13, retrospective: the H200 set
g's g-ctx-200k-q8kv-fa-off and batch 10's sf191).

    >>> from infer_advisor.doctor.startup_errors import find_startup_error
    >>> error = find_startup_error("llama_init_from_model: quantized V cache was requested, "
    ...                            "but this requires Flash Attention")
    >>> found = refusal_findings(error)          # llama.cpp: the settings its own check accepts
    >>> [edit.change for edit in found.edits]
    ['--cache-type-v f16', '--flash-attn on']

A llama.cpp refusal is the engine's own condition on its settings, checked before any buffer is allocated: an edit that
meets the condition passes that check (``starts``: the check only, as vLLM's Mamba-cache bound is counted); whether the
buffers then fit is not printed, since the refusal comes before them. Each edit keeps the spelling the log's build
takes (``-fa`` with no value in the builds whose message was "V cache quantization requires flash_attn").

A host kill (exit code 137): host RAM, not GPU memory, so no GPU setting is offered (the GPU utilization decides how
much of the *GPU* is used; lowering it frees no host memory); the levers are the host's or container's memory limit and
vLLM's CPU swap space (``--swap-space``, GiB of pinned host memory per GPU that the V0 engine allocates, default 4).
"""

from __future__ import annotations

import re

from .edits import Edit, undecided_edit
from ..engines.versions import version_key
from .engine_flags import Findings, engine_edit
from .startup_errors import StartupError
from .startup_refusals import LLAMACPP_REFUSALS

_CHECK = ("llama.cpp's own check on its settings (llama_init_from_model, src/llama-context.cpp), which this edit meets; it "
          "runs before any buffer is allocated, so whether the buffers then fit is not printed")


def _check_edit(argv: list[str], cost: str, rank: float) -> Edit:
    return engine_edit(argv, True, cost, rank).model_copy(update={"confidence": "engine_figures", "basis": _CHECK})


def refusal_findings(error: StartupError) -> Findings:
    """llama.cpp refused the settings: the edits that meet its condition, cheapest first."""
    code = int(error.figures["refusal"])
    out = Findings(starts=False, binding=None)
    m = LLAMACPP_REFUSALS[code].search(error.line)
    fa_on = ["--flash-attn"] if code == 1 else ["--flash-attn", "on"]
    f16_v = ("--cache-type-v", "f16")
    if code in (0, 1):
        out.edits = [_check_edit(fa_on, "flash attention on: the quantized V cache is kept (and with it the attention scores are "
                                 "computed in tiles, so the compute buffer is smaller, not larger); the GPU and backend must support it", 0.02),
                     _check_edit(list(f16_v), "V cache in f16: about 1.9x the V bytes of q8_0 (3.6x of q4_0), and without flash "
                                 "attention the compute buffer holds every head's n_ubatch x n_ctx scores", 0.3)]
    elif code == 2:  # auto chose off: the device or model lacks flash attention, so forcing it on is not decided
        out.edits = [_check_edit(list(f16_v), "V cache in f16: about 1.9x the V bytes of q8_0; flash attention stays as auto chose", 0.3),
                     engine_edit(fa_on, None, "flash attention forced on where auto turned it off (the device or model did not "
                                 "support it): not decided", 0.5)]
    elif code in (3, 4):
        flag = "--cache-type-k" if code == 3 else "--cache-type-v"
        out.edits = [_check_edit([flag, "f16"], f"{flag[-1].upper()} cache in f16: {m.group(1) if m else 'the quantized type'}'s block "
                                 f"of {m.group(2) if m else '?'} does not divide the head size {m.group(3) if m else '?'}; f16 has no "
                                 "blocks (2x the bytes of q8_0)", 0.3)]
    elif code == 5 and m:
        out.edits = [_check_edit(["--cache-type-v", m.group(1)], f"V cache in {m.group(1)}, the K cache's type: this model keeps K "
                                 "and V of one type", 0.1)]
    elif code == 6 and m:
        out.edits = [_check_edit(["--parallel", m.group(1)], f"{m.group(1)} slots, llama.cpp's most (LLAMA_MAX_SEQ): fewer requests "
                                 "served at once", 0.2)]
    elif code == 7:
        out.edits = [_check_edit(["--batch-size", "2048", "--ubatch-size", "512"], "llama.cpp's default batch and micro-batch", 0.01)]
    elif code == 8:
        out.edits = [_check_edit(["--flash-attn", "on"], "flash attention on, which the tensor split needs", 0.02),
                     _check_edit(["--split-mode", "layer"], "layers split across the GPUs instead of tensors (llama.cpp's default "
                                 "split): a different speed profile", 0.3)]
    elif code == 9:
        out.edits = [_check_edit(["--parallel", "1"], "one server slot (-np 0 is refused; -1 is auto)", 0.05)]
    elif code == 10 and m:
        out.edits = [_check_edit([m.group(1), "f16"], f"{m.group(1)} f16 (llama.cpp's default; '{m.group(2)}' is not a cache type this build "
                                 "knows)", 0.05)]
    elif code == 11:
        out.edits = [_check_edit(["--flash-attn", "auto"], "flash attention left to llama.cpp (its default; the flag takes on, off or auto)", 0.01)]
    out.notes.append("llama.cpp refused the settings before allocating any buffer (not memory): " + error.line)
    return out


_PREDICTED = {0: "quantized V cache requires flash_attn to be enabled (predicted from the command: -ctv quantized with -fa off)",
              6: "n_seq_max must be <= 256 (predicted from the command: -np above llama.cpp's LLAMA_MAX_SEQ)",
              8: "SPLIT_MODE_TENSOR requires flash_attn to be enabled (predicted from the command: -sm tensor with -fa off)"}


def predicted_refusal(extras: dict) -> StartupError | None:
    """The refusal a llama.cpp command line will meet (input_text reads it into ``extras["refusal"]``), in the engine's words."""
    code = extras.get("refusal")
    return StartupError(kind="llamacpp_refused", line=_PREDICTED[code], figures={"refusal": code}) if code in _PREDICTED else None


# vLLM's UVA offloader (vllm/model_executor/offloader/uva.py, 0.12+; models/utils.py's maybe_offload_to_cpu before it) copies
# each offloaded parameter into pinned host memory and logs "Total CPU offloaded parameters: %s" (format_gib of the bytes,
# per rank); --cpu-offload-gb is that budget per GPU, so the host holds it once per rank (docfix15: batch 12's sf240)
V0_REMOVED = (0, 11)  # "the V0 engine has been completely removed form vLLM starting with version 0.11.0" (huggingface/optimum-neuron#1027)
_OFFLOADED = re.compile(r"Total CPU offloaded parameters: (\d+(?:\.\d+)?)")


def host_kill_edits(engine: str, version: str | None = None, text: str = "", ranks: int = 1) -> list[Edit]:
    """The host's OOM killer ended the process: host-memory levers only, none decided (the host's memory is not printed).
    docfix15: vLLM's --swap-space only where a V0 engine can run (V1 allocates no swap space, and 0.11.0 removed V0); where the log prints the
    weights offloaded to host memory, offloading fewer of them is the lever of this run's own."""
    edits = [undecided_edit("more host memory for the process (the container's or VM's memory limit, or fewer processes on the host)",
                  [], "a larger host or container limit; GPU settings unchanged", 0.1, confidence="engine_advice",
                  basis="exit code 137 is SIGKILL from the host's (or container's) out-of-memory killer: host RAM ran out, not GPU memory")]
    offloaded = _OFFLOADED.search(text) if engine == "vllm" else None
    if offloaded:
        per_rank = float(offloaded.group(1))
        edits.insert(0, undecided_edit("fewer weights offloaded to host memory (a lower --cpu-offload-gb, or fewer --cpu-offload-params), "
                             "or more GPUs to hold them", [], "the weights not offloaded need GPU memory (more GPUs, or a smaller checkpoint)",
                             0.08, confidence="engine_advice",
                             basis=f"the log prints {per_rank:g} GiB of parameters offloaded to pinned host memory per rank, {per_rank * ranks:g} "
                             f"GiB over {ranks} rank(s) (vLLM's UVA offloader); the weights' post-load processing (a quantized "
                             "kernel's repack) makes new copies of them beside the old, so the host needs more than that; not decided"))
    if engine == "vllm" and not (version and version_key(version) >= V0_REMOVED):
        edits.insert(0, undecided_edit("--swap-space 0", ["--swap-space", "0"], "no CPU swap space: the V0 engine's preempted requests are "
                             "recomputed instead of swapped (the V1 engine allocates none)", 0.05, confidence="engine_advice",
                             basis="vLLM's V0 engine pins --swap-space GiB (default 4) of host memory per GPU at start; how much host "
                             "memory the load needs is not printed, so not decided"))
    return edits


# a setting the run already has is never offered (docfix13, retrospective: batch 10's sf174, "I have added --eager-mode"):
# the engine's own config line ("enforce_eager=True", not the backquoted advice "set `enforce_eager=True`"), the flag in a
# command, or the reporter's words for it; a flag after "try", "consider" and the like is advice, not the run's
_IN_EFFECT = {"--enforce-eager": re.compile(r"(?<![`\w])enforce_eager=True|(?<![\w-])--enforce[-_]eager\b|(?<![\w-])--eager-mode\b"),
              "--disable-cuda-graph": re.compile(r"(?<![`\w])disable_cuda_graph=True|(?<![\w-])--disable-cuda-graph\b")}
_ADVICE = re.compile(r"(?i)\b(?:try|trying|consider|suggest|recommend|should|could|can|set|enable|or)\W+(?:\w+\W+){0,2}\W*$")


def in_effect(text: str, edits: list[Edit]) -> tuple[list[Edit], list[str]]:
    """``edits`` less any switch the run already has (its flag in the text, not as advice), with a note for each."""
    keep, notes = [], []
    for e in edits:
        pattern = _IN_EFFECT.get(e.argv[0]) if len(e.argv) == 1 else _same_value(e.argv)
        hit = next((m for m in pattern.finditer(text) if not _ADVICE.search(text[max(0, m.start() - 40): m.start()])
                    and not _commented(text, m.start())), None) if pattern else None
        if hit is None:
            keep.append(_below_stated(text, e))
        else:
            notes.append(f"{e.change} is not offered: the run already had it ('{hit.group(0).strip()}').")
    return keep, notes


def _commented(text: str, at: int) -> bool:
    """docfix16 (sf264): the flag sits after a '#' on its line (a commented-out line of a pasted command or YAML)."""
    return "#" in text[text.rfind("\n", 0, at) + 1: at]


_LOWER_ONLY = ("--max-batch-prefill-tokens", "--chunked-prefill-size", "--max-num-seqs", "--cuda-graph-max-bs")


def _below_stated(text: str, e: Edit) -> Edit:
    """A cut of a batch knob to a value at or above what the command already sets (docfix14, sf90: TGI's prefill 2048 offered
    to a command with 128) becomes half the stated value."""
    if e.starts is not None or len(e.argv) != 2 or e.argv[0] not in _LOWER_ONLY or not e.argv[1].isdigit():
        return e  # an edit a figure decides is the engine's own value
    m = re.search(rf"(?<![\w-]){re.escape(e.argv[0])}(?:\s+|=)[\"']?(\d+)\b", text[:2_000_000])
    if m is None or int(m.group(1)) > int(e.argv[1]) or int(m.group(1)) < 2:
        return e
    stated, half = int(m.group(1)), int(m.group(1)) // 2
    return e.model_copy(update={"argv": [e.argv[0], str(half)], "change": f"{e.argv[0]} {half}",
                                "cost": f"{stated} -> {half} (half the value the command sets)"})


def _same_value(argv: list[str]) -> re.Pattern | None:
    """A flag with the value the edit sets, as a command in the text spells it (docfix14, sf123: `--cuda-graph-max-bs 8`
    offered to a command that has it)."""
    if len(argv) != 2 or not argv[0].startswith("--"):
        return None
    return re.compile(rf"(?<![\w-]){re.escape(argv[0])}(?:\s+|=)[\"']?{re.escape(argv[1])}(?![\w.])")


HOST_KILL_NOTE = ("Exit code 137 (SIGKILL) with out-of-memory words is the host's (or the container's) out-of-memory killer: host RAM "
                  "ran out, not GPU memory, so GPU settings (utilization, context, sequences) free nothing there and none is offered.")
