"""`infer-advisor doctor LOG_OR_COMMAND`: why a vLLM, SGLang, TGI or llama.cpp start-up fails (or will), and the smallest edits that start it.

    infer-advisor doctor vllm-startup.log --gpu RTX-3090 --model meta-llama/Llama-3.1-8B
    infer-advisor doctor "vllm serve Qwen/Qwen3-8B --max-model-len 40960 --gpu-memory-utilization 0.4" --gpu A800-80GB
    infer-advisor doctor "llama-server -m llama-3.1-8b-Q4_K_M.gguf -c 131072 -ngl 99" --gpu RTX-4060-8GB --model meta-llama/Llama-3.1-8B
    kubectl logs pod/vllm-0 | infer-advisor doctor - --gpu H100-80GB --format json

Exit codes: 0 the setup starts (or the log shows a start); 1 it fails (the edits say what starts); 2 bad input.
The JSON is :class:`infer_advisor.doctor.diagnosis.Diagnosis` (``infer-advisor schema diagnosis``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

HELP = ("Read a failed (or successful) vLLM, SGLang, TGI or llama.cpp start-up log, or the engine's launch command: the memory ledger, "
        "the error and the edits that start.")
MAX_LOG_BYTES = 32 * 2**20  # a start-up log is a few MiB at most; the rest of a long pod log is not read


class DoctorOptions(BaseModel):
    """Options of `infer-advisor doctor`."""

    model_config = ConfigDict(extra="forbid")

    gpu: str | None = Field(default=None, description="GPU the log was made on or the command will run on (catalog name); vLLM does not print it.")
    model: str | None = Field(default=None, description="Catalog name or local folder of the model, when the log names a local path.")
    engine_version: str | None = Field(default=None, description="Engine version, when the log does not print it (default: the pinned one).")
    tp: int | None = Field(default=None, gt=0, le=1024, description="GPUs per model instance, when the log does not print it.")
    gpus: int | None = Field(default=None, gt=0, le=1024, description="GPUs the machine has: an edit needing more (a larger TP) is "
                             "not offered as one that starts (default: read from the log where it shows them, else not known).")
    max_model_len: int | None = Field(default=None, gt=0, description="max_model_len of the run, when the log does not print it.")
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1, description="gpu_memory_utilization of the run, when the log does not print it.")
    try_flags: str | None = Field(default=None, description="An edit of your own to run through the same model, in the engine's flags in quotes "
                                  "(e.g. '--max-model-len 20000 --kv-cache-dtype fp8'; for a command of SGLang, TGI or llama.cpp its own flags).")
    format: Literal["text", "json"] = Field(default="text", description="Output format.")


def configure(parser: argparse.ArgumentParser) -> None:
    from ._derive import add_model_arguments

    parser.add_argument("source", metavar="LOG_OR_COMMAND", help="A start-up log file, '-' for stdin, or a launch command line in quotes "
                        "(vllm serve, python -m sglang.launch_server, text-generation-launcher / docker run ...text-generation-inference, llama-server).")
    add_model_arguments(parser, DoctorOptions)
    parser.add_argument("--json", dest="format", action="store_const", const="json", default=argparse.SUPPRESS,
                        help="Same as --format json.")


def _read(source: str) -> str:
    from ..errors import DataFileError, RequestError
    from ..doctor.input_text import looks_like_command

    if looks_like_command(source):
        return source
    if source == "-":
        return sys.stdin.read(MAX_LOG_BYTES)
    path = Path(source)
    try:
        is_file = path.is_file()
    except OSError:  # a name the OS cannot look up (too long: a command over MAX_COMMAND_CHARS) is not a file
        is_file = False
    if not is_file:
        from ..engines.command_line import MAX_COMMAND_CHARS
        from ..untrusted import escape_unsafe

        if len(source) > MAX_COMMAND_CHARS:
            raise RequestError(f"the command line is {len(source):,} characters, over the {MAX_COMMAND_CHARS:,} a launch command may "
                               "have; pass the start-up log as a file (or '-' for stdin) instead.")
        raise RequestError(f"'{escape_unsafe(source[:80])}' is neither a log file nor a launch command of vLLM, SGLang, TGI or llama.cpp (vllm serve MODEL ..., "
                           "python -m sglang.launch_server ..., text-generation-launcher ... or docker run ... text-generation-inference ..., llama-server ...).")
    try:
        with path.open("rb") as fh:
            return fh.read(MAX_LOG_BYTES).decode("utf-8", errors="replace")
    except OSError as err:
        raise DataFileError(str(path), f"cannot read the log: {err.strerror or err}") from None


def run(ns: argparse.Namespace) -> int:
    from ..doctor.diagnosis import diagnose
    from ._derive import model_from_namespace

    opts = model_from_namespace(DoctorOptions, ns)
    text = _read(ns.source)
    diag = diagnose(text, gpu=opts.gpu, model=opts.model, engine_version=opts.engine_version, tp=opts.tp,
                    max_model_len=opts.max_model_len, gpu_memory_utilization=opts.gpu_memory_utilization,
                    try_flags=opts.try_flags.split() if opts.try_flags else None, gpus=opts.gpus)
    if opts.format == "json":
        print(json.dumps(diag.model_dump(mode="json"), indent=2))
    else:
        from .render_doctor import print_diagnosis

        print_diagnosis(diag)
    return 1 if (diag.error is not None or diag.starts is False) else 0
