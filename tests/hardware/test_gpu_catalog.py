"""The GPU catalog: loads, validates, and every entry is usable and sourced."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infer_advisor._paths import shipped
from infer_advisor.errors import DataFileError, UnknownGPUError
from infer_advisor.hardware import GPUInfo, gpu_catalog, lookup_gpu
from infer_advisor.hardware.catalog import catalog, load_catalog, match_probed_name, normalize

REQUIRED = [
    "A100-40GB", "A100-80GB", "H100-80GB", "H200", "B200", "L4", "L40S", "A10G", "A10", "T4",
    "V100-16GB", "V100-32GB", "MI300X", "RTX-A6000", "RTX-6000-Ada", "RTX-3090", "RTX-4090", "RTX-5090",
]
CATALOG_PATH = shipped("data") / "gpus.yaml"


def test_catalog_has_required_entries_and_at_least_22():
    names = [g.name for g in gpu_catalog()]
    assert len(names) >= 22
    for name in REQUIRED:
        assert name in names
    assert len(names) == len(set(names))


def test_every_entry_is_sourced_and_sane():
    for g in gpu_catalog():
        assert isinstance(g, GPUInfo) and g.source == "catalog"
        assert g.catalog_source and len(g.catalog_source) > 8, g.name
        assert 8 * 2**30 <= g.memory_bytes <= 512 * 2**30, g.name
        assert 0.2e12 <= g.memory_bandwidth_bytes_per_s <= 10e12, g.name
        assert 10e9 <= g.interconnect_bandwidth_bytes_per_s <= 1000e9, g.name
        # Dense tensor rates are never below the fp32 (CUDA-core) rate, and never above 10 PFLOPS.
        for dtype, tf in g.tflops.items():
            assert 1 <= tf <= 20_000, (g.name, dtype)  # B300 dense FP4: 14 PFLOPS
        for dtype in ("fp16", "bf16", "fp8", "int8"):
            if dtype in g.tflops and "fp32" in g.tflops:
                assert g.tflops[dtype] >= g.tflops["fp32"], (g.name, dtype)
        if g.vendor == "nvidia":
            assert g.compute_capability >= 7.0, g.name
        assert set(g.figure_sources.values()) == {"catalog"}


def test_dtypes_the_gpu_lacks_are_absent():
    for name in ("V100-16GB", "V100-32GB", "T4"):
        tf = lookup_gpu(name).tflops
        assert "bf16" not in tf and "fp8" not in tf and "tf32" not in tf
    assert "fp8" not in lookup_gpu("A100-80GB").tflops
    assert lookup_gpu("H100-80GB").tflops["fp8"] == pytest.approx(2 * lookup_gpu("H100-80GB").tflops["bf16"], rel=1e-3)


def test_known_datasheet_figures():
    h100 = lookup_gpu("H100-80GB")
    assert h100.memory_bytes == 80 * 2**30
    assert h100.memory_bandwidth_bytes_per_s == 3.35e12
    assert h100.tflops["bf16"] == 989.4  # dense: the datasheet's 1979 is with sparsity
    assert h100.interconnect == "nvlink" and h100.interconnect_bandwidth_bytes_per_s == 450e9
    assert lookup_gpu("A100-80GB").memory_bandwidth_bytes_per_s == 2.039e12
    assert lookup_gpu("MI300X").vendor == "amd" and lookup_gpu("MI300X").interconnect == "infinity-fabric"
    assert lookup_gpu("T4").compute_capability == 7.5


def test_names_and_aliases_are_unambiguous():
    seen: dict[str, str] = {}
    for entry in catalog().gpus:
        for n in (entry.name, *entry.aliases, *entry.nvml_names):
            key = normalize(n)
            assert seen.setdefault(key, entry.name) == entry.name, f"{n} is ambiguous"


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        ("h100", "H100-80GB"), ("H100", "H100-80GB"), ("a100", "A100-80GB"), ("A100_40GB", "A100-40GB"),
        ("4090", "RTX-4090"), ("rtx4090", "RTX-4090"), ("RTX 4090", "RTX-4090"), ("a6000", "RTX-A6000"),
        ("rtx-6000-ada", "RTX-6000-Ada"), ("t4", "T4"), ("mi300x", "MI300X"), ("v100", "V100-32GB"),
        ("gh200", "GH200-96GB"), ("l40s", "L40S"),
    ],
)
def test_lookup_aliases_case_insensitive(alias, expected):
    assert lookup_gpu(alias).name == expected


def test_lookup_unknown_suggests_close_names():
    with pytest.raises(UnknownGPUError) as info:
        lookup_gpu("H10")
    assert "H100-80GB" in info.value.suggestions
    assert "Did you mean" in str(info.value) and "infer-advisor gpus" in str(info.value)
    with pytest.raises(ValueError):  # also a builtin ValueError
        lookup_gpu("RTX-9090")


@pytest.mark.parametrize(
    ("probed", "expected", "how"),
    [
        ("NVIDIA H200", "H200", "exact"),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB", "exact"),
        ("NVIDIA A100 80GB PCIe", "A100-80GB", "exact"),
        ("NVIDIA H100 80GB HBM3", "H100-80GB", "exact"),
        ("Tesla T4", "T4", "exact"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090", "exact"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada", "exact"),
        ("NVIDIA L4", "L4", "exact"),
        ("NVIDIA GeForce RTX 3090 Ti", "RTX-3090", "prefix"),
        ("NVIDIA H200 NVL", "H200", "prefix"),
    ],
)
def test_match_probed_names(probed, expected, how):
    entry, matched = match_probed_name(probed)
    assert entry is not None and entry.name == expected
    assert matched == how


@pytest.mark.parametrize(
    "probed", ["NVIDIA RTX A1000", "NVIDIA Quadro Futura 9000", "NVIDIA A1000", "NVIDIA L400"]
)
def test_unmatched_probed_names(probed):
    assert match_probed_name(probed) == (None, "none")


def _write(tmp_path: Path, mutate) -> Path:  # noqa: ANN001
    raw = yaml.safe_load(CATALOG_PATH.read_text())
    mutate(raw)
    path = tmp_path / "gpus.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_invalid_file_names_file_and_entry(tmp_path):
    path = _write(tmp_path, lambda raw: raw["gpus"][3].update(memroy_gib=24))  # a typo'd key
    with pytest.raises(DataFileError) as info:
        load_catalog(path)
    msg = str(info.value)
    assert str(path) in msg and "entry 'A10'" in msg and "memroy_gib" in msg


def test_missing_source_and_negative_figure_are_errors(tmp_path):
    def drop_source(raw):  # noqa: ANN001, ANN202
        del raw["gpus"][0]["source"]

    with pytest.raises(DataFileError, match="entry 'A100-40GB'.*source"):
        load_catalog(_write(tmp_path, drop_source))
    with pytest.raises(DataFileError, match="memory_bandwidth_gb_s"):
        load_catalog(_write(tmp_path, lambda raw: raw["gpus"][1].update(memory_bandwidth_gb_s=-1)))


def test_duplicate_alias_is_an_error(tmp_path):
    path = _write(tmp_path, lambda raw: raw["gpus"][0]["aliases"].append("h100"))
    with pytest.raises(DataFileError, match="also resolves to"):
        load_catalog(path)


def test_broken_yaml_names_line(tmp_path):
    path = tmp_path / "gpus.yaml"
    path.write_text("gpus: [\n  - name: x\n")
    with pytest.raises(DataFileError, match=r"gpus.yaml: invalid YAML at line"):
        load_catalog(path)
