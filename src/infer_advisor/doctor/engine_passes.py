"""Each engine's own passes over the ranked edits, one function per engine named by its entry in :mod:`.engine_table`
(the order within each is the order they ran in before the table): ``*_passes`` run just after the edits are labelled,
before the hardware ranking; ``*_after_hardware`` after it. docfix15: a load-phase OOM (:mod:`.load_oom`), CUDA-graph room
(:mod:`.graph_room`), SGLang's fraction (:mod:`.sglang_fraction`); docfix16 (after batch 13, retrospective): SGLang's load-phase OOM (:mod:`.sglang_load`), ollama's own memory lines (:mod:`.ollama`), and a tensor-parallel
edit for an OOM that uses the GPUs present (:func:`.hardware_rank.shards_to_gpus_present`); docfix17: engines sharing one
device (:mod:`.shared_device_start`); docfix18: llama-cpp-python's keywords (:mod:`.llamacpp_python`),
ranks printing different KV sizes (:mod:`.rank_kv`); docfix20: Metal buffers over the working set
(:mod:`.metal_working_set`), a CUDA runtime OOM with weight offload on (:mod:`.cpu_offload`),
V0's multimodal profile run (:mod:`.mm_profile`); docfix21: ggml's runtime creating a stream (:mod:`.ggml_runtime`), PyTorch over the budget before the KV cache (:mod:`.over_budget`)."""

from __future__ import annotations


def vllm_passes(diag, text: str, count: int | None, tp_stated: bool) -> None:
    from .cpu_offload import offload_first
    from .graph_room import graph_room_first
    from .load_oom import weights_first
    from .hardware_rank import shards_to_gpus_present
    from .mm_profile import mm_profile_first
    from .over_budget import over_budget_first
    from .rank_kv import rank_gap_first
    from .shared_device_start import shared_device_first

    weights_first(diag, text, tp_stated)  # docfix15 (sf229, sf239): a load-phase OOM gets fewer weights per GPU, never eager mode
    over_budget_first(diag, text)  # docfix21 (sf334): PyTorch held more than the budget + graphs: before the KV cache
    graph_room_first(diag, text)  # docfix15 (sf237): at a utilization that leaves the CUDA graphs no room, KV edits go eager
    offload_first(diag, text)  # docfix20: sf321 (CUDA runtime OOM with --cpu-offload-gb on)
    mm_profile_first(diag, text)  # docfix20: sf332 (V0's multimodal profile run, one sequence)
    shards_to_gpus_present(diag, count)  # sf265, sf127
    shared_device_first(diag, text)  # docfix17: sf272, sf273, sf276
    rank_gap_first(diag, text)  # docfix18: sf288 (ranks of one engine printing different KV sizes)


def sglang_passes(diag, text: str, count: int | None, tp_stated: bool) -> None:
    from .cpu_offload import offload_first
    from .hardware_rank import shards_to_gpus_present
    from .sglang_fraction import fraction_direction, pool_failed_up
    from .sglang_load import sglang_weights_first

    fraction_direction(diag, text)  # docfix15 (sf138): SGLang's smaller fraction where the weights leave it no KV pool
    pool_failed_up(diag, text)  # docfix22 (sf112): the pool could not be sized, so no smaller fraction
    sglang_weights_first(diag, text)  # sf244, sf252
    offload_first(diag, text)  # docfix20: sf321's remedy, SGLang's --cpu-offload-gb too
    shards_to_gpus_present(diag, count)  # sf265, sf127


def tgi_passes(diag, text: str, count: int | None, tp_stated: bool) -> None:
    from .hardware_rank import shards_to_gpus_present

    shards_to_gpus_present(diag, count)  # sf265, sf127 (TGI: all the GPUs present)


def llamacpp_passes(diag, text: str, count: int | None, tp_stated: bool) -> None:
    from .ggml_runtime import runtime_stream_first
    from .llamacpp_python import in_python_knobs
    from .metal_working_set import metal_first
    from .ollama import ollama_first

    metal_first(diag, text)  # docfix20: sf329, sf330 (Metal buffers over the working set)
    ollama_first(diag, text)  # sf248, sf250, sf257
    in_python_knobs(diag, text)  # docfix18: sf303 (llama-cpp-python's keywords)
    runtime_stream_first(diag, text)  # docfix21: sf337 (ggml's runtime OOM creating a stream, not a buffer)


def vllm_after_hardware(diag, text: str) -> None:
    from .budget_floor import utilization_floor
    from .free_memory import held_memory_first

    held_memory_first(diag)  # docfix16 (sf260-sf262): V1's free-memory check, touched only by utilization or freeing memory
    utilization_floor(diag, text)  # docfix19 (sf305): no budget under the weights
