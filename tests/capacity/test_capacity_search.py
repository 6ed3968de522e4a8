"""The capacity stage (issue 10): size(), plan --rate, pinned layouts, prices, and the CLI contract."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from infer_advisor import size
from infer_advisor.errors import RequestError
from infer_advisor import advise

MODEL_7B = "meta-llama/Llama-2-7b-hf"
COMMON = dict(input_tokens=1000, output_tokens=200, ttft_p90=1.0, itl_p99=0.1)


def _size(**kw):
    return size(model=kw.pop("model", MODEL_7B), **{**COMMON, **kw})


def test_doubling_the_rate_about_doubles_the_replicas():
    one = _size(rate=30, gpu="H100-80GB", tensor_parallel_size=1, pipeline_parallel_size=1)
    two = _size(rate=60, gpu="H100-80GB", tensor_parallel_size=1, pipeline_parallel_size=1)
    assert one.chosen and two.chosen
    assert one.chosen.replicas_needed >= 2, "the test needs a rate that takes several replicas"
    # same layout, same per-replica rate: replicas = ceil(rate / max_rate), so twice the rate is 2x (+-1 for rounding)
    assert one.chosen.max_rate_per_replica == pytest.approx(two.chosen.max_rate_per_replica, rel=0.05)
    n1, n2 = one.chosen.replicas_needed, two.chosen.replicas_needed  # before headroom (N+1 is not proportional)
    assert 2 * n1 - 1 <= n2 <= 2 * n1 + 1
    assert two.chosen.cost_per_hour == pytest.approx(two.chosen.replicas * two.chosen.gpus_per_replica
                                                     * two.chosen.price.usd_per_gpu_hour)


def test_a_tighter_target_is_never_cheaper():
    loose = _size(rate=10, gpu="H100-80GB", tensor_parallel_size=1, ttft_p90=2.0)
    tight = _size(rate=10, gpu="H100-80GB", tensor_parallel_size=1, ttft_p90=0.3)
    assert loose.chosen and tight.chosen
    assert tight.chosen.cost_per_hour >= loose.chosen.cost_per_hour
    assert tight.chosen.ttft_p90_s <= 0.3


def test_every_reported_option_meets_what_it_says():
    r = _size(rate=8, gpu="H100-80GB,A100-80GB")
    assert {c.gpu for c in r.best_per_gpu} == {"H100-80GB", "A100-80GB"}
    for c in r.best_per_gpu:
        if c.meets_targets:
            assert all(chk.met for chk in c.checks) and c.replicas >= 1
            assert c.total_gpus == c.replicas * c.gpus_per_replica
            assert c.usd_per_million_output_tokens == pytest.approx(c.cost_per_hour / (8 * 200 * 3600) * 1e6)
    assert r.chosen == min((c for c in r.best_per_gpu if c.meets_targets), key=lambda c: c.cost_per_hour)
    assert r.front and all(p.output_tokens_per_s_per_gpu > 0 for p in r.front)
    assert r.accuracy and "median |error|" in r.accuracy  # the basis (prospective, in-sample) is named in the line


def test_pinned_layout_is_honoured():
    r = _size(rate=4, gpu="H100-80GB", tensor_parallel_size=2, max_num_batched_tokens=1024)
    assert r.chosen is not None
    assert (r.chosen.tensor_parallel_size, r.chosen.pipeline_parallel_size) == (2, 1)
    assert r.chosen.max_num_batched_tokens == 1024


def test_pinned_replicas_are_checked_against_the_targets():
    r = _size(rate=60, gpu="H100-80GB", tensor_parallel_size=1, pipeline_parallel_size=1, replicas=1)
    c = r.best_per_gpu[0]
    assert c.replicas == 1 and not c.meets_targets and c.why_not


def test_pinned_layout_the_rules_forbid_is_refused_with_the_rules_reason():
    plan = advise(model="Qwen/Qwen2.5-7B", gpu="H100-80GB:8", tensor_parallel_size=8)
    assert not plan.feasible
    assert "layout.tp-divides-attention-heads" in plan.infeasible_reason


def test_no_option_meets_an_impossible_target_and_the_binding_one_is_named():
    r = _size(rate=1, gpu="H100-80GB", ttft_p90=0.001)
    assert r.chosen is None
    assert r.binding is not None and r.binding.target == "ttft_p90" and r.binding.by_factor > 1
    assert "relax" in r.binding.suggestion


def test_price_override_changes_the_cost_and_says_so():
    r = _size(rate=4, gpu="H100-80GB", tensor_parallel_size=1, price_per_gpu_hour="H100-80GB=1.0")
    assert r.chosen.price.usd_per_gpu_hour == 1.0 and "request" in r.chosen.price.source
    assert r.chosen.cost_per_hour == pytest.approx(r.chosen.total_gpus * 1.0)


def test_a_gpu_without_a_price_is_kept_but_not_ranked_by_cost():
    r = _size(rate=2, gpu="H100-80GB,A30", tensor_parallel_size=1, pipeline_parallel_size=1)
    assert any("no price for A30" in n for n in r.notes)
    assert r.chosen is not None and r.chosen.gpu == "H100-80GB" and r.chosen.cost_per_hour is not None
    a30 = next(c for c in r.best_per_gpu if c.gpu == "A30")
    assert a30.cost_per_hour is None and a30.price is None


def test_with_no_price_at_all_the_fewest_gpus_win_and_the_result_says_so():
    r = _size(rate=2, gpu="A30", tensor_parallel_size=1)
    assert r.chosen is not None and r.chosen.meets_targets and r.chosen.cost_per_hour is None
    assert any("ranked by GPU count" in n for n in r.notes)
    priced = _size(rate=2, gpu="A30", tensor_parallel_size=1, price_per_gpu_hour="0.5")
    assert priced.chosen.cost_per_hour == pytest.approx(priced.chosen.total_gpus * 0.5)


def test_bad_inputs_are_request_errors():
    with pytest.raises(RequestError):
        size(model=MODEL_7B, gpu="H100-80GB")  # no rate
    with pytest.raises(RequestError):
        _size(rate=-1, gpu="H100-80GB")
    with pytest.raises(RequestError):
        _size(rate=1, gpu="H100-80GB", ttft_p90=0)


def test_seven_b_on_eight_gpus_is_eight_replicas_and_the_deployment_counts_them():
    plan = advise(model=MODEL_7B, gpu="H100-80GB:8")
    assert plan.parallelism.replicas == 8 and plan.parallelism.tensor_parallel_size == 1
    perf = plan.performance
    assert perf.replicas == 8
    assert perf.deployment_output_tokens_per_s == pytest.approx(8 * perf.output_tokens_per_s_aggregate)
    one = advise(model=MODEL_7B, gpu="H100-80GB:1").performance
    assert perf.output_tokens_per_s_aggregate == pytest.approx(one.output_tokens_per_s_aggregate, rel=0.01)


def test_data_parallel_size_pins_the_replicas_of_one_engine():
    plan = advise(model=MODEL_7B, gpu="H100-80GB:8", data_parallel_size=4)
    assert plan.parallelism.replicas == 4 and plan.parallelism.data_parallel_size == 4
    from infer_advisor.engines.argv import vllm_flags

    flags = vllm_flags(plan, MODEL_7B)
    assert flags[flags.index("--data-parallel-size") + 1] == "4"
    with pytest.raises(RequestError, match="disagree"):
        advise(model=MODEL_7B, gpu="H100-80GB:8", data_parallel_size=4, replicas=2)
    with pytest.raises(RequestError, match="needs 16 GPUs"):
        advise(model=MODEL_7B, gpu="H100-80GB:8", data_parallel_size=8, tensor_parallel_size=2)


def test_expert_parallel_reaches_the_engine_flags():
    plan = advise(model="mistralai/Mixtral-8x7B-v0.1", gpu="H100-80GB:4", enable_expert_parallel=True)
    assert plan.parallelism.expert_parallel
    from infer_advisor.engines.argv import vllm_flags

    assert "--enable-expert-parallel" in vllm_flags(plan, "mistralai/Mixtral-8x7B-v0.1")
    with pytest.raises(RequestError, match="mixture-of-experts"):
        advise(model=MODEL_7B, gpu="H100-80GB:4", enable_expert_parallel=True)


def test_infeasible_suggestion_prefers_the_users_gpu_family():
    plan = advise(model="deepseek-ai/DeepSeek-V3", gpu="H100-80GB:8")
    assert not plan.feasible
    assert plan.suggestion.startswith("--gpu H100-80GB:"), plan.suggestion


# ------------------------------------------------------------------ CLI


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "infer_advisor.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_plan_rate_end_to_end_json_markdown_and_plot(tmp_path):
    base = ["plan", "--model", MODEL_7B, "--gpu", "H100-80GB,L40S", "--rate", "12", "--input-tokens", "1000",
            "--output-tokens", "200", "--ttft-p90", "1", "--itl-p99", "0.1"]
    r = _cli(*base, "--json")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    cap = plan["capacity"]
    chosen = cap["chosen"]
    assert plan["feasible"] and chosen["meets_targets"]
    assert plan["hardware"]["gpus"][0]["name"] == chosen["gpu"]
    assert plan["parallelism"]["tensor_parallel_size"] == chosen["tensor_parallel_size"]
    assert math.ceil(12 / chosen["max_rate_per_replica"]) == chosen["replicas_needed"]
    assert chosen["replicas"] == math.ceil(12 / (0.85 * chosen["max_rate_per_replica"])) + 1  # rule sizing.headroom-n-plus-one
    md = _cli(*base, "--format", "markdown", "--plot", str(tmp_path / "front.png"))
    assert md.returncode == 0, md.stderr
    assert "- **chosen**: " in md.stdout and "- **runner-up**: " in md.stdout
    assert (tmp_path / "front.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*partial*"))


def test_plan_rate_impossible_target_exits_1_with_the_binding_target():
    r = _cli("plan", "--model", MODEL_7B, "--gpu", "H100-80GB", "--rate", "1", "--ttft-p90", "0.001", "--format", "markdown")
    assert r.returncode == 1, r.stderr
    assert "target binds" in r.stdout


@pytest.mark.parametrize(
    "args, words",
    [
        (["--plot", "x.png"], "--rate"),
        (["--rate", "1", "--plot", "x.txt"], ".png"),
        (["--rate", "0"], "rate"),
        (["--rate", "1", "--ttft-p90", "-1"], "ttft"),
        (["--gpu", "any"], "--rate"),
        (["--rate", "1", "--gpu", "H100-80GB", "--price-per-gpu-hour", "H100-80GB=abc"], "price"),
        (["--rate", "1", "--gpu", "NoSuchGPU,H100-80GB"], "NoSuchGPU"),
        (["--gpu", "H100-80GB:8", "--data-parallel-size", "4", "--replicas", "2"], "disagree"),
    ],
)
def test_plan_rate_bad_inputs_are_one_line_and_exit_2(tmp_path, args, words):
    r = _cli("plan", "--model", MODEL_7B, *args, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and words.lower() in lines[0].lower(), r.stderr


def test_capacity_json_validates_against_its_published_schema():
    import jsonschema

    r = _cli("schema", "capacity")
    assert r.returncode == 0, r.stderr
    schema = json.loads(r.stdout)
    result = _size(rate=4, gpu="H100-80GB", tensor_parallel_size=1)
    jsonschema.validate(json.loads(result.model_dump_json()), schema)


def test_the_sustainable_rate_stays_below_what_an_overloaded_replica_completes():
    """A few hundred simulated requests just past capacity end before the queue breaks a target: the search caps the
    rate at 95% of the throughput an overloaded trial completed or of the physical ceiling (capacity/physics.py)."""
    from infer_advisor.capacity.evaluate import UTILISATION, find_max_rate, operating_point
    from infer_advisor.capacity.candidates import targets_from, workload_from
    from infer_advisor.estimate.step_time import build_step_model
    from infer_advisor.hardware import lookup_gpu
    from infer_advisor.model_facts import resolve_model
    from infer_advisor.request import PlanRequest
    from infer_advisor.simulate import SchedulerConfig

    model = resolve_model("meta-llama/Llama-3.1-8B")
    req = PlanRequest(model=model.name, rate=50, input_tokens=1000, output_tokens=200, ttft_p90=0.5, itl_p99=0.05)
    w, targets = workload_from(req, model), targets_from(req)
    per_gpu = {}
    for pp in (1, 2):
        step = build_step_model(model, gpu=lookup_gpu("H100-80GB"), engine="vllm", quantization="none", dtype="bfloat16",
                                kv_cache_dtype="auto", tp=1, pp=pp, nodes=1, expert_parallel=False)
        cfg = SchedulerConfig(max_num_seqs=1024, max_num_batched_tokens=1024, kv_capacity_tokens=400_000, lanes=pp)
        rs = find_max_rate(step, w, cfg, targets)
        limit = min(rs.capacity or math.inf, rs.ceiling)  # what an overloaded trial completed, or the physical ceiling
        assert rs.max_rate <= UTILISATION * limit + 1e-9
        long_run = operating_point(step, w, cfg, rs.max_rate, requests=1200)
        # keeps up over a run five times as long. 88%, not 90%: with the pipeline model (simulate/pipeline.py) the PP2
        # replica's 1,200-request run completes 89.97% of the rate its 240-request trials accepted (2026-12-03): the
        # search is ~10% optimistic for pipelined replicas at the physical ceiling, a known gap (docs/capacity.md).
        assert long_run.requests_per_s >= 0.88 * rs.max_rate
        per_gpu[pp] = rs.max_rate / pp
    # two pipeline stages on two GPUs do not serve more per GPU than one GPU alone (within the search's 10% noise)
    assert per_gpu[2] <= 1.1 * per_gpu[1]


def test_max_num_seqs_is_pinned_and_vllm_never_gets_a_budget_below_it():
    assert advise(model=MODEL_7B, gpu="H100-80GB", max_num_seqs=64).engine.max_num_seqs == 64
    capped = advise(model=MODEL_7B, gpu="H100-80GB", max_num_batched_tokens=512).engine
    assert capped.max_num_batched_tokens == 512 and capped.max_num_seqs == 512  # vLLM 0.33's H100 default is 1024
    with pytest.raises(RequestError, match="vLLM refuses"):
        advise(model=MODEL_7B, gpu="H100-80GB", max_num_batched_tokens=512, max_num_seqs=600)


def test_a_sized_fleet_larger_than_a_node_emits_one_node_of_replicas(tmp_path):
    plan = advise(model="meta-llama/Llama-3.1-70B", rate=20, input_tokens=2000, output_tokens=300, ttft_p90=1.0,
                  itl_p99=0.06, gpu="H100-80GB,A100-80GB")
    chosen = plan.capacity.chosen
    assert plan.parallelism.replicas == chosen.replicas and chosen.total_gpus > 8
    per_node = 8 // chosen.gpus_per_replica
    assert plan.hardware.gpus_per_node == per_node * chosen.gpus_per_replica
    assert plan.engine.max_num_batched_tokens == chosen.max_num_batched_tokens
    assert plan.engine.max_num_seqs <= plan.engine.max_num_batched_tokens
    from infer_advisor.emit import write_artifacts

    write_artifacts(plan, ["script", "k8s", "readme"], tmp_path / "out")
    serve = (tmp_path / "out" / "serve.sh").read_text()
    assert f"--data-parallel-size {per_node}" in serve or per_node == 1
    assert f"replicas: {chosen.replicas}" in (tmp_path / "out" / "k8s.yaml").read_text()
    readme = (tmp_path / "out" / "README.md").read_text()
    full, rest = divmod(chosen.replicas, per_node)  # 13 replicas of 4 per node: 3 machines and one more at 1, not 16
    text = " ".join(readme.split())
    assert (f"them on {full} such machine(s) and start the other {rest} on one more (its data-parallel size set to {rest}, "
            f"so the fleet is the plan's {chosen.replicas} replicas" in text) if rest else f"them on {full} such machines" in text


def test_plot_never_replaces_a_file_we_did_not_write(tmp_path):
    base = ["plan", "--model", MODEL_7B, "--gpu", "H100-80GB", "--tensor-parallel-size", "1", "--rate", "4",
            "--input-tokens", "1000", "--output-tokens", "200", "--ttft-p90", "1", "--format", "json"]
    foreign = tmp_path / "mine.png"
    foreign.write_bytes(b"\x89PNG\r\n\x1a\n not ours")
    for extra in ([], ["--force"]):
        r = _cli(*base, "--plot", str(foreign), *extra)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert foreign.read_bytes() == b"\x89PNG\r\n\x1a\n not ours"
    ours = tmp_path / "front.png"
    assert _cli(*base, "--plot", str(ours)).returncode == 0
    first = ours.read_bytes()
    assert _cli(*base, "--plot", str(ours)).returncode == 2  # exists: refused without --force
    assert _cli(*base, "--plot", str(ours), "--force").returncode == 0  # our own plot: replaced
    assert ours.read_bytes()[:8] == first[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_operating_points_put_off_change_nothing_the_answer_shows(monkeypatch):
    """The search simulates an option's operating point only when it could lower a best cost or the answer shows it;
    simulating every one gives the same answer, field for field."""
    from infer_advisor.capacity import sizing

    kw = dict(model="meta-llama/Llama-3.1-8B", rate=20, gpu="H100-80GB,L40S,A100-80GB,RTX-4090,L4", itl_p99=0.05)
    lazy = _size(**kw)
    eager_candidate = sizing._candidate
    monkeypatch.setattr(sizing, "_candidate", lambda *a, point=True, **k: eager_candidate(*a, **k))
    eager = _size(**kw)
    strip = {"search_seconds"}
    assert lazy.model_dump(exclude=strip) == eager.model_dump(exclude=strip)


def test_rate_searches_put_off_change_nothing_the_answer_shows_but_the_front(monkeypatch):
    """A bisection that cannot lower its GPU type's best cost is put off, and finished only where the answer could show
    the option: searching every option to the end gives the same answer, field for field, the front aside (drawn from
    the trials run: fewer points, so some the full search would show dominated); some searches were put off, and every
    option shown was searched to the end."""
    from infer_advisor.capacity import sizing

    kw = dict(model="meta-llama/Llama-3.1-8B", rate=20, gpu="H100-80GB,L40S,A100-80GB,RTX-4090,L4,A10G", itl_p99=0.05)
    searches = []
    find = sizing.find_max_rate
    monkeypatch.setattr(sizing, "find_max_rate", lambda *a, **k: searches.append(find(*a, **k)) or searches[-1])
    lazy = _size(**kw)
    put_off = [rs for rs in searches if rs.paused is not None]
    assert put_off, "the case no longer puts any search off: pick one that does"
    shown = [lazy.chosen, *lazy.runners_up, *lazy.best_per_gpu]
    assert all(any(abs(rs.max_rate - c.max_rate_per_replica) < 1e-12 for rs in searches if rs.paused is None)
               for c in shown if c is not None and c.max_rate_per_replica)
    ran = {t.rate for rs in searches for t in rs.trials}
    monkeypatch.setattr(sizing, "_cannot_lower", lambda *a, **k: None)
    eager = _size(**kw)
    strip = {"search_seconds", "front"}
    assert lazy.model_dump(exclude=strip) == eager.model_dump(exclude=strip)
    # the front is drawn from the trials run: every point of the full front that the lazy search also ran is on its front
    assert lazy.front and all(p in lazy.front for p in eager.front if p.rate_per_replica in ran)


def test_the_operating_point_runs_until_its_ttft_percentiles_settle():
    """Near the knee of a 4-slot replica (llama.cpp on an H200, issue 21) one 400-request window's TTFT p50 is a coin
    toss (75-720 ms between seeds at 1.5 req/s): the operating point is simulated 4x longer until the batch-means
    standard error of TTFT p50 and p90 is within FINAL_SPREAD; a light load keeps the 400 requests."""
    from infer_advisor.capacity.evaluate import FINAL_MAX_REQUESTS, FINAL_REQUESTS, FINAL_SPREAD, operating_point
    from infer_advisor.capacity.candidates import workload_from
    from infer_advisor.estimate.step_time import build_step_model
    from infer_advisor.hardware import lookup_gpu
    from infer_advisor.model_facts import resolve_model
    from infer_advisor.request import PlanRequest
    from infer_advisor.simulate import SchedulerConfig

    model = resolve_model("meta-llama/Llama-3.1-8B")
    w = workload_from(PlanRequest(model=model.name, rate=1, input_tokens=1137, output_tokens=200), model)
    step = build_step_model(model, gpu=lookup_gpu("H200"), engine="llama.cpp", quantization="gguf-f16", dtype="float16",
                            kv_cache_dtype="auto", tp=1, pp=1, nodes=1, expert_parallel=False)
    cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=2048, kv_capacity_tokens=524_288, kv_admission="reserve")
    light = operating_point(step, w, cfg, 0.6)
    assert light.requests == FINAL_REQUESTS and light.ttft_spread <= FINAL_SPREAD
    # the knee: 0.88 of the 8B's modelled M (1.818 req/s since cap6's refit on calls A-F; 1.5 was 0.87 of the 1.723
    # before it, and at 0.83 of M now the median sits between the idle and the queued regime and does not settle)
    knee = operating_point(step, w, cfg, 1.6)
    assert FINAL_REQUESTS < knee.requests <= FINAL_MAX_REQUESTS
    assert knee.ttft_spread <= FINAL_SPREAD or knee.requests == FINAL_MAX_REQUESTS
    # another seed's answer at the knee agrees within 3 combined standard errors (at 400 requests: 75 vs 697 ms)
    other = operating_point(step, w, cfg, 1.6, seed=7)
    se = (knee.ttft_spread ** 2 + other.ttft_spread ** 2) ** 0.5
    assert abs(other.ttft_s.p50 / knee.ttft_s.p50 - 1) < 3 * se < 0.6
