"""Which checkpoint a plan serves, whether its engine loads it on the plan's platform, and what is downloaded.

    >>> from infer_advisor import resolve_model
    >>> model = resolve_model("meta-llama/Llama-3.1-70B-Instruct", source="catalog")
    >>> pick_published(model, "fp8", engine="vllm", platform="rocm").repo
    'amd/Llama-3.1-70B-Instruct-FP8-KV'

The layout search and the plan ask the same function (:func:`pick_published`), so the memory model plans with the
same checkpoint the artifacts serve. Formats and their loadability come from ``data/formats_by_platform.yaml``
(:mod:`infer_advisor.checkpoint_formats`); download sizes are weights in their stored format, added up by the memory
model (:func:`infer_advisor.estimate.memory.weights_bytes`) or stated by the published checkpoint.
"""

from __future__ import annotations

from typing import Any

from ..engines.checkpoint_formats import Answer, checkpoint_format, loadable, preference
from ..model_facts.facts import ModelFacts
from ..model_facts.published import PublishedCheckpoint, published

# Weight formats the plan may serve from a published checkpoint stored in a close format: an FP8 plan serves a
# block-scaled FP8 checkpoint as readily as a per-tensor one (Qwen/Qwen3-32B-FP8 for Qwen/Qwen3-32B).
_FAMILY = {"fp8": ("fp8", "fp8-block")}
# Pre-quantized checkpoints: config.json quant_method -> table format.
_PRE_QUANT_FORMAT = {
    "fp8": "fp8-block", "awq": "awq", "gptq": "gptq", "compressed-tensors": "compressed-tensors", "mxfp4": "mxfp4",
    "modelopt": "modelopt-fp8", "quark": "quark",
}


def gguf_of(method: str) -> bool:
    """Is ``method`` llama.cpp's GGUF conversion of a pre-quantized checkpoint (gpt-oss's MXFP4 GGUF)? Such a plan serves
    the published GGUF file, not the checkpoint itself."""
    from ..estimate.formats import formats

    fmt = formats().formats.get(method)
    return fmt is not None and fmt.gguf_of is not None


def platform_of(kind: str, vendor: str | None) -> str:
    """cuda, rocm or cpu: the column of the compatibility table a plan's hardware reads."""
    if kind == "cpu":
        return "cpu"
    return "rocm" if vendor == "amd" else "cuda"


def format_of(ckpt: PublishedCheckpoint) -> str | None:
    return checkpoint_format(ckpt.method, published_format=ckpt.format)


def pick_published(
    model: ModelFacts | str, method: str, *, engine: str, platform: str, version: str | None = None,
    compute_capability: float | None = None, gfx: str | None = None,
) -> PublishedCheckpoint | None:
    """The verified published checkpoint of ``model`` a plan in weight format ``method`` serves on ``engine`` and
    ``platform``: only ones the engine loads there, in the platform's order of preference; None if none."""
    name = model if isinstance(model, str) else model.name
    if not isinstance(model, str) and (model.source == "local" or (model.pre_quantized is not None and not gguf_of(method))):
        return None
    if method in ("none", "ct2-int8"):
        return None
    wanted = _FAMILY.get(method, (method,))
    table = {k.lower(): v for k, v in published().checkpoints.items()}
    found = [c for c in table.get(name.strip().lower(), []) if c.method in wanted and c.verified]
    order = preference(platform)

    def rank(c: PublishedCheckpoint) -> tuple[int, int]:
        fmt = format_of(c)
        return (order.index(fmt) if fmt in order else len(order), wanted.index(c.method))

    for ckpt in sorted(found, key=rank):
        if order and format_of(ckpt) is not None and format_of(ckpt) not in order:
            continue  # not served from a published checkpoint on this platform (data/formats_by_platform.yaml preference)
        answer = loadable(engine, platform, format_of(ckpt) or "", version=version, compute_capability=compute_capability, gfx=gfx)
        if format_of(ckpt) is None or answer is None or answer.loads:
            return ckpt
    return None


def served_format(model: ModelFacts, method: str, ckpt: PublishedCheckpoint | None, *, engine: str, online: bool) -> str | None:
    """The checkpoint format the engine is given (None where the table has no column for it)."""
    if model.pre_quantized is not None and not gguf_of(method):
        return _PRE_QUANT_FORMAT.get(model.pre_quantized)
    if ckpt is not None:
        return format_of(ckpt)
    if method in ("none",):
        return "bf16"
    if online:
        return "fp8-online"
    if method == "awq":  # what `infer-advisor quantize --method awq` writes for this engine (data/engines.yaml)
        from ..engines.profiles import engine_profiles

        profile = engine_profiles().get(engine)
        return profile.awq_checkpoint_format if profile is not None else "compressed-tensors"
    return checkpoint_format(method)


def refusal(
    model: ModelFacts, method: str, *, engine: str, platform: str, version: str | None = None,
    compute_capability: float | None = None, gfx: str | None = None,
) -> Answer | None:
    """Why ``engine`` cannot serve ``model`` in ``method`` on ``platform`` (the table's answer), or None when it can
    (or the table has no row for the engine)."""
    ckpt = pick_published(model, method, engine=engine, platform=platform, version=version,
                          compute_capability=compute_capability, gfx=gfx)
    online = method == "fp8" and ckpt is None and model.pre_quantized is None
    fmt = served_format(model, method, ckpt, engine=engine, online=online)
    if fmt is None:
        return None
    answer = loadable(engine, platform, fmt, version=version, compute_capability=compute_capability, gfx=gfx)
    return answer if answer is not None and not answer.loads else None


def where(engine: str, request: Any, engine_value: str, hw: Any) -> dict:
    """Engine, platform, version and GPU architecture of a plan: what the compatibility table is asked with."""
    gpu = hw.gpu if hw.kind == "gpu" else None
    return dict(
        engine=engine, platform=platform_of(hw.kind, gpu.vendor if gpu else None),
        version=request.engine_version if request.engine == engine_value else None,
        compute_capability=gpu.compute_capability if gpu is not None and gpu.vendor == "nvidia" else None,
        gfx=gpu.gfx_arch if gpu is not None else None,
    )


def published_bytes(model: ModelFacts, method: str, **where_: Any) -> int | None:
    """The stated size of the published checkpoint the plan would serve (the same pick the plan makes), if stated."""
    ckpt = pick_published(model, method, **where_)
    return ckpt.size_bytes if ckpt is not None else None
