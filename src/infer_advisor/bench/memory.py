"""Peak memory during a run, sampled in a background thread: NVML on GPUs, the process's RSS on CPU."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .report import MemorySource


class PeakMemory:
    """Context manager sampling memory every ``interval_s``; ``peak`` is the largest value seen (bytes).

        with PeakMemory("psutil-rss", interval_s=0.05) as mem:
            run()
        mem.peak

    ``nvml``: the sum over ``gpu_indices`` of NVML's device memory ``used`` (every process on those GPUs, as
    nvidia-smi shows; torch's allocator reserve included). ``psutil-rss``: this process's resident set.
    """

    def __init__(self, source: MemorySource, interval_s: float, gpu_indices: Sequence[int] = (0,)):
        self.source = source
        self.interval_s = interval_s
        self.gpu_indices = list(gpu_indices)
        self.peak: int | None = None
        self.device_peak: int | None = None  # only AllocatorPeak keeps a second, whole-device figure
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._read = self._reader()

    def _reader(self):
        if self.source == "nvml":
            import pynvml

            pynvml.nvmlInit()
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in self.gpu_indices]
            return lambda: sum(int(pynvml.nvmlDeviceGetMemoryInfo(h).used) for h in handles)
        if self.source == "psutil-rss":
            import psutil

            proc = psutil.Process()
            return lambda: int(proc.memory_info().rss)
        return None

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval_s)

    def _sample(self) -> None:
        if self._read is None:
            return
        value = self._read()
        self.peak = value if self.peak is None else max(self.peak, value)

    def __enter__(self) -> PeakMemory:
        if self._read is not None:
            self._sample()
            self._thread = threading.Thread(target=self._loop, name="infer-advisor-memory", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._sample()
        if self.source == "nvml":
            import pynvml

            pynvml.nvmlShutdown()


def nvml_used(index: int) -> int | None:
    """NVML's memory ``used`` on GPU ``index`` (every process, as nvidia-smi shows), or None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(index)).used)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no driver, no library, or a failing call: not measured
        return None


def measure_cuda_context(torch, index: int) -> int | None:
    """Create this process's CUDA context on GPU ``index`` and return the device memory it took (bytes).

    NVML's ``used`` before and after creating the context (a one-element tensor), minus what torch's allocator
    holds then; None when NVML cannot be read. Call before anything else touches the GPU. Other processes
    allocating at the same moment would show up here too: run benchmarks on an otherwise idle GPU.
    """
    before = nvml_used(index)
    with torch.cuda.device(index):
        torch.empty(1, device="cuda")
        torch.cuda.synchronize()
        after = nvml_used(index)
        held = int(torch.cuda.memory_reserved())
    if before is None or after is None:
        return None
    return max(after - before - held, 0)


class AllocatorPeak:
    """A level's peak as the plan counts it: torch's allocator peak plus the CUDA context (``peak``), with NVML's
    whole-device peak beside it (``device_peak``).

        with AllocatorPeak(torch, context_bytes=c, device_sampler=PeakMemory("nvml", 0.05, [0])) as mem:
            run()
        mem.peak, mem.device_peak
    """

    def __init__(self, torch, context_bytes: int | None, device_sampler: PeakMemory | None):
        self.torch = torch
        self.context_bytes = context_bytes or 0
        self.device_sampler = device_sampler
        self.peak: int | None = None
        self.device_peak: int | None = None

    def __enter__(self) -> AllocatorPeak:
        self.torch.cuda.synchronize()
        self.torch.cuda.reset_peak_memory_stats()
        if self.device_sampler is not None:
            self.device_sampler.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.torch.cuda.synchronize()
        self.peak = int(self.torch.cuda.max_memory_allocated()) + self.context_bytes
        if self.device_sampler is not None:
            self.device_sampler.__exit__(*exc)
            self.device_peak = self.device_sampler.peak
