"""Byte units, one definition for every stage (no project imports, so any stage may use them).

Memory sizes on GPU datasheets, in NVML, in the engines' logs ("Model loading took 14.99 GiB", SGLang's "GB", which
is bytes / 2**30 too) are binary; bandwidths on datasheets are decimal.
"""

from __future__ import annotations

GIB = 2**30  # bytes in a GiB: DRAM capacities on datasheets are binary
MIB = 2**20  # nvidia-smi / NVML print totals in MiB
GB = 10**9  # bytes in a GB: bandwidths on datasheets are decimal
