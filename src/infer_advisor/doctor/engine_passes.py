"""Engine-specific passes over the ranked edits, run just before the hardware ranking (added by docfix16 after
batch 13, retrospective): SGLang's load-phase OOM (:mod:`.sglang_load`), ollama's own memory lines (:mod:`.ollama`), and a tensor-parallel
edit for an OOM that uses the GPUs present (:func:`.hardware_rank.shards_to_gpus_present`); docfix17: engines sharing one
device (:mod:`.shared_device_start`); docfix18: llama-cpp-python's keywords (:mod:`.llamacpp_python`),
ranks printing different KV sizes (:mod:`.rank_kv`); docfix20: Metal buffers over the working set
(:mod:`.metal_working_set`), a CUDA runtime OOM with weight offload on (:mod:`.cpu_offload`),
V0's multimodal profile run (:mod:`.mm_profile`)."""

from __future__ import annotations


def before_hardware(diag, text: str, count: int | None) -> None:
    from .cpu_offload import offload_first
    from .hardware_rank import shards_to_gpus_present
    from .llamacpp_python import in_python_knobs
    from .metal_working_set import metal_first
    from .mm_profile import mm_profile_first
    from .ollama import ollama_first
    from .rank_kv import rank_gap_first
    from .sglang_load import sglang_weights_first
    from .shared_device_start import shared_device_first

    sglang_weights_first(diag, text)  # sf244, sf252
    offload_first(diag, text)  # docfix20: sf321 (CUDA runtime OOM with --cpu-offload-gb on)
    mm_profile_first(diag, text)  # docfix20: sf332 (V0's multimodal profile run, one sequence)
    metal_first(diag, text)  # docfix20: sf329, sf330 (Metal buffers over the working set)
    ollama_first(diag, text)  # sf248, sf250, sf257
    shards_to_gpus_present(diag, count)  # sf265, sf127
    shared_device_first(diag, text)  # docfix17: sf272, sf273, sf276
    in_python_knobs(diag, text)  # docfix18: sf303 (llama-cpp-python's keywords)
    rank_gap_first(diag, text)  # docfix18: sf288 (ranks of one engine printing different KV sizes)
