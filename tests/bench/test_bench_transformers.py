"""bench --engine transformers on CPU with the tiny Llama: metrics, files, crash safety, plan comparison, CLI errors."""

from __future__ import annotations

import csv
import json
from types import SimpleNamespace

import pytest

from infer_advisor._output import MANIFEST, read_manifest
from infer_advisor.bench import BenchReport, bench
from infer_advisor.cli import main
from tests.bench.checks import check_consistent as _check_consistent

OUT_TOKENS = 12


def test_transformers_levels_files_and_metrics(tiny_llama, tmp_path):
    from transformers import AutoTokenizer

    out = tmp_path / "run"
    report = bench(
        "transformers", tiny_llama, concurrency=[1, 3], output_tokens=OUT_TOKENS, num_prompts=3, out=out, progress=False
    )
    assert report.complete and report.error is None
    assert [lv.concurrency for lv in report.levels] == [1, 3]
    _check_consistent(report, OUT_TOKENS)
    # Prompt lengths come from the model's own tokenizer (ground truth outside the bench code).
    tok = AutoTokenizer.from_pretrained(tiny_llama)
    from infer_advisor.bench.workload import workload_file

    prompts = workload_file().profiles["latency"].prompts
    assert [s.input_tokens for s in report.requests[:3]] == [len(tok(p)["input_ids"]) for p in prompts[:3]]
    md = report.metadata
    assert md.engine == "transformers" and md.device.kind == "cpu" and md.memory_source == "psutil-rss"
    assert md.random_weights is False and md.finished_at and "transformers" in md.versions
    assert all(lv.peak_memory_bytes and lv.peak_memory_bytes > 10 * 2**20 for lv in report.levels)
    # Files: JSON validates against the model; CSV has one row per level; PNG is a PNG.
    again = BenchReport.model_validate_json((out / "bench.json").read_text())
    assert again == report
    rows = list(csv.DictReader((out / "bench.csv").open()))
    assert [int(r["concurrency"]) for r in rows] == [1, 3]
    assert float(rows[1]["output_tokens_per_s_aggregate"]) == pytest.approx(
        report.levels[1].output_tokens_per_s_aggregate
    )
    assert len(list(csv.DictReader((out / "requests.csv").open()))) == 6
    assert (out / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The finished run keeps no file named incomplete; the manifest lists exactly what is there.
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "bench.csv", "bench.json", "bench.png", "requests.csv"]
    assert read_manifest(out)["complete"] is True


def test_crash_after_first_level_keeps_it(tiny_llama, tmp_path):
    out = tmp_path / "crash"

    def boom(level):
        raise RuntimeError(f"simulated crash after concurrency {level.concurrency}")

    with pytest.raises(RuntimeError, match="simulated crash"):
        bench(
            "transformers",
            tiny_llama,
            concurrency=[1, 2],
            output_tokens=4,
            num_prompts=2,
            out=out,
            progress=False,
            on_level=boom,
        )
    kept = BenchReport.model_validate_json((out / "bench.json").read_text())
    assert not kept.complete and "simulated crash after concurrency 1" in kept.error
    assert [lv.concurrency for lv in kept.levels] == [1]
    assert len(kept.requests) == 2
    # Every file says the run is incomplete: bench.json by `complete`, the others by their names.
    assert [r["concurrency"] for r in csv.DictReader((out / "bench.incomplete.csv").open())] == ["1"]
    assert len(list(csv.DictReader((out / "requests.incomplete.csv").open()))) == 2
    assert (out / "bench.incomplete.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    names = sorted(p.name for p in out.iterdir())
    assert names == [MANIFEST, "bench.incomplete.csv", "bench.incomplete.png", "bench.json", "requests.incomplete.csv"]
    assert read_manifest(out)["complete"] is False


def test_plan_predictions_beside_measurements(tiny_llama, tmp_path):
    plan = SimpleNamespace(
        performance=SimpleNamespace(
            ttft_s=0.01,
            tpot_s=0.002,
            output_tokens_per_s_per_request=100.0,
            output_tokens_per_s_aggregate=150.0,
            concurrency=2,
        ),
        memory=SimpleNamespace(total_bytes_per_gpu=2**30),
    )
    report = bench(
        "transformers", tiny_llama, concurrency=[1, 2], output_tokens=4, num_prompts=2, plan=plan, progress=False
    )
    by_metric = {c.metric: c for c in report.comparisons}
    assert set(by_metric) == {
        "ttft_s",
        "tpot_s",
        "output_tokens_per_s_per_request",
        "output_tokens_per_s_aggregate",
        "peak_memory_bytes",
    }
    assert by_metric["ttft_s"].predicted_source == "plan"  # this plan does not say estimated or calibrated
    lv = report.levels[1]
    assert all(c.concurrency == 2 for c in report.comparisons)
    assert by_metric["ttft_s"].measured == lv.ttft_s.mean
    assert by_metric["ttft_s"].error_pct == pytest.approx((0.01 - lv.ttft_s.mean) / lv.ttft_s.mean * 100)
    assert by_metric["peak_memory_bytes"].measured == lv.peak_memory_bytes
    # The same plan as JSON on disk (what `--plan plan.json` reads); a plan without figures compares nothing.
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"performance": {"ttft_s": 0.5}, "memory": {}}))
    report2 = bench(
        "transformers", tiny_llama, concurrency=[1], output_tokens=3, num_prompts=1, plan=path, progress=False
    )
    assert [c.metric for c in report2.comparisons] == ["ttft_s"]


def test_cli_bench_prints_table_and_writes(tiny_llama, tmp_path, capsys):
    out = tmp_path / "cli"
    args = [
        "bench",
        "--engine",
        "transformers",
        "--model",
        str(tiny_llama),
        "--concurrency",
        "1,2",
        "--output-tokens",
        "4",
        "--num-prompts",
        "2",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(args) == 0
    shown = capsys.readouterr().out
    assert "TTFT" in shown and "measured" in shown
    report = BenchReport.model_validate_json((out / "bench.json").read_text())
    assert report.metadata.command_line[:2] == ["infer-advisor", "bench"] or report.metadata.command_line
    # Running again into the same folder without --force is refused in one line.
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "--force" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--engine", "transformers", "--model", "{tiny}", "--concurrency", "0"], "positive"),
        (["--engine", "openai"], "--url is required"),
        (["--engine", "openai", "--url", "http://127.0.0.1:{port}"], "Cannot connect"),
        (["--engine", "vllm", "--model", "{tiny}"], "vLLM is not installed"),
        (["--engine", "ctranslate2", "--model", "{tiny}"], "not a CTranslate2 model folder"),
        (["--engine", "transformers", "--model", "{tiny}", "--device", "cuda"], "no CUDA device"),
        (
            ["--engine", "ctranslate2", "--model", "{tiny}", "--random-weights"],
            "--random-weights works with --engine transformers only",
        ),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(args, needle, tiny_llama, capsys):
    from tests.bench.conftest import free_port

    port = free_port()  # nothing listens there once the probe socket is closed
    filled = [a.format(tiny=tiny_llama, port=port) for a in args]
    assert main(["bench", *filled, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and needle in err and len(err.splitlines()) == 1


def test_cli_bad_concurrency_list(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--engine", "transformers", "--model", "x", "--concurrency", "1,four"])
    assert exc.value.code == 2
    assert "expected comma-separated numbers" in capsys.readouterr().err


def test_real_plan_from_advise(tiny_llama):
    """A DeploymentPlan from advise(): its estimated figures sit beside the measured ones at its concurrency."""
    from infer_advisor.plan import advise

    plan = advise(model=str(tiny_llama), gpu="cpu")
    perf = plan.performance
    report = bench(
        "transformers",
        tiny_llama,
        concurrency=[perf.concurrency],
        output_tokens=4,
        num_prompts=2,
        plan=plan,
        progress=False,
    )
    by_metric = {c.metric: c for c in report.comparisons}
    assert by_metric["tpot_s"].predicted == perf.tpot_s
    assert by_metric["tpot_s"].predicted_source == f"plan ({perf.source})"
    assert by_metric["peak_memory_bytes"].predicted == plan.memory.total_bytes_per_gpu
