"""The typed result of a capacity search: the cheapest fleet that meets the targets, the best per GPU type, the
trade-off front, and which target binds when nothing meets them."""


from pydantic import BaseModel, ConfigDict, Field

from .._field_defaults import empty_list

from .targets import LatencyTargets, TargetCheck


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    usd_per_gpu_hour: float = Field(ge=0)
    source: str = Field(description="'request' (--price-per-gpu-hour) or the catalog price's provider, page and date.")


class PhysicsShare(BaseModel):
    """How close one option runs to a physical limit at the most it sustains (capacity/physics.py)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    name: str = Field(description="arithmetic, bytes or throughput_ceiling.")
    share: float = Field(description="need / limit at max_rate_per_replica; never above 1 (the search caps the rate).")
    words: str


class TtftEdge(BaseModel):
    """The operating point re-simulated with the replica as much slower or faster than modelled as one edge of the
    engine's error band (capacity/ttft_band.py)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    speed: float = Field(gt=0, description="The replica's speed / the modelled speed at this edge (0.39: 61% slower).")
    queue_grows: bool = Field(description="At this speed the rate per replica is past what the replica completes.")
    ttft_p50_s: float | None = Field(default=None, description="None when the queue grows (no stationary value).")
    ttft_p90_s: float | None = None


class TtftBand(BaseModel):
    """How sure the TTFT at the operating point is: the same rate on a replica at each edge of the error band of
    ``max_rate_per_replica`` (capacity.policy.speed_error_band). Near the knee a few percent of step time moves TTFT
    several-fold (calls F and G, docs/capacity.md)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    utilisation: float = Field(description="Rate per replica / max_rate_per_replica.")
    slower: TtftEdge
    faster: TtftEdge
    near_knee: bool = Field(description="utilisation above KNEE_UTILISATION: TTFT is sensitive to a few percent of step-time error.")
    source: str = Field(description="Where the band's edges come from.")
    band_from: str = Field(default="", description="The same in a few words, as the table prints it.")


class Candidate(BaseModel):
    """One deployment option: a replica layout on one GPU type, and the fleet the rate needs."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    gpu: str
    engine: str
    quantization: str
    kv_cache_dtype: str
    checkpoint: str | None = Field(default=None, description="The published quantized checkpoint the option serves "
                                   "(Hub repository), if it serves one (data/published_checkpoints.yaml).")
    tensor_parallel_size: int
    pipeline_parallel_size: int
    expert_parallel: bool = False
    nodes_per_replica: int = 1
    gpus_per_replica: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_tokens: int = Field(description="KV capacity of one replica (memory model, estimated).")
    max_rate_per_replica: float = Field(description="Requests/s one replica sustains within every target (simulated).")
    replicas: int = Field(description="Replicas the requested rate needs (0 when no rate meets the targets).")
    total_gpus: int
    meets_targets: bool
    checks: list[TargetCheck] = Field(default_factory=empty_list, description="Targets at the operating point (rate / replicas).")
    ttft_p50_s: float | None = None
    ttft_p90_s: float | None = None
    itl_p50_s: float | None = None
    itl_p99_s: float | None = None
    e2e_p90_s: float | None = None
    ttft_band: TtftBand | None = Field(default=None, description="TTFT p50/p90 if the replica is as much slower or faster "
                                       "than modelled as the speed model's error band (the chosen option only).")
    output_tokens_per_s: float | None = Field(default=None, description="Whole fleet at the requested rate (replicas x per replica).")
    output_tokens_per_s_per_gpu: float | None = Field(default=None, description="At the most one replica sustains within the targets.")
    output_tokens_per_s_per_user: float | None = Field(default=None, description="1 / mean time per output token at that load.")
    price: Price | None = None
    cost_per_hour: float | None = Field(default=None, description="replicas x GPUs x price per GPU-hour, USD.")
    usd_per_million_output_tokens: float | None = None
    why_not: str | None = Field(default=None, description="Why this option cannot serve the request (memory, rules, a target at any load).")
    physics: list[PhysicsShare] = Field(default_factory=empty_list, description="Share of each physical limit used at max_rate_per_replica.")
    physics_capped: list[str] = Field(default_factory=empty_list, description="Invariants the simulated rate broke (the rate was lowered to them).")
    replicas_needed: int = Field(default=0, description="Replicas the rate alone needs at max_rate_per_replica (before headroom).")
    sizing_rules: list[str] = Field(default_factory=empty_list, description="Sizing rules (rules/capacity/sizing.yaml) that shaped this option.")

    @property
    def layout(self) -> str:
        ep = " EP" if self.expert_parallel else ""
        return f"TP{self.tensor_parallel_size} x PP{self.pipeline_parallel_size}{ep}"


class FrontPoint(BaseModel):
    """A point of the throughput/interactivity trade-off: one candidate at one simulated load."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    gpu: str
    layout: str
    engine: str
    quantization: str
    rate_per_replica: float
    output_tokens_per_s_per_gpu: float
    output_tokens_per_s_per_user: float
    meets_targets: bool


class Binding(BaseModel):
    """When no option meets every target: the target that binds, by how much, and what would meet it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    target: str
    words: str
    limit_s: float
    best_value_s: float = Field(description="The best any option reaches on this target at a near-idle load.")
    by_factor: float
    best_option: str
    suggestion: str


class CapacityResult(BaseModel):
    """What `infer-advisor plan --rate ...` and :func:`infer_advisor.size` answer."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    rate: float = Field(description="Requests per second the fleet must serve.")
    input_tokens: str = Field(description="Prompt lengths as asked (fixed, a distribution, or a trace).")
    output_tokens: str
    targets: LatencyTargets
    chosen: Candidate | None = Field(default=None, description="The cheapest option that meets every target.")
    runners_up: list[Candidate] = Field(default_factory=empty_list, description="The next two, for comparison.")
    why_chosen: list[str] = Field(default_factory=empty_list, description="Why the chosen option beat each runner-up.")
    best_per_gpu: list[Candidate] = Field(default_factory=empty_list, description="The cheapest option on each GPU type searched.")
    front: list[FrontPoint] = Field(default_factory=empty_list, description="Pareto front: tokens/s per GPU against tokens/s per user.")
    binding: Binding | None = None
    candidates_considered: int = 0
    candidates_simulated: int = 0
    search_seconds: float = 0.0
    source: str = Field(
        default="simulated: discrete-event continuous batching (simulate/) on the operator step-time model (estimate/step_time.py)",
        description="Where the figures come from.",
    )
    accuracy: str | None = Field(default=None, description="How far the speed model has been off on held-out published data.")
    notes: list[str] = Field(default_factory=empty_list)
    decisions: list[str] = Field(default_factory=empty_list, description="Every choice the sizing made and the rule that made it.")
