"""Predicted vs published serving curves (benchmarks/published/serving_curves.yaml), through the path a user runs:
``size()`` for saturation points (capacity = max_rate_per_replica / UTILISATION with no targets and no headroom),
``simulate`` at the stated concurrency for closed-loop points.

    PYTHONPATH=src python benchmarks/serving_curves.py
"""

from __future__ import annotations

from pathlib import Path

import yaml

DATA = Path(__file__).with_name("published") / "serving_curves.yaml"


def predicted_saturation(curve: dict, point: dict) -> float:
    from infer_advisor import size
    from infer_advisor.capacity.evaluate import UTILISATION

    lay = curve["layout"]
    r = size(model=curve["model"], rate=1.0, input_tokens=point["input_tokens"], output_tokens=point["output_tokens"],
             gpu=curve["gpu"], engine=curve["engine"], tensor_parallel_size=lay["tensor_parallel_size"],
             pipeline_parallel_size=lay["pipeline_parallel_size"], headroom=False)
    return r.chosen.max_rate_per_replica / UTILISATION


def predicted_closed_loop(curve: dict, point: dict) -> float:
    from infer_advisor.estimate.step_time import build_step_model
    from infer_advisor.hardware import lookup_gpu
    from infer_advisor.model_facts import resolve_model
    from infer_advisor.plan import advise
    from infer_advisor.simulate import LengthSpec, SchedulerConfig, Workload, simulate

    lay = curve["layout"]
    plan = advise(model=curve["model"], gpu=curve["gpu"], engine=curve["engine"], quantization="none",
                  tensor_parallel_size=lay["tensor_parallel_size"])
    model = resolve_model(curve["model"])
    step = build_step_model(model, gpu=lookup_gpu(curve["gpu"]), engine=plan.engine.name, dtype=plan.dtype,
                            tp=lay["tensor_parallel_size"], pp=lay["pipeline_parallel_size"])
    cfg = SchedulerConfig(max_num_seqs=plan.engine.max_num_seqs, max_num_batched_tokens=plan.engine.max_num_batched_tokens or 2048,
                          kv_capacity_tokens=plan.memory.kv_cache_tokens)
    c = point["concurrency"]
    w = Workload(input_tokens=LengthSpec(mean=point["input_tokens"]), output_tokens=LengthSpec(mean=point["output_tokens"]),
                 arrival="closed", concurrency=c)
    return simulate(step, w, cfg, requests=max(4 * c, 48)).requests_per_s


def main() -> None:
    data = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    print(f"{'curve':<52} {'point':<22} {'measured':>9} {'predicted':>9} {'error':>7}")
    for curve in data["curves"]:
        for point in curve["points"]:
            closed = "concurrency" in point
            pred = predicted_closed_loop(curve, point) if closed else predicted_saturation(curve, point)
            what = (f"c={point['concurrency']} " if closed else "sat ") + f"{point['input_tokens']}/{point['output_tokens']}"
            meas = point["requests_per_s"]
            print(f"{curve['id']:<52} {what:<22} {meas:9.2f} {pred:9.2f} {pred / meas - 1:+7.0%}")


if __name__ == "__main__":
    main()
