"""`infer-advisor calibrate`: measure an engine at a few batch sizes and fit its speed profile, or read an engine's
start-up log into a memory calibration (--from-log).

    infer-advisor calibrate --engine transformers --model meta-llama/Llama-2-7b-hf --random-weights \\
        --concurrency 1,8,32 --out h200-transformers.json        # runs `bench` on this machine's GPU
    infer-advisor calibrate --engine transformers --from bench-out/bench.json --gpu H200 --out cal.json
    infer-advisor plan --model ... --calibration h200-transformers.json
    infer-advisor calibrate --from-log vllm-startup.log --gpu H100-80GB --out h100-vllm-memory.json
    infer-advisor plan --model ... --engine vllm --calibration h100-vllm-memory.json,h200-transformers.json

The file is a :class:`~infer_advisor.estimate.calibration.Calibration` (JSON): the engine's fitted step-time
coefficients, the raw points and the command that produced them.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

HELP = "Fit a speed profile from benchmarks, or a memory calibration from an engine start-up log (--from-log)."


class CalibrateOptions(BaseModel):
    """Options of `infer-advisor calibrate`."""

    model_config = ConfigDict(extra="forbid")

    engine: Literal["transformers", "ctranslate2", "vllm", "sglang", "llama.cpp", "tgi", "trtllm", "mlc", "exllamav2", "mistralrs"] | None = Field(
        default=None,
        description="Engine to measure (in this process, through `bench`: transformers, ctranslate2, vllm); "
        "with --from-log the log's engine (detected when omitted).",
    )
    model: list[str] = Field(
        default_factory=lambda: ["meta-llama/Llama-2-7b-hf"],
        description="Model(s) to measure: catalog names (with --random-weights) or local folders; several fit per-layer overhead too.",
    )
    out: Path = Field(description="Calibration JSON to write (use it with `plan --calibration FILE`).")
    force: bool = Field(default=False, description="Replace --out if it is a calibration file (speed or memory) written earlier.")
    concurrency: list[int] = Field(default_factory=lambda: [1, 8, 32], description="Batch sizes to measure.")
    input_tokens: int = Field(default=512, gt=0, description="Prompt tokens per request.")
    output_tokens: int = Field(default=64, gt=1, description="Tokens generated per request.")
    random_weights: bool = Field(default=True, description="transformers: random weights from the config (speed is real, no download).")
    quantization: str = Field(default="none", description="Weight format of the measured model (see data/formats.yaml).")
    dtype: Literal["auto", "float16", "bfloat16", "float32"] = Field(default="auto", description="Weights dtype (auto: the config's).")
    device: Literal["auto", "cuda", "cpu"] = Field(default="auto", description="Device for the benchmark.")
    gpu: str = Field(default="auto", description="GPU the figures refer to: 'auto' probes this machine; a catalog name with --from.")
    from_file: list[Path] = Field(
        default_factory=list,
        description="Fit from existing results instead of running: bench.json files or benchmarks/gpu/measure_transformers.py JSON.",
    )
    from_log: Path | None = Field(
        default=None,
        description="Write a memory calibration from an engine's start-up log (vLLM V0/V1, SGLang, llama.cpp) instead of a speed profile.",
    )
    engine_version: str | None = Field(default=None, description="With --from-log: the engine version, when the log does not print it.")
    tp: int | None = Field(default=None, gt=0, description="With --from-log: GPUs per model instance (TP x PP), when the log does not print it.")
    max_num_seqs: int | None = Field(
        default=None, gt=0, description="Sequences the measured server scheduled at once (llama.cpp --parallel slots), for the fit's simulation."
    )


def configure(parser: argparse.ArgumentParser) -> None:
    from ._derive import add_model_arguments

    add_model_arguments(parser, CalibrateOptions, exclude={"from_file"})
    parser.add_argument("--from", dest="from_file", type=lambda s: [Path(p) for p in s.split(",") if p], default=argparse.SUPPRESS,
                        metavar="FILE[,FILE]", help=CalibrateOptions.model_fields["from_file"].description)
    from ._format import add_format_option

    add_format_option(parser, ("text", "json"), json_help="Print the calibration written, as JSON, instead of a line (--format json).")


def _measure(opts: CalibrateOptions, command: str):
    from ..bench import BenchRequest, run_bench
    from ..estimate.calibration import CalibrationPoint

    points: list[CalibrationPoint] = []
    gpu_name, dtype = None, None
    for name in opts.model:
        req = BenchRequest(
            engine=opts.engine, model=name, workload="throughput", concurrency=opts.concurrency,
            input_tokens=opts.input_tokens, output_tokens=opts.output_tokens, num_prompts=None, warmup=1,
            random_weights=opts.random_weights and opts.engine == "transformers", dtype=opts.dtype, device=opts.device,
        )
        rep = run_bench(req, progress=False, command_line=shlex.split(command))
        gpu_name, dtype = rep.metadata.device.name, rep.metadata.dtype
        for lv in rep.levels:
            if lv.tpot_s is None:
                continue
            points.append(CalibrationPoint(
                model=name, batch=lv.concurrency, input_tokens=opts.input_tokens, output_tokens=opts.output_tokens,
                ttft_s=lv.ttft_s.p50, tpot_s=lv.tpot_s.p50, peak_memory_bytes=lv.peak_memory_bytes, origin="infer-advisor bench",
                dtype=rep.metadata.dtype, mode="closed_loop",
            ))
    return points, gpu_name, dtype


def _command_line(ns: argparse.Namespace) -> str:
    """The command as given (from the parsed options, so it is right however `main` was called)."""
    words = ["infer-advisor", "calibrate"]
    for key, value in vars(ns).items():
        if key in ("format", "json", "output_json"):  # how the result is printed, not what was measured
            continue
        flag = "--from" if key == "from_file" else "--" + key.replace("_", "-")
        if isinstance(value, bool):
            words.append(flag if value else "--no-" + flag[2:])
        elif isinstance(value, list):
            words += [flag, ",".join(str(v) for v in value)]
        else:
            words += [flag, str(value)]
    from ..untrusted import sh_join

    return sh_join(words)


def run(ns: argparse.Namespace) -> int:
    from .._output import check_file
    from ..errors import RequestError
    from ..calibrate.speed import fit_calibration, points_from_file
    from ..estimate.calibration_file import is_calibration_file
    from ..hardware import resolve_hardware
    from ._derive import model_from_namespace

    from ._format import output_format

    ns.output_json = output_format(ns, default="text") == "json"
    opts = model_from_namespace(CalibrateOptions, ns)
    if opts.from_log is None and (opts.engine is None or (not opts.from_file and opts.engine not in ("transformers", "ctranslate2", "vllm"))):
        raise RequestError("calibrate measures --engine transformers, ctranslate2 or vllm in this process, fits any engine's "
                           "bench.json with --from FILE, or reads a start-up log with --from-log FILE.")
    check_file(opts.out, force=opts.force, ours=is_calibration_file)  # refused now, not after the measurements or the log
    if opts.from_log is not None:
        from .calibrate_log import run_from_log

        return run_from_log(opts, model_given="model" in vars(ns), as_json=ns.output_json)
    if opts.from_file:
        points, dtype = [], None
        for path in opts.from_file:
            pts, _, file_dtype = points_from_file(path)
            points.extend(pts)
            dtype = dtype or file_dtype
        wanted = set(opts.model) if "model" in vars(ns) else None
        if wanted is not None:
            points = [p for p in points if p.model in wanted]
    else:
        points, _, dtype = _measure(opts, _command_line(ns))
    if opts.dtype != "auto":
        dtype = opts.dtype
    if dtype not in ("float16", "bfloat16", "float32"):
        raise RequestError("calibrate: the measured dtype is unknown; pass --dtype float16|bfloat16|float32.")
    hw = resolve_hardware(opts.gpu)
    command = _command_line(ns)
    cal = fit_calibration(points, engine=opts.engine, quantization=opts.quantization, dtype=dtype, hw=hw, command=command,
                          max_num_seqs=opts.max_num_seqs, engine_version=opts.engine_version)
    cal.write(opts.out, force=opts.force)
    if ns.output_json:
        from ..untrusted import json_text  # C1, line and bidi controls as JSON escapes: same value, inert on a terminal

        print(json_text(cal.model_dump_json(indent=2)))
        return 0
    err = ", ".join(f"{k} {v:.1%}" for k, v in cal.fit_median_abs_error.items())
    coeffs = ", ".join(f"{k} {v:g}" for k, v in cal.coefficients.items())
    from ..untrusted import escape_unsafe

    print(escape_unsafe(f"{opts.out}: {cal.engine} x {cal.quantization} on {cal.gpu} ({len(cal.points)} points, fit median |error| {err}): {coeffs}"))
    return 0
