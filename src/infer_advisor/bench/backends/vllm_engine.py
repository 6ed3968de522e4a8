"""vLLM's offline ``LLM`` API in this process (needs vLLM and an NVIDIA GPU).

The offline API returns whole answers, so TTFT is the wall time of the same batch generating one token
(prefill + first step) and TPOT follows from the full run; per-token gaps are not observable here. For
streamed inter-token latency, serve the model (`vllm serve MODEL`) and use ``--engine openai``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from ...errors import DoesNotFitError, EngineNotInstalledError, GPURequiredError
from ..report import DeviceInfo, RequestSample
from ..request import BenchRequest
from ..workload import PromptItem, Workload
from .base import InProcessEngine, package_versions


class VLLMEngine(InProcessEngine):
    name = "vllm"

    def __init__(self, req: BenchRequest):
        try:
            import vllm
        except ImportError:
            raise EngineNotInstalledError(
                "vLLM", "vllm", "it needs Linux with an NVIDIA GPU; not installable on CPU-only machines"
            ) from None
        import torch

        if req.device == "cpu" or not torch.cuda.is_available():
            raise GPURequiredError(
                "--engine vllm needs an NVIDIA GPU and none is visible; use --engine transformers or ctranslate2."
            )
        from .base import require_weights

        require_weights(req.model)
        self.vllm = vllm
        self.notes = [
            "vLLM offline API: TTFT is the time of the same batch generating 1 token; no per-token gaps "
            "(use `vllm serve` + --engine openai for streamed ITL)."
        ]
        self.model_label = req.model
        self.dtype = req.dtype
        self.versions = package_versions("vllm", "torch", "transformers")
        self.device = DeviceInfo(kind="cuda", name=torch.cuda.get_device_name(0), count=1)
        self.memory_source = "nvml"
        self.gpu_indices = [0]
        try:
            self.llm = vllm.LLM(model=str(req.model), dtype=req.dtype, seed=req.seed)
        except (torch.OutOfMemoryError, ValueError) as err:
            if isinstance(err, ValueError) and "memory" not in str(err).lower():
                raise
            raise DoesNotFitError(
                f"{req.model} does not fit on {self.device.name}: {str(err).splitlines()[0]}"
            ) from None
        config = getattr(getattr(self.llm, "llm_engine", None), "model_config", None)
        self.max_context = getattr(config, "max_model_len", None)
        self.tokenizer = self.llm.get_tokenizer()
        self.vocab_size = len(self.tokenizer)
        self.special_ids = set(self.tokenizer.all_special_ids)

    def _run(self, batch: list[list[int]], n: int, ignore_eos: bool) -> tuple[float, list[int]]:
        params = self.vllm.SamplingParams(
            max_tokens=n, min_tokens=n if ignore_eos else 0, ignore_eos=ignore_eos, temperature=0.0
        )
        prompts = [{"prompt_token_ids": ids} for ids in batch]
        start = time.perf_counter()
        outs = self.llm.generate(prompts, params, use_tqdm=False)
        return time.perf_counter() - start, [len(o.outputs[0].token_ids) for o in outs]

    def run_level(
        self, items: Sequence[PromptItem], concurrency: int, workload: Workload, on_done: Callable[[int], None]
    ) -> tuple[list[RequestSample], float]:
        samples: list[RequestSample] = []
        duration = 0.0
        for start in range(0, len(items), concurrency):
            chunk = items[start : start + concurrency]
            batch = [self.prompt_ids(it) for it in chunk]
            ttft, _ = self._run(batch, 1, True)
            e2e, counts = self._run(batch, workload.output_tokens, workload.ignore_eos)
            duration += e2e
            for it, ids, count in zip(chunk, batch, counts, strict=True):
                samples.append(
                    RequestSample(
                        concurrency=concurrency,
                        index=it.index,
                        input_tokens=len(ids),
                        output_tokens=count,
                        token_count_source="tokenizer",
                        ttft_s=ttft,
                        e2e_s=e2e,
                        tpot_s=(e2e - ttft) / (count - 1) if count > 1 else None,
                    )
                )
            on_done(len(chunk))
        return samples, duration
