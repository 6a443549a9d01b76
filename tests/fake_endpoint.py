"""A local OpenAI-compatible endpoint for the end-to-end tests and the benchmarks: a real socket on
127.0.0.1, HTTP/1.1 keep-alive, and replies taken in order from a script.

A script item is a string (a 200 completion whose content is that text), a function of the request body
returning an item (a model, or a server with limits, that answers what it is sent), or a dict for anything else:
    {"status": 429,             # default 200
     "headers": {...},          # response headers, over the defaults (Content-Type)
     "body": dict, str, bytes,  # a dict is sent as JSON (UTF-8, as providers do), a str as text/html
     "hold": True,              # answer only once the endpoint closes (a model still thinking when the
                                # client gives up), or once a threading.Event the test holds is set
     "encoding": "gzip",        # compress the body: "gzip" or "deflate", with the Content-Encoding header
     "chunked": 7,              # send with Transfer-Encoding: chunked, in pieces of this many bytes
     "drop": True}              # close the connection without answering
or, for a streamed reply (Content-Type: text/event-stream, sent with Transfer-Encoding: chunked):
    {"events": [...],           # each a dict, sent as `data: {json}`, or a str sent as it is (": keep-alive",
                                # "data: [DONE]", "error: {...}"); each is followed by a blank line
     "split": 3,                # write the stream in pieces of this many bytes (a character split between them)
     "pause": 0.01,             # seconds to wait after each piece (each event, without "split"): a stream that
                                # drips, for the tests of timeouts and for the benchmarks
     "hold": True,              # as above, but after the first `hold_at` pieces: a reply still being written
     "hold_at": 2,
     "linger": True,            # after the last event, keep the body open until the endpoint closes (or an Event)
     "hang_up": True,           # close the connection after the events, without ending the chunked body
     "close": 0.2}              # end the body, then close the connection this many seconds later, whatever
                                # came meanwhile (uvicorn, once a stream's exception is logged)
`stream_events()` makes the events of a reply. `sent` records (time.monotonic(), piece) for each piece of a
stream as it is written, for the benchmark. `wait_for_requests(n)` returns once n requests have arrived.

Only "pause" waits on a clock: a test that needs a slow model holds the reply instead, and lets it go (or
closes the endpoint) when the moment it is testing has come.
"""

from __future__ import annotations

import atexit
import compileall
import gzip
import json
import py_compile
import shutil
import socket
import sys
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the program: agent.py, tools.py, prompt.py and harness/


def install_program(home: Path) -> Path:
    """A copy of the program in `home`, so that no developer's .env next to agent.py is read. The copy comes
    with its modules compiled (once for all the copies a test run makes), so no run of it compiles them again."""
    global compiled_program
    if compiled_program is None:
        compiled_program = Path(tempfile.mkdtemp(prefix="plainagent-program-"))
        atexit.register(shutil.rmtree, compiled_program, ignore_errors=True)
        for source in ROOT.glob("*.py"):
            shutil.copy(source, compiled_program / source.name)
        shutil.copytree(ROOT / "harness", compiled_program / "harness", ignore=shutil.ignore_patterns("__pycache__"))
        # Checked against a hash of the source, not its time: a copy is as fresh as what it was copied from.
        compileall.compile_dir(compiled_program, quiet=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    shutil.copytree(compiled_program, home, dirs_exist_ok=True)
    return home


compiled_program: Path | None = None  # the program and its bytecode, made by the first install_program

# How each Content-Encoding is made; "deflate" is the zlib format (RFC 1950), as HTTP means it.
ENCODERS = {"gzip": gzip.compress, "deflate": zlib.compress}


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


def stream_events(text: str, pieces: int = 3, finish_reason: str | None = "stop", usage: dict | None = None,
                  done: bool = True, reasoning: str = "") -> list:
    """The events of a streamed reply: a role delta, the reasoning then `text` in about `pieces` deltas each,
    a last delta with `finish_reason`, a usage chunk whose choices are [] (when `usage`), then [DONE]."""
    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": "fake",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def deltas(whole: str, key: str) -> list:
        size = max(1, -(-len(whole) // pieces))
        return [chunk({key: whole[start:start + size]}) for start in range(0, len(whole), size)]

    events = [chunk({"role": "assistant", "content": ""})]
    events += deltas(reasoning, "reasoning_content") + deltas(text, "content")
    if finish_reason:
        events.append(chunk({}, finish_reason))
    if usage:
        events.append({"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": [], "usage": usage})
    return events + (["data: [DONE]"] if done else [])


def llama_cpp_python(window: int, answer) -> object:
    """A script item for every request: llama-cpp-python's server (0.3.36) with a context window of `window`
    tokens, counting 4 bytes of the messages' JSON as a token. A request past the window gets what that server
    sends: without `stream`, a 400 `context_length_exceeded` stating the window; with `stream`, a 200 event
    stream that ends before its first event (its exception is raised after the headers went out), and the
    connection closed after it, though its headers said keep-alive (uvicorn's way after an exception). Any other
    request gets `answer(body)`'s text, streamed when asked to be."""
    def server(body: dict):
        tokens = len(json.dumps(body["messages"])) // 4
        if tokens > window and body.get("stream"):
            return {"events": [], "headers": {"Content-Type": "text/event-stream; charset=utf-8"}, "close": 0.2}
        if tokens > window:
            return {"status": 400, "body": {"error": {
                "message": f"This model's maximum context length is {window} tokens. However, you requested "
                           f"{tokens + 16} tokens ({tokens} in the messages, 16 in the completion). Please reduce "
                           "the length of the messages or completion.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}}
        text = answer(body)
        return {"events": stream_events(text)} if body.get("stream") else {"body": completion(text)}
    return server


def llama_cpp(window: int, answer, bytes_per_token: float = 2.4, stream_usage: bool = False) -> object:
    """A script item for every request: llama.cpp's server (tools/server) at `n_ctx` `window`, counting
    `bytes_per_token` bytes of the messages' JSON as a token (denser than plainagent's first estimate, as code
    is for many tokenizers). A prompt past the window gets its 400 `exceed_context_size_error`, which states
    `n_prompt_tokens` and `n_ctx`; a prompt that fits is answered with `answer(body)`'s text as far as the window
    holds it: a reply that would pass it stops there with finish_reason "length" (the server has no room to
    shift the context). A stream reports no usage (unless `stream_usage`, as newer builds do when asked with
    stream_options.include_usage); a whole reply does."""
    def server(body: dict):
        sent = len(json.dumps(body["messages"], ensure_ascii=False).encode())
        tokens = -(-sent // bytes_per_token)
        tokens = int(tokens)
        if tokens > window:
            return {"status": 400, "body": {"error": {
                "code": 400, "message": f"request ({tokens} tokens) exceeds the available context size ({window} "
                                        "tokens), try increasing it",
                "type": "exceed_context_size_error", "n_prompt_tokens": tokens, "n_ctx": window}}}
        text, finish_reason = answer(body), "stop"
        room = int((window - tokens) * bytes_per_token)
        if len(text.encode()) > room:
            text, finish_reason = text.encode()[:room].decode(errors="ignore"), "length"
        used = int(len(text.encode()) / bytes_per_token)
        usage = {"prompt_tokens": tokens, "completion_tokens": used, "total_tokens": tokens + used}
        if body.get("stream"):
            asked = stream_usage and (body.get("stream_options") or {}).get("include_usage")
            return {"events": stream_events(text, finish_reason=finish_reason, usage=usage if asked else None)}
        return {"body": completion(text, finish_reason, usage)}
    return server


def split_chunks(data: bytes, size: int) -> list[bytes]:
    """`data` in pieces of `size` bytes, cut where the count falls (inside a UTF-8 character too)."""
    return [data[start:start + size] for start in range(0, len(data), size)]


class QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-answer is what several tests do on purpose: no traceback for it."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeEndpoint:
    """Serves the script; `received` and `n_connections` show what the client really did."""

    def __init__(self, script: list):
        self.script = list(script)
        self.received: list[Received] = []
        self.n_connections = 0
        self.sent: list[tuple[float, bytes]] = []
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)  # notified as each request is recorded
        self.closing = threading.Event()  # set when the endpoint closes: every held reply is let go
        self.held: list[threading.Event] = []  # what held replies wait for
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
            # The headers and the body go out in separate writes: with Nagle's algorithm the body would wait
            # for the client's delayed ACK of the headers, 40 ms on every request.
            disable_nagle_algorithm = True

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
                    endpoint.arrived.notify_all()
                if isinstance(item, str):
                    item = {"body": completion(item)}
                if "hold_at" not in item:
                    endpoint.hold(item.get("hold"))
                if item.get("drop"):
                    self.close_connection = True  # the handler returns, and the socket closes unanswered
                elif "events" in item:
                    self.stream(item)
                else:
                    self.answer(item)

            def answer(self, item: dict) -> None:
                body = item.get("body", "")
                if isinstance(body, dict):
                    data = json.dumps(body, ensure_ascii=False).encode()
                else:
                    data = body.encode() if isinstance(body, str) else body
                self.send_response(item.get("status", 200))
                headers = {"Content-Type": "application/json" if isinstance(body, dict) else "text/html"}
                for name, value in (headers | item.get("headers", {})).items():
                    self.send_header(name, value)
                if encoding := item.get("encoding"):
                    data = ENCODERS[encoding](data)
                    self.send_header("Content-Encoding", encoding)
                if size := item.get("chunked"):
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for piece in split_chunks(data, size):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            def stream(self, item: dict) -> None:
                events = [(f"data: {json.dumps(event, ensure_ascii=False)}" if isinstance(event, dict) else event)
                          .encode() + b"\n\n" for event in item["events"]]
                pieces = split_chunks(b"".join(events), item["split"]) if item.get("split") else events
                self.send_response(item.get("status", 200))
                for name, value in ({"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                     "Transfer-Encoding": "chunked"} | item.get("headers", {})).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.flush()
                for number, piece in enumerate(pieces):
                    if number == item.get("hold_at"):
                        endpoint.hold(item.get("hold"))
                    endpoint.sent.append((time.monotonic(), piece))  # the moment it starts on its way
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                    time.sleep(item.get("pause", 0))
                endpoint.hold(item.get("linger"))
                if item.get("hang_up"):
                    self.close_connection = True
                else:
                    self.wfile.write(b"0\r\n\r\n")
                    if "close" in item:
                        self.wfile.flush()
                        time.sleep(item["close"])
                        self.close_connection = True

            def log_message(self, *args):  # keep test output clean
                pass

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.serving = threading.Thread(target=self.serve, daemon=True)

    def hold(self, until: bool | threading.Event | None) -> None:
        """Wait as a held reply does: for `until` (an Event the test sets; True: none) or the endpoint's closing."""
        if until:
            event = self.closing if until is True else until
            with self.lock:
                if self.closing.is_set():
                    return
                self.held.append(event)  # closing sets it too, so no handler outlives the endpoint
            event.wait()

    def wait_for_requests(self, n: int, timeout: float = 30) -> None:
        """Return once `n` requests have arrived (the timeout only ends a test that would hang)."""
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.received) >= n, timeout), \
                f"{len(self.received)} of {n} requests arrived"

    def serve(self) -> None:
        """Accept connections until the endpoint closes, each served on a thread of its own. (Not
        serve_forever: it looks for shutdown() every half second, which every test would wait out.)"""
        while True:
            connection, address = self.server.socket.accept()
            if self.closing.is_set():  # the connection __exit__ makes to wake this loop
                connection.close()
                return
            self.server.process_request(connection, address)

    def __enter__(self) -> FakeEndpoint:
        self.serving.start()
        return self

    def __exit__(self, *exc) -> None:
        self.closing.set()
        with self.lock:
            for event in self.held:
                event.set()
        socket.create_connection(self.server.server_address).close()  # wakes accept() in serve()
        self.serving.join()
        self.server.server_close()
