"""A local OpenAI-compatible endpoint for the end-to-end tests and the benchmarks: a real socket on
127.0.0.1, HTTP/1.1 keep-alive, and replies taken in order from a script.

A script item is either a string (a 200 completion whose content is that text) or a dict
{"status": 429, "headers": {...}, "body": dict or str, "delay": seconds} for anything else, or a function
of the request body returning one of those (a model, or a server with limits, that answers what it is sent).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict
    body: dict
    connection: int  # which TCP connection carried it (a count, in accept order)


def completion(text: str | None, finish_reason: str = "stop", usage: dict | None = None) -> dict:
    """The body of a chat completion whose message content is `text`."""
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": finish_reason}],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class FakeEndpoint:
    """Serves the script; `received` and `n_connections` show what the client really did."""

    def __init__(self, script: list):
        self.script = list(script)
        self.received: list[Received] = []
        self.n_connections = 0
        self.lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real providers do

            def setup(self):
                super().setup()
                with endpoint.lock:
                    endpoint.n_connections += 1
                    self.connection_number = endpoint.n_connections

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                with endpoint.lock:
                    endpoint.received.append(Received(self.path, dict(self.headers), json.loads(raw or b"{}"),
                                                      self.connection_number))
                    item = endpoint.script.pop(0) if endpoint.script else {
                        "status": 500, "body": {"error": {"message": "the test script has no more replies"}}}
                    if callable(item):  # under the lock, received[-1] is this request
                        item = item(endpoint.received[-1].body)
                if isinstance(item, str):
                    item = {"body": completion(item)}
                time.sleep(item.get("delay", 0))  # a slow model, for interrupt tests
                body = item.get("body", "")
                data = (json.dumps(body) if isinstance(body, dict) else body).encode()
                self.send_response(item.get("status", 200))
                self.send_header("Content-Type", "application/json" if isinstance(body, dict) else "text/html")
                for name, value in item.get("headers", {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # keep test output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeEndpoint:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
