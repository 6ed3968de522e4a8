"""The doctor's hook table: one EngineDoctor per covered engine, None for any other (reported as "not covered")."""

from infer_advisor.doctor.engine_table import DOCTORS, doctor_for, model_flags, own_arithmetic


def test_covered_engines_and_not_covered():
    assert sorted(DOCTORS) == ["llama.cpp", "sglang", "tgi", "vllm"]
    assert doctor_for(None) is None and doctor_for("trtllm") is None and doctor_for("ollama") is None


def test_only_vllm_edits_are_the_memory_models_flags():
    assert [e for e in DOCTORS if model_flags(e)] == ["vllm"]
    assert not own_arithmetic("vllm") and not own_arithmetic(None) and own_arithmetic("llama.cpp")


def test_only_llamacpp_has_a_command_refusal():
    assert [e for e, d in DOCTORS.items() if d.command_refusal is not None] == ["llama.cpp"]
