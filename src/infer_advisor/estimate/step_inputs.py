"""The inputs of one step model: the device's ceilings, the bytes and FLOPs of a layer, the kernel classes and
efficiencies an engine runs on this GPU, the links, and where each term's coefficients come from.

Split from ``estimate/step_time.py`` (which holds the operators and ``build_step_model``) so each stays small; nothing
here computes a step's time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..hardware.facts import GPUInfo
from ..model_facts.facts import ModelFacts
from .formats import dtype_bytes
from ..engines.speed_terms import EngineSpeed
from .speed_data import engine_speeds, interp_log, kernels

GDDR_PREFIXES = ("gddr", "lpddr", "ddr")  # memory_type values of the GPU catalog that are not HBM


@dataclass
class Ceilings:
    """One device's datasheet ceilings (or the CPU's figures) and where they came from."""

    bandwidth: float
    peaks: dict[str, float]
    link_bandwidth: float
    link: str
    gddr: bool
    source: str
    cpu_tiled_ratios: dict[str, list] | None = None  # CPU only: tiled mat-mul streaming / mat-vec, by row length


def device_ceilings(gpu: GPUInfo | None, *, cpu_cores: int | None, dtype: str, cpu_simd: str | None = None) -> Ceilings:
    data = engine_speeds()
    if gpu is None:
        cpu = data.cpu
        cores = max(cpu_cores or 1, 1)
        per_core = cpu.flops_per_core_per_s_by_simd.get(cpu_simd or "", cpu.flops_per_core_per_s)
        flops = per_core * cores * cpu.compute_efficiency
        return Ceilings(bandwidth=cpu.memory_bandwidth_bytes_per_s, peaks={k: flops for k in ("bf16", "fp16", "fp8", "int8", "fp4")},
                        link_bandwidth=1e12, link="none", gddr=False, source=f"CPU figures ({cpu.source})",
                        cpu_tiled_ratios=cpu.tiled_bandwidth_ratio_by_row_elements)
    t = gpu.tflops
    half = t.get("bf16") or t.get("fp16") or t.get("fp32") or 1.0
    peaks = {
        "bf16": (t.get("bf16") or t.get("fp16") or half) * 1e12,
        "fp16": (t.get("fp16") or t.get("bf16") or half) * 1e12,
        "fp8": (t.get("fp8") or 0.0) * 1e12,
        "int8": (t.get("int8") or 0.0) * 1e12,
        "fp4": (t.get("fp4") or 0.0) * 1e12,
    }
    mem_type = (gpu.memory_type or "").lower()
    return Ceilings(
        bandwidth=gpu.memory_bandwidth_bytes_per_s, peaks=peaks, link_bandwidth=gpu.interconnect_bandwidth_bytes_per_s,
        link=gpu.interconnect, gddr=mem_type.startswith(GDDR_PREFIXES),
        source=f"{gpu.name} datasheet figures ({gpu.source})",
    )


def weight_kernel(profile: EngineSpeed, quantization: str, gpu: GPUInfo | None, table: dict[str, str] | None = None):
    """(name, class) of the kernels a weight format runs on this GPU, following fallbacks the GPU needs."""
    data = engine_speeds()
    table = profile.weight_kernels if table is None else table
    name = table.get(quantization) or profile.weight_kernels.get(quantization) or profile.weight_kernels.get("default", "bf16")
    seen = set()
    while True:
        wk = data.weight_kernels[name]
        if not runs_natively(wk, gpu) and wk.fallback and name not in seen:
            seen.add(name)
            name = wk.fallback
            continue
        return name, wk


def runs_natively(wk, gpu: GPUInfo | None) -> bool:
    if gpu is None or not wk.needs_compute_capability:
        return gpu is not None or not wk.needs_compute_capability
    if gpu.vendor == "amd":
        return wk.amd_native
    return gpu.compute_capability >= wk.needs_compute_capability


def shapes(model: ModelFacts, quantization: str, dtype: str, kv_cache_dtype: str, tp: int, pp: int) -> dict:
    """Bytes and FLOPs per layer and per GPU (bytes from the memory model), attention widths, head sizes."""
    from .memory import kv_bytes_per_token_per_gpu, recurrent_state_bytes_per_sequence, weight_bytes_by_group

    groups = weight_bytes_by_group(model, quantization, dtype, split_experts=True)
    # The split-off experts above are at the model dtype where the format quantizes ``linear`` but does not name
    # ``expert_linear`` (weights.py _bytes_per_param): the grouped-GEMM path was fitted with that count (vLLM's moe_scale
    # 1.5 at its bound in 478a15ff4011) and keeps it until a refit; the mat-vec path reads the experts as stored, the
    # unsplit ``linear`` less the split one (speedfix9, RETROSPECTIVE)
    stored_experts = weight_bytes_by_group(model, quantization, dtype)["linear"] - groups["linear"]
    p = model.params
    layers = max(model.num_layers, 1)
    moe = model.num_experts > 0 and p.expert_linear > 0
    experts, top_k = (model.num_experts, model.num_experts_per_token) if moe else (0, 0)
    head_params = p.lm_head or p.embedding  # tied embeddings: the embedding matrix is the lm_head
    act_b = dtype_bytes(dtype)
    kv_b = act_b if kv_cache_dtype == "auto" else dtype_bytes(kv_cache_dtype)
    full_tok, slide_tok = kv_bytes_per_token_per_gpu(model, kv_b, tp, pp)  # per GPU, one stage's layers
    total_kv = model.kv_cache_elements_per_token + model.sliding_kv_elements_per_token
    counts = model.layer_counts or {}
    attn_layers = (counts.get("full", 0) + counts.get("sliding", 0)) if counts else layers
    recurrent = counts.get("mamba", 0) + counts.get("linear", 0)
    # Nemotron-H style block models (layer_counts has MLP/MoE-only blocks, "none"): each block holds ONE mixer (Mamba2,
    # attention or the MoE), a Llama layer two (attention + MLP), so half the GEMM and small kernels per block, and the
    # routed experts live in the "none" blocks only (config.json hybrid_override_pattern, e.g. Nemotron-3-Nano M/E/*)
    single_mixer = "none" in counts
    block_share = 0.5 if single_mixer else 1.0
    return dict(
        moe_layer_share=(counts["none"] / layers) if (single_mixer and moe) else 1.0, block_share=block_share,
        attn_layers_per_stage=(attn_layers or (0 if recurrent else layers)) / pp, recurrent_layers_per_stage=recurrent / pp,
        state_bytes_per_seq=recurrent_state_bytes_per_sequence(model, dtype, tp, pp),
        layers_per_stage=math.ceil(layers / pp), pp=pp, tp=tp,
        dense_bytes=groups["linear"] / layers / tp + (0.0 if moe else groups.get("expert_linear", 0.0) / layers / tp),
        dense_flops_per_row=2 * ((p.linear - p.expert_linear) if moe else p.linear) / layers / tp,
        gemm_kernels=((5 if model.attention == "mla" else 2) + ((1 + (2 if model.num_shared_experts else 0)) if moe else 2)) * block_share,
        expert_bytes=groups.get("expert_linear", 0.0) / layers / tp if moe else 0.0, expert_stored_bytes=stored_experts / layers / tp if moe else 0.0, experts=experts, experts_per_token=top_k,
        expert_flops_per_row=2 * top_k * (p.expert_linear / layers / max(experts, 1)) / tp if moe else 0.0,
        kv_full_bytes_per_token=full_tok, kv_window_bytes_per_token=slide_tok, window=model.sliding_window,
        q_width=model.num_attention_heads * model.head_dim / tp,
        full_layer_share=model.kv_cache_elements_per_token / total_kv if total_kv else 1.0,
        hidden=model.hidden_size, act_bytes=act_b,
        head_bytes=groups["lm_head" if p.lm_head else "embedding"] / tp, head_flops_per_row=2 * head_params / tp,
        vocab=model.vocab_size,
    )


def gemm_efficiencies(prof: EngineSpeed, quantization: str, gpu: GPUInfo | None, ceil: Ceilings, notes: list[str],
                      row_elements: int = 0) -> dict:
    """Weight, expert and lm_head kernels: the measured curves x the kernel class x the engine's (fitted) scales.

    ``row_elements``: the weights' row length (the hidden size); on a CPU the tiled kernel above one row streams short
    rows slower than the mat-vec (engines.yaml ``cpu.tiled_bandwidth_ratio_by_row_elements``)."""
    k = kernels()
    on_gpu = gpu is not None
    wk_name, wk = weight_kernel(prof, quantization, gpu)
    ek_name, ek = weight_kernel(prof, quantization, gpu, prof.expert_kernels)
    curve, head_curve = k.gemm[wk.curve], k.gemm["bf16"]
    gddr = prof.gddr_scale.value if ceil.gddr else 1.0
    amd = prof.amd_scale.value if (on_gpu and gpu.vendor == "amd") else 1.0
    gddr *= amd  # ROCm kernels against the NVIDIA-measured curves (a fitted factor, bandwidth and compute)
    gemm_scale = prof.gemm_scale.value
    cpu_eff = 1.0 if on_gpu else (prof.cpu_bandwidth_efficiency.value if prof.cpu_bandwidth_efficiency else 0.5)
    bw = ceil.bandwidth
    for name, cls in ((wk_name, wk), (ek_name, ek)):
        if not ceil.peaks.get(cls.peak):
            notes.append(f"{gpu.name if gpu else 'CPU'} has no {cls.peak} peak in the catalog: {name} GEMMs use the 16-bit peak")
    flat = [(1.0, 1.0)]  # on a CPU the measured GPU tile curves do not apply: the CPU ceiling already holds its efficiency
    launch_on = 1.0 if on_gpu else 0.0
    moe = prof.moe_scale.value
    batched_scale = wk.bandwidth_scale if wk.batched_bandwidth_scale is None else wk.batched_bandwidth_scale
    tiled = (ceil.cpu_tiled_ratios or {}).get(wk_name)
    cpu_batched = cpu_eff * (interp_log(tiled, max(row_elements, 1)) if tiled else 1.0)
    return dict(
        gemm_bw=(min(curve.bandwidth_efficiency * wk.bandwidth_scale * gemm_scale * gddr, 0.98) if on_gpu else cpu_eff) * bw,
        gemm_bw_batched=(min(curve.bandwidth_efficiency * batched_scale * gemm_scale * gddr, 0.98) if on_gpu else cpu_batched) * bw,
        gemm_launch=curve.launch_s * wk.launch_scale * launch_on,
        gemm_table=curve.compute_efficiency_by_tokens if on_gpu else flat,
        gemm_peak=ceil.peaks.get(wk.peak) or ceil.peaks["bf16"],
        gemm_compute_scale=min(wk.compute_scale * gemm_scale * amd, 1.0) if on_gpu else min(gemm_scale, 1.0),
        head_bw=(min(head_curve.bandwidth_efficiency * gemm_scale * gddr, 0.98) if on_gpu else cpu_eff) * bw,
        head_bw_batched=(min(head_curve.bandwidth_efficiency * gemm_scale * gddr, 0.98) if on_gpu else cpu_batched) * bw,
        head_launch=head_curve.launch_s * launch_on, head_table=head_curve.compute_efficiency_by_tokens if on_gpu else flat,
        head_peak=ceil.peaks["bf16"],
        # the experts as the engine's mat-vec over the selected ids (engines.yaml expert_matvec_max_rows): the expert
        # class's mat-vec bandwidth, the same formula as the weights' at one row
        expert_matvec_bw=(min(k.gemm[ek.curve].bandwidth_efficiency * ek.bandwidth_scale * gemm_scale * gddr, 0.98) if on_gpu else cpu_eff) * bw,
        expert_matvec_max_rows=prof.expert_matvec_max_rows if on_gpu else 0,
        grouped_launch=k.grouped_gemm.launch_s * launch_on,
        grouped_bw=(min(k.grouped_gemm.bandwidth_efficiency * ek.bandwidth_scale * gemm_scale * gddr * moe, 0.98) if on_gpu else cpu_eff) * bw,
        grouped_scale=min(k.grouped_gemm.compute_efficiency_scale * moe, 1.0),
        expert_peak=ceil.peaks.get(ek.peak) or ceil.peaks["bf16"],
        expert_compute_scale=min(ek.compute_scale * gemm_scale * amd, 1.0) if on_gpu else min(gemm_scale, 1.0),
    ), f"weights: {wk_name} ({wk.source}); experts: {ek_name} ({ek.source})"


def attention_and_links(prof: EngineSpeed, gpu: GPUInfo | None, ceil: Ceilings, nodes: int) -> dict:
    """Attention kernels (measured x the engine's scales), small kernels, and the interconnect's all-reduce figures."""
    k = kernels()
    data = engine_speeds()
    on_gpu = gpu is not None
    gddr = (prof.gddr_scale.value if ceil.gddr else 1.0) * (prof.amd_scale.value if (on_gpu and gpu.vendor == "amd") else 1.0)
    cpu_eff = 1.0 if on_gpu else (prof.cpu_bandwidth_efficiency.value if prof.cpu_bandwidth_efficiency else 0.5)
    attn_eff = min(k.attention.decode.bandwidth_efficiency * prof.attention_scale.value * gddr, 0.98) if on_gpu else cpu_eff
    link = data.links[ceil.link if ceil.link in data.links else "pcie"] if on_gpu else None
    net = data.links.get("network") if nodes > 1 else None
    launch_on = 1.0 if on_gpu else 0.0
    return dict(
        attn_launch=k.attention.decode.launch_s * launch_on, attn_bw=attn_eff * ceil.bandwidth,
        prefill_attn_table=k.attention.prefill.compute_efficiency_by_tokens if on_gpu else [(1.0, 1.0)],
        prefill_attn_scale=prof.prefill_attention_scale.value, attn_peak=ceil.peaks["bf16"],
        small_s=k.small_kernel.seconds_per_kernel * launch_on, small_bw=(0.9 if on_gpu else cpu_eff) * ceil.bandwidth,
        allreduce_latency=link.allreduce_latency_s if link else 0.0,
        small_message_bw=link.small_message_bytes_per_s if link else 1e12,
        nccl_latency=link.nccl_latency_s if link else 0.0,
        link_bw=(link.bus_efficiency * ceil.link_bandwidth) if link else 1e12,
        pp_link_bw=(net.bus_efficiency * 50e9) if net else ((link.bus_efficiency * ceil.link_bandwidth) if link else 1e12),
        pp_latency=(net.allreduce_latency_s if net else (link.allreduce_latency_s if link else 0.0)),
    )


def term_sources(prof: EngineSpeed, ceil: Ceilings, weights: str) -> dict[str, str]:
    """Where each term's coefficients come from, for ``--explain`` (one line per term)."""
    k = kernels()
    scale = lambda c: f"{c.value:g} ({c.kind}: {c.source})"  # noqa: E731
    return {
        "weights_gemm": f"bytes from the memory model; {weights}; measured H200 curves ({k.source}); gemm_scale {scale(prof.gemm_scale)}; ceilings {ceil.source}",
        "experts": f"E(1-(1-k/E)^rows) experts touched; grouped GEMM measured ({k.grouped_gemm.note}); moe_scale {scale(prof.moe_scale)}",
        "moe_routing": f"{prof.moe_routing_kernels:g} kernels per MoE layer ({prof.moe_routing_source}) + permuted activations",
        "small_kernels": f"{prof.small_kernels_per_layer:g} per layer ({prof.small_kernels_source}); {k.small_kernel.seconds_per_kernel * 1e6:.1f} us each (measured)",
        "tp_communication": "data/speed/engines.yaml links (sources there); a tensor-parallel group over nodes adds the network's all-reduce",
        "attention_decode": f"measured SDPA decode kernel x attention_scale {scale(prof.attention_scale)}",
        "attention_prefill": f"measured SDPA prefill curve x prefill_attention_scale {scale(prof.prefill_attention_scale)}",
        "lm_head": "bf16 GEMM curve (measured)", "sampler": "2 small kernels + fp32 logits read (measured kernel figures)",
        "pp_transfer": "links (data/speed/engines.yaml)", "host_launch_wait": f"host launch {prof.host_launch_s:g} s per kernel (no CUDA graphs)",
        "engine_step_overhead": scale(prof.step_overhead_s), "engine_per_sequence": scale(prof.per_sequence_s),
        "request_overhead": scale(prof.request_overhead_s),
    } | ({"engine_sampling": f"vocabulary x {scale(prof.sampler_s_per_vocab)} per sampled sequence"} if prof.sampler_s_per_vocab else {}) | (
        {"engine_prompt_host": f"{scale(prof.prompt_host_s)} per prompt batch + {scale(prof.prompt_host_s_per_token)} per prompt token"}
        if prof.prompt_host_s and prof.prompt_host_s_per_token else {})
