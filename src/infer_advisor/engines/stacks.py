"""Servers a ``--stack`` puts in front of an engine: what the plan's engine configuration becomes, the decision the
plan records and the note it carries. One entry per (engine, stack) in ``STACKS``; the planner applies whichever
matches and names no server itself.

    >>> server_stack("trtllm", "nvidia-triton", "1.2.1").config["server"]
    'triton'
"""

from __future__ import annotations


class ServerStack:
    """What a stack changes. A plain class: every plan imports this module, and making a dataclass costs ~0.5 ms."""

    __slots__ = ("config", "decision", "note")

    def __init__(self, config: dict, decision: dict, note: str | None = None) -> None:
        self.config = config  # EngineConfig fields the server replaces (image, port, health path, ...)
        self.decision = decision  # a plan Decision's fields: rule_id, decides, value, effect, reason, source
        self.note = note  # a warning the plan carries (what the estimate leaves out)


def _triton(version: str) -> ServerStack:
    """The same TensorRT-LLM engine behind Triton Inference Server (data/triton.yaml): Triton's image, HTTP port,
    readiness path and model name."""
    from .triton import triton_facts, triton_release

    facts, release = triton_facts(), triton_release(version)
    image = facts.image_for(release)
    return ServerStack(
        config=dict(image=image, port=facts.http_port, health_path=facts.health_path, served_model_name=facts.model_name,
                    server="triton", server_version=release.triton),
        decision=dict(
            rule_id="server.triton", decides="server", value=image, effect="set",
            reason=f"--stack nvidia-triton: TensorRT-LLM {version} served by Triton {release.triton} (tritonserver "
            f"{release.triton_server_version}) through its TensorRT-LLM backend's LLM API model '{facts.model_name}'",
            source=release.source,
        ),
        note=(
            f"Triton's own process holds a CUDA context and its {facts.cuda_memory_pool_bytes / 2**20:.0f} MiB CUDA memory "
            "pool on each GPU (tritonserver defaults), outside the memory estimate; TensorRT-LLM's KV cache takes its "
            "fraction of the memory free after them, so it holds slightly fewer tokens than estimated."
        ),
    )


STACKS = {("trtllm", "nvidia-triton"): _triton}


def server_stack(engine: str, stack: str | None, version: str) -> ServerStack | None:
    """The server ``stack`` puts in front of ``engine`` at ``version``, or None (the engine serves itself)."""
    build = STACKS.get((engine, stack))
    return build(version) if build is not None else None
