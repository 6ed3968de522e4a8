"""Read one streamed ``/v1/completions`` answer strictly and within bounds.

    streamed = await read_completion_stream(resp, max_tokens=200)   # or raises RequestFailed(reason)

Server-sent events are split on ``\\n`` only (``\\r\\n`` accepted), as the SSE specification says: httpx's
``aiter_lines`` also splits on U+0085, U+2028 and U+2029, so a token holding one cut its chunk in two and the JSON
failed (the whole level was lost). Each line is decoded as UTF-8 on its own. A chunk that is not a JSON object, a
``choices`` that is not a list of objects, text that is not a string, a ``usage`` whose counts are not
non-negative integers, a stream that ends before ``[DONE]`` or a finish reason, one that streams no token, or one
larger than the caps: each is one failed request (:class:`RequestFailed`), counted, never a lost level.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from ...units import MIB


class RequestFailed(Exception):
    """One request the server answered wrongly; the level counts it and goes on."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Streamed:
    times: list[float] = field(default_factory=list)  # arrival of each token's chunk
    texts: list[str] = field(default_factory=list)  # the text of each of those chunks
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finished: bool = False  # a finish_reason or [DONE] was seen
    finish_reason: str | None = None  # the last one seen ("length": the server stopped at max_tokens)


def _count(usage: dict, key: str) -> int | None:
    value = usage.get(key)
    if value is None:
        return None
    if type(value) is not int or value < 0:  # no bools, no strings, no negative counts
        raise RequestFailed(f"usage.{key} is {json.dumps(value)[:40]}, not a count")
    return value


class _Reader:
    def __init__(self, max_events: int):
        self.out, self.max_events, self.events = Streamed(), max_events, 0

    def line(self, raw: bytes, now: float) -> bool:
        """Handle one SSE line; True at ``[DONE]``."""
        if not raw.startswith(b"data:"):
            return False  # comments (": ping"), event:, id:, retry:, blank separators
        try:
            data = raw[5:].decode("utf-8").removeprefix(" ").strip()
        except UnicodeDecodeError:
            raise RequestFailed("a chunk is not UTF-8") from None
        if data == "[DONE]":
            self.out.finished = True
            return True
        self.events += 1
        if self.events > self.max_events:
            raise RequestFailed(f"more than {self.max_events} chunks")
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):
            raise RequestFailed(f"a chunk is not JSON: {data[:60]!r}") from None
        if not isinstance(chunk, dict):
            raise RequestFailed(f"a chunk is a JSON {type(chunk).__name__}, not an object")
        self._usage(chunk.get("usage"))
        choices = chunk.get("choices")
        if choices is None:
            choices = []
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            raise RequestFailed("a chunk's choices are not a list of objects")
        for choice in choices:
            text, finish = choice.get("text"), choice.get("finish_reason")
            if text is not None and not isinstance(text, str) or finish is not None and not isinstance(finish, str):
                raise RequestFailed("a choice's text or finish_reason is not a string")
            if finish is not None:
                self.out.finished = True
                self.out.finish_reason = finish
            # A token's chunk: text, or (partial UTF-8 held back) empty text before the finish chunk.
            if text or finish is None:
                self.out.times.append(now)
                self.out.texts.append(text or "")
        return False

    def _usage(self, usage) -> None:
        if not usage:
            return
        if not isinstance(usage, dict):
            raise RequestFailed(f"usage is a JSON {type(usage).__name__}, not an object")
        prompt, completion = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
        self.out.prompt_tokens = prompt if prompt is not None else self.out.prompt_tokens
        self.out.completion_tokens = completion if completion is not None else self.out.completion_tokens


async def read_completion_stream(resp, *, max_tokens: int, bytes_per_token: float, events_per_token: float) -> Streamed:
    """Read ``resp`` (an httpx streaming response, status 200) to its end; see the module docstring."""
    max_bytes = MIB + int(bytes_per_token * max_tokens)
    reader = _Reader(max_events=int(events_per_token * max_tokens) + 64)
    buffer, total, done = b"", 0, False
    async for raw in resp.aiter_bytes():
        now = time.perf_counter()
        total += len(raw)
        if total > max_bytes:
            raise RequestFailed(f"the answer passed {max_bytes:,} bytes")
        buffer += raw
        while not done:
            end = buffer.find(b"\n")
            if end < 0:
                break
            line, buffer = buffer[:end].removesuffix(b"\r"), buffer[end + 1 :]
            done = reader.line(line, now)
        if done:
            break
    if not done and buffer.strip():
        done = reader.line(buffer.strip(), time.perf_counter())
    out = reader.out
    if not out.finished:
        raise RequestFailed("the stream ended before a finish reason or [DONE] (cut mid-answer)")
    if not out.times or out.completion_tokens == 0:
        raise RequestFailed("an empty completion (no token streamed)")
    if out.completion_tokens is not None and out.completion_tokens > max_tokens:
        raise RequestFailed(f"usage says {out.completion_tokens} tokens, more than max_tokens {max_tokens}")
    return out


def output_count(streamed: Streamed, max_tokens: int) -> tuple[int, str]:
    """(output tokens, where the count came from) of one streamed answer.

    The server's usage when it sent one. Without: the chunks, capped at ``max_tokens`` (a server may generate no
    more; chunks past it carry held-back text: llama-cpp-python releases partial UTF-8 and stop-string buffers as
    extra chunks), except that an answer that finished with reason ``length`` in fewer chunks than ``max_tokens``
    made ``max_tokens`` tokens and streamed some of them merged (llama-cpp-python holds back a token that ends in an
    incomplete UTF-8 character and sends it with the next): ``finish-length``."""
    if streamed.completion_tokens:
        return streamed.completion_tokens, "server-usage"
    chunks = len(streamed.times)
    if streamed.finish_reason == "length" and chunks < max_tokens:
        return max_tokens, "finish-length"
    return min(chunks, max_tokens), "streamed-chunks"
