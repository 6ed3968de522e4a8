"""Engine memory profiles by version (``data/engine_memory.yaml``): how an engine sizes its KV cache at start-up.

    >>> from infer_advisor.engines.memory import memory_profile, batch_defaults
    >>> prof = memory_profile("vllm", "0.7.3")
    >>> prof.label, prof.activation_tokens, prof.cuda_graphs_in_budget
    ('vLLM 0.6.4-0.7 (V0, memory_profiling)', 'max_model_len', False)
    >>> batch_defaults(prof, usable_memory_bytes=79 * 2**30, device_name="H100-80GB")
    (2048, 256)

An engine without an entry (TGI, transformers, CTranslate2, TensorRT-LLM, MLC LLM, ExLlamaV2, mistral.rs) gets a
profile built from its ``engines.yaml`` figures (:func:`profile_from_engine`), so the memory model has one shape to
read: one version (the pinned one, or the one asked for, with the same figures), one batch tier for every GPU, every
overhead inside the budget, sliding-window layers holding their window, the KV cache in the model dtype.
"""


from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._data import load_validated
from .._paths import shipped
from .cuda_graphs import CudaGraphScaling
from .profiles import EngineProfile, engine_profile
from .sglang_reserved import SGLangFraction, SGLangReservedByMemory
from .versions import version_key
from ..units import GIB, MIB


class BatchTier(BaseModel):
    """One row of an engine's per-GPU defaults; the first row whose conditions hold applies."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    min_memory_gib: float = Field(default=0.0, ge=0, description="Smallest CUDA-visible total (GiB) the row applies to.")
    exclude_names: list[str] = Field(default_factory=list, description="Lower-case name substrings that skip the row ('a100').")
    include_names: list[str] = Field(
        default_factory=list, description="Lower-case name substrings one of which the row needs ('h100', 'h200'; empty: any name)."
    )
    exclude_compute_capabilities: list[float] = Field(
        default_factory=list, description="Compute capabilities that skip the row (12.1: GB10 / DGX Spark in vLLM 0.33)."
    )
    max_num_batched_tokens: int = Field(gt=0)
    max_num_seqs: int = Field(gt=0)
    graph_bs: int | None = Field(default=None, gt=0, description="SGLang cuda_graph_max_bs of the row (TP < 4).")
    graph_bs_from_tp4: int | None = Field(default=None, gt=0, description="SGLang cuda_graph_max_bs of the row from TP 4 (None: graph_bs).")


class CommBytes(BaseModel):
    """Per-GPU communication buffers under tensor / pipeline parallelism, by interconnect."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    nvlink: int = Field(ge=0)
    pcie: int = Field(ge=0)
    per_extra_rank: int = Field(default=0, ge=0, description="Added for every rank beyond 2.")
    pre_hopper: int | None = Field(
        default=None, ge=0, description="The NVLink figure on GPUs of compute capability below 9.0 (None: the same): NCCL's NVLS "
        "(NVLink SHARP multicast) buffers need sm90 and NVSwitch, so an A100 allocates much less.")
    pre_hopper_source: str | None = None


class ExpertPadding(BaseModel):
    """An engine's padded layout for routed experts stored in one weight format (its MoE kernel's alignment)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    format: str = Field(description="Weight format (data/formats.yaml key) whose experts are padded.")
    below: str | None = Field(default=None, description="First engine version (within the range) this layout no longer applies to.")
    hidden: int = Field(ge=1, description="The hidden size is rounded up to a multiple of this.")
    intermediate: int = Field(ge=1, description="The per-rank expert intermediate size is rounded up to a multiple of this.")
    bias_bytes: int | None = Field(
        default=None, ge=1, le=4,
        description="Bytes per element the kernel keeps the experts' biases in (null: the model dtype); see bias_source.",
    )
    bias_source: str | None = Field(default=None, description="Where bias_bytes was read (required with it).")
    outside_capability: tuple[float, float] | None = Field(
        default=None, description="[low, high): the row applies only on GPUs whose compute capability is known and outside "
        "this window (the MoE kernel other GPUs take, e.g. vLLM's Marlin MXFP4 where its Triton kernels run only on 9.0-11.0).")
    source: str = Field(min_length=8)

    def applies_on(self, compute_capability: float | None) -> bool:
        """Whether this layout holds on a GPU of ``compute_capability`` (None: unknown, which only unconditioned rows match)."""
        if self.outside_capability is None:
            return True
        low, high = self.outside_capability
        return compute_capability is not None and not low <= compute_capability < high

    @model_validator(mode="after")
    def _bias_sourced(self) -> "ExpertPadding":
        if self.bias_bytes is not None and not self.bias_source:
            raise ValueError("expert_padding: bias_bytes needs a bias_source")
        return self


class MlaAbsorption(BaseModel):
    """MLA's absorbed matrices, built per layer after loading and kept beside the raw projections (vLLM V0 0.7.1-0.7.3
    ``attention/backends/mla/utils.py`` ``process_weights_after_loading``; estimate/weights_engine.py)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    since: str = Field(description="First engine version (within the range) that builds them.")
    requantized_formats: list[str] = Field(
        default_factory=list, description="Weight formats (data/formats.yaml keys) whose absorbed matrices are requantized to one byte.")
    source: str = Field(min_length=8)


class ExpandedZeroPoints(BaseModel):
    """Group zero points the engine's kernel keeps pre-multiplied by the scales, in the scales' dtype, instead of the
    checkpoint's packed integers (vLLM's Machete kernel on compute capability 9.0; estimate/weights_engine.py)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    since: str | None = Field(default=None, description="First engine version (within the range) that does it (None: all).")
    formats: list[str] = Field(min_length=1, description="Weight formats (data/formats.yaml keys) with zero points that take this kernel.")
    compute_capability: float = Field(gt=0, description="The only compute capability the kernel runs on.")
    kernel: Literal["machete"] = Field(default="machete", description="The kernel, as a start-up log names it ('Using MacheteLinearKernel').")
    source: str = Field(min_length=8)


class MarlinFp8Scales(BaseModel):
    """Block-FP8 weights on a GPU without FP8 units: the engine runs them weight-only through Marlin and keeps one scale
    per ``group_k`` inputs per output in the model dtype (vLLM marlin_utils_fp8.py; estimate/weights_engine.py)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    formats: list[str] = Field(min_length=1, description="Weight formats (data/formats.yaml keys) whose block scales are expanded.")
    below_capability: float = Field(gt=0, description="GPUs below this compute capability take the Marlin path.")
    group_k: int = Field(gt=0, description="Inputs per scale after the expansion (the checkpoint's block along K).")
    source: str = Field(min_length=8)


Sampler = Literal["flashinfer", "pytorch"]


class SamplerPeak(BaseModel):
    """The start-up profile's sampler term for one top-k/top-p implementation."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    logits_copies: float = Field(gt=0, le=20, description="fp32 copies of max_num_seqs x vocab the sampler holds at its peak.")
    after_forward: bool = Field(
        default=False, description="The sampler's peak comes after the forward's intermediates are freed (only the hidden states "
        "stay): the profile's peak is max(forward, hidden states + sampler), not their sum.")
    source: str = Field(min_length=8)


class EngineMemoryProfile(BaseModel):
    """How one engine version range budgets memory; every figure has its source beside it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    engine: str = ""
    first: str = Field(description="First version the range covers.")
    below: str | None = Field(description="First version it does not cover (None: open).")
    label: str
    memory_fraction: float = Field(gt=0, le=1)
    memory_fraction_source: str = Field(min_length=8)
    sglang_fraction: SGLangFraction | None = None
    sglang_reserved_by_memory: SGLangReservedByMemory | None = None  # SGLang 0.4.8-0.5.2's band rule (engines/sglang_reserved.py)
    fraction_by_ranks: list[tuple[int, float]] = Field(
        default_factory=list, description="[min ranks, fraction] rows, largest first: SGLang 0.3-0.4.5's default "
        "mem_fraction_static by tensor-parallel size alone (server_args.__post_init__); empty: memory_fraction or sglang_fraction.")
    fraction_by_ranks_source: str | None = None
    budget_base: Literal["total", "free_at_start"]
    activation_in_budget: bool
    activation_tokens: Literal["max_num_batched_tokens", "max_model_len"]
    chunked_prefill_above: int | None = Field(default=None, gt=0)
    chunked_prefill_tokens: int | None = Field(default=None, gt=0)
    activation_scale: float = Field(gt=0, le=10)
    activation_hidden_copies: float | None = Field(default=None, gt=0, description="Override of data/formats.yaml hidden_copies.")
    activation_intermediate_copies: float | None = Field(default=None, gt=0, description="Override of intermediate_copies.")
    activation_logits_copies: float | None = Field(default=None, gt=0, description="Override of logits_copies (the sampler's fp32 copies per row).")
    activation_split_by_tp: bool = Field(default=True, description="The activation peak per GPU shrinks with TP (False: vLLM's does not).")
    moe_workspace_persists: bool = Field(
        default=False, description="The fused-MoE workspace stays allocated after the forward, beside the sampler's peak "
        "(vLLM 0.11+; estimate/engine_terms.py moe_workspace_bytes).")
    sampler_default: Sampler | None = Field(
        default=None, description="The top-k/top-p sampler the version runs by default (vllm-openai image); None: one term only.")
    sampler_peaks: dict[Sampler, SamplerPeak] = Field(
        default_factory=dict, description="The sampler term by implementation (a log's 'Using FlashInfer for top-p & top-k "
        "sampling' or 'Falling back to the PyTorch-native implementation' tells which ran).")
    activation_source: str = Field(min_length=8)
    batch_tiers: list[BatchTier] = Field(min_length=1)
    batch_source: str = Field(min_length=8)
    context_in_budget: bool
    cuda_context_bytes: int = Field(ge=0)
    cuda_context_source: str = Field(min_length=8)
    non_torch_bytes: int = Field(ge=0)
    non_torch_source: str = Field(min_length=8)
    comm_in_budget: bool
    comm: CommBytes
    comm_source: str = Field(min_length=8)
    cuda_graphs_in_budget: bool
    cuda_graph_bytes: int = Field(ge=0)
    cuda_graph_source: str = Field(min_length=8)
    sliding_window_kv: Literal["full", "window"]
    sliding_window_source: str = Field(min_length=8)
    kv_cache_dtype: Literal["model", "float16"] = "model"
    kv_cache_dtype_source: str | None = None
    kv_8bit_dtype: str = Field(default="fp8", description="What --kv-cache-dtype fp8 stores in this engine (data/formats.yaml dtype).")
    block_size: int = Field(gt=0)
    source: str = Field(min_length=8)
    loads_vision_tower: bool = Field(
        default=False, description="The engine loads a multimodal checkpoint's vision encoder next to the text model (split over TP)."
    )
    profiles_vision_encoder: bool = Field(
        default=False, description="The start-up profile encodes dummy images of the largest size before the text batch "
        "(vLLM V1 profile_run; estimate/vision_profile.py).")
    cuda_graph_scaling: CudaGraphScaling | None = Field(
        default=None, description="The graph pool by captured sizes and layers (None: cuda_graph_bytes for every setup)."
    )
    replicates_mla_and_router: bool = Field(
        default=False, description="MLA down-projections and the MoE router are whole on every tensor-parallel rank "
        "(vLLM and SGLang deepseek_v2.py ReplicatedLinear; estimate/weights.py replicated_bytes).")
    replicates_mistral_vision: bool = Field(
        default=False, description="A mistralai Pixtral-based repository is read in Mistral format (consolidated*.safetensors) and "
        "its vision encoder and adapter, plain nn.Linear layers, are whole on every GPU (vLLM 0.17-0.19 pixtral.py).")
    keeps_rotary_cache: bool = Field(
        default=False, description="The engine keeps the rotary embedding's cos/sin table on every GPU, counted with the weights."
    )
    rotary_cache_layout: str | None = Field(
        default=None, description="The entry of data/rotary_cache.yaml `layouts` whose element types the tables take (None: "
        "the model dtype throughout).")
    splits_mla_kv_b: bool = Field(
        default=False, description="MLA's kv_b_proj is copied into w_kc / w_vc kept beside it (SGLang post_load_weights; "
        "estimate/weights_engine.py split_kv_b_bytes).")
    expert_padding: list[ExpertPadding] = Field(
        default_factory=list, description="Padded expert layouts by weight format; the first whose `below` is above the version applies."
    )
    mla_absorption: MlaAbsorption | None = Field(
        default=None, description="MLA's absorbed matrices kept beside the weights from `since` on (None: none).")

    zero_points_in_scale_dtype: ExpandedZeroPoints | None = Field(
        default=None, description="Zero points kept in the scales' dtype by the kernel the engine picks (None: as stored).")

    marlin_fp8_scales: MarlinFp8Scales | None = Field(
        default=None, description="Block-FP8 scales expanded for Marlin on GPUs without FP8 units (None: as stored).")

    def marlin_fp8_for(self, fmt_name: str, compute_capability: float | None) -> MarlinFp8Scales | None:
        """The Marlin scale layout ``fmt_name`` takes on a GPU of ``compute_capability`` (None: the stored one)."""
        m = self.marlin_fp8_scales
        ok = m is not None and fmt_name in m.formats and compute_capability is not None and compute_capability < m.below_capability
        return m if ok else None

    def expands_zero_points(self, fmt_name: str, version: str | None, compute_capability: float | None,
                            linear_kernel: str | None = None) -> bool:
        """Whether this engine version keeps ``fmt_name``'s zero points in the scales' dtype on a GPU of ``compute_capability``;
        a kernel the start-up log names (``linear_kernel``: machete, marlin) decides over the version's rule (a build may
        backport the kernel choice: vLLM 0.18.0+rhaiv.14 prints 'Using MacheteLinearKernel for AWQMarlinLinearMethod')."""
        z = self.zero_points_in_scale_dtype
        if z is not None and linear_kernel in ("machete", "marlin"):
            return linear_kernel == z.kernel and fmt_name in z.formats
        return (z is not None and fmt_name in z.formats and compute_capability == z.compute_capability
                and (z.since is None or version is None or version_key(version) >= version_key(z.since)))

    def absorbs_mla(self, version: str | None) -> MlaAbsorption | None:
        """The MLA absorption this engine version performs (None: none, or a version before ``since``)."""
        a = self.mla_absorption
        return a if a is not None and (version is None or version_key(version) >= version_key(a.since)) else None

    def expert_padding_for(self, fmt_names: tuple[str, ...], version: str | None,
                           compute_capability: float | None = None) -> ExpertPadding | None:
        """The padded layout this engine version uses for experts stored in one of ``fmt_names`` on a GPU of
        ``compute_capability`` (None: as stored)."""
        for pad in self.expert_padding:
            if (pad.format in fmt_names and pad.applies_on(compute_capability)
                    and (pad.below is None or version is None or version_key(version) < version_key(pad.below))):
                return pad
        return None

    def sampler_peak(self, sampler: str | None) -> SamplerPeak | None:
        """The sampler term for ``sampler`` (None: the version's default); None where the range has one term only."""
        return self.sampler_peaks.get(sampler or "") or self.sampler_peaks.get(self.sampler_default or "")

    def covers(self, version: str) -> bool:
        v = version_key(version)
        return version_key(self.first) <= v and (self.below is None or v < version_key(self.below))

    def comm_bytes(self, tp: int, pp: int, interconnect: str, compute_capability: float | None = None) -> int:
        """Communication buffers per GPU for a layout of ``tp x pp`` GPUs (0 on one GPU); ``compute_capability`` picks the
        pre-Hopper figure where the range has one."""
        ranks = tp * pp
        if ranks <= 1:
            return 0
        # AMD's Infinity Fabric (xGMI) is a peer-to-peer fabric like NVLink: RCCL and the custom all-reduce buffers
        # are sized as there (assumed; no ROCm start-up log with its non-torch memory was found)
        base = self.comm.pcie if interconnect == "pcie" else self.comm.nvlink
        if interconnect != "pcie" and self.comm.pre_hopper is not None and 0 < (compute_capability or 0) < 9.0:
            base = self.comm.pre_hopper
        return base + self.comm.per_extra_rank * max(ranks - 2, 0)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    engines: dict[str, list[EngineMemoryProfile]]


@cache
def memory_profiles() -> dict[str, tuple[EngineMemoryProfile, ...]]:
    data = load_validated(shipped("data") / "engine_memory.yaml", _File)
    return {name: tuple(p.model_copy(update={"engine": name}) for p in ranges) for name, ranges in data.engines.items()}


def profile_from_engine(profile: EngineProfile) -> EngineMemoryProfile:
    """A memory profile from an engine's engines.yaml figures (engines with no range in engine_memory.yaml)."""
    reserve = profile.memory_accounting in ("reserve", "reserve-free")
    tokens = profile.max_num_batched_tokens
    return EngineMemoryProfile(
        engine=profile.name, first=profile.version, below=None, label=f"{profile.display} {profile.version} (engines.yaml)",
        memory_fraction=profile.memory_fraction, memory_fraction_source=profile.memory_fraction_source, budget_base="total",
        activation_in_budget=True, activation_tokens="max_num_batched_tokens", activation_scale=1.0,
        activation_source="data/formats.yaml activation formula", batch_tiers=[BatchTier(max_num_batched_tokens=tokens or 1, max_num_seqs=profile.max_num_seqs)],
        batch_source=profile.max_num_batched_tokens_source, context_in_budget=True, cuda_context_bytes=0,
        cuda_context_source="counted in non_torch_bytes (engines.yaml)", non_torch_bytes=profile.non_torch_bytes,
        non_torch_source=profile.non_torch_source, comm_in_budget=True,
        comm=CommBytes(nvlink=profile.nccl_bytes, pcie=profile.nccl_bytes), comm_source=profile.nccl_source,
        cuda_graphs_in_budget=reserve or profile.cuda_graph_bytes > 0, cuda_graph_bytes=profile.cuda_graph_bytes,
        cuda_graph_source=profile.cuda_graph_source, sliding_window_kv="window",
        sliding_window_source="sliding-window layers hold the window", block_size=profile.block_size, source="data/engines.yaml",
    )


def memory_profile(engine: str, version: str | None = None) -> EngineMemoryProfile:
    """The profile of ``engine`` at ``version`` (default: the version engines.yaml pins).

    A version newer than every range gets the newest range (the plan warns, see :func:`version_note`); an older
    one is refused with the versions that are covered.
    """
    from ..errors import RequestError

    base = engine_profile(engine)
    ranges = memory_profiles().get(engine)
    wanted = version or base.version
    if not ranges:
        return profile_from_engine(base) if version in (None, base.version) else profile_from_engine(base).model_copy(update={"first": wanted})
    key = version_key(wanted)
    for prof in ranges:
        if prof.covers(wanted):
            return prof
    newest = max(ranges, key=lambda p: version_key(p.first))
    if key >= version_key(newest.first):
        return newest
    oldest = min(ranges, key=lambda p: version_key(p.first))
    if key >= version_key(oldest.first):  # between two ranges (SGLang 0.4.6-0.4.9: a fraction rule not read here)
        spans = ", ".join(f"{p.first}-{p.below}" if p.below else f"{p.first} and later" for p in sorted(ranges, key=lambda p: version_key(p.first)))
        raise RequestError(
            f"{base.display} {wanted} falls between the memory profiles here ({spans}); use --engine-version with one of them, "
            "or calibrate from its start-up log (infer-advisor calibrate --from-log FILE)."
        )
    raise RequestError(
        f"{base.display} {wanted} is older than the memory profiles here ({oldest.first} and later); "
        f"use --engine-version {oldest.first} or newer, or calibrate from its start-up log (infer-advisor calibrate --from-log FILE)."
    )


def version_note(engine: str, version: str | None) -> str | None:
    """A warning when ``version`` lies beyond every range of ``engine`` (its figures are extrapolated)."""
    ranges = memory_profiles().get(engine)
    if version is None:
        return None
    if not ranges:  # one profile from engines.yaml, whatever the version
        pinned = engine_profile(engine).version
        if version_key(version) == version_key(pinned):
            return None
        return (
            f"{engine} has no memory profiles by version here; {version} is planned with the figures of {pinned} "
            f"(data/engines.yaml) and its artifacts target {pinned}'s flags."
        )
    if any(p.covers(version) for p in ranges):
        return None
    newest = max(ranges, key=lambda p: version_key(p.first))
    return (
        f"{engine} {version} is newer than the memory profiles here; using those of {newest.label} "
        f"(calibrate from a start-up log of {version} to replace them)."
    )


def batch_defaults(
    prof: EngineMemoryProfile, *, usable_memory_bytes: int | None, device_name: str = "", compute_capability: float | None = None
) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) the engine version picks on this GPU (its OpenAI server)."""
    return _tier(prof, usable_memory_bytes, device_name, compute_capability)[:2]


def _tier(
    prof: EngineMemoryProfile, usable_memory_bytes: int | None, device_name: str, compute_capability: float | None = None
) -> tuple[int, int, int | None]:
    tier = _tier_row(prof, usable_memory_bytes, device_name, compute_capability)
    return tier.max_num_batched_tokens, tier.max_num_seqs, tier.graph_bs


def _tier_row(
    prof: EngineMemoryProfile, usable_memory_bytes: int | None, device_name: str, compute_capability: float | None = None
) -> BatchTier:
    """The first of the profile's per-GPU default rows whose conditions hold (the last row otherwise)."""
    memory_gib = (usable_memory_bytes or 0) / GIB
    name = device_name.lower()
    return next((tier for tier in prof.batch_tiers
                 if memory_gib >= tier.min_memory_gib
                 and not any(x in name for x in tier.exclude_names)
                 and (not tier.include_names or any(x in name for x in tier.include_names))
                 and compute_capability not in tier.exclude_compute_capabilities), prof.batch_tiers[-1])


def default_memory_fraction(
    prof: EngineMemoryProfile, *, driver_memory_bytes: int | None, tp: int = 1, pp: int = 1, chunked_prefill_tokens: int | None = None,
    version: str | None = None) -> float:
    """The engine's default fraction: fixed, or SGLang's mem_fraction_static computed from the GPU's total (``version``
    picks SGLang 0.4.8-0.5.2's band rule where the range has it)."""
    rule = prof.sglang_fraction
    for ranks, fraction in prof.fraction_by_ranks:
        if tp * pp >= ranks:
            return fraction
    if rule is None or not driver_memory_bytes:
        return prof.memory_fraction
    gpu_mib = driver_memory_bytes / MIB
    bands = prof.sglang_reserved_by_memory
    if bands is not None and bands.applies_to(version):
        reserved = bands.reserved_mib(gpu_mib, tp * pp)
    else:
        reserved = sglang_reserved_mib(prof, driver_memory_bytes=driver_memory_bytes, ranks=tp * pp, chunk=chunked_prefill_tokens)
    return round((gpu_mib - reserved) / gpu_mib, 3)


def sglang_reserved_mib(prof: EngineMemoryProfile, *, driver_memory_bytes: int, ranks: int, chunk: int | None = None,
                        graph_bs: int | None = None, floor: bool = True) -> float:
    """SGLang 0.5.3+'s reserve (MiB) on a GPU of ``driver_memory_bytes`` (nvidia-smi total) at ``ranks`` = tp x pp:
    ``chunk`` and ``graph_bs`` as set, else the version's defaults for the GPU (the graph batch doubled from TP 4), summed
    by :meth:`SGLangFraction.reserved_mib` (``floor``: with its 10 GiB minimum, for the fraction SGLang picks itself)."""
    tier = _tier_row(prof, driver_memory_bytes, "")
    if graph_bs is None:  # the version's default for the GPU, its larger TP 4+ figure where the row has one
        graph_bs = tier.graph_bs_from_tp4 if ranks >= 4 and tier.graph_bs_from_tp4 else tier.graph_bs
    tokens = tier.max_num_batched_tokens
    return prof.sglang_fraction.reserved_mib(driver_memory_bytes / MIB, ranks, chunk or tokens, graph_bs or 0, floor=floor)
