"""The options the layout search ranks and what it returns: the layouts of the hardware (tensor x pipeline
parallel x nodes, expert parallel), the chosen option (:class:`Choice`), the search's result, and the weight format
of a pre-quantized checkpoint."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..engines.profiles import EngineProfile
from ..estimate.memory import MemoryEstimate
from ..hardware.facts import HardwareFacts
from ..model_facts.facts import ModelFacts
from ..rules.evaluate import Verdict

if TYPE_CHECKING:  # imported when a plan uses speculative decoding (plan/layouts.py)
    from ..engines.draft_shape import DraftShape
    from ..engines.speculative import DraftPair

# Pre-quantized checkpoints (config.json quant_method) map to the weight format used for bytes.
PRE_QUANT_FORMAT = {"awq": "awq", "gptq": "gptq", "fp8": "fp8", "compressed-tensors": "compressed-tensors-w4a16"}


def prequantized_format(model: ModelFacts) -> str | None:
    """The weight format of a pre-quantized checkpoint; NVIDIA ModelOpt checkpoints name theirs in quant_algo."""
    if model.weight_format:  # read from quantization_config by the model-facts stage (fp8-block, mxfp4-experts, nvfp4 ...)
        return model.weight_format
    if model.pre_quantized == "other" and isinstance(model.quantization_config, dict):
        qc = model.quantization_config
        if str(qc.get("quant_method", "")).lower() == "modelopt":
            algo = str(qc.get("quant_algo", "")).upper()
            return {"FP8": "fp8", "NVFP4": "nvfp4"}.get(algo)
    return PRE_QUANT_FORMAT.get(model.pre_quantized or "")


def prequantized_served(model: ModelFacts, profile: EngineProfile) -> str | None:
    """The weight format ``profile``'s engine serves a pre-quantized checkpoint in: its own format, or where the engine
    loads only GGUF, llama.cpp's conversion of it (data/formats.yaml ``gguf_of``: gpt-oss's MXFP4 GGUF)."""
    from ..estimate.formats import weight_format

    fmt = prequantized_format(model)
    if fmt is None or fmt in profile.quantizations:
        return fmt
    return next((q for q in profile.quantizations if weight_format(q).gguf_of == fmt), fmt)



@dataclass
class Layout:
    tp: int
    pp: int
    nodes: int
    ep: bool = False  # MoE experts spread over the TP ranks instead of split within each expert

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    def __str__(self) -> str:
        return f"tp={self.tp} pp={self.pp} nodes={self.nodes}" + (" ep" if self.ep else "")



@dataclass
class Choice:
    engine: Verdict
    dtype: Verdict
    kv_cache_dtype: Verdict
    quantization: Verdict
    layout_verdict: Verdict
    layout: Layout
    memory: MemoryEstimate
    context: int
    context_lowered: bool
    profile: EngineProfile
    concurrency_lowered: bool = False
    kv_fallback: bool = False
    speculative: DraftPair | None = None
    user_speculative: DraftShape | None = None  # --speculative-config, planned in memory and passed to the engine
    kv_fallback_from_context: int | None = None  # the context the model-dtype KV cache would have allowed (cut hard)
    kv_alternatives: list[str] = field(default_factory=list)  # other KV dtypes the rules allow (for advice)
    layout_comparison: str | None = None  # why this layout beat the others that fit equally well (the goal's comparison)



@dataclass
class SearchResult:
    choice: Choice | None
    rejected: list[str] = field(default_factory=list)
    forbidden: list[Verdict] = field(default_factory=list)
    best_effort: Choice | None = None
    best_effort_allowed: bool = False  # the best-effort choice passed every rule and only failed on memory
    best_effort_layouts_refused: list[Verdict] = field(default_factory=list)  # layouts the rules took from its engine



def layouts(hw: HardwareFacts, tp_sizes: list[int], request: Any = None, model: ModelFacts | None = None) -> list[Layout]:
    """Tensor x pipeline layouts over one node (pipeline stages within the node too), then pipeline stages across nodes;
    the user's pins (--tensor-parallel-size, --pipeline-parallel-size, --enable-expert-parallel) select among them."""
    from ..errors import RequestError

    if hw.kind == "cpu":
        return [Layout(1, 1, 1)]
    per_node = hw.gpus_per_node
    tps = [t for t in tp_sizes if t <= per_node] + ([per_node] if per_node not in tp_sizes else [])
    out = [Layout(tp, 1, 1) for tp in tps]
    out += [Layout(tp, pp, 1) for pp in (2, 4, 8) for tp in tps if tp * pp <= per_node]
    for nodes in range(2, hw.nodes + 1):
        out.append(Layout(per_node, nodes, nodes))
    tp_pin = getattr(request, "tensor_parallel_size", None)
    pp_pin = getattr(request, "pipeline_parallel_size", None)
    if tp_pin or pp_pin:
        pinned = [lo for lo in out if (not tp_pin or lo.tp == tp_pin) and (not pp_pin or lo.pp == pp_pin)]
        if tp_pin and pp_pin and not pinned and tp_pin <= per_node and tp_pin * pp_pin <= hw.total_gpus:
            nodes = max(1, -(-tp_pin * pp_pin // per_node))
            if nodes <= hw.nodes and (nodes == 1 or tp_pin == per_node):
                pinned = [Layout(tp_pin, pp_pin, nodes)]
        if tp_pin and not pinned and tp_pin > per_node and tp_pin % per_node == 0:
            # tensor parallelism over whole nodes, asked for by name (SGLang's and vLLM's multi-node --tp 16 for
            # DeepSeek-R1 on two 8-GPU nodes): never proposed, but planned when pinned, its all-reduce over the network
            nodes = tp_pin // per_node * (pp_pin or 1)
            if nodes <= hw.nodes:
                pinned = [Layout(tp_pin, pp_pin or 1, nodes)]
        if not pinned:
            asked = " x ".join(x for x in (f"--tensor-parallel-size {tp_pin}" if tp_pin else "",
                                           f"--pipeline-parallel-size {pp_pin}" if pp_pin else "") if x)
            raise RequestError(f"{asked} does not fit {per_node} GPU(s) per node x {hw.nodes} node(s): tensor parallelism stays within "
                               f"a node ({per_node} GPUs here) or spans whole nodes; pipeline stages span nodes only at full-node tensor "
                               "parallelism.")
        out = pinned
    ep = getattr(request, "enable_expert_parallel", None)
    if ep:
        if model is not None and model.family != "moe":
            raise RequestError(f"--enable-expert-parallel needs a mixture-of-experts model; {model.name} is dense.")
        out = [Layout(lo.tp, lo.pp, lo.nodes, ep=True) for lo in out]
    return out



def plan_max_num_seqs(goal: str, concurrency: int, default: int) -> int:
    """Sequences the engine schedules at once: the engine version's own default for the GPU (vLLM arg_utils
    get_batch_defaults), whatever the goal or the expected concurrency; only --max-num-seqs changes it."""
    return default
