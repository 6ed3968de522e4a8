"""`--explain` as a reader wants it: the rules grouped by the candidate they were applied to, and the deciding
comparison (why the chosen option of each decision beat the others).

    >>> from infer_advisor import advise
    >>> plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", explain=True)
    >>> for group in candidate_groups(plan)[:3]: print(group.name, group.score, group.allowed)
    engine vllm 50.0 True
    engine sglang 40.0 True
    engine tgi 0.0 False
    >>> print(deciding_comparison(plan)[0])
    engine: vllm (score +50: engine.default.vllm) over sglang (+40), ...

Both read only ``plan.explain`` (every rule considered, with its context, score and whether it blocked the option)
and the plan's own choices, so they describe exactly what the search did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .models import DeploymentPlan, RuleTrace

DECISIONS = ("engine", "dtype", "kv_cache_dtype", "quantization", "layout")
_LABEL = {"engine": "engine", "dtype": "dtype", "kv_cache_dtype": "KV-cache dtype", "quantization": "quantization",
          "layout": "layout"}  # fmt: skip


@dataclass
class CandidateGroup:
    """One option of one decision, judged in one context, with every rule that was looked at for it."""

    decides: str
    context: str
    option: str
    rules: list[RuleTrace] = field(default_factory=list)

    @property
    def name(self) -> str:
        where = f"{self.context}: " if self.context else ""
        return f"{where}{_LABEL.get(self.decides, self.decides)} {self.option}"

    @property
    def score(self) -> float:
        return sum(t.score for t in self.rules)

    @property
    def blocked_by(self) -> RuleTrace | None:
        return next((t for t in self.rules if t.blocked), None)

    @property
    def allowed(self) -> bool:
        return self.blocked_by is None


def candidate_groups(plan: DeploymentPlan) -> list[CandidateGroup]:
    """``plan.explain`` grouped by candidate, in the order the search judged them (a candidate judged twice, as a
    layout is for each weight format, keeps one group per context)."""
    groups: dict[tuple[str, str, str], CandidateGroup] = {}
    for t in plan.explain or []:
        key = (t.decides, t.context, t.applied_to)
        group = groups.get(key)
        if group is None:
            group = groups[key] = CandidateGroup(t.decides, t.context, t.applied_to)
        if not any(r.rule_id == t.rule_id for r in group.rules):  # a search pass repeated: same rule, same outcome
            group.rules.append(t)
    return list(groups.values())


def _chosen(plan: DeploymentPlan) -> dict[str, tuple[str, str]]:
    """decision -> (context it was judged in, chosen option)."""
    engine, quant = plan.engine.name, plan.quantization.method
    par = plan.parallelism
    layout = f"tp={par.tensor_parallel_size} pp={par.pipeline_parallel_size} nodes={par.nodes}"
    return {
        "engine": ("", engine),
        "dtype": (engine, plan.dtype),
        "kv_cache_dtype": (engine, plan.engine.kv_cache_dtype),
        "quantization": (engine, quant),
        "layout": (f"{engine} + {quant}", layout),
    }


def _score(g: CandidateGroup) -> str:
    rules = [t.rule_id for t in g.rules if t.score]
    return f"score {g.score:+g}" + (f": {', '.join(rules)}" if rules else "")


def deciding_comparison(plan: DeploymentPlan) -> list[str]:
    """One line per decision: the chosen option, its score, and what it beat (or why a higher one lost)."""
    groups = candidate_groups(plan)
    memory = {d.decides: d for d in plan.decisions if d.rule_id.startswith("memory.")}
    lines = []
    for decides, (context, chosen) in _chosen(plan).items():
        mine = [g for g in groups if g.decides == decides and g.context == context]
        if not mine:
            continue
        ranked = sorted(mine, key=lambda g: (not g.allowed, -g.score))  # the search's order (stable)
        winner = next((g for g in mine if g.option == chosen), None)
        label = _LABEL[decides] + (f" ({context})" if context else "")
        if winner is None:
            lines.append(f"{label}: {chosen} (set outside the rules: {memory[decides].reason})" if decides in memory
                         else f"{label}: {chosen}")  # fmt: skip
            continue
        others = [g for g in ranked if g is not winner]
        beaten = [f"{g.option} ({g.score:+g})" for g in others if g.allowed and g.score <= winner.score]
        ahead = [g for g in others if g.allowed and g.score > winner.score]
        refused = [f"{g.option} (forbidden by {g.blocked_by.rule_id})" for g in others if not g.allowed]
        text = f"{label}: {chosen} ({_score(winner)})"
        if len(mine) == 1:
            text += ", the only option considered"
        if beaten:
            text += f" over {', '.join(beaten)}"
        if ahead:
            why = memory.get(decides)
            text += (
                f"; ranked higher but not chosen: {', '.join(f'{g.option} ({g.score:+g})' for g in ahead)}, "
                + ("because " + why.reason if why else "because none of their layouts fits in memory")
            )
        if refused:
            text += f"; {', '.join(refused)}"
        if decides == "layout" and "layout" in memory:
            text += f". Chosen by memory fit: {memory['layout'].reason}"
        if decides == "quantization" and plan.quantization.published_checkpoint is not None:
            text += f"; served from the published checkpoint {plan.quantization.published_checkpoint.repo}, nothing to quantize"
        lines.append(text)
    lines += _built_in(plan)
    return lines


def _built_in(plan: DeploymentPlan) -> list[str]:
    """Decisions made after the rules (no candidates to compare): speculative decoding, prefix caching."""
    out = []
    spec = next((d for d in plan.decisions if d.decides == "speculative"), None)
    if plan.speculative is not None:
        sp = plan.speculative
        out.append(f"speculative decoding: {sp.method} with {sp.draft_model}" + (f" ({spec.reason})" if spec else ""))
    if plan.prefix_caching is not None:
        out.append(f"prefix caching: {plan.prefix_caching.how}")
    return out
