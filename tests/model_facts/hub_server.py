"""A small Hugging Face Hub stand-in served over real HTTP on 127.0.0.1, for the Hub-source tests.

It answers the requests huggingface_hub 2.x makes for ``hf_hub_download`` and ``get_safetensors_metadata``
(read from its source, huggingface_hub/file_download.py and hf_api.py):

- ``HEAD /{repo}/resolve/{revision}/{file}``: ``X-Repo-Commit``, ``ETag`` and ``Content-Length`` headers
  (what ``get_hf_file_metadata`` reads); a missing file is 404 with ``X-Error-Code: EntryNotFound``,
  an unknown repo 404 with ``RepoNotFound``, a gated repo without the right token 401 with ``GatedRepo``.
- ``GET`` on the same URL: the bytes, honouring ``Range: bytes=a-b`` with 206 (safetensors header reads).
- ``GET /api/models?filter=...&sort=...&limit=...`` (what ``HfApi.list_models`` sends, huggingface_hub/hf_api.py): the
  listed models carrying every ``filter`` tag, most downloaded first when ``sort=downloads``, at most ``limit``;
  ``models_status`` makes it answer an error instead.

Every request is recorded (method, path, headers) so tests can check what was sent.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from urllib.parse import parse_qs, urlsplit
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")


@dataclass
class Repo:
    files: dict[str, bytes]
    token: str | None = None  # gated: only this bearer token may read
    status: int | None = None  # answer every request with this HTTP error status


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class FakeHub:
    repos: dict[str, Repo] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    models: list[dict] = field(default_factory=list)  # /api/models entries: {"id", "tags", "downloads"}
    models_status: int | None = None

    def start(self) -> None:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_HEAD(self):
                self._serve(body=False)

            def do_GET(self):
                self._serve(body=True)

            def _fail(self, status: int, code: str) -> None:
                self.send_response(status)
                self.send_header("X-Error-Code", code)
                self.send_header("X-Error-Message", code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _models(self) -> None:
                if hub.models_status is not None:
                    return self._fail(hub.models_status, "")
                query = parse_qs(urlsplit(self.path).query)
                wanted = query.get("filter", [])
                found = [m for m in hub.models if all(t in m.get("tags", []) for t in wanted)]
                if query.get("sort") == ["downloads"]:
                    found.sort(key=lambda m: -m.get("downloads", 0))
                if query.get("limit"):
                    found = found[: int(query["limit"][0])]
                data = json.dumps(found).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _serve(self, body: bool) -> None:
                hub.requests.append(Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
                if body and urlsplit(self.path).path == "/api/models":
                    return self._models()
                m = _RESOLVE.match(self.path.split("?")[0])
                if not m:
                    return self._fail(404, "RepoNotFound")
                repo = hub.repos.get(m["repo"])
                if repo is None:
                    return self._fail(404, "RepoNotFound")
                if repo.status is not None:
                    return self._fail(repo.status, "")
                if repo.token is not None and self.headers.get("Authorization") != f"Bearer {repo.token}":
                    return self._fail(401, "GatedRepo")
                if m["rev"] not in ("main", COMMIT):
                    return self._fail(404, "RevisionNotFound")
                data = repo.files.get(m["file"])
                if data is None:
                    return self._fail(404, "EntryNotFound")
                status, chunk = 200, data
                rng = self.headers.get("Range") or self.headers.get("range")
                if rng:
                    a, _, b = rng.removeprefix("bytes=").partition("-")
                    start, end = int(a), min(int(b) if b else len(data) - 1, len(data) - 1)
                    chunk, status = data[start : end + 1], 206
                self.send_response(status)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", '"' + hashlib.sha256(data).hexdigest() + '"')
                self.send_header("Content-Length", str(len(chunk)))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{start + len(chunk) - 1}/{len(data)}")
                self.end_headers()
                if body:
                    self.wfile.write(chunk)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
