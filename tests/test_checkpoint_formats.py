"""The platform x checkpoint-format table (data/formats_by_platform.yaml) and its one loader."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from infer_advisor.engines.checkpoint_formats import FormatsByPlatform, checkpoint_format, formats_by_platform, loadable
from infer_advisor.engines.profiles import engine_profile

ENGINES = ("vllm", "sglang", "tgi", "llama.cpp", "trtllm")


def test_every_engine_row_is_at_the_pinned_version_and_covers_every_platform_and_format():
    table = formats_by_platform()
    assert set(table.engines) == set(ENGINES)
    for name, row in table.engines.items():
        assert row.version == engine_profile(name).version, name  # a new engine release is a new reading of its source
        for platform in ("cuda", "rocm", "cpu"):
            for fmt in table.formats:
                assert loadable(name, platform, fmt) is not None


@pytest.mark.parametrize("engine, platform, fmt, options, loads", [
    ("vllm", "rocm", "modelopt-fp8", {}, True),                       # listed in RocmPlatform.supported_quantization at 0.33.0
    ("vllm", "rocm", "modelopt-fp8", {"version": "0.20.0"}, False),    # ... and absent at 0.20.0
    ("vllm", "cuda", "gguf", {}, False),                              # removed in 0.24.0
    ("vllm", "cuda", "gguf", {"version": "0.23.0"}, True),
    ("vllm", "cuda", "mxfp4", {"compute_capability": 7.5}, False),    # Mxfp4Config.get_min_capability 80
    ("sglang", "rocm", "modelopt-fp8", {}, False),
    ("sglang", "rocm", "mxfp4", {"gfx": "gfx950"}, True),
    ("sglang", "rocm", "mxfp4", {"gfx": "gfx942"}, False),
    ("tgi", "rocm", "awq", {}, False),
    ("tgi", "rocm", "gptq", {}, True),
    ("llama.cpp", "cpu", "gguf", {}, True),
    ("llama.cpp", "cuda", "bf16", {}, False),
    ("trtllm", "rocm", "bf16", {}, False),
    ("trtllm", "cuda", "modelopt-nvfp4", {"compute_capability": 9.0}, False),
])
def test_cells_read_from_the_engines_source(engine, platform, fmt, options, loads):
    answer = loadable(engine, platform, fmt, **options)
    assert answer.loads is loads and answer.source


def test_engines_without_a_row_answer_none():
    assert loadable("transformers", "cuda", "awq") is None


def test_checkpoint_format_of_a_plan():
    assert checkpoint_format("fp8", published_format="quark") == "quark"
    assert checkpoint_format("fp8", online=True) == "fp8-online"
    assert checkpoint_format("gguf-q4_k_m") == "gguf" and checkpoint_format("none") == "bf16"
    assert checkpoint_format("exl2") is None


def test_the_loader_refuses_unknown_formats_and_missing_cells():
    good = formats_by_platform().model_dump()
    bad = {**good, "engines": {**good["engines"], "tgi": {**good["engines"]["tgi"], "cuda": {"bf16": {"loads": True, "source": "x" * 8}}}}}
    with pytest.raises(ValidationError, match="engines.tgi.cuda: no cell for"):
        FormatsByPlatform.model_validate(bad)
    typo = {**good, "preference": {**good["preference"], "rocm": ["qurak"]}}
    with pytest.raises(ValidationError, match="preference.rocm: unknown formats"):
        FormatsByPlatform.model_validate(typo)
