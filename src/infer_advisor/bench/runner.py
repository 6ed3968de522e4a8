"""The run loop: warm up, measure each concurrency level, write the report after every level."""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from .. import __version__
from ..errors import OutputExistsError
from .compare import compare, load_plan, plan_concurrency
from .memory import PeakMemory
from .metrics import level_result
from .output import JSON_NAME, write_files, write_plot
from .report import BenchMetadata, BenchReport, LevelResult
from .request import BenchRequest
from .workload import constant, resolve_workload


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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
        self.command_line = list(command_line if command_line is not None else sys.argv)
        self.on_level = on_level
        self.workload = resolve_workload(req)

    def run(self) -> BenchReport:
        req = self.req
        if req.out is not None and (req.out / JSON_NAME).exists() and not req.force:
            raise OutputExistsError(str(req.out / JSON_NAME))
        started = _now()
        from .engines import load_engine

        engine = load_engine(req)
        try:
            report = BenchReport(metadata=self._metadata(engine, started))
            self._measure(engine, report)
        finally:
            engine.close()
        return report

    def _metadata(self, engine, started: str) -> BenchMetadata:
        versions = {"infer_advisor": __version__, "python": platform.python_version(), **engine.versions}
        return BenchMetadata(
            engine=engine.name,
            model=str(engine.model_label) if engine.model_label is not None else None,
            url=self.req.url,
            workload=self.workload.profile,
            request=self.req.model_dump(mode="json") | {"resolved": self.workload.model_dump(exclude={"prompts"})},
            random_weights=self.req.random_weights,
            dtype=engine.dtype,
            device=engine.device,
            versions=versions,
            memory_source=engine.memory_source,
            started_at=started,
            command_line=self.command_line,
        )

    def _measure(self, engine, report: BenchReport) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        wl = self.workload
        warm = wl.warmups()
        levels = [(c, wl.requests(c)) for c in wl.concurrency]
        total = len(warm) + sum(len(items) for _, items in levels)
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
                if warm:
                    engine.run_level(warm, 1, wl, advance)
                for conc, items in levels:
                    bar.update(task, description=f"concurrency {conc}")
                    with self._memory(engine) as mem:
                        samples, duration = engine.run_level(items, conc, wl, advance)
                    level = level_result(conc, samples, duration, mem.peak)
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

    def _memory(self, engine) -> PeakMemory:
        interval = constant("memory_sample_interval_s")
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
        report.comparisons = compare(self.plan, report.levels)
        conc = plan_concurrency(self.plan) if self.plan is not None else None
        if final and conc is not None and conc not in self.workload.concurrency:
            report.notes.append(
                f"The plan predicts concurrency {conc}, which was not measured; add it to --concurrency."
            )
        if self.req.out is None:
            return
        write_files(report, self.req.out)
        if final or report.levels:
            write_plot(report, self.req.out)
