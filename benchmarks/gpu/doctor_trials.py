"""Real start-up failures of llama.cpp's CUDA server on the lent H200, each answered by `infer-advisor doctor` from the
server's own log, and the first edit the doctor says starts applied and started: an operator's check of the doctor.

    python3 benchmarks/gpu/doctor_trials.py --gguf /tmp/lc/model-f16.gguf --model meta-llama/Llama-3.1-8B --out DIR

(run by ``llamacpp_h200.sh doctor`` after its build and GGUF steps). Each trial's command is fixed below, before any
run. A trial: an optional holder process keeps ``hold_gib`` of the GPU (another process's memory, as on a shared
node); the command is started; if /health answers within WAIT_S it started (the trial did not fail: recorded, not
graded); if the process exits first it failed, and `doctor LOG --gpu H200 --model M --gpus 1 --json` reads its log.
The first edit marked as starting is applied to the command (``doctor.input_text.apply_edit``: every spelling
of the same flag replaced, as an operator would) and started the same way, and the KV cells its log prints are set
against the doctor's KV tokens for that edit. Everything lands in DIR/trials.json and DIR/<trial>-*.log.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

WAIT_S = 60  # loading 16 GB from the page cache and clearing a 130 GiB cache take ~10-20 s on the H200
PORT = 8091
# set -> name -> (GiB held by another process, the server's flags); the base is `llama-server -m GGUF -ngl 99 --port PORT -v`.
# Set a: Llama-3.1-8B (committed in 8d120df, run 2026-12-04 with main 8d120df's doctor). Set b: Llama-3.2-3B, written
# after set a's run and before set b's, for the doctor frozen by docfix8 (weights past free memory among them); set c:
# Llama-3.2-1B, written after set b's run; set d: Llama-3.1-8B, written after set c's run.
TRIAL_SETS = {
    "a": {
        "ctx-1.2M": (0, "-c 1200000 -np 1 -fa on"),
        "ctx-1.1M-4slots": (0, "-c 1100000 -np 4 --kv-unified -fa on"),
        "ctx-2M-q8kv": (0, "-c 2000000 -ctk q8_0 -ctv q8_0 -fa on"),
        "held100-ctx-400k": (100, "-c 400000 -np 4 --kv-unified -fa on"),
        "held60-ctx-600k": (60, "-c 600000 -np 1 -fa on"),
        "held128-weights": (128, "-c 8192 -np 1 -fa on"),
    },
    "b": {
        "b-ctx-1.4M": (0, "-c 1400000 -np 1 -fa on"),
        "b-held120-ctx-200k-2slots": (120, "-c 200000 -np 2 --kv-unified -fa on"),
        "b-held134-weights": (134, "-c 4096 -np 1 -fa on"),
        "b-held90-ctx-900k-q8kv": (90, "-c 900000 -np 4 --kv-unified -ctk q8_0 -ctv q8_0 -fa on"),
        "b-ctx-1.3M-8slots": (0, "-c 1300000 -np 8 --kv-unified -fa on"),
        "b-held128-ctx-64k": (128, "-c 65536 -np 1 -fa on"),
    },
    "c": {  # Llama-3.2-1B, written after set b's run, for the doctor docfix9 freezes
        "c-ctx-4.6M": (0, "-c 4600000 -np 1 -fa on"),
        "c-held100-ctx-2.5M-q8kv": (100, "-c 2500000 -np 4 --kv-unified -ctk q8_0 -ctv q8_0 -fa on"),
        "c-held137-weights": (137, "-c 4096 -np 1 -fa on"),
        "c-ctx-4.45M-16slots": (0, "-c 4450000 -np 16 --kv-unified -fa on"),
        "c-held60-ctx-2.6M-2slots": (60, "-c 2600000 -np 2 -fa on"),
        "c-held130-ctx-500k": (130, "-c 500000 -np 1 -fa on"),
    },
    "d": {  # Llama-3.1-8B again, written after set c's run, for the doctor of main de3adec (docfix9's, unchanged)
        "d-ctx-1.05M-4streams": (0, "-c 1050000 -np 4 -fa on"),
        "d-held110-ctx-128k-ub4096": (110, "-c 131072 -np 1 -fa on -ub 4096 -b 4096"),
        "d-held122-ctx-32k": (122, "-c 32768 -np 1 -fa on"),
        "d-held100-ctx-800k-q4kv": (100, "-c 800000 -np 1 -ctk q4_0 -ctv q4_0 -fa on"),
        "d-held125-weights": (125, "-c 8192 -np 1 -fa on"),
        "d-held50-ctx-700k-2slots": (50, "-c 700000 -np 2 --kv-unified -fa on"),
    },
    "e": {  # Llama-3.2-3B, written in session 6 before any run of it, for the doctor of main b194d2a (docfix10's):
        # attention without flash attention (its KQ buffer grows with the context), a large micro-batch's compute
        # buffer, 4-bit KV over three streams, and other processes' memory
        "e-fa-off-ctx-500k-ub2048": (0, "-c 500000 -np 1 -fa off -ub 2048 -b 2048"),
        "e-held128-ctx-32k-ub8192": (128, "-c 32768 -np 1 -fa on -ub 8192 -b 8192"),
        "e-ctx-4.6M-q4kv-3streams": (0, "-c 4600000 -np 3 -ctk q4_0 -ctv q4_0 -fa on"),
        "e-held90-ctx-450k-2slots": (90, "-c 450000 -np 2 --kv-unified -fa on"),
        "e-held124-ctx-100k": (124, "-c 100000 -np 1 -fa on"),
        "e-held110-ctx-200k-fa-off": (110, "-c 200000 -np 1 -fa off"),
    },
    "f": {  # Llama-3.1-8B, written in session 6 after set e's run, for the doctor docfix11 freezes (its author did
        # not see these commands): attention without flash attention at a long context and with memory held, a
        # large micro-batch, q8_0 KV over six streams, layers partly on the CPU (-ngl 20), four streams with memory held
        "f-fa-off-ctx-700k": (0, "-c 700000 -np 1 -fa off"),
        "f-held120-ctx-16k-ub8192": (120, "-c 16384 -np 1 -fa on -ub 8192 -b 8192"),
        "f-ctx-2.1M-q8kv-6streams": (0, "-c 2100000 -np 6 -ctk q8_0 -ctv q8_0 -fa on"),
        "f-held80-ctx-900k-ngl20": (80, "-c 900000 -np 1 -fa on -ngl 20"),
        "f-held60-ctx-600k-4streams": (60, "-c 600000 -np 4 -fa on"),
        "f-held104-ctx-100k-fa-off-ub1024": (104, "-c 100000 -np 1 -fa off -ub 1024 -b 1024"),
    },
    "g": {  # Llama-3.2-1B, written in session 6 after set f's run and after docfix12 froze (3a5a487; its author did
        # not see these commands), for main 6823524's doctor, which now decides -fa on and -ub 512 from the printed
        # compute buffer: attention without flash attention (alone, with memory held, over four unified slots, with
        # a 1,024-token micro-batch), an 8,192-token micro-batch with 132 GiB held, and q8_0 V without flash attention
        "g-fa-off-ctx-1.5M": (0, "-c 1500000 -np 1 -fa off"),
        "g-held100-fa-off-ctx-300k-ub1024": (100, "-c 300000 -np 1 -fa off -ub 1024 -b 1024"),
        "g-held132-ctx-64k-ub8192": (132, "-c 65536 -np 1 -fa on -ub 8192 -b 8192"),
        "g-held128-fa-off-ctx-100k": (128, "-c 100000 -np 1 -fa off"),
        "g-ctx-4M-4slots-fa-off": (0, "-c 4000000 -np 4 --kv-unified -fa off"),
        "g-ctx-200k-q8kv-fa-off": (0, "-c 200000 -np 1 -ctk q8_0 -ctv q8_0 -fa off"),
    },
    "h": {  # Llama-3.2-3B, written in session 6 after set g's run and after docfix13 froze (its author did not see
        # these commands): llama.cpp's refusal of a quantized V cache without flash attention, memory failures with
        # flash attention off (where a q8_0 V edit would be refused), a quantized K alone without flash attention,
        # q8_0 KV over four streams with memory held, eight unified slots without flash attention, a 2,048-token
        # micro-batch with memory held
        "h-ctx-300k-q4kv-fa-off": (0, "-c 300000 -np 1 -ctk q4_0 -ctv q4_0 -fa off"),
        "h-held90-ctx-400k-fa-off": (90, "-c 400000 -np 1 -fa off"),
        "h-ctx-1.1M-q8k-fa-off": (0, "-c 1100000 -np 1 -ctk q8_0 -fa off"),
        "h-held115-ctx-350k-q8kv-4streams": (115, "-c 350000 -np 4 -ctk q8_0 -ctv q8_0 -fa on"),
        "h-fa-off-ctx-900k-8slots": (0, "-c 900000 -np 8 --kv-unified -fa off"),
        "h-held120-ctx-160k-ub2048": (120, "-c 160000 -np 1 -fa on -ub 2048 -b 2048"),
    },
    "i": {  # Llama-3.1-8B, written in session 7 before any run of it, for the doctor of main 8c34396 (docfix14's):
        # the model's own context (-c 0) with memory held, a q4_0 K cache beside an f16 V cache, sixteen unified
        # slots, four streams with a 4,096-token micro-batch, half the layers on the GPU with memory held, q8_0 KV
        # over two streams with memory held
        "i-held120-ctx0": (120, "-c 0 -np 1 -fa on"),
        "i-held108-ctx-300k-q4k": (108, "-c 300000 -np 1 -ctk q4_0 -fa on"),
        "i-ctx-1.6M-16slots": (0, "-c 1600000 -np 16 --kv-unified -fa on"),
        "i-held100-ctx-256k-4streams-ub4096": (100, "-c 262144 -np 4 -fa on -ub 4096 -b 4096"),
        "i-held128-ngl16-ctx-128k": (128, "-c 131072 -np 1 -fa on -ngl 16"),
        "i-held70-ctx-1.1M-q8kv-2streams": (70, "-c 1100000 -np 2 -ctk q8_0 -ctv q8_0 -fa on"),
    },
    "j": {  # Llama-3.2-3B, written in session 7 after set i's run and after docfix15 froze (70360b8; its author did not
        # see these commands), for main e51ab7b's doctor: a 4,096-token micro-batch with memory held, flash attention
        # left to its default (auto) over three streams and with a 4-bit KV cache, two streams with a 1,024-token
        # micro-batch, and q8_0 KV with 20 of 28 layers on the GPU, each with other processes' memory
        "j-held126-ctx-64k-ub4096": (126, "-c 65536 -np 1 -fa on -ub 4096 -b 4096"),
        "j-ctx-1.3M-3streams-fa-auto": (0, "-c 1300000 -np 3"),
        "j-held100-ctx-1.3M-q4kv-fa-auto": (100, "-c 1300000 -np 1 -ctk q4_0 -ctv q4_0"),
        "j-held116-ctx-200k-2streams-ub1024": (116, "-c 200000 -np 2 -fa on -ub 1024 -b 1024"),
        "j-held122-ngl20-ctx-400k-q8kv": (122, "-c 400000 -np 1 -fa on -ngl 20 -ctk q8_0 -ctv q8_0"),
        "j-held132-ctx-32k-2slots-unified": (132, "-c 32768 -np 2 --kv-unified -fa on"),
    },
}


def _healthy() -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def start(cmd: list[str], log: Path) -> dict:
    """Start the server; 'started' once /health answers, 'failed' if it exits first, 'timeout' otherwise."""
    t0 = time.time()
    with log.open("wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        outcome = "timeout"
        while time.time() - t0 < WAIT_S:
            if proc.poll() is not None:
                outcome = "failed"
                break
            if _healthy():
                outcome = "started"
                break
            time.sleep(0.5)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return {"outcome": outcome, "seconds": round(time.time() - t0, 1), "rc": proc.returncode,
            "kv_cells": kv_cells(log.read_text(errors="replace"))}


def kv_cells(text: str) -> int | None:
    """Every stream's KV cells in the log's last cache line (None: no cache was allocated): "(N cells, L layers, S/T seqs)",
    this llama.cpp prints the cells of one of T streams (T = 1 with --kv-unified); the line is llamacpp_buffers.KV_LINE."""
    from infer_advisor.engines.llamacpp_buffers import KV_LINE

    cells = re.findall(KV_LINE, text)
    return int(cells[-1][1]) * int(cells[-1][4] or 1) if cells else None


def hold(gib: int) -> subprocess.Popen | None:
    if not gib:
        return None
    code = (f"import torch, time; x = torch.empty({gib} * 2**30, dtype=torch.uint8, device='cuda'); torch.cuda.synchronize(); "
            "print('held', flush=True); time.sleep(3600)")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    p.stdout.readline()  # the memory is held once it prints
    return p


def doctor(log: Path, model: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "infer_advisor.cli", "doctor", str(log), "--gpu", "H200", "--model", model,
                          "--gpus", "1", "--json"], capture_output=True, text=True, timeout=60)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        return {"exit": out.returncode, "stderr": out.stderr[-2000:]}


def trial(name: str, held: int, flags: str, base: list[str], model: str, out: Path) -> dict:
    from infer_advisor.doctor.input_text import apply_edit

    cmd = [*base, *shlex.split(flags)]
    holder = hold(held)
    try:
        row = {"trial": name, "held_gib": held, "command": shlex.join(cmd), "first": start(cmd, out / f"{name}-first.log")}
        if row["first"]["outcome"] != "failed":
            return row
        diag = doctor(out / f"{name}-first.log", model)
        row["doctor"] = {k: diag.get(k) for k in ("error", "error_logged", "starts", "notes", "edits", "exit", "stderr")}
        first = next((e for e in diag.get("edits") or [] if e.get("starts")), None)
        if first is None:
            return row
        fixed = shlex.split(apply_edit(shlex.join(cmd), first["argv"]))
        row.update(edit=first["change"], edit_kv_tokens=first.get("kv_cache_tokens"), fixed_command=shlex.join(fixed),
                   fixed=start(fixed, out / f"{name}-fixed.log"))
        cells, predicted = row["fixed"]["kv_cells"], first.get("kv_cache_tokens")
        if cells and predicted:
            row["kv_error"] = round(predicted / cells - 1, 4)
        return row
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
            time.sleep(2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--server", default="llama-server")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--set", default="a", choices=sorted(TRIAL_SETS), help="which trials (default: a)")
    ap.add_argument("--only", default="", help="comma-separated trial names (default: all of the set)")
    ap.add_argument("--deadline-s", type=float, default=450, help="start no trial after this many seconds")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    base = [args.server, "-m", args.gguf, "-ngl", "99", "--port", str(PORT), "--host", "127.0.0.1", "-v"]  # -v: the KV and free-memory lines
    trials = TRIAL_SETS[args.set]
    names = [n for n in trials if not args.only or n in args.only.split(",")]
    rows, t0 = [], time.time()
    for name in names:
        if time.time() - t0 > args.deadline_s:
            rows.append({"trial": name, "skipped": "deadline"})
            continue
        held, flags = trials[name]
        rows.append(trial(name, held, flags, base, args.model, args.out))
        r = rows[-1]
        print(f"[{time.time() - t0:.0f}s]", name, r["first"]["outcome"], r.get("edit"), (r.get("fixed") or {}).get("outcome"), r.get("kv_error"), flush=True)
        (args.out / "trials.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
