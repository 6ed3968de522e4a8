"""CTranslate2 in this process: ``Generator.generate_batch`` with a per-step callback that clocks every token.

(``generate_tokens`` streams one prompt; the callback is the same stream for a whole batch.)
"""

from __future__ import annotations

import time
from pathlib import Path

from ...errors import DoesNotFitError, EngineNotInstalledError, GPURequiredError, ModelNotFoundError
from ..report import DeviceInfo
from ..request import BenchRequest
from ..workload import Workload
from .base import InProcessEngine, package_versions


class CTranslate2Engine(InProcessEngine):
    name = "ctranslate2"

    def __init__(self, req: BenchRequest):
        try:
            import ctranslate2
        except ImportError:
            raise EngineNotInstalledError("ctranslate2", "ctranslate2") from None
        path = Path(str(req.model))
        if not (path / "model.bin").exists():
            raise ModelNotFoundError(
                str(req.model),
                detail="not a CTranslate2 model folder (no model.bin); convert it with "
                "`infer-advisor quantize MODEL --method ct2-int8 --out DIR`",
            )
        cuda = ctranslate2.get_cuda_device_count() > 0
        if req.device == "cuda" and not cuda:
            raise GPURequiredError("--device cuda was asked but CTranslate2 sees no CUDA device; use --device cpu.")
        self.dev = "cuda" if req.device == "cuda" or (req.device == "auto" and cuda) else "cpu"
        self.notes: list[str] = []
        self.model_label = req.model
        self.dtype = None
        self.versions = package_versions("ctranslate2", "transformers")
        self.memory_source = "nvml" if self.dev == "cuda" else "psutil-rss"
        self.gpu_indices = [0] if self.dev == "cuda" else []
        import platform

        self.device = DeviceInfo(
            kind=self.dev, name="GPU 0" if self.dev == "cuda" else platform.processor() or platform.machine()
        )
        self.seed = req.seed
        try:
            self.generator = ctranslate2.Generator(str(path), device=self.dev)
        except RuntimeError as err:
            if "out of memory" in str(err).lower():
                raise DoesNotFitError(f"{req.model} does not fit on {self.dev}: {err}") from None
            raise
        self.tokenizer = self._tokenizer(path)
        self.vocab_size = len(self.tokenizer)
        self.special_ids = set(self.tokenizer.all_special_ids)
        eos = self.tokenizer.eos_token
        self.end_token = eos

    def _tokenizer(self, path: Path):
        try:
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(str(path))
        except (ImportError, OSError, ValueError):
            raise ModelNotFoundError(
                str(path), detail="no Hugging Face tokenizer files beside model.bin (copy tokenizer.json there)"
            ) from None

    def generate(self, batch: list[list[int]], workload: Workload) -> list[list[float]]:
        tokens = [self.tokenizer.convert_ids_to_tokens(r) for r in batch]
        times: list[list[float]] = [[] for _ in batch]

        def on_step(step) -> bool:
            times[step.batch_id].append(time.perf_counter())
            return False

        n = workload.output_tokens
        try:
            results = self.generator.generate_batch(
                tokens,
                max_length=n,
                min_length=n if workload.ignore_eos else 0,
                sampling_topk=1,
                include_prompt_in_result=False,
                return_end_token=True,
                callback=on_step,
            )
        except RuntimeError as err:
            if "out of memory" in str(err).lower():
                raise DoesNotFitError(
                    f"Out of memory at concurrency {len(batch)}; lower --concurrency or --output-tokens."
                ) from None
            raise
        # Variable-length prompts are partly forced through the decoding loop; keep the generated tokens' times.
        return [t[len(t) - len(r.sequences_ids[0]) :] for t, r in zip(times, results, strict=True)]
