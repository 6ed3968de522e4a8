"""transformers in this process: ``generate`` with a streamer that clocks every decode step (batched when concurrency > 1)."""

from __future__ import annotations

import time
from pathlib import Path

from ...errors import DoesNotFitError, EngineNotInstalledError, GPURequiredError, ModelNotFoundError
from ..report import DeviceInfo
from ..request import BenchRequest
from ..workload import Workload
from .base import InProcessEngine, package_versions


def _torch():
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError:
        raise EngineNotInstalledError("transformers (with torch)", "transformers") from None
    return torch


def resolve_device(torch, device: str) -> str:
    """auto -> cuda when a CUDA device is visible, else cpu; cuda without one -> GPURequiredError."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise GPURequiredError("--device cuda was asked but torch sees no CUDA device here; use --device cpu.")
    return device


def device_info(torch, device: str) -> DeviceInfo:
    if device == "cuda":
        return DeviceInfo(kind="cuda", name=torch.cuda.get_device_name(0), count=1)
    import platform

    return DeviceInfo(kind="cpu", name=platform.processor() or platform.machine(), count=1)


class TransformersEngine(InProcessEngine):
    name = "transformers"

    def __init__(self, req: BenchRequest):
        torch = _torch()
        self.torch = torch
        self.notes: list[str] = []
        self.model_label = req.model
        dev = resolve_device(torch, req.device)
        self.dev = dev
        self.device = device_info(torch, dev)
        self.gpu_indices = [torch.cuda.current_device()] if dev == "cuda" else []
        # On a GPU, memory is compared as the plan counts it: the allocator's peak plus the CUDA context, measured
        # here before anything else touches the device (NVML's whole-device figure is kept beside it).
        self.memory_source = "torch-allocator" if dev == "cuda" else "psutil-rss"
        self.cuda_context_bytes = None
        if dev == "cuda":
            from ..memory import measure_cuda_context

            self.cuda_context_bytes = measure_cuda_context(torch, self.gpu_indices[0])
            if self.cuda_context_bytes is None:
                self.notes.append("CUDA context not measured (NVML unreadable): peak memory is the allocator's alone.")
        self.versions = package_versions("torch", "transformers", "accelerate")
        self.dtype: str | None = req.dtype
        torch.manual_seed(req.seed)
        try:
            if req.random_weights:
                self.model, self.tokenizer = self._random(req, dev)
            else:
                self.model, self.tokenizer = self._pretrained(req, dev)
        except torch.OutOfMemoryError:
            raise DoesNotFitError(
                f"{req.model} does not fit in {self.device.name} memory in {self.dtype}; "
                "use a smaller model, another --dtype, or a quantized model."
            ) from None
        self.model.eval()
        cfg = self.model.config
        self.max_context = getattr(cfg, "max_position_embeddings", None)
        self.vocab_size = int(cfg.vocab_size)
        eos = cfg.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        self.pad_id = (self.tokenizer.pad_token_id if self.tokenizer is not None else None) or min(self.eos_ids or {0})
        if self.tokenizer is not None:
            self.special_ids = set(self.tokenizer.all_special_ids)
        else:
            self.special_ids = set(self.eos_ids) | {
                i for i in (cfg.bos_token_id, getattr(cfg, "pad_token_id", None)) if i is not None
            }

    def _dtype(self, config_dtype, dev: str, asked: str):
        torch = self.torch
        if asked != "auto":
            return getattr(torch, asked)
        if dev == "cpu":
            return torch.float32
        if isinstance(config_dtype, str):
            config_dtype = getattr(torch, config_dtype, None)
        return config_dtype if config_dtype in (torch.float16, torch.bfloat16) else torch.bfloat16

    def _pretrained(self, req: BenchRequest, dev: str):
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        from .base import require_weights

        require_weights(req.model)
        try:
            cfg = AutoConfig.from_pretrained(req.model)
        except (OSError, ValueError) as err:
            raise ModelNotFoundError(
                str(req.model), detail=f"transformers could not load it: {str(err).splitlines()[0]}"
            ) from None
        dtype = self._dtype(getattr(cfg, "dtype", None) or getattr(cfg, "torch_dtype", None), dev, req.dtype)
        self.dtype = str(dtype).removeprefix("torch.")
        model = AutoModelForCausalLM.from_pretrained(req.model, dtype=dtype).to(dev)
        try:
            tok = AutoTokenizer.from_pretrained(req.model)
        except (OSError, ValueError):
            tok = None
            self.notes.append("No tokenizer found: prompts are random token ids of about the prompt's length.")
        return model, tok

    def _random(self, req: BenchRequest, dev: str):
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        from ...model_facts import resolve_model

        facts = resolve_model(str(req.model))
        raw = dict(facts.config)
        raw.pop("quantization_config", None)  # random weights are never pre-quantized
        model_type = raw.pop("model_type", facts.model_type)
        cfg = AutoConfig.for_model(model_type, **raw)
        dtype = self._dtype(raw.get("dtype") or raw.get("torch_dtype"), dev, req.dtype)
        self.dtype = str(dtype).removeprefix("torch.")
        with self.torch.device(dev):
            model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
        self.notes.append(
            f"--random-weights: {facts.name} built from its config ({facts.source}) with random weights; "
            "speed and memory are real, the generated text is noise."
        )
        tok = None
        if Path(str(req.model)).is_dir():
            try:
                tok = AutoTokenizer.from_pretrained(req.model)
            except (OSError, ValueError):
                tok = None
        if tok is None:
            self.notes.append("No tokenizer: prompts are random token ids of about the prompt's length (chars / 4).")
        return model, tok

    def generate(self, batch: list[list[int]], workload: Workload) -> list[list[float]]:
        torch = self.torch
        width = max(len(r) for r in batch)
        ids = torch.tensor([[self.pad_id] * (width - len(r)) + r for r in batch], device=self.dev)
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in batch], device=self.dev)
        clock = _StepClock()
        n = workload.output_tokens
        try:
            with torch.inference_mode():
                out = self.model.generate(
                    input_ids=ids,
                    attention_mask=mask,
                    max_new_tokens=n,
                    min_new_tokens=n if workload.ignore_eos else 0,
                    do_sample=False,
                    pad_token_id=self.pad_id,
                    streamer=clock,
                )
        except torch.OutOfMemoryError:
            raise DoesNotFitError(
                f"Out of memory on {self.device.name} at concurrency {len(batch)} "
                f"({width} prompt + {n} output tokens); lower --concurrency or --output-tokens."
            ) from None
        rows = []
        for seq in out[:, width:].tolist():
            count = len(seq)
            if not workload.ignore_eos:
                count = next((i + 1 for i, t in enumerate(seq) if t in self.eos_ids), count)
            rows.append(clock.times[:count])
        return rows

    def close(self) -> None:
        del self.model
        if self.dev == "cuda":
            self.torch.cuda.empty_cache()


class _StepClock:
    """A transformers streamer that records when each decode step's tokens arrive (the first put is the prompt)."""

    def __init__(self):
        self.times: list[float] = []
        self._prompt_seen = False

    def put(self, value) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        self.times.append(time.perf_counter())

    def end(self) -> None:
        pass
