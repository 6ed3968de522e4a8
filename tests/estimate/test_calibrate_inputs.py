"""`calibrate --from FILE`: every malformed input is one line and exit 2, nothing written; --out is refused early
and replaced only with --force when it is a calibration written before."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from infer_advisor.bench.metrics import level_result, sample
from infer_advisor.bench.report import BenchMetadata, BenchReport, DeviceInfo
from infer_advisor.cli import main

REPO = Path(__file__).resolve().parents[2]
WARM = REPO / "benchmarks" / "results" / "h200" / "measure_transformers_warm.json"
MODELS = "meta-llama/Llama-2-7b-hf,meta-llama/Llama-2-13b-hf"


def _measure() -> dict:
    raw = json.loads(WARM.read_text())
    raw["models"] = [m for m in raw["models"] if m["model"] in MODELS.split(",")]
    return raw


def _bench() -> dict:
    levels, requests = [], []
    for conc in (1, 4):
        samples = [
            sample(concurrency=conc, index=i, sent_at=0.0, token_times=[0.05 * conc, 0.05 * conc + 0.03, 0.05 * conc + 0.06],
                   input_tokens=128)
            for i in range(conc)
        ]  # fmt: skip
        levels.append(level_result(conc, samples, 0.2, 14 * 2**30))
        requests += samples
    md = BenchMetadata(
        engine="transformers", model="meta-llama/Llama-2-7b-hf", workload="throughput",
        request={"output_tokens": 3, "resolved": {"output_tokens": 3}}, random_weights=True, dtype="float16",
        device=DeviceInfo(kind="cuda", name="NVIDIA H200"), versions={}, memory_source="torch-allocator",
        started_at="2026-12-02T00:00:00+00:00", command_line=["infer-advisor", "bench"],
    )  # fmt: skip
    report = BenchReport(metadata=md, levels=levels, requests=requests, complete=True)
    return json.loads(report.model_dump_json())


def _calibrate(capsys, source: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    code = main(["calibrate", "--engine", "transformers", "--from", str(source), "--gpu", "H200", "--out", str(out), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _set(raw: dict, path: str, value) -> dict:
    raw = copy.deepcopy(raw)
    *parents, last = path.split(".")
    node = raw
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is _DELETE:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return raw


_DELETE = object()
NAN = float("nan")

MALFORMED = {
    # measure_transformers.py results
    "missing batch": (_measure, "models.0.points.0.batch", _DELETE, "batch: Field required"),
    "missing input_tokens": (_measure, "input_tokens", _DELETE, "input_tokens: Field required"),
    "time as text": (_measure, "models.0.points.0.ttft_s", "0.02", "ttft_s: Input should be a valid number"),
    "models not a list": (_measure, "models", {"a": 1}, "models: Input should be a valid list"),
    "fractional batch": (_measure, "models.0.points.1.batch", 1.5, "batch: Input should be a valid integer"),
    "NaN time": (_measure, "models.0.points.0.decode_step_s_warm_median", NAN, "finite number"),
    "negative time": (_measure, "models.1.points.0.ttft_s_warm", -0.5, "greater than 0"),
    "infinite time": (_measure, "models.0.points.2.decode_step_s_median", float("inf"), "finite number"),
    "point not an object": (_measure, "models.0.points.0", [1, 2], "Input should be a valid dictionary"),
    # bench.json
    "bench NaN TPOT": (_bench, "levels.0.tpot_s.p50", NAN, "levels[0].tpot_s: Input should be a finite number"),
    "bench negative TTFT": (_bench, "levels.1.ttft_s.p50", -1.0, "levels[1].ttft_s: Input should be greater than 0"),
    "bench missing levels key": (_bench, "levels.0.e2e_s", _DELETE, "levels.0.e2e_s: Field required"),
    "bench request not an object": (_bench, "metadata.request.resolved", 5, None),
    "bench NaN input tokens": (_bench, "levels.0.input_tokens_mean", NAN, "input_tokens_mean: nan is not a positive"),
    "bench zero concurrency": (_bench, "levels.0.concurrency", 0, "concurrency: 0 is not a positive"),
    "bench unfinished": (_bench, "complete", False, "an unfinished bench run (complete: false"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_from_file_is_one_line(case, tmp_path, capsys):
    """The probe: nine malformed inputs ended in tracebacks; an interrupted bench result was fitted."""
    make, path, value, needle = MALFORMED[case]
    source = tmp_path / "in.json"
    source.write_text(json.dumps(_set(make(), path, value)))  # json writes NaN / Infinity as Python reads them
    code, _, err = _calibrate(capsys, source, tmp_path / "cal.json")
    if needle is None:  # a shape calibrate can still read: it must work, not crash
        assert code in (0, 2) and "Traceback" not in err
        return
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith(f"error: {source}: ") and needle in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.json"]


def test_valid_inputs_still_fit(tmp_path, capsys):
    for name, make in (("measure.json", _measure), ("bench.json", _bench)):
        (tmp_path / name).write_text(json.dumps(make()))
    code, out, err = _calibrate(capsys, tmp_path / "measure.json", tmp_path / "a.json", "--model", MODELS)
    assert code == 0, err
    code, out, err = _calibrate(capsys, tmp_path / "bench.json", tmp_path / "b.json")
    assert code == 0, err


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b'{"models": [], "ceilings": {}, "input_tokens": 1, "output_tokens": 1, "gpu": "caf\xe9"}', "not UTF-8 text (byte 0xe9"),
        (b"[" * 200000 + b"]" * 200000, "nested too deeply"),
        (b'{"metadata": {}, "levels": ' + b"[" * 500 + b"]" * 500 + b"}", "Field required"),
    ],
)
def test_unreadable_from_file_is_one_line(content, needle, tmp_path, capsys):
    source = tmp_path / "in.json"
    source.write_bytes(content)
    code, _, err = _calibrate(capsys, source, tmp_path / "cal.json")
    assert code == 2 and err.count("\n") == 1 and needle in err, err


def test_out_refused_before_fitting_and_force_replaces_only_a_calibration(tmp_path, capsys):
    (tmp_path / "m.json").write_text(json.dumps(_measure()))
    args = ("--model", MODELS)
    code, _, err = _calibrate(capsys, tmp_path / "m.json", Path("/proc/x/cal.json"), *args)
    assert code == 2 and "cannot be written" in err
    mine = tmp_path / "notes.json"
    mine.write_text('{"my": "notes"}')
    code, _, err = _calibrate(capsys, tmp_path / "m.json", mine, *args)
    assert code == 2 and "exists already" in err
    code, _, err = _calibrate(capsys, tmp_path / "m.json", mine, *args, "--force")
    assert code == 2 and "was not written by infer-advisor" in err and mine.read_text() == '{"my": "notes"}'
    out = tmp_path / "cal.json"
    assert _calibrate(capsys, tmp_path / "m.json", out, *args)[0] == 0
    assert _calibrate(capsys, tmp_path / "m.json", out, *args)[0] == 2
    assert _calibrate(capsys, tmp_path / "m.json", out, *args, "--force")[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.json", "m.json", "notes.json"]


def test_help_shows_real_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "PydanticUndefined" not in shown
    assert "(default: 1,8,32)" in shown and "(default: meta-llama/Llama-2-7b-hf)" in shown


def test_open_loop_levels_are_not_fitted_as_batch_sizes(tmp_path):
    """bench --request-rate levels carry the most requests seen in flight as `concurrency`: not a closed-loop batch."""
    from infer_advisor.bench.metrics import open_level_result
    from infer_advisor.calibrate.inputs import points_from_file

    raw = _bench()
    samples = [
        sample(concurrency=1 + i % 3, index=i, sent_at=0.0, token_times=[0.2, 0.23, 0.26], input_tokens=128,
               request_rate=2.0, sent_offset_s=0.5 * i, scheduled_offset_s=0.5 * i)
        for i in range(6)
    ]  # fmt: skip
    raw["levels"].append(json.loads(open_level_result(2.0, samples, 3.0).model_dump_json()))
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(raw))
    points, _, _ = points_from_file(path)
    assert [p.batch for p in points] == [1, 4]
