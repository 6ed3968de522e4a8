"""What an operator's artifacts download and how long they give the server to come up, from the plan's own bytes.

    >>> from infer_advisor import advise
    >>> plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
    >>> budget = startup_budget(plan, downloads=True)
    >>> budget.seconds, budget.words
    (537, 'start-up allowance 537 s = 240 s to start, compile and capture graphs + 12.6 GiB read at 500 MB/s ...')

The checkpoint is counted in its stored format: a published or pre-quantized checkpoint at the size the memory model
gives it (its stated size where the catalog has one), a checkpoint the engine quantizes while loading (or that a
quantize/convert step reads) at its unquantized size. Constants live in data/emit.yaml with their sources.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from ..estimate.formats import dtype_bytes
from ..plan.models import DeploymentPlan
from ..engines.launch_facts import download_args, emit_facts
from ..engines.profiles import engine_profile
from ..units import GIB


class StartupBudget(BaseModel):
    """How long a server may take to answer its health check, and the arithmetic behind it."""

    seconds: int
    words: str = Field(description="The arithmetic, for comments and the README.")
    load_seconds: float
    download_seconds: float


def stored_bytes(plan: DeploymentPlan) -> tuple[float, str]:
    """Bytes of the checkpoint that is downloaded and read, and where the figure comes from."""
    q, m = plan.quantization, plan.memory
    published = q.published_checkpoint
    if published is not None and published.size_bytes:
        return float(published.size_bytes), f"published checkpoint {published.repo} ({published.size_source})"
    # FP8 quantized while loading (vLLM/SGLang --quantization fp8, TGI --quantize fp8), a quantize or convert step, or
    # an engine's in-situ quantization (mistral.rs ISQ): the unquantized checkpoint is what is downloaded and read
    reads_unquantized = (
        q.engine_flag is not None or q.method == "fp8" or q.needs_quantize_step or q.converter is not None
        or engine_profile(plan.engine.name).in_situ_quantization
    ) and not q.pre_quantized and published is None
    if reads_unquantized and q.method != "none":
        dtype = plan.model.torch_dtype if plan.model.torch_dtype in ("float16", "bfloat16", "float32") else "bfloat16"
        return plan.model.num_parameters * dtype_bytes(dtype), f"estimated: {plan.model.num_parameters / 1e9:.1f} B parameters in {dtype}"
    what = published.repo if published is not None else plan.model.name
    return float(m.weights_bytes), f"estimated by the memory model: {what} in {q.method if q.method != 'none' else plan.dtype} weights"


def read_bytes(plan: DeploymentPlan) -> float:
    """Bytes the server reads at start: the downloaded checkpoint, except after a quantize or convert step (run before
    the server, from the downloaded checkpoint), whose output is the served weights the memory model counts."""
    q = plan.quantization
    if (q.needs_quantize_step or q.converter is not None) and not q.pre_quantized and q.published_checkpoint is None:
        return float(plan.memory.weights_bytes)
    return stored_bytes(plan)[0]


def startup_budget(plan: DeploymentPlan, *, downloads: bool) -> StartupBudget:
    """Start-up allowance: base + load (+ download when ``downloads``), never under the floor; --startup-timeout wins."""
    facts = emit_facts()
    r = plan.request
    if r.startup_timeout:
        return StartupBudget(seconds=r.startup_timeout, words=f"start-up allowance {r.startup_timeout} s (--startup-timeout)",
                             load_seconds=0, download_seconds=0)
    size, fetched = read_bytes(plan), stored_bytes(plan)[0]
    load = size / (facts.load_speed_mb_s * 1e6)
    speed = r.download_speed or facts.download_speed_mb_s
    download = fetched / (speed * 1e6) if downloads else 0.0
    total = facts.startup_seconds_base + load + download
    seconds = max(math.ceil(total), facts.startup_floor_seconds)
    words = (
        f"start-up allowance {seconds} s = {facts.startup_seconds_base} s to start, compile and capture graphs + "
        f"{size / GIB:.1f} GiB read at {facts.load_speed_mb_s:g} MB/s ({load:.0f} s)"
    )
    if downloads:
        speed_words = f"{speed:g} MB/s (--download-speed)" if r.download_speed else (
            f"an assumed {speed:g} MB/s (not measured; set --download-speed or --startup-timeout)"
        )
        words += f" + the {fetched / GIB:.1f} GiB download at {speed_words} ({download:.0f} s)"
    if seconds > math.ceil(total):
        words += f"; raised to the {facts.startup_floor_seconds} s floor"
    return StartupBudget(seconds=seconds, words=words, load_seconds=load, download_seconds=download)


def served_repo(plan: DeploymentPlan) -> str:
    """The Hub repository the engine loads: the published checkpoint when the plan serves one, else the model."""
    published = plan.quantization.published_checkpoint
    return published.repo if published is not None else plan.model.name
