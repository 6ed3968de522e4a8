"""Why the plan is what it is: the decisions behind each choice (rules that spoke, or the memory model), and why
nothing fits when nothing does."""

from __future__ import annotations

from ..hardware.facts import HardwareFacts
from ..model_facts.facts import ModelFacts
from ..request import PlanRequest
from .options import Choice
from .models import Decision
from ..units import GIB


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")



def _weights_words(method: str) -> str:
    return "unquantized weights" if method == "none" else f"{method} weights"



def hw_words(hw: HardwareFacts) -> str:
    if hw.kind == "cpu":
        return "CPU"
    n = f"{hw.gpus_per_node}x " if hw.gpus_per_node > 1 else ""
    nodes = f" x {hw.nodes} nodes" if hw.nodes > 1 else ""
    return f"{n}{hw.gpu.name}{nodes}"



def plan_decisions(c: Choice, result, request: PlanRequest, unit: str = "GPU") -> list[Decision]:
    out: list[Decision] = []
    seen: set[tuple[str, str]] = set()

    def add(rule, decides: str, value: str) -> None:
        key = (rule.id, value)
        if key not in seen:
            seen.add(key)
            out.append(Decision(rule_id=rule.id, decides=decides, value=value, effect=rule.effect, reason=rule.reason, source=rule.source))

    for decides, verdict in (("engine", c.engine), ("dtype", c.dtype), ("kv_cache_dtype", c.kv_cache_dtype), ("quantization", c.quantization)):
        for rule in verdict.matched:
            add(rule, decides, str(verdict.value))
        if not verdict.matched:  # no rule spoke for it: the user asked for it, or the memory model let it through
            asked = str(getattr(request, decides)) == str(verdict.value)
            out.append(Decision(rule_id=f"request.{decides}" if asked else "memory.fit", decides=decides, value=str(verdict.value), effect="set",
                                reason=f"asked for with --{decides.replace('_', '-')}" if asked else "the highest-ranked allowed option whose memory fits",
                                source="request" if asked else "estimate.memory (estimated)"))
    for rule in c.layout_verdict.matched:
        add(rule, "layout", str(c.layout))
    for v in result.forbidden:
        if v.blocked_by:
            add(v.blocked_by, v.blocked_by.decides, f"not {v.value}")
    out.append(
        Decision(
            rule_id="memory.fit", decides="layout", value=str(c.layout), effect="set",
            reason=f"the first allowed layout (by rule score, then fewest GPUs) for {_weights_words(c.quantization.value)} "
            f"whose memory fits: {c.memory.total_bytes_per_gpu / GIB:.1f} GiB per {unit} of "
            f"{c.memory.gpu_memory_bytes / GIB:.1f} GiB, KV cache {c.memory.kv_cache_tokens:,} tokens",
            source="estimate.memory (estimated)",
        )
    )
    if c.layout_comparison:
        out.append(
            Decision(
                rule_id="layout.goal", decides="layout", value=str(c.layout), effect="set", reason=c.layout_comparison,
                source="estimate.step_time (estimated)",
            )
        )
    if c.kv_fallback:
        out.append(
            Decision(
                rule_id="memory.kv-cache-dtype", decides="kv_cache_dtype", value=str(c.kv_cache_dtype.value), effect="set",
                reason=(
                    f"with a model-dtype KV cache memory would cut max_model_len to {c.kv_fallback_from_context:,} tokens; "
                    f"the next allowed KV dtype keeps {c.context:,}"
                    if c.kv_fallback_from_context
                    else "no weight format or layout holds concurrency x context with a model-dtype KV cache; "
                    "the next allowed KV dtype does, so it is used instead of lowering the context"
                ),
                source="estimate.memory (estimated)",
            )
        )
    if c.speculative is not None:
        out.append(
            Decision(
                rule_id="speculative.published-draft", decides="speculative", value=c.speculative.draft, effect="set",
                reason=f"the latency goal, an engine that takes a {c.speculative.method} head on its command line, and a published "
                "head for this model whose memory fits (data/speculative.yaml; --speculative off turns it off)",
                source=c.speculative.source,
            )
        )
    if c.context_lowered:
        out.append(
            Decision(
                rule_id="memory.context-lowered", decides="context", value=str(c.context), effect="set",
                reason="the context (asked for, or the model's) does not fit at the requested concurrency; "
                "max_model_len lowered to what fits",
                source="estimate.memory (estimated)",
            )
        )
    return out



def why_not(model: ModelFacts, hw: HardwareFacts, request: PlanRequest, result) -> str:
    refusals: list[str] = []
    for v in result.forbidden:
        rule = v.blocked_by
        if rule is None:
            continue
        line = f"{v.value} refused by rule {rule.id}: {rule.reason}"
        asked = {request.engine, request.quantization} - {"auto"}
        unasked_engine = rule.decides == "engine" and request.engine == "auto"  # an engine nobody asked for explains nothing
        if line not in refusals and (str(v.value) in asked or result.choice is None and not result.best_effort_allowed and not unasked_engine):
            refusals.append(line)
    parts = refusals[:3]
    be = result.best_effort
    if be is not None and result.best_effort_allowed:
        m = be.memory
        device = "the CPU memory" if hw.kind == "cpu" else f"each {hw.gpu.name}"
        parts.append(
            f"{model.name} in {be.quantization.value} at {be.layout} needs {m.needed_bytes_per_gpu / GIB:.1f} GiB per device "
            f"(weights {m.weights_bytes_per_gpu / GIB:.1f}, KV for {m.required_kv_tokens} tokens, activations and overheads) "
            f"but {device} offers {m.budget_bytes_per_gpu / GIB:.1f} GiB"
        )
        refused = {f"{v.value} refused by rule {v.blocked_by.id}: {v.blocked_by.reason}" for v in result.best_effort_layouts_refused}
        parts.extend(sorted(refused)[:3])  # why the larger layouts were not tried
    if not parts:
        parts.extend(list(dict.fromkeys(result.rejected))[:2])
    return "; ".join(parts) or "no allowed engine, quantization and layout fits"
