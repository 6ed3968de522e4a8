"""Any OpenAI-compatible server (vLLM, SGLang, llama.cpp, TGI, `transformers serve`) over HTTP with SSE streaming.

Each request is a streamed ``POST /v1/completions``; the time of each streamed chunk is a token's arrival, so
TTFT and inter-token latency are what a client sees. Output tokens come from the server's ``usage`` when it sends
one (``stream_options: {"include_usage": true}``), else from the number of streamed chunks (or max_tokens, when
the answer stopped there in fewer chunks: ``sse.output_count``); both are kept so they can be compared. Closed loop: ``concurrency`` requests are kept in flight with asyncio. Open loop
(``run_open_level``): each request is sent at its scheduled second whether or not earlier ones have finished, on a
connection of its own when none is free (no pool limit to queue behind). Every request is bounded by
``request_timeout_s``. Sockets are opened with TCP_NODELAY: without it the body of a new connection's first request
waits for the server's delayed ACK of the headers (Nagle's algorithm), which added about 40 ms to the TTFT of the
first request on each connection against llama-server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Callable, Sequence
from urllib.parse import urlparse

from ...errors import BenchmarkError, EngineNotInstalledError
from ...untrusted import without_credentials
from ..metrics import chunk_tokens, sample
from ..report import DeviceInfo, RequestSample
from ..request import BenchRequest
from ..workload import PromptItem, Workload, constant, synthetic_text
from .base import package_versions
from .sse import RequestFailed, output_count, read_completion_stream

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
# Body fields not every OpenAI-compatible server accepts (`transformers serve` answers 422 to ignore_eos and
# min_tokens): on a 400/422 that names one of them, they are dropped for the rest of the run and the request sent again.
OPTIONAL_FIELDS = ("ignore_eos", "min_tokens", "seed", "stream_options")
# Reasons kept per level (the count is always exact).
MAX_REASONS = 5


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
        self.timeout = httpx.Timeout(
            constant("request_timeout_s"), connect=constant("connect_timeout_s"), read=constant("read_timeout_s")
        )
        self.dropped: set[str] = set()  # OPTIONAL_FIELDS the server refused
        self.level_failures: list[str] = []  # reasons of the last level's failed requests
        self.device = DeviceInfo(kind="remote", name=without_credentials(self.base))  # kept in bench.json
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
            resp = self._get_models()
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

    def _get_models(self):
        """GET /v1/models with a total deadline and a size cap: a server that drips its answer byte by byte never
        trips a read timeout."""
        httpx = self.httpx
        deadline = time.monotonic() + constant("models_timeout_s")
        with httpx.stream("GET", f"{self.base}/v1/models", timeout=self.timeout) as resp:
            body = b""
            for chunk in resp.iter_bytes():
                body += chunk
                if time.monotonic() > deadline or len(body) > 2**20:
                    raise httpx.ReadTimeout("the /v1/models answer took too long or was too large")
            return httpx.Response(resp.status_code, content=body, headers=resp.headers)

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
        return {k: v for k, v in body.items() if k not in self.dropped}

    def _refused_fields(self, status: int, detail: str, body: dict) -> set[str]:
        """Optional fields a 400/422 answer blames (all those sent, if it names none of them)."""
        if status not in (400, 422):
            return set()
        sent = [f for f in OPTIONAL_FIELDS if f in body]
        named = {f for f in sent if f in detail}
        return named or set(sent)

    def run_level(
        self, items: Sequence[PromptItem], concurrency: int, workload: Workload, on_done: Callable[[int], None]
    ) -> tuple[list[RequestSample], float]:
        return asyncio.run(self._level(items, concurrency, workload, on_done))

    @contextlib.contextmanager
    def _connection_errors(self):
        """A refused connection or a timed-out request ends the level with one line (BenchmarkError), not a traceback."""
        httpx = self.httpx
        try:
            yield
        except httpx.ConnectError:
            raise BenchmarkError(f"Cannot connect to {self.base}: connection refused. Is the server running?") from None
        except (httpx.TimeoutException, asyncio.TimeoutError):
            raise BenchmarkError(
                f"A request to {self.base} timed out (limit {constant('request_timeout_s'):.0f} s)."
            ) from None

    def _client(self, connections: int | None):
        """An async client whose sockets send at once (TCP_NODELAY, see the module docstring)."""
        httpx = self.httpx
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        transport = httpx.AsyncHTTPTransport(limits=limits, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        return httpx.AsyncClient(base_url=self.base, timeout=self.timeout, transport=transport)

    async def _level(self, items, concurrency, workload, on_done):
        gate = asyncio.Semaphore(concurrency)
        async with self._client(concurrency) as client:
            start = time.perf_counter()

            async def one(item: PromptItem):
                async with gate:
                    result = await self._guarded(self._request(client, item, concurrency, workload, start=start))
                on_done(1)
                return result

            with self._connection_errors():
                results = self._successes(await asyncio.gather(*(one(it) for it in items)))
        samples = [s for s, _ in results]
        duration = max(end for _, end in results) - start
        self._count_notes(samples, f"Concurrency {concurrency}", workload.output_tokens)
        return samples, duration

    def run_open_level(
        self,
        items: Sequence[PromptItem],
        offsets: Sequence[float],
        rate: float,
        workload: Workload,
        on_done: Callable[[int], None],
    ) -> tuple[list[RequestSample], float]:
        """Open loop: send ``items[i]`` at ``offsets[i]`` seconds after the level starts, whatever is still in flight."""
        return asyncio.run(self._open_level(items, offsets, rate, workload, on_done))

    async def _open_level(self, items, offsets, rate, workload, on_done):
        in_flight = 0
        async with self._client(None) as client:
            start = time.perf_counter()

            async def one(item: PromptItem, offset: float):
                nonlocal in_flight
                in_flight += 1
                try:
                    result = await self._guarded(
                        self._request(client, item, in_flight, workload, start=start, scheduled=offset, rate=rate)
                    )
                finally:
                    in_flight -= 1
                on_done(1)
                return result

            tasks = []
            with self._connection_errors():
                try:
                    for item, offset in zip(items, offsets, strict=True):
                        delay = start + offset - time.perf_counter()
                        if delay > 0:
                            await asyncio.sleep(delay)
                        failed = next((t for t in tasks if t.done() and not t.cancelled() and t.exception()), None)
                        if failed is not None:
                            await failed  # a dead server or a refused request stops the level now, not after the schedule
                        tasks.append(asyncio.create_task(one(item, offset)))
                    results = self._successes(await asyncio.gather(*tasks))
                finally:
                    for task in tasks:
                        task.cancel()
        samples = [s for s, _ in results]
        duration = max(end for _, end in results) - start
        self._count_notes(samples, f"Rate {rate:g} req/s", workload.output_tokens)
        return samples, duration

    async def _guarded(self, request):
        """The request's (sample, end) or (None, reason): a wrong answer or a timeout is one failed request;
        a refused connection (the server is gone) still stops the level."""
        try:
            return await asyncio.wait_for(request, constant("request_timeout_s"))
        except RequestFailed as err:
            return None, err.reason
        except (self.httpx.TimeoutException, asyncio.TimeoutError):
            return None, f"timed out (read {constant('read_timeout_s'):.0f} s, total {constant('request_timeout_s'):.0f} s)"
        except (self.httpx.RemoteProtocolError, self.httpx.ReadError) as err:
            return None, f"the connection broke mid-answer ({type(err).__name__})"

    def _successes(self, results: list) -> list:
        """The successful results; the failures' reasons go to ``level_failures``; a level where every request
        failed raises (there is nothing to measure), naming the first reason."""
        failed = [reason for sample_, reason in results if sample_ is None]
        self.level_failures = failed
        ok = [r for r in results if r[0] is not None]
        if not ok:
            raise BenchmarkError(f"Every request of the level failed; the first: {failed[0]}.")
        return ok

    def _count_notes(self, samples: list[RequestSample], level: str, max_tokens: int) -> None:
        """Say where chunks and tokens disagree: against the server's usage, or capped at max_tokens."""
        usage_off = [
            s for s in samples if s.token_count_source == "server-usage" and s.streamed_chunks != s.output_tokens
        ]
        if usage_off:
            s = usage_off[0]
            self.notes.append(
                f"{level}: {len(usage_off)} request(s) streamed a different number of chunks than the "
                f"server's usage counted (e.g. {s.streamed_chunks} chunks vs {s.output_tokens} tokens); counts use the usage."
            )
        merged = [s for s in samples if s.token_count_source == "finish-length"]
        if merged:
            fewest = min(s.streamed_chunks or 0 for s in merged)
            self.notes.append(
                f"{level}: {len(merged)} request(s) stopped at max_tokens ({max_tokens}, finish_reason length) in fewer "
                f"chunks (down to {fewest}) and the server sends no usage: some chunks carried two or more tokens; "
                "counted as max_tokens, each merged chunk's wait shared by its tokens in the inter-token latencies."
            )
        capped = [
            s for s in samples if s.token_count_source == "streamed-chunks" and (s.streamed_chunks or 0) > max_tokens
        ]
        if capped:
            most = max(s.streamed_chunks or 0 for s in capped)
            self.notes.append(
                f"{level}: {len(capped)} request(s) streamed more chunks than max_tokens (up to {most} for "
                f"{max_tokens}) and the server sends no usage: their counts are capped at max_tokens."
            )

    async def _request(self, client, item: PromptItem, concurrency: int, workload: Workload, *, start: float,
                       scheduled: float | None = None, rate: float | None = None):
        for _ in range(2):  # a second try only after dropping fields the server refused
            body = self.body(item, workload)
            sent = time.perf_counter()
            async with client.stream("POST", "/v1/completions", json=body) as resp:
                if resp.status_code == 200:
                    streamed = await read_completion_stream(
                        resp, max_tokens=workload.output_tokens, bytes_per_token=constant("max_stream_bytes_per_token"),
                        events_per_token=constant("max_stream_events_per_token"),
                    )
                    break
                detail = " ".join((await resp.aread())[:2000].decode(errors="replace").split())[:300]
                refused = self._refused_fields(resp.status_code, detail, body) - self.dropped
                if not refused:
                    raise RequestFailed(f"HTTP {resp.status_code}: {detail}")
                self.dropped |= refused
                self.notes.append(
                    f"The server refused {', '.join(sorted(refused))} (HTTP {resp.status_code}): sent without them"
                    + ("; answers may stop early at end-of-sequence." if refused & {"ignore_eos", "min_tokens"} else ".")
                )
        else:
            raise RequestFailed(f"HTTP {resp.status_code} again without {', '.join(sorted(self.dropped))}")
        times = streamed.times
        count, source = output_count(streamed, workload.output_tokens)
        return (
            sample(
                concurrency=concurrency,
                index=item.index,
                sent_at=sent,
                token_times=times,
                input_tokens=streamed.prompt_tokens,
                output_tokens=count,
                source=source,
                streamed_chunks=len(times),
                chunk_tokens=chunk_tokens(streamed.texts, times, count),
                request_rate=rate,
                sent_offset_s=sent - start,
                scheduled_offset_s=scheduled,
            ),
            times[-1],
        )

    def close(self) -> None:
        pass
