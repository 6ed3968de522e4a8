"""Measure the plan path's speed targets, and the cold start side by side with NVIDIA's aiconfigurator.

    python benchmarks/startup.py [--runs 21] [--json benchmarks/results/startup.json] [--no-aiconfigurator]
    python benchmarks/startup.py --against ../main/src [--runs 21]    # CPU of this tree's plan vs another tree's

1. `infer-advisor plan --model meta-llama/Llama-2-7b-hf --gpu A100-80GB --json` cold start: a new process each
   run (wall clock, median).
2. Side by side (issue 9: at least 20x faster): `infer-advisor plan --model Qwen/Qwen3-8B --gpu H200 --json` and
   `aiconfigurator cli estimate --model-path Qwen/Qwen3-8B --system h200_sxm --backend vllm --isl 512 --osl 128
   --batch-size 8 --tp-size 1`, the same model and GPU, one run of each in turn (so both see the same machine
   load), each a new process. aiconfigurator 0.12.0 comes from PyPI into a benchmark-only cached venv
   (tests/support/venvs.ensure_venv; never a dependency of infer-advisor). Wall clock and CPU time (user + sys of
   the process) are both reported; the ratio is of medians.
3. `advise()` on a catalog model, warm (same process, after one call; median; target <= 10 ms).

4. With ``--against SRC``: the CPU time of the cold start here and with ``PYTHONPATH=SRC`` (another checkout's
   ``src``), one run of each in turn (medians; the outputs must be byte-identical). Nothing else runs then.

Results are printed and, with --json, written for docs/speed.md (not asserted in CI: timings depend on the machine).
Both tools run offline: HF_HUB_OFFLINE=1, and aiconfigurator reads its bundled model config.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AICONFIGURATOR = "aiconfigurator==0.12.0"
OURS_SIDE_BY_SIDE = ["plan", "--model", "Qwen/Qwen3-8B", "--gpu", "H200", "--json"]
THEIRS_SIDE_BY_SIDE = [
    "cli", "estimate", "--model-path", "Qwen/Qwen3-8B", "--system", "h200_sxm", "--backend", "vllm",
    "--isl", "512", "--osl", "128", "--batch-size", "8", "--tp-size", "1",
]  # fmt: skip


def _ours(args: list[str]) -> list[str]:
    exe = shutil.which("infer-advisor")
    return [exe, *args] if exe else [sys.executable, "-m", "infer_advisor.cli", *args]


def _env() -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE (set in some CI and container images) would make every run of an editable install
    # compile all its modules, while aiconfigurator's site-packages has the .pyc files pip wrote: both run as
    # installed packages do, with their byte-code caches (the first, warming run writes ours).
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one new process running ``argv``; it must succeed."""
    return _run(argv, env)[:2]


def _run(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, bytes]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env or _env())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), proc.stdout


def against(other_src: str, runs: int) -> dict:
    """CPU seconds of the cold start with this process's PYTHONPATH and with ``other_src``, alternating."""
    argv = _ours(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--json"])
    trees = {"this": _env(), "other": {**_env(), "PYTHONPATH": other_src}}
    outputs = {name: _run(argv, env)[2] for name, env in trees.items()}  # warm both (and their snapshots)
    if outputs["this"] != outputs["other"]:
        raise SystemExit("the two trees print different plans")
    cpu: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(runs):
        for name, env in trees.items():
            cpu[name].append(_run(argv, env)[1])
    return {"other_src": other_src, **{f"{name}_cpu_s": _stats(v) for name, v in cpu.items()}}


def _stats(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": len(values)}


def cold_start(runs: int) -> list[float]:
    argv = _ours(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--json"])
    _timed(argv)  # warm the OS file cache and the YAML cache
    return [_timed(argv)[0] for _ in range(runs)]


def aiconfigurator_python() -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.support.venvs import ensure_venv

    return ensure_venv("aiconfigurator", [[AICONFIGURATOR]])


def side_by_side(runs: int) -> dict:
    theirs_exe = aiconfigurator_python().parent / "aiconfigurator"
    ours, theirs = _ours(OURS_SIDE_BY_SIDE), [str(theirs_exe), *THEIRS_SIDE_BY_SIDE]
    _timed(ours), _timed(theirs)  # warm both (file cache, byte-code, our YAML cache)
    samples: dict[str, list[tuple[float, float]]] = {"infer-advisor": [], "aiconfigurator": []}
    for _ in range(runs):  # alternate, so a change of machine load hits both alike
        samples["infer-advisor"].append(_timed(ours))
        samples["aiconfigurator"].append(_timed(theirs))
    out: dict = {"commands": {"infer-advisor": " ".join(["infer-advisor", *OURS_SIDE_BY_SIDE]),
                              "aiconfigurator": " ".join(["aiconfigurator", *THEIRS_SIDE_BY_SIDE])},
                 "aiconfigurator_version": AICONFIGURATOR}  # fmt: skip
    for name, pairs in samples.items():
        out[name] = {"wall_s": _stats([w for w, _ in pairs]), "cpu_s": _stats([c for _, c in pairs])}
    for kind in ("wall_s", "cpu_s"):
        out[f"ratio_{kind.removesuffix('_s')}"] = (
            out["aiconfigurator"][kind]["median"] / out["infer-advisor"][kind]["median"]
        )
    out["target_ratio"] = 20.0
    return out


def warm_advise(runs: int, model: str, gpu: str) -> list[float]:
    from infer_advisor import advise

    advise(model=model, gpu=gpu)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        advise(model=model, gpu=gpu)
        times.append(time.perf_counter() - t)
    return times


def _summary(result: dict) -> str:
    """The lines to read first: our cold start and, when measured, the ratio to aiconfigurator."""
    cold = result["cold_start_s"]
    lines = [f"cold start (plan, new process): median {cold['median']:.3f} s, min {cold['min']:.3f} s over {cold['runs']} runs"]
    v = result["versus_aiconfigurator"]
    if v:
        ours, theirs = v["infer-advisor"], v["aiconfigurator"]
        lines.append(f"side by side ({ours['wall_s']['runs']} alternating runs each): infer-advisor {ours['wall_s']['median']:.3f} s "
                     f"wall / {ours['cpu_s']['median']:.3f} s CPU, aiconfigurator {theirs['wall_s']['median']:.2f} s wall / "
                     f"{theirs['cpu_s']['median']:.2f} s CPU")
        lines.append(f"ratio: {v['ratio_wall']:.1f}x wall, {v['ratio_cpu']:.1f}x CPU (target {v['target_ratio']:.0f}x)")
    load = result["machine"]
    lines.append(f"load average {load['load_average_before'][0]:.2f} before, {load['load_average_after'][0]:.2f} after")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--side-by-side-runs", type=int, default=11, help="Runs of each tool (aiconfigurator takes seconds).")
    ap.add_argument("--json", dest="json_out")
    ap.add_argument("--no-aiconfigurator", action="store_true", help="Skip the side-by-side comparison.")
    ap.add_argument("--against", metavar="SRC", help="Only compare the cold start's CPU with PYTHONPATH=SRC, alternating.")
    args = ap.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    if args.against:
        load = os.getloadavg()[0]
        result = against(args.against, args.runs)
        print(json.dumps({**result, "load_average_before": load, "load_average_after": os.getloadavg()[0]}, indent=2))
        return 0
    load_before = os.getloadavg()
    cold = cold_start(args.runs)
    versus = None if args.no_aiconfigurator else side_by_side(args.side_by_side_runs)
    warm = {f"{m} on {g}": warm_advise(args.runs * 5, m, g) for m, g in [
        ("meta-llama/Llama-2-7b-hf", "A100-80GB"),
        ("meta-llama/Llama-3.1-70B", "H100-80GB:8"),
        ("mistralai/Mixtral-8x7B-v0.1", "L40S:4"),
    ]}  # fmt: skip
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "cold_start_s": {**_stats(cold), "target": 0.3},
        "versus_aiconfigurator": versus,
        "advise_warm_ms": {k: {"median": statistics.median(v) * 1e3, "min": min(v) * 1e3, "runs": len(v), "target": 10.0}
                           for k, v in warm.items()},
    }  # fmt: skip
    print(json.dumps(result, indent=2))
    print(_summary(result), file=sys.stderr)
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
