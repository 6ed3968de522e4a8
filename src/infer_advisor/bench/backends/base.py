"""What every engine offers the runner, and the level loop shared by the in-process engines."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

from ..metrics import sample
from ..report import DeviceInfo, MemorySource, RequestSample
from ..workload import PromptItem, Workload, ids_for_text, synthetic_ids


class Engine(Protocol):
    name: str
    model_label: str | None
    device: DeviceInfo
    memory_source: MemorySource
    gpu_indices: list[int]
    dtype: str | None
    versions: dict[str, str]
    notes: list[str]
    max_context: int | None  # the longest prompt + output the model takes, when the engine can tell
    cuda_context_bytes: int | None  # memory_source torch-allocator: the CUDA context measured at start-up

    def run_level(
        self, items: Sequence[PromptItem], concurrency: int, workload: Workload, on_done: Callable[[int], None]
    ) -> tuple[list[RequestSample], float]:
        """Run ``items`` with ``concurrency`` in flight; return the samples and the level's wall time."""

    def close(self) -> None: ...


class InProcessEngine:
    """Shared by transformers, ctranslate2 and vllm: prompts become token ids, batches of ``concurrency`` run in turn.

    Subclasses set ``vocab_size``, ``special_ids``, ``tokenizer`` (or None) and implement ``generate``.
    Tokenizing happens before a batch's clock starts; TTFT covers prefill and the first decode step.
    """

    tokenizer = None
    vocab_size: int = 0
    special_ids: set[int] = set()
    max_context: int | None = None
    cuda_context_bytes: int | None = None

    def prompt_ids(self, item: PromptItem) -> list[int]:
        if item.input_tokens is not None:
            return synthetic_ids(item.input_tokens, self.vocab_size, self.special_ids, item.seed)
        if self.tokenizer is None:
            return ids_for_text(item.text or "", self.vocab_size, self.special_ids, item.seed)
        return list(self.tokenizer(item.text)["input_ids"])

    def generate(self, batch: list[list[int]], workload: Workload) -> list[list[float]]:
        """Generate for a batch; return each row's token arrival times (perf_counter), one per output token."""
        raise NotImplementedError

    def run_level(
        self, items: Sequence[PromptItem], concurrency: int, workload: Workload, on_done: Callable[[int], None]
    ) -> tuple[list[RequestSample], float]:
        samples: list[RequestSample] = []
        duration = 0.0
        for start in range(0, len(items), concurrency):
            chunk = items[start : start + concurrency]
            batch = [self.prompt_ids(it) for it in chunk]
            sent = time.perf_counter()
            rows = self.generate(batch, workload)
            duration += max(times[-1] for times in rows) - sent
            for it, ids, times in zip(chunk, batch, rows, strict=True):
                samples.append(
                    sample(
                        concurrency=concurrency, index=it.index, sent_at=sent, token_times=times, input_tokens=len(ids)
                    )
                )
            on_done(len(chunk))
        return samples, duration

    def close(self) -> None:
        pass


_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def require_weights(model: str | None) -> None:
    """A local model folder must hold weight files; a folder with a config alone is one clear error."""
    from pathlib import Path

    from ...errors import ModelNotFoundError

    try:
        path = Path(str(model)).expanduser()
        if not path.is_dir():
            return  # a Hub id: transformers finds the weights itself
        found = any(p.suffix in _WEIGHT_SUFFIXES for p in path.iterdir())
    except OSError as err:
        raise ModelNotFoundError(str(model)[:80], detail=err.strerror or "unreadable") from None
    if not found:
        raise ModelNotFoundError(
            str(model),
            detail="the folder has no weight files (*.safetensors, *.bin); for speed alone, add --random-weights",
        )


def package_versions(*names: str) -> dict[str, str]:
    """Installed versions of ``names`` (distribution names), skipping absent ones."""
    from importlib import metadata

    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            pass
    return out
