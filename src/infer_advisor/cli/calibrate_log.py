"""`infer-advisor calibrate --from-log FILE`: an engine start-up log -> a memory calibration for `plan --calibration`.

    infer-advisor calibrate --from-log vllm.log --gpu H100-80GB --out h100-vllm.json

The log names what it can (engine, version, model, TP, max_model_len, total memory, and the memory figures); the
options fill the rest and must be given when the log is silent (vLLM does not print the GPU's name).
"""

from __future__ import annotations


def run_from_log(opts, *, model_given: bool, as_json: bool = False) -> int:
    import hashlib

    from ..calibrate.memory import fit_memory_calibration
    from ..engines.startup_log import parse_startup_log

    path = opts.from_log
    from ..bounded_read import read_text_bounded

    from ..errors import DataFileError

    def cannot(p, why: str) -> DataFileError:
        return DataFileError(str(p), why.replace("cannot read:", "cannot read the log:"))

    text = read_text_bounded(path, "log", cannot, errors="replace")  # regular files only, at most 64 MiB
    log = parse_startup_log(text, engine=opts.engine)
    _check_gpu(log, opts.gpu)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    cal = fit_memory_calibration(
        log, source=f"{path.name} (sha256 {digest})", model=opts.model[0] if model_given else None,
        gpu=None if opts.gpu == "auto" else opts.gpu, engine_version=opts.engine_version, tp=opts.tp,
    )
    cal.write(opts.out, force=opts.force)
    if as_json:
        from ..untrusted import json_text  # C1, line and bidi controls as JSON escapes: same value, inert on a terminal

        print(json_text(cal.model_dump_json(indent=2)))
        return 0
    logged = cal.kv_cache_tokens
    before, after = cal.predicted_kv_cache_tokens, cal.calibrated_kv_cache_tokens

    def pct(x):  # noqa: ANN001, ANN202
        return f" ({(x - logged) / logged * 100:+.1f}%)" if logged and x is not None else ""

    from ..untrusted import escape_unsafe

    print(escape_unsafe(
        f"{opts.out}: memory calibration for {cal.header.setup()} from {path.name}: KV cache {logged:,} tokens logged"
        if logged else f"{opts.out}: memory calibration for {cal.header.setup()} from {path.name}"),
        end="",
    )
    print(f"; the plan predicted {before:,}{pct(before)} before, {after:,}{pct(after)} with it." if before is not None and after is not None else ".")
    return 0


def _check_gpu(log, gpu: str) -> None:
    """A log that names a GPU other than --gpu is refused: the calibration would be filed under the wrong GPU."""
    from ..errors import RequestError
    from ..hardware.catalog import find_entry, match_probed_name

    if not log.gpu_name or not gpu or gpu == "auto":
        return
    logged, _ = match_probed_name(log.gpu_name)
    asked = find_entry(gpu.split(":")[0])
    if logged is not None and asked is not None and logged.name != asked.name:
        raise RequestError(f"The log ran on {log.gpu_name} ({logged.name}) but --gpu is {asked.name}; "
                           f"pass --gpu {logged.name} (or the log of a {asked.name} run).")
