"""CLI behaviour that needs no heavy dependency: help, bad input, lazy imports."""

import json
import subprocess
import sys

from infer_advisor.cli import main


def test_top_level_help_lists_commands(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    for cmd in ("plan", "gpus", "models", "schema", "quantize", "bench", "calibrate"):
        assert cmd in out


def test_unknown_command_exits_2(capsys):
    try:
        main(["plna"])
    except SystemExit as exc:
        assert exc.code == 2
    else:  # pragma: no cover
        raise AssertionError("argparse should exit")


def test_schema_is_the_plan_model(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "DeploymentPlan"
    for field in ("model", "hardware", "memory", "engine", "quantization", "dtype", "parallelism", "decisions", "warnings"):
        assert field in schema["properties"]


def test_plan_does_not_import_heavy_modules():
    code = (
        "import sys; from infer_advisor.cli import main; "
        "rc = main(['plan', '--model', 'meta-llama/Llama-2-7b-hf', '--gpu', 'A100-80GB', '--json']); "
        "heavy = [m for m in ('torch', 'transformers', 'vllm', 'ctranslate2', 'llmcompressor', 'huggingface_hub', 'matplotlib', 'numpy') if m in sys.modules]; "
        "print('HEAVY', heavy, rc, file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert "HEAVY [] 0" in proc.stderr, proc.stderr[-2000:]


def test_every_request_field_is_documented():
    from infer_advisor.plan.request import PlanRequest

    missing = [name for name, f in PlanRequest.model_fields.items() if not f.description]
    assert missing == []
