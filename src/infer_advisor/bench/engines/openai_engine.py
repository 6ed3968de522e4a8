"""Any OpenAI-compatible server (vLLM, SGLang, llama.cpp, TGI, `transformers serve`) over HTTP with SSE streaming.

Each request is a streamed ``POST /v1/completions``; the time of each streamed chunk is a token's arrival, so
TTFT and inter-token latency are what a client sees. Output tokens come from the server's ``usage`` when it sends
one (``stream_options: {"include_usage": true}``), else from the number of streamed chunks; both are kept so
they can be compared. ``concurrency`` requests are kept in flight with asyncio; every request is bounded by
``request_timeout_s``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from urllib.parse import urlparse

from ...errors import BenchmarkError, EngineNotInstalledError
from ..metrics import sample
from ..report import DeviceInfo, RequestSample
from ..request import BenchRequest
from ..workload import PromptItem, Workload, constant, synthetic_text
from .base import package_versions

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


def _httpx():
    try:
        import httpx
    except ImportError:
        raise EngineNotInstalledError("httpx", "bench") from None
    return httpx


class OpenAIEngine:
    name = "openai"
    dtype = None
    cuda_context_bytes = None

    def __init__(self, req: BenchRequest):
        httpx = _httpx()
        self.httpx = httpx
        base = str(req.url).rstrip("/")
        self.base = base[: -len("/v1")] if base.endswith("/v1") else base
        self.notes: list[str] = []
        self.versions = package_versions("httpx")
        self.timeout = httpx.Timeout(constant("request_timeout_s"), connect=constant("connect_timeout_s"))
        self.device = DeviceInfo(kind="remote", name=self.base)
        models = self._models(required=not req.model)
        self.served_model = req.model or str(models[0]["id"])
        self.model_label = self.served_model
        entry = next((m for m in models if isinstance(m, dict) and m.get("id") == self.served_model), {})
        length = entry.get("max_model_len")  # vLLM and SGLang list it; other servers do not say
        self.max_context = length if isinstance(length, int) and length > 0 else None
        self.memory_source, self.gpu_indices = self._memory()

    def _models(self, required: bool) -> list:
        """The server's /v1/models entries (checked before any request); without ``required``, [] if it has none."""
        try:
            resp = self.httpx.get(f"{self.base}/v1/models", timeout=self.timeout)
        except self.httpx.ConnectError:
            raise BenchmarkError(
                f"Cannot connect to {self.base} (connection refused or unreachable). Start the server or fix --url."
            ) from None
        except self.httpx.HTTPError as err:
            if not required:
                return []
            raise BenchmarkError(f"{self.base}/v1/models failed: {type(err).__name__}. Check --url.") from None
        if resp.status_code != 200:
            if not required:
                return []
            raise BenchmarkError(f"{self.base}/v1/models answered HTTP {resp.status_code}; pass --model NAME.")
        try:
            data = resp.json().get("data") or []
        except (ValueError, AttributeError):
            data = []
        data = [m for m in data if isinstance(m, dict) and "id" in m] if isinstance(data, list) else []
        if not data and required:
            raise BenchmarkError(f"{self.base}/v1/models lists no model; pass --model NAME.")
        return data

    def _memory(self):
        host = urlparse(self.base).hostname or ""
        if host in _LOCAL_HOSTS:
            try:
                import pynvml

                pynvml.nvmlInit()
                count = pynvml.nvmlDeviceGetCount()
                pynvml.nvmlShutdown()
                if count:
                    return "nvml", list(range(count))
            except Exception:  # noqa: BLE001 - no driver / no library: no GPU to sample
                pass
        self.notes.append(
            "Memory not measured: the server is another process (GPU memory is sampled only for a local GPU server)."
        )
        return "none", []

    def body(self, item: PromptItem, workload: Workload) -> dict:
        prompt = item.text if item.input_tokens is None else synthetic_text(item.input_tokens, item.seed)
        n = workload.output_tokens
        body = {
            "model": self.served_model,
            "prompt": prompt,
            "max_tokens": n,
            "temperature": 0.0,
            "seed": item.seed,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if workload.ignore_eos:
            body["min_tokens"] = n  # vLLM, SGLang, llama-cpp-python
            body["ignore_eos"] = True  # vLLM, SGLang, llama.cpp server
        return body

    def run_level(
        self, items: Sequence[PromptItem], concurrency: int, workload: Workload, on_done: Callable[[int], None]
    ) -> tuple[list[RequestSample], float]:
        return asyncio.run(self._level(items, concurrency, workload, on_done))

    async def _level(self, items, concurrency, workload, on_done):
        httpx = self.httpx
        gate = asyncio.Semaphore(concurrency)
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(base_url=self.base, timeout=self.timeout, limits=limits) as client:
            start = time.perf_counter()

            async def one(item: PromptItem):
                async with gate:
                    result = await asyncio.wait_for(
                        self._request(client, item, concurrency, workload), constant("request_timeout_s")
                    )
                on_done(1)
                return result

            try:
                results = await asyncio.gather(*(one(it) for it in items))
            except httpx.ConnectError:
                raise BenchmarkError(
                    f"Cannot connect to {self.base}: connection refused. Is the server running?"
                ) from None
            except (httpx.TimeoutException, asyncio.TimeoutError):
                raise BenchmarkError(
                    f"A request to {self.base} timed out (limit {constant('request_timeout_s'):.0f} s)."
                ) from None
        samples = [s for s, _ in results]
        duration = max(end for _, end in results) - start
        self._count_notes(samples, concurrency, workload.output_tokens)
        return samples, duration

    def _count_notes(self, samples: list[RequestSample], concurrency: int, max_tokens: int) -> None:
        """Say where chunks and tokens disagree: against the server's usage, or capped at max_tokens."""
        usage_off = [
            s for s in samples if s.token_count_source == "server-usage" and s.streamed_chunks != s.output_tokens
        ]
        if usage_off:
            s = usage_off[0]
            self.notes.append(
                f"Concurrency {concurrency}: {len(usage_off)} request(s) streamed a different number of chunks than the "
                f"server's usage counted (e.g. {s.streamed_chunks} chunks vs {s.output_tokens} tokens); counts use the usage."
            )
        capped = [
            s for s in samples if s.token_count_source == "streamed-chunks" and (s.streamed_chunks or 0) > max_tokens
        ]
        if capped:
            most = max(s.streamed_chunks or 0 for s in capped)
            self.notes.append(
                f"Concurrency {concurrency}: {len(capped)} request(s) streamed more chunks than max_tokens (up to {most} for "
                f"{max_tokens}) and the server sends no usage: their counts are capped at max_tokens."
            )

    async def _request(self, client, item: PromptItem, concurrency: int, workload: Workload):
        body = self.body(item, workload)
        times: list[float] = []
        usage: dict = {}
        sent = time.perf_counter()
        async with client.stream("POST", "/v1/completions", json=body) as resp:
            if resp.status_code != 200:
                detail = (await resp.aread()).decode(errors="replace")[:300]
                raise BenchmarkError(
                    f"{self.base}/v1/completions answered HTTP {resp.status_code}: {' '.join(detail.split())}"
                )
            async for line in resp.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[len("data:") :].strip()
                if data == "[DONE]":
                    break
                now = time.perf_counter()
                chunk = json.loads(data)
                if chunk.get("usage"):
                    usage = chunk["usage"]
                for choice in chunk.get("choices") or []:
                    # A token's chunk: text, or (partial UTF-8 held back) empty text before the finish chunk.
                    if choice.get("text") or choice.get("finish_reason") is None:
                        times.append(now)
        if not times:
            raise BenchmarkError(f"{self.base} streamed no tokens for request {item.index}.")
        completion = usage.get("completion_tokens")
        count = completion or len(times)
        if not completion and count > workload.output_tokens:
            # max_tokens bounds what a server may generate: chunks beyond it carry held-back text, not tokens
            # (llama-cpp-python releases partial UTF-8 and stop-string buffers as extra chunks).
            count = workload.output_tokens
        return (
            sample(
                concurrency=concurrency,
                index=item.index,
                sent_at=sent,
                token_times=times,
                input_tokens=usage.get("prompt_tokens"),
                output_tokens=count,
                source="server-usage" if completion else "streamed-chunks",
                streamed_chunks=len(times),
            ),
            times[-1],
        )

    def close(self) -> None:
        pass
