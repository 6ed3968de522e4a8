"""Contract: what the Triton artifacts (--stack nvidia-triton) hand to Triton 26.07 and TensorRT-LLM 1.2.1.

Triton cannot be installed here (PyPI's `tritonserver` is a 0.0.1.dev0 placeholder pointing at the NGC containers), so:

- the `tritonserver` command is parsed against the long options of server v2.71.0's src/command_line_parser.cc
  (tests/emit/data/engine_flags.yaml `tritonserver`), with negative cases;
- `model.yaml` keys are checked against the LLM() arguments trtllm-serve builds and the `triton_config` keys the
  LLM API model's model.py reads (`triton_llmapi`);
- `config.pbtxt` is parsed by Triton's own ModelConfig protobuf (tritonclient 2.71.0 = Triton 26.07 ships
  model_config_pb2; integration: a cached venv with the 112 kB wheel and protobuf, a few seconds from nothing), and
  its inputs/outputs are checked against the model's documented ones.
"""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest
import yaml

from infer_advisor.emit import render
from infer_advisor.emit.context import build_context
from tests.emit.checks import check_file, flag_value
from tests.emit.plans import GOLDEN, local_plan, make_plan
from tests.emit.test_engine_contracts import FLAGS, ParseError, parse

CASES = [case for case in GOLDEN if case.startswith("trtllm-triton")]
REPO = "model_repository/tensorrt_llm"


def _commands(plan) -> list[list[str]]:
    ctx = build_context(plan)
    commands = [ctx.argv_host, ctx.argv_container, ctx.argv_k8s]
    for g in ctx.replica_groups:
        commands += [g.argv_host, g.argv_container]
    return commands


@pytest.mark.parametrize("case", CASES)
def test_tritonserver_commands_parse_with_the_v2_71_option_list(case):
    plan = make_plan(**GOLDEN[case])
    ctx = build_context(plan)
    seen_ports = set()
    for argv in _commands(plan):
        ns = parse("tritonserver", argv)
        ports = (int(ns.http_port), int(ns.grpc_port), int(ns.metrics_port))
        assert len(set(ports)) == 3
        assert ns.disable_auto_complete_config  # config.pbtxt is complete on its own (test below)
        backend, setting = ns.backend_config.split(",", 1)
        assert backend == "python" and setting.split("=")[0] in FLAGS["tritonserver"]["backend_config"]["python"]
        assert ns.model_repository in ("model_repository", ctx.model_repository)
        seen_ports.add(ports)
    assert (8000, 8001, 8002) in seen_ports
    # Replicas on one node: no two share a port.
    groups = ctx.replica_groups
    assert len({p.port for g in groups for p in g.ports}) == 3 * len(groups)


@pytest.mark.parametrize(
    "argv",
    [["--model-repositry=/m"], ["--http-port"], ["--disable-auto-complete-config=true", "--no-such-flag=1"]],
    ids=["misspelled", "missing-value", "unknown"],
)
def test_tritonserver_option_list_rejects_what_tritonserver_rejects(argv):
    with pytest.raises(ParseError):
        parse("tritonserver", [*FLAGS["tritonserver"]["command"], *argv])


@pytest.mark.parametrize("case", CASES)
def test_model_yaml_holds_llm_api_arguments(case):
    plan = make_plan(**GOLDEN[case])
    files = render(plan, "all")
    args = yaml.safe_load(files[f"{REPO}/1/model.yaml"])
    spec = FLAGS["triton_llmapi"]
    assert set(args) - {"triton_config"} <= set(spec["llm_args"]), set(args) - set(spec["llm_args"])
    assert set(args["triton_config"]) <= set(spec["triton_config"])
    for section in ("kv_cache_config", "speculative_config"):
        fields = set(FLAGS["trtllm"]["options_fields"][section]) | ({"free_gpu_memory_fraction"} if section == "kv_cache_config" else set())
        assert set(args.get(section, {})) <= fields, section
    e, p = plan.engine, plan.parallelism
    assert args["model"] == plan.model.name and args["backend"] == "pytorch"
    assert args["tensor_parallel_size"] == p.tensor_parallel_size and args["max_seq_len"] == e.max_model_len
    assert args["max_batch_size"] == e.max_num_seqs and args["kv_cache_config"]["free_gpu_memory_fraction"] == e.gpu_memory_utilization
    assert ("speculative_config" in args) == (plan.speculative is not None)
    # The same LLM() settings trtllm-serve gets for this plan without Triton (its flags + options file).
    plain = make_plan(**{**GOLDEN[case], "stack": "nvidia"})
    serve = parse("trtllm", build_context(plain).argv_container)
    assert int(serve.max_num_tokens) == args["max_num_tokens"] and int(serve.max_seq_len) == args["max_seq_len"]
    options = yaml.safe_load(render(plain, "script")["trtllm-options.yaml"])
    assert {k: v for k, v in args["kv_cache_config"].items() if k != "free_gpu_memory_fraction"} == options["kv_cache_config"]


# The generated module alone: tritonclient.grpc's package __init__ needs grpcio, which the proto does not.
_PARSE = """
import importlib.util, json, sys
from google.protobuf import json_format, text_format
origin = importlib.util.find_spec("tritonclient").submodule_search_locations[0] + "/grpc/model_config_pb2.py"
spec = importlib.util.spec_from_file_location("model_config_pb2", origin)
model_config_pb2 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(model_config_pb2)
config = text_format.Parse(sys.stdin.read(), model_config_pb2.ModelConfig())
print(json.dumps(json_format.MessageToDict(config, preserving_proto_field_name=True)))
"""


@pytest.fixture(scope="module")
def triton_proto_python():
    from tests.support.venvs import ensure_venv

    return ensure_venv("tritonclient-proto", [["--no-deps", "tritonclient==2.71.0"], ["protobuf>=6.30,<7"]])


def _parse_pbtxt(py, text: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(py), "-c", _PARSE], input=text, capture_output=True, text=True, timeout=120)


@pytest.mark.integration
@pytest.mark.parametrize("case", CASES)
def test_config_pbtxt_parses_with_tritons_model_config_proto(case, triton_proto_python):
    plan = make_plan(**GOLDEN[case])
    files = render(plan, "all")
    r = _parse_pbtxt(triton_proto_python, files[f"{REPO}/config.pbtxt"])
    assert r.returncode == 0, r.stderr
    config = json.loads(r.stdout)
    triton_config = yaml.safe_load(files[f"{REPO}/1/model.yaml"])["triton_config"]
    assert config["name"] == plan.engine.served_model_name == REPO.rsplit("/", 1)[-1]
    assert config["backend"] == "python"
    assert config.get("max_batch_size", 0) == triton_config["max_batch_size"] == 0
    assert config["model_transaction_policy"]["decoupled"] is True and triton_config["decoupled"] is True
    assert config["instance_group"] == [{"count": 1, "kind": "KIND_CPU"}]
    spec = FLAGS["triton_llmapi"]
    inputs = {i["name"]: i for i in config["input"]}
    assert set(inputs) <= set(spec["inputs"]) and {"text_input", "streaming", "sampling_param_max_tokens"} <= set(inputs)
    assert not inputs["text_input"].get("optional") and all(i.get("optional") for n, i in inputs.items() if n != "text_input")
    assert inputs["streaming"]["data_type"] == "TYPE_BOOL" and inputs["sampling_param_max_tokens"]["data_type"] == "TYPE_INT32"
    assert {o["name"] for o in config["output"]} <= set(spec["outputs"]) and config["output"][0]["name"] == "text_output"


@pytest.mark.integration
def test_the_proto_parser_rejects_a_field_triton_does_not_know(triton_proto_python):
    """NEGATIVE: the same parser fails a misspelled field and a bad enum, so a pass above means something."""
    text = render(make_plan(**GOLDEN[CASES[0]]), "all")[f"{REPO}/config.pbtxt"]
    for bad in (text.replace("max_batch_size:", "max_batch_sise:"), text.replace("KIND_CPU", "KIND_CPUS")):
        r = _parse_pbtxt(triton_proto_python, bad)
        assert r.returncode != 0 and "ParseError" in r.stderr


def test_local_checkpoint_is_mounted_at_its_own_path(tmp_path):
    """model.yaml names the model once for serve.sh and the image: a local folder (here with shell/YAML specials) is
    bound at the same path in docker, compose and Kubernetes, and stays quoted everywhere."""
    folder = tmp_path / "my models $(x), 'q' \"d\" `b`"
    plan = local_plan(str(folder), gpu="H100-80GB", stack="nvidia-triton")
    files = render(plan, "all")
    for name, text in files.items():
        check_file(name, text)
    assert yaml.safe_load(files[f"{REPO}/1/model.yaml"])["model"] == str(folder)
    run_line = next(line.strip("` ") for line in files["README.md"].splitlines() if "docker run" in line)
    mount = shlex.split(run_line)[shlex.split(run_line).index("--mount") + 1]
    assert mount.count(str(folder).replace('"', '""')) == 2  # source= and target=, CSV-quoted
    compose = yaml.safe_load(files["docker-compose.yml"])
    bind = next(v for v in compose["services"]["server"]["volumes"] if v["type"] == "bind")
    assert bind["source"].replace("$$", "$") == bind["target"].replace("$$", "$") == str(folder)
    pod = next(d for d in yaml.safe_load_all(files["k8s.yaml"]) if d and d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert any(m["mountPath"] == str(folder) for m in pod["containers"][0]["volumeMounts"])
    assert flag_value(pod["containers"][0]["command"], "--model-repository") == build_context(plan).model_repository
