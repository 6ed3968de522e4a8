"""Triton Inference Server's generate extension, streamed: ``POST /v2/models/<model>/generate_stream``.

The Triton artifacts (``--stack nvidia-triton``) serve TensorRT-LLM's LLM API model ``tensorrt_llm``, which has no
OpenAI endpoint (Triton's OpenAI frontend speaks the inputs of TensorRT-engine ensembles, not this model's). Its inputs
are sent by name (server v2.71.0 docs/protocol/extension_generate.md: request keys other than ``text_input`` go to the
model's inputs): ``streaming``, ``sampling_param_max_tokens``, ``sampling_param_top_k`` (1: greedy),
``sampling_param_seed`` and ``sampling_param_exclude_input_from_output`` (the model echoes the prompt otherwise).
The server answers with server-sent events, ``data: {...}\\n\\n`` (src/http_server.cc), one per response the decoupled
model sends: one per generated step, each carrying ``text_output``; an ``{"error": ...}`` event ends the request.

Token counts are the streamed responses (``streamed-chunks``): the model reports no usage and takes no ``ignore_eos``
input, so a request may end at the model's EOS before ``--output-tokens`` (the report says so).
"""

from __future__ import annotations

import json
import time

from ...errors import BenchmarkError
from ...untrusted import without_credentials
from ..metrics import sample
from ..report import DeviceInfo
from ..request import BenchRequest
from ..workload import PromptItem, Workload, constant, synthetic_text
from .base import package_versions
from .openai_engine import OpenAIEngine, _httpx

# The model name the Triton artifacts serve (data/triton.yaml model_name) when the index lists no ready model first.
DEFAULT_MODEL = "tensorrt_llm"


class TritonEngine(OpenAIEngine):
    name = "triton"

    def __init__(self, req: BenchRequest):
        httpx = _httpx()
        self.httpx = httpx
        self.base = str(req.url).rstrip("/")
        self.notes: list[str] = [
            "Triton generate_stream: output tokens are the streamed responses (one per generated step; the model sends no "
            "usage), and the tensorrt_llm model takes no ignore_eos, so a request may stop at EOS before --output-tokens."
        ]
        self.versions = package_versions("httpx")
        self.timeout = httpx.Timeout(constant("request_timeout_s"), connect=constant("connect_timeout_s"))
        self.device = DeviceInfo(kind="remote", name=without_credentials(self.base))  # kept in bench.json
        self.served_model = req.model or self._first_model()
        self.model_label = self.served_model
        self.max_context = None  # the repository index does not say the model's max_seq_len
        self.memory_source, self.gpu_indices = self._memory()

    def _first_model(self) -> str:
        """The first READY model of the repository index (POST v2/repository/index, model repository extension)."""
        try:
            resp = self.httpx.post(f"{self.base}/v2/repository/index", json={"ready": True}, timeout=self.timeout)
        except self.httpx.ConnectError:
            raise BenchmarkError(
                f"Cannot connect to {self.base} (connection refused or unreachable). Start the server or fix --url."
            ) from None
        except self.httpx.HTTPError as err:
            raise BenchmarkError(f"{self.base}/v2/repository/index failed: {type(err).__name__}. Check --url.") from None
        if resp.status_code != 200:
            raise BenchmarkError(f"{self.base}/v2/repository/index answered HTTP {resp.status_code}; pass --model NAME.")
        try:
            index = resp.json()
        except ValueError:
            index = None
        if not isinstance(index, list):  # not the repository extension's answer (another server, a proxy's page)
            raise BenchmarkError(f"{self.base}/v2/repository/index did not answer a model list; check --url or pass --model NAME.")
        ready = [
            str(m["name"]) for m in index
            if isinstance(m, dict) and m.get("state", "READY") == "READY" and isinstance(m.get("name"), str) and m["name"]
        ]
        if not ready:
            raise BenchmarkError(f"{self.base} lists no ready model; pass --model NAME (the Triton artifacts serve {DEFAULT_MODEL}).")
        return str(ready[0])

    def body(self, item: PromptItem, workload: Workload) -> dict:
        prompt = item.text if item.input_tokens is None else synthetic_text(item.input_tokens, item.seed)
        return {
            "text_input": prompt,
            "streaming": True,
            "sampling_param_max_tokens": workload.output_tokens,
            "sampling_param_top_k": 1,
            "sampling_param_seed": item.seed,
            "sampling_param_exclude_input_from_output": True,
        }

    async def _request(self, client, item: PromptItem, concurrency: int, workload: Workload, *, start: float,
                       scheduled: float | None = None, rate: float | None = None):
        path = f"/v2/models/{self.served_model}/generate_stream"
        times: list[float] = []
        sent = time.perf_counter()
        async with client.stream("POST", path, json=self.body(item, workload)) as resp:
            if resp.status_code != 200:
                detail = (await resp.aread()).decode(errors="replace")[:300]
                raise BenchmarkError(f"{self.base}{path} answered HTTP {resp.status_code}: {' '.join(detail.split())}")
            async for line in resp.aiter_lines():
                if not line.startswith("data:"):
                    continue
                now = time.perf_counter()
                event = json.loads(line[len("data:") :].strip())
                if "error" in event:  # errors after the first response come as events with HTTP 200
                    raise BenchmarkError(f"{self.base}{path}: request {item.index} failed: {event['error']}")
                if "text_output" in event:
                    times.append(now)
        if not times:
            raise BenchmarkError(f"{self.base} streamed no tokens for request {item.index}.")
        count = min(len(times), workload.output_tokens)
        return (
            sample(
                concurrency=concurrency, index=item.index, sent_at=sent, token_times=times[:count], input_tokens=None,
                output_tokens=count, source="streamed-chunks", streamed_chunks=len(times),
                request_rate=rate, sent_offset_s=sent - start, scheduled_offset_s=scheduled,
            ),
            times[-1],
        )
