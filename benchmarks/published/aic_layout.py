"""The layout, weight formats and engine caps a published point states, as aiconfigurator 0.12.0 must be asked.

aiconfigurator refuses an MoE model unless ``moe_tp_size`` or ``moe_ep_size`` is given, and requires
``tp_size * attention_dp_size == moe_tp_size * moe_ep_size`` (aiconfigurator_core/sdk/config.py,
``ModelConfig.resolve_moe_parallelism``). The schema has no expert-parallel or attention-DP field: the
launch flags are in a point's quote and notes, so they are read from there. Where the source states
nothing, the engine's own default is taken and the layout is marked inferred:

- vLLM: experts are sharded like the dense layers unless ``--enable-expert-parallel`` is passed, which puts
  them whole over the ranks; with ``--data-parallel-size`` attention runs per DP rank and the experts span all
  tp x dp ranks either way (vllm/model_executor/layers/fused_moe/config.py ``FusedMoEParallelConfig.make``).
- SGLang: ``ep_size`` defaults to 1 (experts TP-sharded); ``--ep/--ep-size N`` sets it, ``--enable-ep-moe``
  and ``--moe-a2a-backend deepep|megamoe|mooncake`` set it to tp (python/sglang/srt/server_args.py
  ``_handle_a2a_moe``; megamoe through ``_A2A_EP_SPANNING_BACKENDS`` in newer releases);
  ``--enable-dp-attention --dp N`` runs attention data-parallel over N groups of tp/N.
- TensorRT-LLM: ``Mapping`` without moe sizes takes ``moe_tp_size = tp_size, moe_ep_size = 1``
  (tensorrt_llm/mapping.py; "Tensor Parallel (default pattern)",
  https://nvidia.github.io/TensorRT-LLM/advanced/expert-parallelism.html); ``--ep_size N`` /
  ``moe_expert_parallel_size`` set EP;
  ``enable_attention_dp: true`` runs attention data-parallel over all tp ranks.
"""

from __future__ import annotations

import re

# aiconfigurator's MoEQuantMode names for the GEMM modes the harness passes (common.MoEQuantMode).
MOE_QUANT = {"bfloat16": "bfloat16", "fp8": "fp8", "nvfp4": "nvfp4", "int4_wo": "int4_wo"}

_EP_N = re.compile(
    r"(?:--ep(?:[-_]size)?|--expert[-_]parallel[-_]size|moe_expert_parallel_size:?)[ =]+(\d+)|\bEP\s*=\s*(\d+)"
)
_EP_ALL = re.compile(
    r"--enable-expert-parallel|enable_expert_parallel:\s*true|--enable-ep-moe|--moe-a2a-backend[ =](?:deepep|megamoe|mooncake)"
    r"|\bDeepEP\b",
    re.I,
)
_DP_ATTN = re.compile(r"--enable-dp-attention|enable_attention_dp:?\s*true", re.I)
_VLLM_DP = re.compile(r"--data-parallel-size|data_parallel_size|\s-dp\s")
_DP_N = re.compile(r"--dp(?:[-_]size)?[ =]+(\d+)")
_CAP = re.compile(r"(?:--max-running-requests|--max-num-seqs|--max_batch_size|max_batch_size:)[ =]*(\d+)")


def _text(point) -> str:
    """Our notes first (they name this point's flags where a quoted table holds several layouts), then the quote."""
    return " ".join(x for x in (point.notes or "", point.engine_backend or "", point.quote) if x)


def is_moe(config: dict) -> bool:
    """Whether a catalog config.json describes a mixture-of-experts model (its own expert-count fields)."""
    for cfg in (config, config.get("text_config") or {}):
        for key in ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"):
            if isinstance(cfg.get(key), int) and cfg[key] > 1:
                return True
    return False


def moe_layout(point) -> dict:
    """aiconfigurator's tp / attention_dp / moe_tp / moe_ep for an MoE point, with where each came from.

    The point's ``tp`` is the width of one model instance (schema: tp * pp * dp = GPUs). Attention DP splits
    it into ``attention_dp`` groups of ``tp / attention_dp``; the experts span the whole width.
    """
    text = _text(point)
    stated = []
    width = point.tp
    attention_dp = 1
    if point.dp > 1 and (_EP_ALL.search(text) or (point.engine == "vllm" and _VLLM_DP.search(text))):
        # vLLM --data-parallel-size N on an MoE model: attention per DP rank, the experts over all tp x dp ranks,
        # TP-sharded or, with --enable-expert-parallel, whole (FusedMoEParallelConfig.flatten_tp_across_dp).
        width, attention_dp = point.tp * point.dp, point.dp
        stated.append(f"attention data-parallel x{point.dp} (dp={point.dp}, one engine over tp x dp ranks)")
    elif _DP_ATTN.search(text):
        dp = _DP_N.search(text)
        # TensorRT-LLM's enable_attention_dp runs attention on every rank alone; SGLang's --dp N picks N groups.
        attention_dp = int(dp.group(1)) if dp else width
        stated.append(f"attention data-parallel x{attention_dp} ({_match(text, _DP_ATTN)})")
    ep = _EP_N.search(text)
    if ep:
        moe_ep = int(ep.group(1) or ep.group(2))
        stated.append(f"expert parallel {moe_ep} ({ep.group(0).strip()})")
    elif _EP_ALL.search(text):
        moe_ep = width
        stated.append(f"expert parallel over all {width} ranks ({_match(text, _EP_ALL)})")
    else:
        moe_ep = 1
    if attention_dp < 1 or width % attention_dp or moe_ep < 1 or width % moe_ep:
        raise ValueError(f"stated layout does not divide tp={width}: attention_dp={attention_dp}, ep={moe_ep}")
    layout = {"tp_size": width // attention_dp, "attention_dp_size": attention_dp,
              "moe_tp_size": width // moe_ep, "moe_ep_size": moe_ep}
    if ep or _EP_ALL.search(text):
        how = "stated: " + "; ".join(stated)
    else:
        default = f"{point.engine} default without expert-parallel flags: experts sharded over tp={width}, ep=1"
        how = ("stated: " + "; ".join(stated) + "; " if stated else "inferred: ") + default
    return {**layout, "how": how}


def engine_cap(point) -> tuple[int | None, str | None]:
    """A running-request cap the point's launch flags state (--max-running-requests, --max-num-seqs, max_batch_size)."""
    m = _CAP.search(_text(point))
    return (int(m.group(1)), m.group(0).strip()) if m else (None, None)


def checkpoint_quant(config: dict) -> str | None:
    """The quantization a pre-quantized checkpoint ships (its config.json ``quantization_config``), if any."""
    for cfg in (config, config.get("text_config") or {}):
        q = cfg.get("quantization_config")
        if isinstance(q, dict):
            return str(q.get("quant_algo") or q.get("quant_method") or "unnamed")
    return None


def _match(text: str, pattern: re.Pattern) -> str:
    m = pattern.search(text)
    return m.group(0) if m else ""
