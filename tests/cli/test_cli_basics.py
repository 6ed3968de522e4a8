"""CLI behaviour that needs no heavy dependency: help, bad input, lazy imports."""

import json
import os
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


def _env(**extra: str) -> dict[str, str]:
    """A bare environment for a child interpreter; PYTHONPATH kept, so a checkout's own source is the one run."""
    keep = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
    return {"PATH": "/usr/bin:/bin", **keep, **extra}


def test_plan_does_not_import_heavy_modules():
    code = (
        "import sys; from infer_advisor.cli import main; "
        "rc = main(['plan', '--model', 'meta-llama/Llama-2-7b-hf', '--gpu', 'A100-80GB', '--json']); "
        "heavy = [m for m in ('torch', 'transformers', 'vllm', 'ctranslate2', 'llmcompressor', 'huggingface_hub', 'matplotlib', 'numpy') if m in sys.modules]; "
        "print('HEAVY', heavy, rc, file=sys.stderr); "
        # pydantic's plugin loader imports importlib.metadata only to find no plugins (cli._no_pydantic_plugins)
        "print('METADATA', 'importlib.metadata' in sys.modules, file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(HF_HUB_OFFLINE="1"))
    assert "HEAVY [] 0" in proc.stderr, proc.stderr[-2000:]
    assert "METADATA False" in proc.stderr, proc.stderr[-2000:]


def test_pydantic_plugins_stay_off_and_the_loader_still_answers():
    """With the CLI's shortcut the loader reports no plugins, as pydantic's own does for __all__, and any other
    name still comes from pydantic's loader."""
    code = (
        "import sys; from infer_advisor import cli; cli._no_pydantic_plugins(); "
        "from pydantic.plugin._loader import get_plugins, PYDANTIC_ENTRY_POINT_GROUP; "
        "print(list(get_plugins()), PYDANTIC_ENTRY_POINT_GROUP)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
    assert proc.stdout.split() == ["[]", "pydantic"], proc.stderr[-2000:]


def test_every_request_field_is_documented():
    from infer_advisor.request import PlanRequest

    missing = [name for name, f in PlanRequest.model_fields.items() if not f.description]
    assert missing == []


def test_an_unexpected_error_has_its_own_exit_code_and_one_line(monkeypatch, capsys):
    """The probe: crashes exited 1, the code of an infeasible plan, so a script could not tell them apart."""
    from infer_advisor.cli import plan_cmd

    def crash(ns):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(plan_cmd, "run", crash)
    assert main(["plan", "--model", "x"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("internal error: ZeroDivisionError: division by zero.")
    assert "--debug" in err and "Traceback" not in err
    for argv in (["--debug", "plan", "--model", "x"], ["plan", "--model", "x", "--debug"]):
        try:
            main(argv)
        except ZeroDivisionError:
            pass
        else:  # pragma: no cover
            raise AssertionError("--debug lets the traceback through")
    monkeypatch.setenv("INFER_ADVISOR_DEBUG", "1")
    try:
        main(["plan", "--model", "x"])
    except ZeroDivisionError:
        pass
    else:  # pragma: no cover
        raise AssertionError("INFER_ADVISOR_DEBUG=1 lets the traceback through")


def test_top_level_help_documents_debug(capsys):
    try:
        main(["--help"])
    except SystemExit:
        pass
    assert "--debug" in capsys.readouterr().out


def test_a_closed_pipe_is_quiet(tmp_path):
    """The probe: `schema | head` and `gpus | head` ended in BrokenPipeError tracebacks (or rich's exit 1)."""
    import os

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "INFER_ADVISOR_NO_NVML": "1"}
    for args in (["schema"], ["gpus"], ["models"], ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB"]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "infer_advisor.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        proc.stdout.close()  # what `| head` does once it has its lines
        err = proc.stderr.read().decode()
        assert proc.wait() == 141, (args, err)
        assert err == "", (args, err)


def test_the_garbage_collector_pauses_only_while_a_quick_command_runs(monkeypatch):
    import gc

    from infer_advisor.cli import plan_cmd

    seen = []
    monkeypatch.setattr(plan_cmd, "run", lambda ns: seen.append(gc.isenabled()) or 0)
    assert gc.isenabled()
    assert main(["plan", "--model", "x"]) == 0
    assert seen == [False] and gc.isenabled()  # off while plan ran, on again after


def test_help_is_as_wide_as_argparse_makes_it(monkeypatch):
    """The CLI's formatter finds the width as shutil.get_terminal_size() does (argparse's own way), without shutil."""
    import shutil

    from infer_advisor.cli import _terminal_columns

    for columns in ("132", "40", "0", "wide", None):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        assert _terminal_columns() == shutil.get_terminal_size().columns, columns
