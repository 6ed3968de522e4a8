"""The one entry point of the quantize stage: :func:`quantize`."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from .calibration import load_calibration
from .core import (
    EVAL_SAMPLES,
    check_output,
    copy_side_files,
    log_summary,
    reporter,
    resolve_source,
    stdout_to_stderr,
    validate_group_size,
    weight_bytes,
)
from .methods import DEFAULT_GROUP_SIZE, backend_module, require_backend, resolve_method
from .results import DEFAULT_NUM_SAMPLES, QuantizeRequest, QuantizeResult

# One in-process conversion at a time. transformers' from_pretrained swaps PreTrainedModel.tie_weights for a no-op
# while it loads and puts back what it found (initialization.no_tie_weights, transformers 5): two loads in two threads
# can leave the no-op in place for the rest of the process, so every later load of a tied-embedding model keeps an
# untied, uninitialised lm_head. The stdout redirect below is process-wide too. Threads wait here; the output folder's
# claim (staged) stays outside, so a second run into the same --out still fails as "exists".
_ONE_CONVERSION = threading.Lock()


def quantize(
    model: str | Path,
    method: str,
    out: str | Path,
    *,
    backend: str | None = None,
    group_size: int = DEFAULT_GROUP_SIZE,
    calibration: str | Path | None = None,
    num_samples: int = DEFAULT_NUM_SAMPLES,
    force: bool = False,
    evaluate: bool = False,
    progress: bool = True,
) -> QuantizeResult:
    """Quantize ``model`` with ``method`` into the new directory ``out``, then reload it and generate a few tokens.

        >>> from infer_advisor import quantize
        >>> result = quantize("./tiny-llama", "ct2-int8", "./tiny-llama-ct2")   # doctest: +SKIP
        >>> result.check.status, round(result.ratio, 2)                         # doctest: +SKIP
        ('passed', 0.27)

    Methods (``infer_advisor.quantize.method_names()``): ``awq`` (4-bit W4A16 with calibration; backend
    ``llmcompressor`` writes compressed-tensors for vLLM/SGLang, backend ``autoawq`` writes the AutoAWQ GEMM
    format that CTranslate2's converter and TGI read. AutoAWQ is deprecated upstream since 2025-05 and its output
    runs only on CUDA), ``w4a16`` (round-to-nearest, no calibration), ``ct2-*`` (CTranslate2 conversion with
    quantization) and ``gguf-*`` (llama.cpp files).

    Args:
        model: a local directory with config.json, or a Hub id (only when online).
        out: refused if it exists unless ``force``; the run writes into a temp dir beside it and renames it on
            success, so a failed or interrupted run leaves no directory that looks complete.
        group_size: input columns per 4-bit group (awq, w4a16); must divide every quantized layer's input size.
        calibration: .txt (a sample per paragraph, or per line) or .jsonl ('text' field); default: built-in text.
        evaluate: also measure perplexity of the source and of the output on the calibration text.

    Raises:
        RequestError (bad method, backend or group size), ModelNotFoundError, OutputExistsError,
        EngineNotInstalledError (names the extra to install), DataFileError (calibration file).
    """
    request = QuantizeRequest(
        model=str(model),
        method=method,
        out=Path(out),
        backend=backend,
        group_size=group_size,
        calibration=calibration,
        num_samples=num_samples,
        force=force,
        evaluate=evaluate,
        progress=progress,
    )
    return run_request(request)


def _refuse_overwriting_source(out: Path, source: Path) -> None:
    from ..errors import RequestError

    if out == source or source.is_relative_to(out) or out.resolve() == source.resolve():
        raise RequestError(f"--out {out} would overwrite the source model; choose another directory.")


def run_request(request: QuantizeRequest, *, summary: bool = True) -> QuantizeResult:
    """:func:`quantize` for an already validated :class:`QuantizeRequest` (the CLI prints the summary itself)."""
    from .._output import check_output as check_out_path
    from .._output import output_path
    from .._output_folders import staged
    spec = resolve_method(
        request.method, request.backend, group_size=request.group_size, num_samples=request.num_samples
    )
    out = output_path(request.out)
    _refuse_overwriting_source(out, Path(request.model).expanduser().absolute())
    check_out_path(out, request.force)  # refused now, not after the work
    source = resolve_source(request.model)
    _refuse_overwriting_source(out, source)
    validate_group_size(source, spec)
    require_backend(spec)
    needs_text = spec.calibration or request.evaluate or request.calibration is not None
    texts = load_calibration(request.calibration, request.num_samples) if needs_text else []
    notes: list[str] = []
    if request.calibration is not None and not spec.calibration:
        notes.append(f"{spec.name} uses no calibration; --calibration served only the --eval perplexity.")
    if spec.group_size is None and request.group_size != DEFAULT_GROUP_SIZE:
        notes.append(f"--group-size does not apply to {spec.name} and was ignored.")

    report = reporter(request.progress)
    module = backend_module(spec)
    report(f"{spec.name} ({spec.backend}): {source} -> {out}")
    eval_texts = texts[:EVAL_SAMPLES] if request.evaluate else None
    cleaned: list[Path] = []
    # Everything, the reload check included, happens in a staging folder that becomes `out` only at the end:
    # an interrupted run (Ctrl-C, kill) leaves no folder that looks complete.
    with staged(out, force=request.force, kind="quantize", cleaned=cleaned) as work, _ONE_CONVERSION, stdout_to_stderr():
        start = time.monotonic()
        notes += module.run(source, work, spec, texts if spec.calibration else [], report)
        seconds = time.monotonic() - start
        copy_side_files(source, work)
        input_bytes, output_bytes = weight_bytes(source), weight_bytes(work)
        check = check_output(module, work, source, spec, eval_texts, report)
    notes += [f"removed {p.name}, left by an interrupted run" for p in cleaned]
    result = QuantizeResult(
        method=spec.name,
        backend=spec.backend,
        format=spec.format,
        bits=spec.bits,
        group_size=spec.group_size,
        source=source,
        output=out,
        input_bytes=input_bytes,
        output_bytes=output_bytes,
        ratio=output_bytes / input_bytes if input_bytes else 0.0,
        seconds=round(seconds, 3),
        calibration_samples=len(texts) if spec.calibration else 0,
        check=check,
        notes=notes,
    )
    log_summary(result.summary(), request.progress and summary)
    return result
