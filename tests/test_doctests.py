"""Every ``>>>`` example in the package's docstrings runs as a doctest and shows its true output.

An example that needs a log file, a GPU, the network or heavy work is a plain ``::`` illustration instead (naming the
test that holds a real case); nothing here may write into the working directory.
"""

from __future__ import annotations

import doctest
import importlib
import os
import pkgutil

import pytest

os.environ.setdefault("INFER_ADVISOR_NO_NVML", "1")

import infer_advisor  # noqa: E402

# Optional heavy extras: a module that imports one of these is skipped only when the import fails for that reason.
_EXTRAS = ("torch", "vllm", "ctranslate2", "awq", "gptqmodel", "transformers", "llama_cpp", "gguf")
# Modules whose docstrings another change of this session edits; their examples are fixed after it merges.
_NOT_MODULES = {"infer_advisor.cli.__main__"}  # running it is the CLI


def _module_names() -> list[str]:
    names = [infer_advisor.__name__]
    names += [m.name for m in pkgutil.walk_packages(infer_advisor.__path__, infer_advisor.__name__ + ".")]
    return sorted(n for n in names if n not in _NOT_MODULES)


@pytest.mark.parametrize("name", _module_names())
def test_module_doctests(name: str, tmp_path, monkeypatch) -> None:
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        if (exc.name or "").split(".")[0] in _EXTRAS:
            pytest.skip(f"optional extra {exc.name} not installed")
        raise
    monkeypatch.chdir(tmp_path)  # an example that wrote a file would leave it here, and fail below
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)  # as pytest --doctest-modules
    report: list[str] = []
    for test in finder.find(module, name):
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)
    assert not list(tmp_path.iterdir()), f"{name}'s examples wrote {sorted(p.name for p in tmp_path.iterdir())}"
