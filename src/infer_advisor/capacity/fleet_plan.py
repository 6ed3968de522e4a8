"""`plan --rate`: size the fleet (capacity stage), then plan the chosen option as an ordinary, emittable plan."""

from __future__ import annotations

from typing import Any

from ..model_facts.facts import ModelFacts

NODE_GPUS = 8  # GPUs of one node; replicas beyond it are further nodes (Kubernetes replicas)


def sized_plan(request, model: ModelFacts, explain: bool, progress: Any = None):
    """The plan of the cheapest option meeting the targets, with ``plan.capacity``; infeasible, with the binding
    target, when none does."""
    from . import size_request
    from ..plan.advise import advise

    result = size_request(request, model, progress=progress)
    chosen = result.chosen
    fallback = None
    if chosen is None:  # describe the closest option, marked infeasible with the binding target
        planned = [c for c in result.best_per_gpu if c.engine != "-"]
        fallback = max(planned, key=lambda c: c.max_rate_per_replica, default=None)
    target = chosen or fallback
    if target is None:
        why = "; ".join(f"{c.gpu} {c.layout}: {c.why_not}" for c in result.best_per_gpu[:3]) or "no GPU type could be planned"
        if len(why) > 600:  # one readable line, not several KB
            why = why[:600].rsplit(" ", 1)[0] + " ..."
        from ..errors import RequestError

        budget = next((n for n in result.notes if n.startswith("time budget")), None)
        if budget:
            raise RequestError(f"No option found for {model.name} within the search's {budget}. Searched so far: {why}.")
        raise RequestError(f"No GPU type searched can serve {model.name}: {why}.")
    gpr = target.gpus_per_replica
    replicas = max(target.replicas, 1)
    node = _node_gpus(request.gpu)
    on_one_node = replicas * gpr <= node and target.nodes_per_replica == 1
    # the fleet on nodes of `node` GPUs: the plan describes one node, holding as many replicas as fit
    gpu_spec = f"{target.gpu}:{replicas * gpr if on_one_node else (node // gpr) * gpr or gpr}"
    if target.nodes_per_replica > 1:
        per_node = gpr // target.nodes_per_replica
        gpu_spec = f"{target.gpu}:{per_node}x{target.nodes_per_replica}"
    custom = _described_gpu(request.gpu)
    if custom is not None:  # a GPU described inline or in a file has no catalog name to plan by: keep its description
        gpu_spec = custom + gpu_spec[len(target.gpu):]
    pins = {
        "rate": None, "gpu": gpu_spec, "engine": target.engine, "quantization": _quant_pin(target, model),
        "kv_cache_dtype": "fp8" if target.kv_cache_dtype == "fp8" else "auto",
        "tensor_parallel_size": target.tensor_parallel_size, "pipeline_parallel_size": target.pipeline_parallel_size,
        "enable_expert_parallel": True if target.expert_parallel else None,
        "max_num_batched_tokens": target.max_num_batched_tokens,
        # the search caps max_num_seqs at a token budget below the engine's default (the engines refuse less)
        "max_num_seqs": request.max_num_seqs or (target.max_num_seqs if target.max_num_seqs == target.max_num_batched_tokens
                                                 else None),
        "replicas": None if on_one_node else replicas,
    }
    plan = advise(request=request.model_copy(update=pins), explain=explain, model_facts=model)
    if chosen is None:
        reason = (f"no option meets every target: the {result.binding.words} target binds ({result.binding.best_value_s:.3g} s at best "
                  f"against {result.binding.limit_s:.3g} s, {result.binding.by_factor:.2f}x over); {result.binding.suggestion}"
                  if result.binding else "no option meets every target (see plan.capacity.best_per_gpu)")
        return plan.model_copy(update={"feasible": False, "infeasible_reason": reason, "capacity": result,
                                       "request": request})
    return plan.model_copy(update={"capacity": result, "request": request})


def _node_gpus(spec: str) -> int:
    """GPUs per node: the count of a single ``NAME:COUNT`` spec, else an 8-GPU (HGX/DGX-class) node."""
    from ..hardware.spec import parse_spec, searches_gpu_types

    spec = spec.strip()
    if searches_gpu_types(spec) or ":" not in spec or spec.startswith("{"):
        return NODE_GPUS
    return parse_spec(spec).count


def _described_gpu(spec: str) -> str | None:
    """The description part of an inline ``{...}[:COUNT]`` or file ``PATH.yaml[:COUNT]`` GPU spec, else None."""
    import re

    text = spec.strip()
    if text.startswith("{") and "}" in text:
        return text[: text.rindex("}") + 1]
    m = re.match(r"^(.*\.(?:ya?ml|json))(?::[0-9xX]+)?$", text, re.IGNORECASE)
    return m.group(1) if m else None


def _quant_pin(c, model: ModelFacts) -> str:
    if model.pre_quantized:
        return "auto"
    return c.quantization
