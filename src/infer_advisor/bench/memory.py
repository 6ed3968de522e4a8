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
