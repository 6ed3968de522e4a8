"""Workload profiles (data/bench/workloads.yaml) and the prompts a run sends."""

from __future__ import annotations

import random
from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from .request import BenchRequest


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str
    concurrency: list[int]
    output_tokens: int
    input_tokens: int | None = None
    warmup: int
    source: str
    prompts: list[str] = Field(default_factory=list)


class Constant(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: float
    description: str
    source: str


class WorkloadFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    profiles: dict[str, Profile]
    constants: dict[str, Constant]


@cache
def workload_file() -> WorkloadFile:
    from .._data import load_validated
    from .._paths import shipped

    return load_validated(shipped("data") / "bench" / "workloads.yaml", WorkloadFile)


# Warm-up prompts are seeded from 2**62 on; measured ones from seed * 1,000,003 + ... (far below it for any seed
# a user gives), so the two never share a prompt.
WARMUP_SEED_OFFSET = 2**62


def constant(name: str) -> float:
    """A named number from workloads.yaml (each has a source there)."""
    return workload_file().constants[name].value


class PromptItem(BaseModel):
    """One request to send: a text prompt, or a synthetic prompt of ``input_tokens`` tokens."""

    model_config = ConfigDict(extra="forbid")

    index: int
    text: str | None = Field(default=None, description="Fixed prompt text.")
    input_tokens: int | None = Field(default=None, description="Synthetic prompt length in tokens.")
    seed: int = Field(description="Seed for the synthetic prompt's random tokens.")


class Workload(BaseModel):
    """A request's options with the profile's defaults filled in."""

    model_config = ConfigDict(extra="forbid")

    profile: str
    concurrency: list[int]
    output_tokens: int
    input_tokens: int | None
    warmup: int
    num_prompts: int | None
    seed: int
    ignore_eos: bool
    prompts: list[str]
    request_rate: list[float] | None = None
    max_duration: float | None = None

    def requests(self, concurrency: int) -> list[PromptItem]:
        """The requests of one level: ``num_prompts`` (default max(#fixed prompts, concurrency))."""
        n = self.num_prompts or max(len(self.prompts), concurrency)
        return [self._item(i, self.seed * 1_000_003 + concurrency * 10_007 + i) for i in range(n)]

    def warmups(self, concurrency: int) -> list[PromptItem]:
        """Requests run (and not measured) before the level ``concurrency``: ``warmup`` rounds of ``concurrency``
        requests, shaped like the level's own, so every batch size runs warm."""
        # A seed space of their own: the old negative seeds drew the measured prompts again (random.Random(-n)
        # seeds as Random(n)), so a server's prefix cache flattered the first measured requests.
        base = WARMUP_SEED_OFFSET + self.seed * 1_000_003 + concurrency * 10_007
        return [self._item(i, base + i, warm=True) for i in range(self.warmup * concurrency)]

    def open_loop(self, rate: float) -> tuple[list[PromptItem], list[float]]:
        """An open-loop level at ``rate`` req/s: its requests and the second each is sent, counted from the level's start.

        Poisson arrivals: the first request at 0, then gaps drawn from an exponential distribution of mean 1 / rate
        (seeded by ``seed`` and the rate, so a rerun sends the same schedule). At most ``num_prompts`` requests
        (default: the ``open_loop_requests`` constant), none scheduled after ``max_duration`` seconds.
        """
        n = self.num_prompts or int(constant("open_loop_requests"))
        key = self.seed * 1_000_003 + round(rate * 1000) * 10_009
        rng = random.Random(key)
        offsets: list[float] = []
        t = 0.0
        while len(offsets) < n and (self.max_duration is None or t <= self.max_duration):
            offsets.append(t)
            t += rng.expovariate(rate)
        return [self._item(i, key + 1 + i) for i in range(len(offsets))], offsets

    def _item(self, i: int, seed: int, warm: bool = False) -> PromptItem:
        if self.input_tokens is not None:
            return PromptItem(index=i, input_tokens=self.input_tokens, seed=seed)
        text = self.prompts[i % len(self.prompts)]
        # A warm-up text prompt starts differently, so a prefix cache holds none of the measured prompts' blocks.
        return PromptItem(index=i, text=f"(warm-up {i}) {text}" if warm else text, seed=seed)


def resolve_workload(req: BenchRequest) -> Workload:
    profiles = workload_file().profiles
    prof = profiles[req.workload]
    fixed = prof.prompts or profiles["latency"].prompts
    input_tokens = req.input_tokens if req.input_tokens is not None else prof.input_tokens
    return Workload(
        profile=req.workload,
        concurrency=req.concurrency or ([] if req.request_rate else prof.concurrency),
        output_tokens=req.output_tokens or prof.output_tokens,
        input_tokens=input_tokens,
        warmup=prof.warmup if req.warmup is None else req.warmup,
        num_prompts=req.num_prompts,
        seed=req.seed,
        ignore_eos=req.ignore_eos,
        prompts=fixed,
        request_rate=req.request_rate,
        max_duration=req.max_duration,
    )


def synthetic_ids(n: int, vocab_size: int, exclude: set[int], seed: int) -> list[int]:
    """``n`` random token ids (seeded), avoiding special tokens."""
    rng = random.Random(seed)
    out: list[int] = []
    while len(out) < n:
        t = rng.randrange(vocab_size)
        if t not in exclude:
            out.append(t)
    return out


def synthetic_text(n_words: int, seed: int) -> str:
    """Seeded text of ``n_words`` words drawn from the latency prompts (for servers: roughly n tokens)."""
    words = sorted({w for p in workload_file().profiles["latency"].prompts for w in p.lower().split()})
    rng = random.Random(seed)
    return " ".join(rng.choice(words) for _ in range(n_words))


def ids_for_text(text: str, vocab_size: int, exclude: set[int], seed: int) -> list[int]:
    """Random ids as long as ``text`` would tokenize to (chars / chars_per_token), for models without a tokenizer."""
    n = max(1, round(len(text) / constant("chars_per_token")))
    return synthetic_ids(n, vocab_size, exclude, seed)
