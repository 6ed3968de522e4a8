"""Hardware specs: NAME[:COUNT][xNODES], cpu, auto; bad specs and unknown names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infer_advisor.errors import HardwareSpecError, InferAdvisorError, UnknownGPUError
from infer_advisor.hardware import lookup_gpu, parse_spec, resolve_hardware
from infer_advisor.hardware.catalog import catalog
from infer_advisor.hardware.spec import MAX_GPUS_PER_NODE, MAX_NODES


@pytest.mark.parametrize(
    ("spec", "name", "count", "nodes"),
    [
        ("H100-80GB:8", "H100-80GB", 8, 1),
        ("H100-80GB:8x2", "H100-80GB", 8, 2),
        ("h100-80gb:8X2", "H100-80GB", 8, 2),
        ("rtx-4090", "RTX-4090", 1, 1),
        ("rtx4090", "RTX-4090", 1, 1),  # the 'x' in the name is not a node count
        ("T4", "T4", 1, 1),
        ("t4", "T4", 1, 1),
        ("a100:4", "A100-80GB", 4, 1),
        ("MI300X", "MI300X", 1, 1),
        ("mi300x:8x4", "MI300X", 8, 4),
        ("MI300Xx2", "MI300X", 1, 2),
        ("H100-80GBx2", "H100-80GB", 1, 2),
        (" L40S : 2 ", "L40S", 2, 1),
        ("A100_40GB:16", "A100-40GB", 16, 1),
    ],
)
def test_gpu_specs(spec, name, count, nodes):
    parsed = parse_spec(spec)
    assert (parsed.kind, parsed.name, parsed.count, parsed.nodes) == ("gpu", name, count, nodes)
    hw = resolve_hardware(spec)
    assert hw.kind == "gpu" and hw.source == "catalog"
    assert hw.gpus_per_node == count and hw.nodes == nodes and hw.total_gpus == count * nodes
    assert all(g == lookup_gpu(name) for g in hw.gpus)
    assert hw.notes == []


def test_canonical_spec_is_recorded():
    assert resolve_hardware("h100:8x2").spec == "H100-80GB:8x2"
    assert resolve_hardware("t4").spec == "T4"


def test_gpus_of_a_spec_are_independent_copies():
    hw = resolve_hardware("a100:2")
    hw.gpus[0].free_memory_bytes = 1
    assert hw.gpus[1].free_memory_bytes is None


@pytest.mark.parametrize("spec", ["cpu", "CPU", " cpu "])
def test_cpu_spec_describes_this_machine(spec):
    hw = resolve_hardware(spec)
    assert hw.kind == "cpu" and hw.gpus == [] and hw.source == "probe"
    assert hw.cpu is not None and hw.cpu.cores >= 1 and hw.cpu.memory_bytes > 2**30


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("H100-80GB:0", "at least 1"),
        ("H100-80GB:-2", "at least 1"),
        ("H100-80GB:100000", "more than 16"),
        (f"H100-80GB:{MAX_GPUS_PER_NODE + 1}", "more than"),
        ("H100-80GB:8x0", "node count must be at least 1"),
        (f"H100-80GB:8x{MAX_NODES + 1}", "node count"),
        ("H100-80GBx0", "node count"),
        ("H100-80GB:", "is not COUNT"),
        ("H100-80GB:eight", "is not COUNT"),
        ("H100-80GB:8x", "is not COUNT"),
        ("H100-80GB:8:2", "more than one ':'"),
        (":8", "no GPU name"),
        ("", "empty"),
        ("   ", "empty"),
        ("cpu:4", "takes no count"),
        ("auto:2", "takes no count"),
        ("h100; rm -rf /", "only letters"),
        ("$(reboot)", "only letters"),
    ],
)
def test_bad_specs(spec, problem):
    with pytest.raises(HardwareSpecError) as info:
        resolve_hardware(spec)
    msg = str(info.value)
    assert problem in msg and "NAME[:COUNT][xNODES]" in msg and "\n" not in msg
    assert info.value.spec == spec


@pytest.mark.parametrize(
    ("spec", "suggested"), [("H10", "H100-80GB"), ("rtx-4080", "RTX-4090"), ("A100-60GB:2", "A100-80GB")]
)
def test_unknown_names_suggest_close_ones(spec, suggested):
    with pytest.raises(UnknownGPUError) as info:
        resolve_hardware(spec)
    assert suggested in info.value.suggestions
    assert "Did you mean" in str(info.value)


def test_unknown_name_with_no_close_match_still_points_to_the_list():
    with pytest.raises(UnknownGPUError) as info:
        resolve_hardware("zzzzqqq")
    assert "infer-advisor gpus" in str(info.value)


@given(
    entry=st.sampled_from(catalog().gpus),
    count=st.integers(1, MAX_GPUS_PER_NODE),
    nodes=st.integers(1, 64),
    upper=st.booleans(),
)
def test_every_catalog_name_and_alias_round_trips(entry, count, nodes, upper):
    for name in (entry.name, *entry.aliases):
        text = f"{name}:{count}x{nodes}"
        parsed = parse_spec(text.upper() if upper else text)
        assert (parsed.name, parsed.count, parsed.nodes) == (entry.name, count, nodes)


@given(st.text(max_size=30))
def test_any_text_parses_or_raises_a_project_error(text):
    try:
        parse_spec(text)
    except InferAdvisorError as err:
        assert "\n" not in str(err).strip() or "\n" in text
