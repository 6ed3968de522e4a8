"""The public surface: render() kinds, write_artifacts(), overwrite refusal, atomic writes, template version choice."""

from __future__ import annotations

import warnings

import pytest

from infer_advisor._output import MANIFEST, read_manifest
from infer_advisor.emit import ARTIFACT_KINDS, render, write_artifacts
from infer_advisor.emit.templating import TemplateVersionWarning, template_name
from infer_advisor.errors import EmitError, InferAdvisorError, OutputExistsError
from tests.emit.plans import GOLDEN, make_plan


@pytest.fixture(scope="module")
def plan():
    return make_plan(**GOLDEN["vllm"])


def test_kinds_select_files(plan):
    assert ARTIFACT_KINDS == ("script", "docker", "compose", "k8s", "readme")
    assert set(render(plan, "readme")) == {"README.md"}
    assert set(render(plan, "script")) == {"serve.sh", "README.md"}
    assert set(render(plan, "docker")) == {"Dockerfile", "README.md"}
    assert set(render(plan, "script,k8s")) == {"serve.sh", "k8s.yaml", "README.md"}
    assert set(render(plan, "all")) == {"serve.sh", "Dockerfile", "docker-compose.yml", "k8s.yaml", "README.md"}
    assert plan.render("compose").keys() == {"docker-compose.yml", "README.md"}  # DeploymentPlan.render delegates here


def test_script_engines_get_a_python_script():
    files = render(make_plan(**GOLDEN["ctranslate2"]), "script")
    assert set(files) == {"generate.py", "README.md"}
    assert "no HTTP server" in files["README.md"] and "no HTTP server" in files["generate.py"]


def test_unknown_kind_is_a_one_line_error(plan):
    with pytest.raises(EmitError, match="Unknown artifact kind 'helm'.*script, docker, compose, k8s, readme"):
        render(plan, "helm")
    assert issubclass(EmitError, InferAdvisorError) and issubclass(EmitError, ValueError)


def test_write_refuses_non_empty_out_without_force(plan, tmp_path):
    out = tmp_path / "deploy"
    paths = write_artifacts(plan, ["script", "docker"], out, force=False)
    assert sorted(p.name for p in paths) == ["Dockerfile", "README.md", "serve.sh"]
    assert (out / "serve.sh").stat().st_mode & 0o111
    with pytest.raises(OutputExistsError, match="--force"):
        write_artifacts(plan, ["k8s"], out, force=False)
    write_artifacts(plan, ["k8s"], out, force=True)
    # replaced, not merged; the manifest lists what infer-advisor wrote
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "README.md", "k8s.yaml"]
    assert read_manifest(out)["files"] == ["README.md", "k8s.yaml"]
    assert [p.name for p in tmp_path.iterdir()] == ["deploy"]  # no temp dirs left beside it


def test_empty_existing_out_is_fine(plan, tmp_path):
    (tmp_path / "empty").mkdir()
    render(plan, "script", out=tmp_path / "empty")
    assert (tmp_path / "empty" / "serve.sh").is_file()


def test_a_failing_render_writes_nothing(tmp_path, monkeypatch):
    plan = make_plan(**GOLDEN["vllm"])
    from infer_advisor.emit import templating

    real = templating.render_template

    def broken(name, **values):
        if "k8s" in name:
            raise EmitError("boom")
        return real(name, **values)

    monkeypatch.setattr(templating, "render_template", broken)
    with pytest.raises(EmitError, match="boom"):
        render(plan, "all", out=tmp_path / "out")
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == []


def test_strict_undefined_raises(tmp_path, monkeypatch):
    from infer_advisor.emit.templating import environment, render_template

    template = environment().from_string("{{ c.no_such_field }}")
    monkeypatch.setattr(environment(), "get_template", lambda name: template)
    with pytest.raises(EmitError, match="no_such_field"):
        render_template("x", c=object())


def test_template_version_exact_then_closest_earlier():
    assert template_name("vllm", "serve", ".sh", "0.33.0") == "vllm/serve.0.33.sh.j2"
    assert template_name("vllm", "serve", ".sh", "0.33.7") == "vllm/serve.0.33.sh.j2"
    with pytest.warns(TemplateVersionWarning, match="closest earlier"):
        assert template_name("vllm", "serve", ".sh", "0.40.1") == "vllm/serve.0.33.sh.j2"
    with pytest.raises(EmitError, match="older than every"):
        template_name("vllm", "serve", ".sh", "0.20.0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        template_name("llama.cpp", "serve", ".sh", "b7200")


def test_service_is_never_named_vllm_and_images_are_pinned():
    for options in GOLDEN.values():
        files = render(make_plan(**options), "k8s")
        assert "name: vllm\n" not in files["k8s.yaml"]
        assert ":latest" not in files["k8s.yaml"]
