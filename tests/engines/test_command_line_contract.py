"""Contract: the doctor's flag tables (data/engine_cli.yaml) are the engines' own, checked against each engine's
parser or source at the pinned version:

- vLLM 0.33.0: `vllm serve`'s own argument parser (the cached slim venv of tests/emit/vllm_env.py) takes every
  spelling, with the destination the table's setting names, and reads the same values from a command line.
- SGLang 0.5.9: the option strings of `ServerArgs.add_cli_args` in the PyPI wheel's srt/server_args.py (the wheel is
  downloaded once, without dependencies; SGLang's parser cannot be imported without CUDA torch).
- llama.cpp: the cached `llama-server` (tests/support/llama_server.py, llama-cpp-python 0.3.36's vendored llama.cpp)
  lists every spelling and every LLAMA_ARG_* variable in its --help.

TGI's launcher is Rust (not on PyPI): its table's source is launcher/src/main.rs at v3.3.6, read by hand.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

from infer_advisor.engines.command_line import engine_cli, parse_command

pytestmark = pytest.mark.integration

# our setting -> vLLM's argparse destination
_VLLM_DEST = {"model": "model", "tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "max_model_len": "max_model_len",
              "memory_fraction": "gpu_memory_utilization", "kv_cache_dtype": "kv_cache_dtype", "max_num_seqs": "max_num_seqs",
              "max_num_batched_tokens": "max_num_batched_tokens", "dtype": "dtype", "quantization": "quantization",
              "max_loras": "max_loras", "max_lora_rank": "max_lora_rank", "enforce_eager": "enforce_eager", "enable_lora": "enable_lora"}
_VLLM_SCRIPT = r"""
import json, sys
from vllm.entrypoints.cli.serve import ServeSubcommand
from vllm.utils.argparse_utils import FlexibleArgumentParser
top = FlexibleArgumentParser(prog="vllm")
sub = top.add_subparsers(dest="subcommand")
ServeSubcommand().subparser_init(sub)
serve = sub.choices["serve"]
dests = {s: a.dest for a in serve._actions for s in a.option_strings}
ns = vars(top.parse_args(json.loads(sys.argv[1])))
print(json.dumps({"dests": dests, "parsed": {k: v for k, v in ns.items() if isinstance(v, (int, float, str, bool))}}))
"""
SGLANG_VERSION = "0.5.9"


def test_vllm_table_is_vllm_serves_own_parser():
    from tests.emit.vllm_env import vllm_python

    command = ("vllm serve meta-llama/Llama-3.1-8B -tp 2 --max_model_len 32k --gpu-memory-utilization=0.85 --kv-cache-dtype fp8 "
               "--max-num-seqs 64 --max-num-batched-tokens 4096 -q fp8 --enforce-eager --enable-lora --max-loras 4 --max-lora-rank 16")
    argv = command.split()[1:]
    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "HF_HUB_OFFLINE": "1", "VLLM_LOGGING_LEVEL": "ERROR"}
    r = subprocess.run([str(vllm_python()), "-c", _VLLM_SCRIPT, json.dumps(argv)], capture_output=True, text=True, env=env, timeout=600)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    assert lines, r.stderr[-3000:]
    theirs = json.loads(lines[-1])
    cli = engine_cli("vllm")
    for entry in [*cli.options, *cli.switches]:
        for flag in entry.flags:
            assert theirs["dests"].get(flag) == _VLLM_DEST[entry.setting], (flag, theirs["dests"].get(flag))
    ours = parse_command(command).settings
    parsed = theirs["parsed"]
    parsed["model"] = parsed.get("model_tag") or parsed["model"]
    for setting, value in ours.items():
        assert parsed[_VLLM_DEST[setting]] == value, (setting, value, parsed[_VLLM_DEST[setting]])


def _sglang_options() -> set[str]:
    from tests.support.venvs import venv_root

    folder = venv_root() / f"sglang-{SGLANG_VERSION}-wheel"
    wheels = sorted(folder.glob("sglang-*.whl")) if folder.exists() else []
    if not wheels:
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-input", "--no-deps", "--only-binary", ":all:",
                        f"sglang=={SGLANG_VERSION}", "-d", str(folder)], check=True, timeout=600)
        wheels = sorted(folder.glob("sglang-*.whl"))
    with zipfile.ZipFile(wheels[0]) as whl:
        source = whl.read("sglang/srt/server_args.py").decode()
    return set(re.findall(r'"(--[a-z0-9][a-z0-9-]*)"', source))


def test_sglang_table_is_sglangs_server_args():
    options = _sglang_options()
    for entry in [*engine_cli("sglang").options, *engine_cli("sglang").switches]:
        for flag in entry.flags:
            if flag in options:
                continue
            # argparse's prefix abbreviation (allow_abbrev): the spelling must be the prefix of exactly one option
            starts = [o for o in options if o.startswith(flag)]
            assert len(starts) == 1, (flag, starts)


def test_llama_cpp_table_is_llama_servers_help():
    from tests.support.llama_server import build_llama_server

    help_text = subprocess.run([str(build_llama_server()), "--help"], capture_output=True, text=True, timeout=60).stdout
    words = set(re.findall(r"(?<![\w-])(-{1,2}[a-z][a-z0-9-]*)", help_text))
    cli = engine_cli("llama.cpp")
    for entry in [*cli.options, *cli.switches]:
        for flag in entry.flags:
            assert flag in words, flag
    for name in cli.env:
        assert f"env: {name})" in help_text or f"env: {name}" in help_text, name
