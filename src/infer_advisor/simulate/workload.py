"""What arrives at a server: request lengths (fixed, a named distribution, or a trace) and arrival times.

    >>> w = Workload(input_tokens=LengthSpec(mean=2000, distribution="lognormal"), output_tokens=LengthSpec(mean=300),
    ...              arrival="poisson", rate=20)
    >>> reqs = w.requests(count=500, seed=0)

Lengths are integers >= 1, capped at ``max_tokens`` when given. A trace file is JSONL with one object per
request: ``{"input_tokens": N, "output_tokens": M}`` and optionally ``"arrival_s": T`` and ``"cached_tokens": C`` (prompt
tokens a prefix cache serves, e.g. a conversation's earlier turns). ``cached_prefix_tokens`` applies to every request
(a shared system prompt). The simulator prefills only the uncached part of each prompt.
"""


import functools
import json
import math
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Distribution = Literal["fixed", "uniform", "exponential", "lognormal", "normal"]
# lognormal sigma used when only a mean is given: a coefficient of variation of about 0.8, typical of chat
# prompt lengths (ShareGPT prompts: mean ~230, std ~200 tokens in vLLM's benchmark dataset).
DEFAULT_LOGNORMAL_SIGMA = 0.7


class LengthSpec(BaseModel):
    """Token lengths: a fixed number, or a mean with a named distribution."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    mean: float = Field(gt=0, le=10_000_000, description="Mean length in tokens (the length itself when fixed).")
    distribution: Distribution = Field(default="fixed", description="fixed, uniform, exponential, lognormal or normal.")
    spread: float | None = Field(
        default=None, ge=0, le=10,
        description="uniform: +-fraction of the mean; normal/lognormal: coefficient of variation (default 0.8 for lognormal).",
    )

    def sample(self, rng: random.Random) -> int:
        m = self.mean
        if self.distribution == "fixed":
            v = m
        elif self.distribution == "uniform":
            s = 0.5 if self.spread is None else self.spread
            v = rng.uniform(m * (1 - s), m * (1 + s))
        elif self.distribution == "exponential":
            v = rng.expovariate(1.0 / m)
        elif self.distribution == "normal":
            v = rng.gauss(m, m * (0.3 if self.spread is None else self.spread))
        else:  # lognormal with the given mean
            sigma = DEFAULT_LOGNORMAL_SIGMA if self.spread is None else math.sqrt(math.log(1 + self.spread**2))
            v = rng.lognormvariate(math.log(m) - sigma**2 / 2, sigma)
        return max(1, int(round(v)))


@dataclass(frozen=True)
class Request:
    arrival: float
    input_tokens: int
    output_tokens: int


class Workload(BaseModel):
    """Requests and how they arrive: open loop (Poisson at ``rate``, or a trace's times) or closed loop (``concurrency`` clients)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    input_tokens: LengthSpec | None = Field(default=None, description="Prompt lengths (not needed with a trace).")
    output_tokens: LengthSpec | None = Field(default=None, description="Answer lengths (not needed with a trace).")
    trace: Path | None = Field(default=None, description="JSONL of {input_tokens, output_tokens[, arrival_s]} per request.")
    arrival: Literal["poisson", "closed", "burst", "trace"] = Field(
        default="poisson", description="poisson at `rate`; closed: `concurrency` clients back to back; burst: all at t=0; trace: its arrival_s."
    )
    rate: float | None = Field(default=None, gt=0, le=1e6, description="Requests per second (poisson).")
    concurrency: int | None = Field(default=None, gt=0, le=100_000, description="Clients (closed loop).")
    max_tokens: int | None = Field(default=None, gt=0, description="Cap on input + output per request (the deployment's context).")
    cached_prefix_tokens: int = Field(default=0, ge=0, description="Prompt tokens every request finds in the prefix cache.")

    @model_validator(mode="after")
    def _complete(self) -> "Workload":
        if self.trace is None and (self.input_tokens is None or self.output_tokens is None):
            raise ValueError("give input_tokens and output_tokens, or a trace file")
        if self.arrival == "poisson" and self.rate is None:
            raise ValueError("a poisson workload needs a rate")
        if self.arrival == "closed" and self.concurrency is None:
            raise ValueError("a closed-loop workload needs a concurrency")
        if self.arrival == "trace" and self.trace is None:
            raise ValueError("arrival 'trace' needs a trace file")
        return self

    def lengths(self, count: int, seed: int = 0) -> list[tuple[int, int]]:
        """``count`` (input, output) pairs: sampled, or the trace's in order (cycled when shorter)."""
        if self.trace is not None:
            rows = read_trace(self.trace)
            pairs = [(self._uncached(r[0], r[3]), r[1]) for r in rows]
            return [self._cap(*pairs[i % len(pairs)]) for i in range(count)]
        rng = random.Random(seed)
        assert self.input_tokens and self.output_tokens
        return [self._cap(self._uncached(self.input_tokens.sample(rng), 0), self.output_tokens.sample(rng)) for _ in range(count)]

    def _uncached(self, prompt: int, cached: int) -> int:
        """Prompt tokens left to prefill after the prefix cache: at least one (the engine recomputes the last token)."""
        return max(1, prompt - max(cached, self.cached_prefix_tokens))

    def _cap(self, i: int, o: int) -> tuple[int, int]:
        if self.max_tokens and i + o > self.max_tokens:
            i = max(1, min(i, self.max_tokens - 1))
            o = max(1, self.max_tokens - i)
        return i, o

    def requests(self, count: int, seed: int = 0) -> list[Request]:
        """Open-loop requests with arrival times (closed-loop arrivals are decided by the simulator)."""
        pairs = self.lengths(count, seed)
        if self.arrival == "trace":
            rows = read_trace(self.trace)  # type: ignore[arg-type]
            times = [r[2] if r[2] is not None else 0.0 for r in rows]
            return [Request(times[i % len(times)], *pairs[i]) for i in range(count)]
        if self.arrival in ("burst", "closed"):
            return [Request(0.0, i, o) for i, o in pairs]
        rng = random.Random(seed + 1)
        t, out = 0.0, []
        for i, o in pairs:
            t += rng.expovariate(self.rate)  # type: ignore[arg-type]
            out.append(Request(t, i, o))
        return out

    @property
    def mean_input(self) -> float:
        if self.trace is not None:
            rows = read_trace(self.trace)
            return sum(self._uncached(r[0], r[3]) for r in rows) / len(rows)
        return max(1.0, self.input_tokens.mean - self.cached_prefix_tokens)  # type: ignore[union-attr]

    @property
    def mean_output(self) -> float:
        if self.trace is not None:
            rows = read_trace(self.trace)
            return sum(r[1] for r in rows) / len(rows)
        return self.output_tokens.mean  # type: ignore[union-attr]


MAX_TRACE_ROWS = 1_000_000
# Longest prompt or answer a trace line may give: 10^7 tokens, beyond every published context window (Llama 4
# Scout's 10M); a bigger number is a unit mistake, refused rather than capped.
MAX_TRACE_TOKENS = 10_000_000


def read_trace(path: Path) -> list[tuple[int, int, float | None, int, str | None]]:
    """(input, output, arrival or None, cached tokens, LoRA adapter or None) per line of a JSONL trace; bad lines raise
    one RequestError naming the line. Parsed once per file version (path, size, mtime, inode): the sizing search asks many times."""
    try:
        st = os.stat(path)
        key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    except OSError:
        key = (str(path), -1, -1, -1)
    return list(_read_trace_cached(key, path))


def _count(value, what: str, where: str, low: int, high: int) -> int:
    from ..errors import RequestError

    if type(value) is not int or not low <= value <= high:  # no bools, no "512", no 1e30
        raise RequestError(f"{where}: {what} must be an integer from {low} to {high:,}, got {json.dumps(value)[:40]}.")
    return value


def adapter_counts(path: Path) -> dict[str | None, int]:
    """Requests per LoRA adapter named in the trace's optional ``adapter`` column (None: the base model)."""
    counts: dict[str | None, int] = {}
    for row in read_trace(path):
        counts[row[4]] = counts.get(row[4], 0) + 1
    return counts


MAX_ADAPTER_NAME = 256


def _adapter(value, where: str) -> str | None:
    from ..errors import RequestError
    from ..untrusted import refuse_unsafe

    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= MAX_ADAPTER_NAME:
        raise RequestError(f"{where}: adapter must be a name of 1 to {MAX_ADAPTER_NAME} characters (or null for the base model).")
    return refuse_unsafe(value, f"{where}: adapter")


@functools.lru_cache(maxsize=4)
def _read_trace_cached(key: tuple, path: Path) -> tuple[tuple[int, int, float | None, int, str | None], ...]:
    from ..bounded_read import bounded_lines
    from ..errors import RequestError

    rows: list[tuple[int, int, float | None, int, str | None]] = []
    try:
        for n, line in enumerate(bounded_lines(path, "trace", lambda p, why: RequestError(f"trace {p}: {why}.")), 1):
            if not line.strip():
                continue
            if len(rows) >= MAX_TRACE_ROWS:
                raise RequestError(f"{path}: more than {MAX_TRACE_ROWS} requests; sample the trace first.")
            where = f"{path} line {n}"
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                obj = None
            if not isinstance(obj, dict) or "input_tokens" not in obj or "output_tokens" not in obj:
                raise RequestError(f"{where}: expected a JSON object with integer input_tokens and output_tokens (and "
                                   "optional arrival_s, cached_tokens, adapter).")
            i = _count(obj["input_tokens"], "input_tokens", where, 1, MAX_TRACE_TOKENS)
            o = _count(obj["output_tokens"], "output_tokens", where, 1, MAX_TRACE_TOKENS)
            c = _count(obj.get("cached_tokens", 0), "cached_tokens", where, 0, i)
            a = obj.get("arrival_s")
            if a is not None and (type(a) not in (int, float) or not math.isfinite(a) or a < 0):
                raise RequestError(f"{where}: arrival_s must be a finite number of seconds >= 0.")
            rows.append((i, o, None if a is None else float(a), c, _adapter(obj.get("adapter"), where)))
    except UnicodeDecodeError:
        raise RequestError(f"{path} is not UTF-8 text (expected JSONL).") from None
    if not rows:
        raise RequestError(f"{path} holds no requests.")
    return tuple(rows)
