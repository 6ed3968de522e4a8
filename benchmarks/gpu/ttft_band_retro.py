"""RETROSPECTIVE check of the TTFT band (capacity/ttft_band.py) on H200 calls F and G: does each measured TTFT p50
fall inside the band today's `plan` prints at that level? Written after both calls were graded; their grades and
tables stay as pre-registered.

    python benchmarks/gpu/ttft_band_retro.py --out benchmarks/results/h200/ttft-band-retro-2026-12-04.json

Per folder, each level the plan serves with one replica is planned exactly as predict_levels.py planned it (``plan
--gpu H200 --engine llama.cpp --quantization gguf-f16 --rate R --no-headroom --format json``, today's code: the band
and, for call F, a point refit on F's own logs since). A second, narrower band is shown for comparison only (not
what plan prints): the same replica if it were 7% slower or faster, the size of the capacity errors the two calls
measured (G ~7% below its predicted max rate, F ~6% above), by the identity ttft_band.py uses: TTFT at speed k and
rate R = TTFT of the modelled replica at R / k, divided by k (``plan --replicas 1 --rate R/k``).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))
from predict_levels import _plan  # noqa: E402  (the same plan command the predictions used)

CALLS = {"F": "benchmarks/results/h200/llamacpp-openloop-f-2026-12-04",
         "G": "benchmarks/results/h200/llamacpp-openloop-g-2026-12-04"}
NARROW = 0.07  # the capacity errors calls F and G measured (docs/capacity.md), for comparison only


def _pinned(model: str, rate: float, inp: int, out: int) -> dict:
    """The plan's one replica at ``rate`` (``--replicas 1``), whatever its max rate."""
    import subprocess

    cmd = [sys.executable, "-m", "infer_advisor.cli", "plan", "--model", model, "--gpu", "H200", "--engine", "llama.cpp",
           "--quantization", "gguf-f16", "--input-tokens", str(inp), "--output-tokens", str(out), "--rate", f"{rate:.6g}",
           "--no-headroom", "--replicas", "1", "--format", "json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"plan failed ({proc.returncode}): {proc.stderr[-2000:]}")
    c = json.loads(proc.stdout)["capacity"]["chosen"] or json.loads(proc.stdout)["capacity"]["best_per_gpu"][0]
    return c


def _narrow(model: str, rate: float, inp: int, out: int, speed: float) -> float | None:
    """TTFT p50 of the replica at ``speed`` x its modelled speed (None: its queue grows)."""
    c = _pinned(model, rate / speed, inp, out)
    if c.get("ttft_p50_s") is None or (c.get("why_not") or "").endswith("saturated"):
        return None
    return c["ttft_p50_s"] / speed


def _call(name: str, folder: Path) -> list[dict]:
    pred = json.loads((folder / "predictions.json").read_text())
    rows = list(csv.DictReader((folder / "bench.csv").open()))
    model, inp, out = pred["model"], pred["input_tokens"], pred["output_tokens"]
    top = pred["predicted_max_rate_per_replica"]
    out_rows = []
    for level, row in zip(pred["levels"], rows):
        if level["replicas"] != 1:
            continue  # past M the plan asks for a second replica: no single-server figure to band
        rate = level["rate"]
        chosen = _plan(model, rate, inp, out)["plan"]["capacity"]["chosen"]
        band = chosen["ttft_band"]
        measured = float(row["ttft_p50_s"])
        lo = band["faster"]["ttft_p50_s"]
        hi = None if band["slower"]["queue_grows"] else band["slower"]["ttft_p50_s"]
        n_lo, n_hi = (_narrow(model, rate, inp, out, 1 + NARROW), _narrow(model, rate, inp, out, 1 - NARROW))
        out_rows.append({
            "call": name, "rate": rate, "fraction_of_frozen_M": rate / top, "grew": row["saturated"] == "True",
            "measured_ttft_p50_s": measured, "frozen_ttft_p50_s": level["ttft_p50_s"],
            "today_ttft_p50_s": chosen["ttft_p50_s"], "today_M": chosen["max_rate_per_replica"],
            "band": band, "band_p50_s": [lo, hi],
            "inside_band": (lo is None or measured >= lo) and (hi is None or measured <= hi),
            "narrow_band_p50_s": [n_lo, n_hi],
            "inside_narrow": (n_lo is None or measured >= n_lo) and (n_hi is None or measured <= n_hi),
        })
        print(f"{name} {rate:g} req/s ({rate / top:.2f} of frozen M): measured {measured * 1e3:.0f} ms; frozen "
              f"{level['ttft_p50_s'] * 1e3:.0f}; today {chosen['ttft_p50_s'] * 1e3:.0f} band "
              f"{'-' if lo is None else f'{lo * 1e3:.0f}'}..{'grows' if hi is None else f'{hi * 1e3:.0f}'} "
              f"inside={out_rows[-1]['inside_band']}; +-7%: {'-' if n_lo is None else f'{n_lo * 1e3:.0f}'}.."
              f"{'grows' if n_hi is None else f'{n_hi * 1e3:.0f}'} inside={out_rows[-1]['inside_narrow']}", flush=True)
    return out_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    rows = [r for name, folder in CALLS.items() for r in _call(name, ROOT / folder)]
    args.out.write_text(json.dumps({"retrospective": True, "narrow_edge": NARROW, "levels": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
