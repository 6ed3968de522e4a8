"""The operator's side of sizing, each step named by its rule in ``rules/capacity/sizing.yaml``: no pipeline where
tensor parallelism holds the model, headroom (a utilisation cap and N+1), sizing at the upper edge of the speed
model's error band (``--confidence``), equal-cost ties to independent replicas then TP, absurd fleets folded, and
the shared prefix served from the cache."""

from __future__ import annotations

import math

from ..rules.sizing import applies, by_kind, sizing_rule

EXCLUDE_PP = "sizing.pipeline-only-when-tensor-parallel-cannot-hold-it"


def said(rule_id: str, what: str) -> str:
    """One line of the sizing summary: what was done and the rule that did it."""
    sizing_rule(rule_id)  # a rule that is not shipped fails here, not in a user's summary
    return f"{what} (rule {rule_id})"


def needless_pipeline(pp: int, fits_without_pipeline: bool, request) -> bool:
    """A pipeline-parallel layout on a GPU type where a single-stage layout of one node holds the model (rule
    sizing.pipeline-only-when-tensor-parallel-cannot-hold-it): not searched."""
    return applies(sizing_rule(EXCLUDE_PP), {"pp": pp, "fits_without_pipeline": fits_without_pipeline,
                                             "pinned_pp": request.pipeline_parallel_size})


def speed_error_band(engine: str) -> tuple[float, float]:
    """(low, high): the engine's 90% band of measured / predicted speed on data it was not fitted to, the error of
    ``max_rate_per_replica``. The PROSPECTIVE ``band_90`` where it has one; else 1 / (1 + the held-out 90th-percentile
    error) to 1 + it, else 50% either way (not graded)."""
    from ..estimate.speed_data import engine_speed

    fit = engine_speed(engine).fit or {}
    band = fit.get("band_90")
    worst = fit.get("prospective_p90_abs_error") or fit.get("loso_p90_abs_error") or 0.5
    low = band[0] if band and 0 < band[0] < 1 else 1.0 / (1.0 + worst)
    high = band[1] if band and band[1] > 1 else 1.0 + worst
    return low, high


def error_band_upper(engine: str, confidence: float) -> float:
    """The factor a replica's predicted rate is divided by at ``confidence``: 1 at 0.5 (the prediction), at 0.9 and
    above the pessimistic edge of :func:`speed_error_band` (a measurement as low as its ``low`` x the prediction:
    divide by it), linear between."""
    if not applies(by_kind("confidence"), {"confidence": confidence}):
        return 1.0
    worst = 1.0 / speed_error_band(engine)[0] - 1.0
    return 1.0 + worst * min(1.0, (confidence - 0.5) / 0.4)


def replicas_for(rate: float, max_rate: float, request, engine: str) -> tuple[int, int, list[str]]:
    """(replicas, replicas the rate alone needs, the rules applied) for one option."""
    if max_rate <= 0:
        return 0, 0, []
    band = error_band_upper(engine, request.confidence)
    needed = max(1, math.ceil(rate / (max_rate / band)))
    applied = []
    if band > 1:
        applied.append("sizing.confidence-upper-edge")
    if not request.headroom:
        return needed, needed, applied
    rule = by_kind("headroom")
    replicas = max(1, math.ceil(rate / (max_rate / band * rule.params["utilisation_cap"])))
    if applies(rule, {"replicas_needed": replicas}):
        replicas += int(rule.params["spare_replicas"])
    if replicas > needed:
        applied.append(rule.id)
    return replicas, needed, applied


def cost_bucket(cost: float | None) -> float:
    """Costs in one bucket are equal for the ranking (rule sizing.tie-prefers-replicas-then-tensor-parallel: within 1%)."""
    tie = by_kind("tie_break").params["equal_cost_within"]
    cost = cost if cost is not None else math.inf
    return math.floor(math.log(cost) / math.log1p(tie)) if 0 < cost < math.inf else (math.inf if cost else -math.inf)


def precision_bits(c) -> tuple[float, float]:
    """(bits per weight, bits per KV-cache entry) of an option; 16 for the model's own 16-bit dtype (rule
    sizing.tie-prefers-full-quality). An option refused before planning (no format) counts 0."""
    from ..estimate.formats import dtype_bytes, formats

    table = formats().formats
    if c.quantization not in table:
        return 0.0, 0.0
    bits = table[c.quantization].bits or 16.0  # "none": the model's own dtype
    kv = 16.0 if c.kv_cache_dtype in ("auto", "bfloat16", "float16") else 8 * dtype_bytes(c.kv_cache_dtype)
    return float(bits), float(kv)


def rank_key(c):
    """Meets the targets, then cost (equal within 1% ties), then fuller precision (rule sizing.tie-prefers-full-quality),
    then fewer pipeline stages, then less TP (rule sizing.tie-prefers-replicas-then-tensor-parallel), then rate."""
    bucket = cost_bucket(c.cost_per_hour)
    bits = precision_bits(c) if math.isfinite(bucket) else (0.0, 0.0)  # options without a cost keep their order
    return (not c.meets_targets, bucket, -bits[0], -bits[1], c.pipeline_parallel_size, c.tensor_parallel_size,
            -(c.max_rate_per_replica or 0))


def fold(cands: list, chosen_gpus: int | None = None) -> list:
    """Options whose fleet is too large to be a plan (rule sizing.fold-absurd-fleets: over 1,000 GPUs, or over 10x the
    chosen fleet's GPUs) marked out of reach instead of meeting the targets."""
    rule = by_kind("flag_fleet")
    out = []
    for c in cands:
        if c.meets_targets and applies(rule, {"total_gpus": c.total_gpus, "chosen_gpus": chosen_gpus}):
            bound = (f"over {rule.params['max_times_chosen']:g}x the {chosen_gpus} GPUs chosen"
                     if c.total_gpus <= rule.params["max_gpus"] else f"over {rule.params['max_gpus']:,.0f} GPUs")
            c = c.model_copy(update={"meets_targets": False, "sizing_rules": [*c.sizing_rules, rule.id],
                                     "why_not": f"needs {c.total_gpus} GPUs, {bound}: out of reach (rule {rule.id})"})
        out.append(c)
    return out


def uncached_prompt(request, mean_in: float) -> tuple[float, str | None]:
    """Prompt tokens each request prefills once the shared prefix is cached, and the rule that said so."""
    rule = by_kind("prefix_cache")
    prefix = request.shared_prefix_tokens or 0
    if not applies(rule, {"shared_prefix_tokens": prefix, "input_tokens": mean_in}):
        return mean_in, None
    return max(1.0, mean_in - prefix), said(rule.id, f"{prefix} of {mean_in:g} prompt tokens served from the prefix cache")


def decisions(request, chosen, runners: list, cands: list, notes: list[str]) -> list[str]:
    """The sizing summary's choices, each naming its rule."""
    out = [n for n in notes if "(rule sizing." in n]
    if request.input_tokens and request.shared_prefix_tokens:
        _, line = uncached_prompt(request, float(request.input_tokens))
        out += [line] if line else []
    if chosen is None:
        return out
    objective = by_kind("objective")
    cheapest = "the cheapest" if chosen.cost_per_hour is not None else "the fewest GPUs"
    out.append(said(objective.id, f"{cheapest} meeting every target: {chosen.gpu} {chosen.layout} {chosen.engine} "
                    f"{chosen.quantization}, at {chosen.max_rate_per_replica:.3g} req/s per replica (simulated)"))
    out += _published_line(request, chosen)
    if chosen.quantization == "fp8" or chosen.kv_cache_dtype == "fp8":
        if applies(by_kind("search_dimension"), {"quantization": request.quantization, "kv_cache_dtype": request.kv_cache_dtype,
                                                 "pre_quantized": False, "chosen": "none"}):
            rule = by_kind("search_dimension")
            what = "FP8 weights" + (" and an FP8 KV cache" if chosen.kv_cache_dtype == "fp8" else "")
            out.append(said(rule.id, f"{what}: cheaper than 16-bit here. Quality: {rule.reason.split('Quality: ')[1].split(' Pin ')[0]}"))
    if "sizing.confidence-upper-edge" in chosen.sizing_rules:
        band = error_band_upper(chosen.engine, request.confidence)
        out.append(said("sizing.confidence-upper-edge", f"confidence {request.confidence:g}: each replica counted at "
                        f"{chosen.max_rate_per_replica / band:.3g} req/s (the rate / {band:.2f})"))
    if "sizing.headroom-n-plus-one" in chosen.sizing_rules:
        rule = by_kind("headroom")
        out.append(said(rule.id, f"{chosen.replicas} replicas where the rate alone needs {chosen.replicas_needed}: each "
                        f"at most {rule.params['utilisation_cap']:.0%} of what it sustains, plus {int(rule.params['spare_replicas'])} spare"))
    elif not request.headroom:
        out.append(said(by_kind("headroom").id, f"no headroom (--no-headroom): {chosen.replicas} replicas run at up to "
                        "100% of what each sustains"))
    out += _tie_lines(chosen, runners)
    n = sum(1 for c in cands if "sizing.fold-absurd-fleets" in c.sizing_rules)
    if n:
        out.append(said("sizing.fold-absurd-fleets", f"{n} option(s) shown as out of reach: each needs over "
                        f"{int(by_kind('flag_fleet').params['max_gpus'])} GPUs or over "
                        f"{by_kind('flag_fleet').params['max_times_chosen']:g}x the chosen fleet's"))
    return out


def _tie_lines(chosen, runners: list) -> list[str]:
    """The tie-break that put the choice above a runner-up at the same cost: fuller precision, else the layout."""
    out = []
    for r in runners:
        if not (chosen.cost_per_hour and r.cost_per_hour):
            continue
        (wa, ka), (wb, kb) = precision_bits(chosen), precision_bits(r)
        s = {"a": {"cost": chosen.cost_per_hour, "tp": chosen.tensor_parallel_size, "pp": chosen.pipeline_parallel_size,
                   "weight_bits": wa, "kv_bits": ka},
             "b": {"cost": r.cost_per_hour, "tp": r.tensor_parallel_size, "pp": r.pipeline_parallel_size,
                   "weight_bits": wb, "kv_bits": kb}}
        if applies(by_kind("tie_quality"), s):
            out.append(said(by_kind("tie_quality").id, f"{_precision_words(chosen, wa, ka)} over {_precision_words(r, wb, kb)} "
                            f"({r.gpu} {r.layout}) at the same cost"))
        elif (wa, ka) == (wb, kb) and applies(by_kind("tie_break"), s):
            out.append(said(by_kind("tie_break").id, f"{chosen.layout} over {r.layout} at the same cost"))
    return out


def _precision_words(c, weight_bits: float, kv_bits: float) -> str:
    weights = "16-bit weights" if c.quantization == "none" else f"{weight_bits:g}-bit {c.quantization} weights"
    return f"{weights}, {kv_bits:g}-bit KV cache"


def _published_line(request, chosen) -> list[str]:
    """The published checkpoint the chosen option serves in place of the rules' own format, and its quality."""
    rule = by_kind("published_checkpoint")
    if not chosen.checkpoint or not applies(rule, {"quantization": request.quantization, "pre_quantized": False,
                                                   "chosen": None, "method": chosen.quantization}):
        return []
    quality = rule.reason.split("Quality: ")[1].split(" FP8 checkpoints")[0]
    return [said(rule.id, f"the chosen option serves the published {chosen.quantization} checkpoint {chosen.checkpoint} "
                 f"as it is (nothing to quantize). Quality: {quality}")]
