"""SGLang 0.4.8-0.5.2's default mem_fraction_static (engines/sglang_reserved.py; memfix20, read in the 0.4.8-0.5.2 wheels)."""

import pytest

from infer_advisor.engines.memory import MIB, default_memory_fraction, memory_profile


@pytest.mark.parametrize(
    "version,driver_mib,tp,expected",
    [
        ("0.4.10", 183359, 8, 0.821),  # B200: 32 GiB whatever the TP -> round((183359 - 32768) / 183359, 3)
        ("0.4.8", 81559, 1, 0.874),  # H100: (9.5 + 1/2) GiB
        ("0.4.9", 81559, 4, 0.856),  # (9.5 + 4/2) GiB = 11,776 MiB
        ("0.5.2", 97871, 8, 0.833),  # H20 band: (12 + 8/2) GiB
        ("0.5.1", 24564, 1, 0.879),  # RTX 4090 band: (2.8 + 0.1) GiB
    ],
)
def test_band_rule_in_its_versions(version, driver_mib, tp, expected):
    prof = memory_profile("sglang", version)
    assert default_memory_fraction(prof, driver_memory_bytes=driver_mib * MIB, tp=tp, version=version) == expected


@pytest.mark.parametrize("version", ["0.4.7", "0.5", "0.5.3", "0.5.9"])
def test_other_versions_keep_the_chunk_and_graph_rule(version):
    """0.4.6-0.4.7 (not modelled), a bare '0.5' (0.5.x, no patch level) and 0.5.3+ take the 0.5.3+ sum: 0.853 on 184,320 MiB."""
    prof = memory_profile("sglang", version)
    with_version = default_memory_fraction(prof, driver_memory_bytes=184320 * MIB, tp=8, version=version)
    assert with_version == default_memory_fraction(prof, driver_memory_bytes=184320 * MIB, tp=8) == 0.853
