"""A server that streams two tokens in one chunk (issue 21, item 6): llama-cpp-python holds back a token that ends in
an incomplete UTF-8 character and sends it with the next, and sends no usage in a stream.

A loopback server speaks that stream as llama-cpp-python 0.3.x writes it (llama_cpp/llama.py ``_create_completion``:
``multibyte_fix`` skips the chunk of a token whose text ends inside a character; the next chunk carries the tokens
decoded together; the last chunk has empty text and finish_reason ``length``; no usage). The client must count every
token, and give one inter-token gap per token, the merged chunk's wait shared by the two tokens it carried.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import ThreadingHTTPServer

import pytest

from infer_advisor.bench import bench
from tests.bench.fake_openai import models_handler
from infer_advisor.bench.backends.sse import Streamed, output_count
from infer_advisor.bench.metrics import chunk_tokens, sample

TOKEN_GAP_S = 0.02
TOKENS = 8
HELD = 3  # token 3 ends inside "é" (its first byte); token 4 completes it: one chunk for both


def _chunk(text: str, finish: str | None = None) -> str:
    body = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "tiny",
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\r\n\r\n"


def _server():
    class Handler(models_handler("tiny")):
        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for i in range(request["max_tokens"]):
                time.sleep(TOKEN_GAP_S)  # one decode step per token
                if i == HELD:
                    continue  # its bytes end inside a character: held back
                self.wfile.write(_chunk("\u00e9" if i == HELD + 1 else f" t{i}").encode())
                self.wfile.flush()
            self.wfile.write((_chunk("", "length") + "data: [DONE]\r\n\r\n").encode())
            self.wfile.flush()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_merged_chunk_counts_both_tokens_and_shares_its_wait():
    server = _server()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        report = bench("openai", url=url, concurrency=[1], output_tokens=TOKENS, num_prompts=2, warmup=0, progress=False)
    finally:
        server.shutdown()
    assert report.complete
    for s in report.requests:
        assert s.streamed_chunks == TOKENS - 1
        assert s.output_tokens == TOKENS and s.token_count_source == "finish-length"
        assert len(s.itl_s) == TOKENS - 1  # one gap per token after the first
        assert sum(s.itl_s) == pytest.approx(s.e2e_s - s.ttft_s)
        assert s.tpot_s == pytest.approx((s.e2e_s - s.ttft_s) / (TOKENS - 1))
        # the merged chunk waited two decode steps; each of its tokens gets half of that, not one gap of two steps
        merged = HELD - 1  # gaps of chunks 1..HELD-1 come first
        assert s.itl_s[merged] == s.itl_s[merged + 1]
        assert s.itl_s[merged] == pytest.approx(TOKEN_GAP_S, rel=0.5)
    assert report.levels[0].itl_s.n == 2 * (TOKENS - 1)


def test_chunk_tokens_puts_the_extra_token_on_the_multi_byte_chunk_then_on_the_longest_wait():
    times = [0.0, 0.01, 0.03, 0.04]
    assert chunk_tokens([" a", " b", "\u00e9", " c"], times, 5) == [1, 1, 2, 1]
    assert chunk_tokens([" a", " b", " c", " d"], times, 5) == [1, 1, 2, 1]  # no character to tell: the longest wait
    assert chunk_tokens([" a", "\u00e9", " c", " d"], times, 5) == [1, 2, 1, 1]  # the character first
    assert chunk_tokens([" a", " b"], [0.0, 0.01], 2) == [1, 1]  # nothing merged
    assert chunk_tokens(["\u00e9\u00e9"], [0.0], 3) == [3]  # one chunk holds them all
    assert chunk_tokens([" a", " b", " c"], [0.0, 0.01, 0.02], 2) == [1, 1, 0]  # held-back text released at the end


def test_sample_gives_one_gap_per_token():
    s = sample(concurrency=1, index=0, sent_at=0.0, token_times=[0.1, 0.11, 0.13, 0.14], input_tokens=4,
               output_tokens=5, chunk_tokens=[1, 1, 2, 1])
    assert s.itl_s == pytest.approx([0.01, 0.01, 0.01, 0.01]) and s.tpot_s == pytest.approx(0.01)
    tail = sample(concurrency=1, index=0, sent_at=0.0, token_times=[0.1, 0.11, 0.13], input_tokens=4, output_tokens=2,
                  chunk_tokens=[1, 1, 0])
    assert tail.itl_s == pytest.approx([0.03])  # the trailing chunk's wait joins the last gap: gaps add up to e2e - TTFT
    plain = sample(concurrency=1, index=0, sent_at=0.0, token_times=[0.1, 0.11, 0.13], input_tokens=4)
    assert plain.itl_s == pytest.approx([0.01, 0.02]) and plain.output_tokens == 3


@pytest.mark.parametrize("usage, finish, chunks, expected", [
    (7, "length", 6, (7, "server-usage")),  # the server's own count first
    (None, "length", 6, (8, "finish-length")),  # stopped at max_tokens in fewer chunks: tokens were merged
    (None, "stop", 6, (6, "streamed-chunks")),  # stopped early: the chunks are all there is to count
    (None, "length", 8, (8, "streamed-chunks")),
    (None, "length", 9, (8, "streamed-chunks")),  # chunks past max_tokens carry held-back text, not tokens
])  # fmt: skip
def test_output_count(usage, finish, chunks, expected):
    streamed = Streamed(times=[0.1 * i for i in range(chunks)], texts=["x"] * chunks, completion_tokens=usage,
                        finished=True, finish_reason=finish)
    assert output_count(streamed, 8) == expected
