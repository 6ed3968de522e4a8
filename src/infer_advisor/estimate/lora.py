"""Memory of vLLM's LoRA slots: the stacked adapter buffers it allocates at load for every wrapped linear layer.

    >>> from infer_advisor import resolve_model
    >>> facts = resolve_model("meta-llama/Llama-3.1-8B", source="catalog")
    >>> lora_bytes_per_gpu(facts, slots=4, rank=64, tp=1, dtype_bytes=2) / 2**30
    1.25

vLLM (``vllm/lora/layers/base_linear.py`` ``create_lora_weights``, 0.6-0.33) gives each LoRA-wrapped linear layer
``lora_a_stacked`` of ``max_loras x max_lora_rank x input_size`` and ``lora_b_stacked`` of ``max_loras x output_size
x max_lora_rank`` elements in ``lora_dtype`` (default: the model's dtype), one pair per output slice: a column-parallel
layer (qkv_proj, gate_up_proj) keeps its full input and ``1/tp`` of its output, a row-parallel one (o_proj,
down_proj) ``1/tp`` of its input and its full output. It wraps every supported module of the model whatever the
adapters target, and allocates the buffers when the model is loaded, before the memory profile: the profiler sees them
(they are inside "Model loading took ... GiB") and they come out of the KV cache. ``max_loras`` slots are allocated
whatever the number of adapters (``max_cpu_loras`` are host memory). Not counted: routed-expert LoRA of MoE models
(their attention is counted) and the extra-vocabulary embedding slots of versions before 0.11 (``lora_extra_vocab_size``
256 rows: a few MiB).
"""

from __future__ import annotations

from ..model_facts.facts import ModelFacts


def lora_elements_per_slot_per_rank(model: ModelFacts, tp: int) -> float:
    """Buffer elements one adapter slot of rank 1 takes on one GPU (multiply by slots x rank x dtype bytes)."""
    h = model.hidden_size
    q = model.num_attention_heads * model.head_dim
    kv = max(model.num_kv_heads // tp, 1) * tp * model.head_dim  # a rank holds at least one KV head
    attention = (3 * h + (q + 2 * kv) / tp) + (q / tp + h)  # qkv_proj: three slices of A (h) and B; o_proj: A (q/tp), B (h)
    mlp = 0.0 if model.num_experts else (2 * h + 2 * model.intermediate_size / tp) + (model.intermediate_size / tp + h)
    return model.num_layers * (attention + mlp)


def lora_bytes_per_gpu(model: ModelFacts, *, slots: int, rank: int, tp: int, dtype_bytes: float) -> float:
    """Bytes of ``slots`` LoRA slots of ``rank`` on one GPU (0 when LoRA is off)."""
    if slots <= 0 or rank <= 0:
        return 0.0
    return slots * rank * lora_elements_per_slot_per_rank(model, tp) * dtype_bytes


def add_lora_term(model: ModelFacts, engine, engine_version: str | None, slots: int, rank: int, dtype_bytes: float, tp: int, pp: int,
                  overheads: dict, outside: dict, sources: dict) -> None:
    """Put the LoRA buffers of one GPU in the budget (the engine version's profiler sees them) or outside it; nothing
    when LoRA is off."""
    from ..engines.lora import lora_profile

    if slots <= 0 or rank <= 0:
        return
    lora = int(lora_bytes_per_gpu(model, slots=slots, rank=rank, tp=tp, dtype_bytes=dtype_bytes) / pp)
    seen = lora_profile(engine.name, engine_version or engine.version)
    (overheads if seen is None or seen.profiler_sees_lora else outside)["lora"] = lora
    sources["lora"] = "estimated (vLLM create_lora_weights)"
