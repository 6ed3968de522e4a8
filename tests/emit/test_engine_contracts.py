"""Contract: the commands the artifacts run are accepted by each engine version's own argument parser.

vLLM is checked by its real parser (test_vllm_contract.py). The engines added for issue 12 cannot be installed from
PyPI on a CPU machine (TensorRT-LLM's PyPI package is a placeholder that downloads from pypi.nvidia.com; MLC LLM's
wheels live on mlc.ai; TabbyAPI is not packaged; mistral.rs's PyPI wheel holds the Python bindings, not the
`mistralrs` CLI), so their commands are parsed against the flag lists of their documentation and source at the
pinned version (tests/emit/data/engine_flags.yaml, each with its source and commit). ExLlamaV2's converter is in the
exllamav2 wheel on PyPI: its own argparse definitions are run (integration test below).
"""

from __future__ import annotations

import argparse
import shlex
from functools import cache
from pathlib import Path

import pytest
import yaml

from infer_advisor.emit import render
from infer_advisor.emit.context import build_context
from tests.emit.plans import GOLDEN, make_plan

FLAGS = yaml.safe_load((Path(__file__).parent / "data" / "engine_flags.yaml").read_text(encoding="utf-8"))


class ParseError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's exit_on_error does not cover every case (unknown arguments)
        raise ParseError(message)


@cache
def parser_for(name: str) -> _Parser:
    entry = FLAGS[name]
    parser = _Parser(prog=" ".join(entry["command"]), allow_abbrev=False, add_help=False)
    for i in range(entry["positionals"]):
        parser.add_argument(f"positional{i}")
    for flag, spec in entry["flags"].items():
        names = [flag, *spec.get("aliases", [])]
        if spec["value"]:
            parser.add_argument(*names, choices=spec.get("choices"), nargs=spec.get("nargs"))
        else:
            parser.add_argument(*names, action="store_true")
    return parser


def parse(name: str, argv: list[str]) -> argparse.Namespace:
    command = FLAGS[name]["command"]
    assert argv[: len(command)] == command, (argv[:3], command)
    return parser_for(name).parse_args(argv[len(command) :])


def exec_argv(script: str) -> list[str]:
    return shlex.split(script.rsplit("exec ", 1)[1].replace("\\\n", " "))


ENGINE_CASES = [
    case for case, options in GOLDEN.items()
    if (plan := make_plan(**options)).engine.name in ("trtllm", "mlc", "exllamav2", "mistralrs") and plan.engine.server is None
]  # TensorRT-LLM behind Triton: test_triton_contract.py


@pytest.mark.parametrize("case", ENGINE_CASES)
def test_launch_commands_parse_with_the_engine_flag_list(case):
    plan = make_plan(**GOLDEN[case])
    name = plan.engine.name
    ctx = build_context(plan)
    commands = [exec_argv(render(plan, "script")["serve.sh"]), ctx.argv_container, ctx.argv_k8s]
    for argv in commands:
        if name == "exllamav2":  # python3 main.py / /opt/venv/bin/python /app/main.py
            argv = ["python3", "main.py", *argv[2:]]
        ns = parse(name, argv)
        if name == "mlc":
            keys = dict(item.split("=", 1) for item in ns.overrides.split(";"))
            assert set(keys) <= set(FLAGS["mlc"]["overrides"]), set(keys) - set(FLAGS["mlc"]["overrides"])
            assert int(keys["context_window_size"]) == plan.engine.max_model_len
        if name == "trtllm":
            assert ns.backend == "pytorch" and int(ns.max_seq_len) == plan.engine.max_model_len
            assert int(ns.tensor_parallel_size) == plan.parallelism.tensor_parallel_size
        if name == "mistralrs":
            assert int(ns.max_seq_len) == plan.engine.max_model_len and ns.cpu == (plan.hardware.kind == "cpu")
        if name == "exllamav2":
            assert int(ns.max_seq_len) == plan.engine.max_model_len and int(ns.cache_size) % 256 == 0


@pytest.mark.parametrize("case", [c for c in ENGINE_CASES if make_plan(**GOLDEN[c]).engine.name == "mlc"])
def test_mlc_preparation_steps_parse(case):
    plan = make_plan(**GOLDEN[case])
    for where in ("prepare_host", "prepare_container"):
        for step in getattr(build_context(plan), where):
            if step.argv[0].endswith("hf"):
                continue  # huggingface_hub's CLI
            ns = parse({"convert_weight": "mlc_convert_weight", "gen_config": "mlc_gen_config", "compile": "mlc_compile"}[step.argv[1]], step.argv)
            if step.argv[1] == "gen_config":
                assert ns.conv_template in FLAGS["mlc_gen_config"]["flags"]["--conv-template"]["choices"]


def test_trtllm_options_file_names_llm_api_fields():
    for case in ("trtllm", "trtllm-speculative"):
        options = yaml.safe_load(render(make_plan(**GOLDEN[case]), "script")["trtllm-options.yaml"])
        for section, fields in options.items():
            assert set(fields) <= set(FLAGS["trtllm"]["options_fields"][section]), section


@pytest.mark.parametrize(
    "name, argv",
    [
        ("trtllm", ["trtllm-serve", "m", "--no_such_flag", "1"]),
        ("trtllm", ["trtllm-serve", "m", "--backend", "onnx"]),
        ("mistralrs", ["mistralrs", "serve", "--isq", "q4_k_m"]),
        ("mistralrs", ["mistralrs", "serve", "--pa-cache-type", "fp8"]),
        ("mlc", ["mlc_llm", "serve", "m", "--mode", "batch"]),
        ("mlc_gen_config", ["mlc_llm", "gen_config", "m", "--quantization", "q4f16_9", "--conv-template", "LM", "--output", "o"]),
        ("exllamav2", ["python3", "main.py", "--cache-mode", "FP8"]),
        ("exllamav2", ["python3", "main.py", "--served-model-name", "x"]),
    ],
    ids=["trt-unknown", "trt-backend", "mistralrs-isq", "mistralrs-cache", "mlc-mode", "mlc-quant", "tabby-cache", "tabby-unknown"],
)
def test_flag_lists_reject_what_the_engines_reject(name, argv):
    """NEGATIVE: the same parsers fail an unknown flag or a value outside the engine's set, so a pass means something."""
    with pytest.raises(ParseError):
        parse(name, argv)


@pytest.mark.integration
def test_exl2_conversion_flags_parse_with_exllamav2s_own_argparse(tmp_path):
    """exllamav2 0.3.2 from PyPI (1.5 MB wheel, installed without its CUDA dependencies): the ArgumentParser statements
    of exllamav2/conversion/convert_exl2.py are executed on their own (importing the module would build its CUDA
    extension) and parse the conversion step the artifacts run."""
    import ast
    import subprocess

    from tests.support.venvs import ensure_venv

    py = ensure_venv("exllamav2", [["--no-deps", "exllamav2==0.3.2"]])
    source = subprocess.run(
        [str(py), "-c", "import importlib.util as u; print(u.find_spec('exllamav2').submodule_search_locations[0])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    tree = ast.parse((Path(source) / "conversion" / "convert_exl2.py").read_text(encoding="utf-8"))
    statements = [
        node for node in tree.body
        if isinstance(node, (ast.Assign, ast.Expr)) and "parser" in ast.unparse(node).split("(")[0] and "parse_args" not in ast.unparse(node)
    ]
    assert len(statements) > 10, "convert_exl2.py no longer defines its parser at module level"
    namespace: dict = {"argparse": argparse}
    exec(compile(ast.Module(body=statements, type_ignores=[]), "convert_exl2.py", "exec"), namespace)  # noqa: S102
    parser: argparse.ArgumentParser = namespace["parser"]
    plan = make_plan(**GOLDEN["exllamav2"])
    (step,) = [s for s in build_context(plan).prepare_container if "convert_exl2" in " ".join(s.argv)]
    ns = parser.parse_args(step.argv[3:])
    assert ns.bits == plan.quantization.bits and ns.compile_full and ns.in_dir and ns.out_dir
    with pytest.raises(SystemExit):
        parser.parse_args(["--no_such_flag"])
