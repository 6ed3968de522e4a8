"""Probe (issue 18, options): every option is used or refused with one line; numbers are bounded, finite and of the
right type where they enter; the Python API raises InferAdvisorError subclasses for wrong types."""

from __future__ import annotations

import pytest

from tests.probe.contract import check, probe_environment, run_cli

PLAN = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB"]
GPU = ('{name: MyGPU, memory_gib: 80, memory_bandwidth_gb_s: 2000, tflops: {bf16: 300, fp16: 300}, '
       "compute_capability: 8.0, interconnect: pcie, interconnect_gb_s: 32}")


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    probe_environment(monkeypatch, tmp_path / "cache")
    monkeypatch.chdir(tmp_path)


def _refused(args: list[str], needle: str) -> None:
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 2, (args, outcome.out[-300:])
    assert needle in outcome.err, outcome.err


@pytest.mark.parametrize(("extra", "needle"), [
    (["--ttft-p90", "1"], "--ttft-p90 is used only when sizing"),
    (["--itl-p99", "0.05"], "--itl-p99"),
    (["--e2e-p90", "10"], "--e2e-p90"),
    (["--input-distribution", "lognormal"], "--input-distribution"),
    (["--price-per-gpu-hour", "2"], "--price-per-gpu-hour"),
    (["--max-num-batched-tokens", "99999999999"], "max-num-batched-tokens"),
    (["--startup-timeout", "99999999999"], "startup-timeout"),
    (["--gpu-memory-utilization", "1e-300"], "gpu-memory-utilization"),
    (["--context", "99999999999"], "context"),
    (["--input-tokens", "1e400"], "input-tokens"),
    (["--download-speed", "inf"], "download-speed"),
])  # fmt: skip
def test_options_ignored_or_out_of_range_are_refused(extra, needle):
    _refused([*PLAN, *extra], needle)


def test_sizing_options_that_would_be_dropped_are_refused():
    _refused(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100-80GB:2,L40S:2", "--rate", "1"], "names only")
    _refused(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100-80GB", "--rate", "1",
              "--price-per-gpu-hour", "L40S=0.1"], "does not search")


@pytest.mark.parametrize(("change", "needle"), [
    (("2000", ".inf"), "finite"), (("memory_gib: 80", "memory_gib: yes"), "true/false"),
    (("memory_gib: 80", "memory_gib: 1e308"), "4096"), (("memory_gib: 80", "memory_gib: 80, memory_gib: 40"), "duplicate key"),
    (("bf16: 300", "bf16: true"), "true/false"),
])  # fmt: skip
def test_gpu_descriptions_are_finite_bounded_and_typed(change, needle):
    _refused(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", GPU.replace(*change)], needle)


def test_rule_score_must_be_a_number(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "site.yaml").write_text(
        "rules:\n  - id: site.prefer-vllm\n    decides: engine\n    effect: prefer\n    value: vllm\n    score: true\n"
        "    reason: We run vLLM.\n    source: site policy\n"
    )
    _refused([*PLAN, "--rules", str(rules)], "true/false")


def test_upper_case_rule_files_are_read(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "SITE.YAML").write_text(
        "rules:\n  - id: site.no-vllm\n    decides: engine\n    effect: forbid\n    value: vllm\n"
        "    reason: Not here.\n    source: site policy\n"
    )
    outcome = run_cli([*PLAN, "--rules", str(rules), "--format", "json"])
    check(outcome, [])
    assert '"name": "vllm"' not in outcome.out.split('"engine"')[1][:200]


def test_python_api_wrong_types_raise_project_errors():
    from infer_advisor import advise, size
    from infer_advisor.errors import InferAdvisorError
    from infer_advisor.request import PlanRequest

    plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
    calls = [
        lambda: advise(request="A100-80GB"),
        lambda: advise(request=PlanRequest(gpu="A100-80GB"), model="meta-llama/Llama-3.1-8B"),
        lambda: size(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", rate=1, progress=42),
        lambda: plan.render(None),
        lambda: plan.render("docker", out=42),
        lambda: advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", context=True),
        lambda: advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", concurrency=False),
        lambda: advise(model=7),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(InferAdvisorError):
            call()
            pytest.fail(f"call {i} raised nothing")


def test_trace_arrival_times_are_named_as_unused(tmp_path):
    """docs/capacity.md said --lengths-file arrival times were used; sizing assumes Poisson: the result says so."""
    import json

    from infer_advisor import size

    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"input_tokens": 300, "output_tokens": 100, "arrival_s": i * 0.5}) + "\n" for i in range(40)))
    result = size(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", rate=2, lengths_file=str(trace))
    assert any("arrival_s times are not used" in n for n in result.notes)


def test_upper_case_gpu_file_with_a_count(tmp_path):
    spec = tmp_path / "UP.YAML"
    spec.write_text("name: UpGPU\nmemory_gib: 80\nmemory_bandwidth_gb_s: 2000\ntflops: {bf16: 300, fp16: 300}\n"
                    "compute_capability: 8.0\ninterconnect: pcie\ninterconnect_gb_s: 32\n")
    args = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", f"{spec}:2", "--format", "json"]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 0 and '"UpGPU"' in outcome.out, outcome.err


def test_plot_errors_name_plot_not_out():
    _refused([*PLAN, "--rate", "1", "--plot", "/proc/x.png"], "choose another --plot")


def test_a_described_gpu_can_be_sized(tmp_path):
    """`--gpu '{...}' --rate` answered "Unknown GPU 'MyGPU'": the final plan looked the GPU up by name."""
    import json

    args = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", GPU + ":2", "--rate", "5", "--format", "json"]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code in (0, 1), outcome.err
    assert json.loads(outcome.out)["hardware"]["gpus"][0]["name"] == "MyGPU"
