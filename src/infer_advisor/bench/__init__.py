"""The bench stage: measure an engine (in-process or an OpenAI-compatible server) and compare it with a plan.

    >>> from infer_advisor.bench import bench
    >>> report = bench("transformers", "./tiny-llama", concurrency=[1, 4], out="bench-out")   # doctest: +SKIP
    >>> lv = report.levels[0]; lv.ttft_s.mean, lv.tpot_s.mean, lv.output_tokens_per_s_aggregate  # doctest: +SKIP

One entry point, :func:`bench`; its options are the fields of :class:`BenchRequest` (the CLI's flags come from
them). The result is a :class:`BenchReport`; with ``out`` it is also written as bench.json, bench.csv,
requests.csv and bench.png, re-written after every concurrency level so a crash keeps what was measured.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .report import BenchReport, LevelResult, PlanComparison, RequestSample, Stats
from .request import BenchRequest

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

__all__ = [
    "bench",
    "run_bench",
    "BenchRequest",
    "BenchReport",
    "LevelResult",
    "RequestSample",
    "Stats",
    "PlanComparison",
]


def bench(
    engine: str,
    model: str | Path | None = None,
    *,
    url: str | None = None,
    workload: str = "latency",
    concurrency: list[int] | None = None,
    request_rate: list[float] | None = None,
    max_duration: float | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    num_prompts: int | None = None,
    warmup: int | None = None,
    seed: int = 0,
    ignore_eos: bool = True,
    random_weights: bool = False,
    dtype: str = "auto",
    device: str = "auto",
    out: str | Path | None = None,
    force: bool = False,
    plan: Any = None,
    progress: bool = True,
    on_level: Callable[[LevelResult], None] | None = None,
) -> BenchReport:
    """Benchmark ``model`` on ``engine`` and return the measurements.

        >>> report = bench("openai", url="http://127.0.0.1:8000", concurrency=[1, 8])   # doctest: +SKIP
        >>> report = bench("openai", url="http://127.0.0.1:8000", request_rate=[0.5, 2], max_duration=120)  # doctest: +SKIP

    Args:
        engine: transformers | ctranslate2 | vllm (in this process) | openai (a server at ``url``) | triton (Triton's
            generate_stream at ``url``).
        workload: ``latency`` (batch 1, 200 tokens, 9 fixed prompts, 1 warm-up) or ``throughput``
            (synthetic prompts of ``input_tokens``); ``concurrency``/``output_tokens``/``warmup`` default to the
            profile's.
        request_rate: open loop instead of ``concurrency``: Poisson arrivals at each rate (req/s), sent on schedule
            whether or not earlier requests finished; ``num_prompts`` (default 100) and ``max_duration`` (seconds of
            arrivals) bound each level.
        plan: a DeploymentPlan (or a path to its JSON): its predicted TTFT, TPOT, tokens/s and memory are
            put beside the measurements with the error in percent.
        on_level: called with each level's result as soon as it is measured (and written).
    """
    from pydantic import ValidationError

    from .._data import format_validation_error
    from ..errors import RequestError

    options = dict(
        engine=engine,
        model=str(model) if model is not None else None,
        url=url,
        workload=workload,
        concurrency=concurrency,
        request_rate=request_rate,
        max_duration=max_duration,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        num_prompts=num_prompts,
        warmup=warmup,
        seed=seed,
        ignore_eos=ignore_eos,
        random_weights=random_weights,
        dtype=dtype,
        device=device,
        out=out,
        force=force,
    )
    if isinstance(plan, (str, Path)):
        options["plan"], plan = plan, None
    try:
        req = BenchRequest(**options)
    except ValidationError as err:
        raise RequestError(f"bench: {format_validation_error(err)}") from None
    return run_bench(req, plan=plan, progress=progress, on_level=on_level)


def run_bench(
    req: BenchRequest,
    *,
    plan: Any = None,
    progress: bool = True,
    command_line: list[str] | None = None,
    on_level: Callable[[LevelResult], None] | None = None,
) -> BenchReport:
    """Run a validated :class:`BenchRequest` (what :func:`bench` and the CLI call)."""
    from .request import check_request
    from .runner import Runner

    check_request(req)
    return Runner(req, plan=plan, progress=progress, command_line=command_line, on_level=on_level).run()


from .._callable import make_package_callable  # noqa: E402

make_package_callable(__name__, bench)
