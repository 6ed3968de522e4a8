"""Issue 25 item 2: sizing output that ranks (chosen, two runners-up and why they lost, other GPU types one line each
or hidden past a cost ratio, --all shows them), restates the workload and targets, and names TTFT/TPOT/ITL plainly."""

from __future__ import annotations

import math

from infer_advisor.capacity.result import Candidate, CapacityResult, Price
from infer_advisor.capacity.targets import LatencyTargets
from infer_advisor.cli import main
from infer_advisor.cli.render_capacity import HIDE_PAST_COST_RATIO, summary_rows

README_SIZED = ["plan", "--model", "meta-llama/Llama-3.1-70B", "--gpu", "H100-80GB,A100-80GB,L40S", "--rate", "20",
                "--input-tokens", "2000", "--output-tokens", "300", "--ttft-p90", "1", "--itl-p99", "0.06"]  # fmt: skip


def _cand(gpu: str, replicas: int, per: int, usd: float | None, **kw) -> Candidate:
    price = Price(usd_per_gpu_hour=usd, source="test") if usd is not None else None
    return Candidate(gpu=gpu, engine="vllm", quantization="none", kv_cache_dtype="auto", tensor_parallel_size=per,
                     pipeline_parallel_size=1, gpus_per_replica=per, max_num_seqs=256, max_num_batched_tokens=512,
                     kv_cache_tokens=100_000, max_rate_per_replica=1.5, replicas=replicas, total_gpus=replicas * per,
                     meets_targets=replicas > 0, price=price,
                     cost_per_hour=replicas * per * usd if usd is not None and replicas else None, **kw)  # fmt: skip


def _result() -> CapacityResult:
    chosen = _cand("H100-80GB", 14, 2, 3.49)
    runners = [_cand("H100-80GB", 5, 8, 3.49), _cand("H200", 6, 4, 3.99)]
    others = [_cand("A100-80GB", 20, 8, 1.59), _cand("A40", 704, 2, 0.44 * 12), _cand("L40S", 0, 4, 0.86, why_not="misses it")]
    return CapacityResult(rate=20, input_tokens="2000 (fixed)", output_tokens="300 (fixed)",
                          targets=LatencyTargets(ttft_p90=1.0, itl_p99=0.06), chosen=chosen, runners_up=runners,
                          best_per_gpu=[chosen, runners[1], *others])  # fmt: skip


def test_a_ranking_with_runners_up_and_other_gpus_folded():
    rows = summary_rows(_result())
    labels = [label for label, _ in rows]
    assert labels[:3] == ["workload", "targets", "chosen"] and labels.count("runner-up") == 2
    text = dict(rows)
    assert text["workload"] == "20 requests/s; prompt tokens 2000 (fixed), answer tokens 300 (fixed)"
    assert text["targets"] == "p90 TTFT (time to first token) <= 1 s; p99 ITL (gap between two tokens) <= 60 ms"
    runner = [t for label, t in rows if label == "runner-up"][0]
    assert "= 40 GPUs, $139.60/hour, 1.43x the cost; 1.50 req/s per replica of 8 GPUs, the chosen 1.50" in runner  # why it lost
    other = [t for label, t in rows if label in ("other GPUs", "")]
    assert other[0] == "A100-80GB: 160 GPUs (20 x 8, TP8 x PP1, none), 2.6x the cost"
    assert "L40S: misses it" in other
    assert not any(t.startswith("H200") for t in other)  # a runner-up is not repeated
    assert not any(t.startswith("A40:") for t in other)  # 1,408 GPUs at 43x the cost: hidden
    assert f"(GPU types hidden: 1 at {HIDE_PAST_COST_RATIO:g}x the chosen fleet or more; --all shows them)" in other


def test_all_shows_the_hidden_gpu_types():
    other = [t for label, t in summary_rows(_result(), show_all=True) if label in ("other GPUs", "")]
    a40 = next(t for t in other if t.startswith("A40:"))
    assert a40.startswith("A40: 1,408 GPUs (704 x 2") and a40.endswith("x the cost")
    assert not any("hidden" in t for t in other)


def test_the_readme_sized_plan_fits_in_thirty_rows(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(README_SIZED) == 0
    out = capsys.readouterr().out
    rows = sum(max(1, math.ceil(len(line) / 100)) for line in out.splitlines())
    # 30, plus the two tie-break lines a tie adds (the spd4b profile: TP2 and TP4 at 32 GPUs each), plus the two of the
    # chosen option's TTFT band (capacity/ttft_band.py; issue 21, calls F and G)
    assert rows <= 34, out
    assert "TTFT band  p50 " in out
    assert out.splitlines()[0].startswith("meta-llama/Llama-3.1-70B (catalog) at 20 requests/s: ")
    assert "p99 ITL (gap between two tokens) <= 60 ms" in out and "mean time per output token" not in out.split("workload")[1]
    assert out.count("runner-up ") == 2 and "best option per GPU type" not in out  # the table is behind --explain
