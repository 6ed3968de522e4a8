"""The run loop: claim --out, load the engine, check lengths, then for each concurrency level (closed loop) or
request rate (open loop) warm up and measure it, writing the report after every level."""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from .._version import __version__
from ..errors import RequestError
from .compare import compare, load_plan, plan_concurrency, predicted_curve
from .memory import AllocatorPeak, PeakMemory
from .metrics import level_result, open_level_result
from .output import MISSING_PLOT_NOTE, plotting_available, write_files, write_plot
from .report import BenchMetadata, BenchReport, LevelResult
from .request import BenchRequest
from .workload import constant, resolve_workload


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _config_context(req: BenchRequest) -> int | None:
    """max_position_embeddings from a local model folder's config.json (None when there is none to read)."""
    import json
    from pathlib import Path

    if req.engine not in ("transformers", "vllm") or req.model is None:
        return None
    from ..bounded_read import read_bounded
    from ..errors import DataFileError

    try:  # bounded, regular files only (a FIFO named config.json is not read)
        config = json.loads(read_bounded(Path(req.model).expanduser() / "config.json", "config").decode("utf-8"))
    except (DataFileError, OSError, ValueError, RecursionError):
        return None  # not a local folder, or a config the engine will report on itself
    if not isinstance(config, dict):
        return None
    text = config.get("text_config")
    value = (text if isinstance(text, dict) else config).get("max_position_embeddings")
    return value if isinstance(value, int) else None


class Runner:
    def __init__(
        self,
        req: BenchRequest,
        *,
        plan: Any = None,
        progress: bool = True,
        command_line: list[str] | None = None,
        on_level: Callable[[LevelResult], None] | None = None,
    ):
        self.req = req
        self.plan = plan if plan is not None else (load_plan(req.plan) if req.plan else None)
        self.progress = progress
        from ..untrusted import without_credentials

        # Kept in bench.json: a --url's user:password@ never is (the rule: no token is written into any file).
        self.command_line = [without_credentials(w) for w in (command_line if command_line is not None else sys.argv)]
        self.on_level = on_level
        self.workload = resolve_workload(req)
        self.folder = None
        self.plot = False

    def run(self) -> BenchReport:
        req = self.req
        started = _now()
        notes: list[str] = []
        if req.out is not None:  # before the engine loads and long before the first request
            from .._output_folders import claim_folder

            self.folder = claim_folder(req.out, force=req.force, kind="bench")
            self.plot = plotting_available()
            if not self.plot:
                notes.append(MISSING_PLOT_NOTE)
        from .backends import load_engine

        self._check_lengths(_config_context(req), str(req.model))  # from config.json, before loading anything
        engine = load_engine(req)
        engine.notes[:0] = notes
        try:
            self._check_lengths(getattr(engine, "max_context", None), str(engine.model_label))
            report = BenchReport(metadata=self._metadata(engine, started))
            self._measure(engine, report)
        finally:
            engine.close()
        return report

    def _check_lengths(self, limit: int | None, model: str) -> None:
        """Prompt + output must fit the model's context: refuse now rather than run for minutes and fail."""
        if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
            return
        wl = self.workload
        if wl.input_tokens is not None:
            prompt, what = wl.input_tokens, f"--input-tokens {wl.input_tokens}"
        else:
            prompt = max(1, round(max(len(p) for p in wl.prompts) / constant("chars_per_token")))
            what = f"the profile's prompts (up to about {prompt} tokens)"
        if prompt + wl.output_tokens > limit:
            room = limit - prompt
            fix = f"use --output-tokens {room} or less" if room > 0 else "use a shorter --input-tokens"
            raise RequestError(
                f"--output-tokens {wl.output_tokens} plus {what} exceed {model}'s context of "
                f"{limit} tokens; {fix}."
            )

    def _metadata(self, engine, started: str) -> BenchMetadata:
        from ..untrusted import without_credentials

        versions = {"infer_advisor": __version__, "python": platform.python_version(), **engine.versions}
        return BenchMetadata(
            engine=engine.name,
            model=str(engine.model_label) if engine.model_label is not None else None,
            url=self.req.url and without_credentials(self.req.url),
            workload=self.workload.profile,
            request=self.req.model_dump(mode="json") | {"url": self.req.url and without_credentials(self.req.url),
                                                         "resolved": self.workload.model_dump(exclude={"prompts"})},
            random_weights=self.req.random_weights,
            dtype=engine.dtype,
            device=engine.device,
            versions=versions,
            memory_source=engine.memory_source,
            cuda_context_bytes=getattr(engine, "cuda_context_bytes", None),
            started_at=started,
            command_line=self.command_line,
        )

    def _measure(self, engine, report: BenchReport) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        wl = self.workload
        # Warm up at every level, with requests shaped as that level's: a batch size the engine has not run
        # yet starts on a cold caching allocator (TPOT 2-3x too slow on an H200 with transformers).
        levels = [(c, wl.warmups(c), wl.requests(c)) for c in wl.concurrency]
        # Open loop: each rate warmed up by `warmup` requests one at a time (the server sees its own batch sizes).
        rates = [(r, wl.warmups(1), *wl.open_loop(r)) for r in wl.request_rate or []]
        total = sum(len(warm) + len(items) for _, warm, items in levels) + sum(len(w) + len(i) for _, w, i, _ in rates)
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            transient=True,
            disable=not self.progress,
        )
        try:
            with bar:
                task = bar.add_task("warm-up", total=total)
                advance = lambda n: bar.advance(task, n)  # noqa: E731
                for conc, warm, items in levels:
                    if warm:
                        bar.update(task, description=f"warm-up at concurrency {conc}")
                        engine.run_level(warm, conc, wl, advance)
                    bar.update(task, description=f"concurrency {conc}")
                    with self._memory(engine) as mem:
                        samples, duration = engine.run_level(items, conc, wl, advance)
                    level = level_result(conc, samples, duration, mem.peak)
                    level.peak_device_memory_bytes = mem.device_peak
                    _record_failures(engine, level)
                    report.levels.append(level)
                    report.requests.extend(samples)
                    self._save(engine, report)
                    if self.on_level is not None:
                        self.on_level(level)
                for rate, warm, items, offsets in rates:
                    if warm:
                        bar.update(task, description=f"warm-up before {rate:g} req/s")
                        engine.run_level(warm, 1, wl, advance)
                    bar.update(task, description=f"{rate:g} req/s (open loop)")
                    samples, duration = engine.run_open_level(items, offsets, rate, wl, advance)
                    level = open_level_result(rate, samples, duration)
                    _record_failures(engine, level)
                    report.levels.append(level)
                    report.requests.extend(samples)
                    self._save(engine, report)
                    if self.on_level is not None:
                        self.on_level(level)
        except BaseException as err:  # keep what was measured, say why it stopped, then re-raise
            report.error = f"{type(err).__name__}: {err}".strip().rstrip(":")
            self._save(engine, report)
            raise
        report.complete = True
        report.metadata.finished_at = _now()
        self._save(engine, report, final=True)

    def _memory(self, engine) -> PeakMemory | AllocatorPeak:
        interval = constant("memory_sample_interval_s")
        if engine.memory_source == "torch-allocator":
            try:
                device = PeakMemory("nvml", interval, engine.gpu_indices)
            except Exception:  # noqa: BLE001 - NVML missing: the allocator figure alone
                device = None
            return AllocatorPeak(engine.torch, engine.cuda_context_bytes, device)
        try:
            return PeakMemory(engine.memory_source, interval, engine.gpu_indices)
        except Exception as err:  # noqa: BLE001 - NVML missing or failing: measure nothing rather than guess
            if engine.memory_source != "none":
                engine.notes.append(f"Memory not measured: {engine.memory_source} failed ({type(err).__name__}).")
                engine.memory_source = "none"
            return PeakMemory("none", interval)

    def _save(self, engine, report: BenchReport, final: bool = False) -> None:
        report.metadata.memory_source = engine.memory_source
        report.notes = list(dict.fromkeys(engine.notes))
        report.comparisons = compare(self.plan, [lv for lv in report.levels if lv.request_rate is None])
        conc = plan_concurrency(self.plan) if self.plan is not None else None
        if final and self.plan is not None and self.workload.request_rate:
            report.notes.append(
                "The plan predicts a closed loop (clients back to back); open-loop levels are not compared with it."
            )
        elif final and conc is not None and conc not in self.workload.concurrency:
            report.notes.append(
                f"The plan predicts concurrency {conc}, which was not measured; add it to --concurrency."
            )
        closed = [lv.concurrency for lv in report.levels if lv.request_rate is None]
        if final and self.plot and self.plan is not None and closed:
            report.predictions, why_not = predicted_curve(self.plan, closed)
            if why_not:
                report.notes.append(why_not)
        if self.folder is None:
            return
        write_files(report, self.folder)
        if self.plot and (final or report.levels):
            write_plot(report, self.folder)
        if final:
            self.folder.finish()


def _record_failures(engine, level) -> None:
    """Failed requests of the level just run (openai engine): counted on the level and named in a note."""
    from .backends.openai_engine import MAX_REASONS

    failures = list(getattr(engine, "level_failures", []) or [])
    engine.level_failures = []
    if not failures:
        return
    level.failed_requests = len(failures)
    level.failure_reasons = list(dict.fromkeys(failures))[:MAX_REASONS]
    where = f"rate {level.request_rate:g} req/s" if level.request_rate else f"concurrency {level.concurrency}"
    engine.notes.append(
        f"{where}: {len(failures)} of {len(failures) + level.num_requests} request(s) failed and are not in the "
        f"statistics; first: {failures[0]}"
    )
