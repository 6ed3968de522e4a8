"""The part every fake OpenAI-compatible server of the bench tests shares: quiet logs and `GET /v1/models`."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


def models_handler(model: str) -> type[BaseHTTPRequestHandler]:
    """A request handler that lists ``model`` at `GET /v1/models` and logs nothing; a test subclasses it with its
    own `do_POST`."""

    class Models(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = json.dumps({"object": "list", "data": [{"id": model, "object": "model"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Models
