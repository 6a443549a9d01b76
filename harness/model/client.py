"""The HTTP client: one POST to {base_url}/chat/completions, with retries, and one clear line per failure.

No vendor SDK: the request is plain JSON over `requests`. One `requests.Session` serves the whole run, so
every model call of a session reuses one TCP (and TLS) connection. Everything that can go wrong on the
way — refused or broken connections, timeouts, 4xx/5xx, HTML from a proxy, a 200 that carries an error, a
reply in a shape we cannot read — ends as a `ChatError` whose message is the single line the user sees.
Reading what the server sent (a completion, a failure) is `replies.py`; a streamed reply is `stream.py`.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

import requests
import urllib3

from harness.common.hosts import hide_credentials, is_loopback, shown_url
from harness.common.seam_types import ChatError, Reply
from harness.common.text_files import repaired
from harness.model.bare import BareModel
from harness.model.replies import (
    describe_connection_error,
    error_body,
    is_broken_connection,
    is_quota_exhausted,
    one_line,
    parse_completion,
    rejected_parameter,
    reply_cap,
    retry_after,
    server_message,
    token_counts,
)
from harness.model.stream import FirstEvent, StreamCut, StreamError, read_stream

# Statuses worth another try: the request may well succeed a moment later. 400/401/403/404/422 never do.
RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504, 529}
# Model families that reject the `stop` parameter outright (OpenAI reasoning models).
NO_STOP_MODELS = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)
# A 400 that says the model is unknown (OpenRouter, several proxies): the same advice as a 404's.
MODEL_NOT_FOUND = re.compile(r"model_not_found|model\b.{0,80}\b(?:does not exist|not found|not exist|unknown)",
                             re.IGNORECASE)
# Parameters we can do without: a server that rejects one (a 400 naming it) is sent requests without it (max_tokens:
# with max_completion_tokens instead; without both, a stream is still read no further than STREAM_SLACK allows).
OPTIONAL_PARAMETERS = ("stream_options", "stop", "max_tokens", "max_completion_tokens")
STREAM_SLACK = 8  # bytes a token, at most, before a reply is taken for one that never stops (tokens run 1-4)


class Client(BareModel):
    """The bare model's request (bare.py: `request`, to `endpoint`, with `headers`), sent to one OpenAI-compatible
    endpoint for the whole session: on one connection, retried, streamed, within deadlines."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        connect_timeout: float = 10.0,  # seconds to open the connection
        # Seconds a streamed reply may take to send its first byte: the server loads the model and reads the prompt
        # meanwhile (a local one on a CPU: a minute, for a long one), and says nothing; a server silent for longer
        # most likely is gone. Shorter than a whole reply's wait, which covers the writing of it too.
        first_byte_timeout: float = 120.0,
        read_timeout: float = 300.0,  # seconds of silence allowed for a whole reply, and in a stream once it began
        deadline: float = 600.0,  # seconds for one whole request, body included
        max_body: int = 32 * 2**20,  # bytes of (decoded) body we accept; a completion is far smaller
        max_retries: int = 3,  # further attempts after the first, on retryable failures only
        retry_after_cap: float = 60.0,  # longest Retry-After we wait out; longer ones fail at once
        stop: list[str] | None = None,  # stop sequences; None sends none
        reply_tokens: int | None = None,  # the most tokens a reply may hold (session_model.py asks less if need be)
        stream: bool = False,  # ask for the reply as server-sent events, to show it as it is written
        # Seconds a stream may stay open once its reply is whole (a finish_reason, or [DONE]): the usage chunk
        # and the body's end follow within milliseconds from a server that behaves, and a second covers a slow
        # network; one that holds the stream open then costs the user that second, not the read timeout.
        stream_grace: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
        log: Callable[[str], None] = lambda line: None,
    ):
        if api_key and not (api_key.isascii() and api_key.isprintable()):
            # A header carries ASCII only: a pasted "…" or line break would fail every call, deep in http.client.
            raise ValueError("OPENAI_API_KEY contains a character that cannot be sent in an HTTP header "
                             "(a pasted '…', a space or a line break?); copy the key again")
        super().__init__(base_url, api_key, model)  # endpoint (with any credentials the base URL carries), headers
        self.url = shown_url(self.endpoint)  # the address as every line names it: without them
        self.base_url = base_url
        self.timeout = (connect_timeout, read_timeout)
        self.first_byte_timeout = first_byte_timeout
        self.deadline = deadline
        self.max_body = max_body
        self.max_retries = max_retries
        self.retry_after_cap = retry_after_cap
        self.stop = stop  # sent to each model that takes it
        self.reply_tokens, self.limit = reply_tokens, None  # the most a reply may hold; the current request's
        self.stream = stream
        self.rejected: dict[str, set[str]] = {}  # model -> the optional parameters it refused with a 400
        self.caps: dict[str, int] = {}  # model -> the most tokens it said a reply may ask for
        self.stream_grace = stream_grace
        self.sleep = sleep
        self.log = lambda line: log(self.hide_credentials(line))
        self.session = requests.Session()
        self.session.headers["User-Agent"] = "plainagent/0.1"
        if is_loopback(self.endpoint):  # a server on this machine: no proxy from the environment stands between
            self.session.trust_env = False
        self.session.headers.update(self.headers)  # the key, if any: local servers (Ollama, LM Studio) run without

    def chat(self, messages: list[dict], on_delta: Callable[[str, str], None] | None = None,
             limit: int | None = None) -> Reply:
        """Send the conversation, return the assistant's reply, or raise ChatError with one clear line.

        When streaming, `on_delta(kind, text)` sees the reply as it arrives: kind "text" or "reasoning", and
        ("restart", "") before the request is sent again after a failed attempt; before each attempt ("waiting",
        what it waits for: 'waiting for the first byte from localhost:8080 (up to 120 s)'). `limit`: the most
        tokens the reply may hold (max_tokens, or the parameter the model takes instead); None asks no limit.
        """
        body: dict = {**self.request(messages), **self.options(self.model, limit)}  # the bare request, options
        self.limit = limit  # what a stream is read up to, whether the server took it or not
        try:
            response = self._post_with_retries(body, on_delta)
            while response.status_code == 400 and (rejected := rejected_parameter(body, response, OPTIONAL_PARAMETERS)
                                                    or reply_cap(body, response)):
                if isinstance(rejected, int):  # the limit's value refused ("at most 16384"): asked with that
                    self.caps[self.model] = self.limit = rejected
                    body.update(self.options(self.model, rejected))
                    self.log(f"{self.model} takes replies of at most {rejected:,} tokens; asking for that")
                else:  # `stop`, a stream's usage and the reply's limit are only optimisations: it does without
                    self.rejected.setdefault(self.model, set()).add(rejected)
                    del body[rejected]
                    body.update(instead := {key: value for key, value in self.options(self.model, limit).items()
                                            if key not in body and key.startswith("max_")})
                    self.log(f"{self.model} rejects the '{rejected}' parameter; sending requests "
                             + (f"with '{next(iter(instead))}' instead" if instead else "without it"))
                response = self._post_with_retries(body, on_delta)
            if response.status_code != 200:
                raise ChatError(self._describe_failure(response), response.status_code, server_message(response),
                                error_body(response))
            reply = getattr(response, "streamed", None) or parse_completion(response, self.url)
            reply.limit = self.limit
            most = self.limit and STREAM_SLACK * self.limit  # a whole reply past what a stream is read up to:
            if most and not reply.streamed and len(whole := reply.text.encode("utf-8", "replace")) > most:
                reply.text = whole[:most].decode("utf-8", "ignore")  # the same as streamed, whatever it claims
                reply.finish_reason, reply.overran = "length", True
            return reply
        except ChatError as error:  # a server may echo the URL back, credentials and all
            error.args = (self.hide_credentials(str(error)),)
            error.detail = self.hide_credentials(error.detail)
            raise

    def options(self, model: str, limit: int | None = None) -> dict:
        """The optional parameters a request to `model` carries: worked out for each request, since /model
        switches models, and each keeps what it accepts (`stop` goes to every model that takes it)."""
        rejected = self.rejected.get(model, set())
        # Sending `stop` to a model that rejects it costs a 400 on every call; leave it out up front.
        newer = NO_STOP_MODELS.match(model.rsplit("/", 1)[-1])  # OpenAI's reasoning models: no stop, no max_tokens
        takes_stop = not newer and "stop" not in rejected
        parameters: dict = {"stop": self.stop} if self.stop and takes_stop else {}
        named = next((name for name in (("max_completion_tokens", "max_tokens") if newer else
                                        ("max_tokens", "max_completion_tokens")) if name not in rejected), None)
        if limit and named:  # the one the model takes: max_completion_tokens for OpenAI's newer ones, first
            parameters[named] = min(limit, self.caps.get(model, limit))
        if self.stream:
            parameters["stream"] = True
            if "stream_options" not in rejected:  # the usage at the end of the stream
                parameters["stream_options"] = {"include_usage": True}
        return parameters

    def hide_credentials(self, text: str) -> str:
        """`text` without the credentials the base URL carries: they go out with requests, never in a line."""
        return hide_credentials(text, self.endpoint)

    def _post_with_retries(self, body: dict, on_delta: Callable[[str, str], None] | None = None) -> requests.Response:
        """POST until a response that is final: success, a non-retryable status, or retries spent."""
        for attempt in range(self.max_retries + 1):
            last_try = attempt == self.max_retries
            if attempt and on_delta:
                on_delta("restart", "")  # what an earlier attempt streamed is discarded
            try:
                response = self._post(body, on_delta)
            except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as error:
                if isinstance(error, EmptyStream) and body.get("stream"):
                    # Most often a server that failed after sending its headers (llama-cpp-python's, asked past
                    # its window, ends the stream at once): the same request without streaming gets its real
                    # answer, a 400 for length, say, which the history survives by compacting. Asked so once.
                    self.log(f"the stream from {self.url} ended before its first event; asking once more without "
                             "streaming, for the server's own answer")
                    self.session.close()  # such a server drops the connection a moment later: ask on a new one
                    return self._post_with_retries(without_streaming(body), on_delta)
                # A connection that broke may be a hiccup; a refusal (nothing listening, no such host, a
                # certificate we cannot trust) is an answer, and so is a timeout: a server silent for minutes
                # would most likely stay so, and retrying it would keep the user waiting for half an hour.
                hiccup = is_broken_connection(error) and not isinstance(error, requests.Timeout)
                if last_try or not hiccup:
                    raise ChatError(describe_connection_error(error, self.url)) from None
                delay = self._backoff(attempt)
                reason = f"the stream from {self.url} ended before the reply did" if isinstance(error, CutStream) \
                    else f"connection broke talking to {self.url}"
                discarded = "; the reply shown so far is discarded" if body.get("stream") else ""
                self.log(f"{reason}{discarded}; retrying in {delay:.1f} s")
            except requests.RequestException as error:  # a malformed URL and the like: retrying cannot help
                raise ChatError(f"Request to {self.url} failed: {one_line(str(error))}") from None
            else:
                if response.status_code not in RETRY_STATUSES or last_try or is_quota_exhausted(response):
                    return response
                delay = retry_after(response)
                if delay is None:
                    delay = self._backoff(attempt)
                elif delay > self.retry_after_cap:
                    raise ChatError(
                        f"{response.status_code} from {self.url}: the server asks to wait {delay:.0f} s "
                        f"before retrying; try again later. {server_message(response)}".rstrip()
                    )
                self.log(f"{response.status_code} from {self.url}; retrying in {delay:.1f} s "
                         f"(attempt {attempt + 2} of {self.max_retries + 1})")
            self.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _post(self, body: dict, on_delta: Callable[[str, str], None] | None = None) -> requests.Response:
        """One POST, its body read whole within the deadline (requests' timeouts only bound each socket wait).

        A streamed reply is read event by event as it arrives, and left on the response as `streamed`.
        """
        give_up_at = time.monotonic() + self.deadline
        wait = self.first_byte_timeout if body.get("stream") else self.timeout[1]
        if on_delta:  # the spinner's line says what it waits for
            on_delta("waiting", self.waiting_for(body))
        try:
            # No redirects: requests would follow a 301/302 as a GET without the body, and a provider moving
            # its API is news for the user's OPENAI_BASE_URL, not something to follow in silence.
            response = self.session.post(self.endpoint, json=body, timeout=(self.timeout[0], wait), stream=True,
                                         allow_redirects=False)
        except requests.ReadTimeout:  # requests' own words name the connection pool, not the wait
            raise requests.ReadTimeout(self.silence(body, began=False)) from None
        # Hand requests the body we read, then return the connection to the pool for the next call.
        try:
            content_type = response.headers.get("Content-Type", "").lower()
            if response.status_code == 200 and content_type.startswith("text/event-stream"):
                response.streamed = self._read_stream(response, give_up_at, on_delta, self.limit)
                response._content = b""
            else:  # an error, or a server that answers a request to stream with the whole reply at once
                response._content = b"".join(self._read_body(response, give_up_at, body))
        finally:
            response.close()
        response._content_consumed = True
        return response

    def _read_stream(self, response: requests.Response, give_up_at: float,
                     on_delta: Callable[[str, str], None] | None, limit: int | None = None) -> Reply:
        """Read a 200 SSE stream into a Reply, passing each piece to on_delta as it arrives; a reply that runs far
        past `limit` tokens (a server that ignores it) is ended there, cut off ("length")."""
        chunks = self._read_body(response, give_up_at, {"stream": True})
        first = FirstEvent()  # a stream that ends before its first event is asked again without streaming
        finished = threading.Event()
        grace = threading.Timer(self.stream_grace, shut_down, [response.raw])  # once the reply is whole
        grace.daemon = True

        def finish() -> None:  # a server may hold the stream open after the finish_reason: not for long
            finished.set()
            grace.start()

        def until_shut(chunks: Iterator[bytes]) -> Iterator[bytes]:
            """The chunks, ending quietly if the grace timer shut the connection. Not `yield from`: closing
            this generator must leave `chunks` open, to be read to the body's end below."""
            while True:
                try:
                    chunk = next(chunks)
                except StopIteration:
                    return
                except (requests.RequestException, ChatError) as error:
                    if not finished.is_set():
                        if not first.begun and isinstance(error, requests.exceptions.ChunkedEncodingError):
                            raise EmptyStream("the stream ended before its first event") from None
                        raise  # the connection broke before the reply was whole
                    return
                first.see(chunk)
                yield chunk

        try:
            streamed = read_stream(until_shut(chunks), on_delta, finish, limit and STREAM_SLACK * limit)
            # [DONE] comes just before the body's end: reading that too lets the connection serve the next
            # request. A server that keeps the stream open after [DONE] loses the connection after the grace.
            timer = threading.Timer(self.stream_grace, shut_down, [response.raw])
            timer.daemon = True
            timer.start()
            try:
                for _ in chunks:
                    pass
            except (requests.RequestException, ChatError):
                pass  # the reply is whole: only the connection is lost
            finally:
                timer.cancel()
        except StreamCut as error:  # like a dropped connection: nothing of it is kept, and it is asked again
            raise (CutStream if first.begun else EmptyStream)(str(error)) from None
        except StreamError as error:
            raise ChatError(f"200 from {self.url} carrying {one_line(str(error))}") from None
        finally:
            grace.cancel()  # the connection goes back to the pool for the next request: leave it be
            chunks.close()  # ends _read_body, and with it the deadline timer
        return Reply(text=repaired("".join(streamed.text)), finish_reason=streamed.finish_reason,
                     usage=token_counts(streamed.usage), native_calls=streamed.native_calls,
                     reasoning=repaired("".join(streamed.reasoning)), streamed=True, overran=streamed.overran)

    def _read_body(self, response: requests.Response, give_up_at: float, body: dict) -> Iterator[bytes]:
        """Yield the body as it arrives, decoded, until its end or the deadline; the one way bodies are read.
        Until its first byte a streamed reply (`body` asked for one) may be silent for the first byte's wait; from
        then on, for the read timeout.

        Retryable failures are raised as requests' exceptions; a body we can never use is a ChatError.
        """
        # read1 returns whatever has arrived, so a caller sees bytes as they come. decode_content undoes the
        # gzip or deflate that requests asked for (Accept-Encoding), as requests' own iter_content would.
        # A timer shuts the socket at the deadline: a server dripping bytes forever cannot hold us past it,
        # not even while urllib3 waits inside read1 for enough compressed bytes to decode one.
        timer = threading.Timer(max(give_up_at - time.monotonic(), 0.0), shut_down, [response.raw])
        timer.daemon = True  # a pending timer must never keep the program alive
        timer.start()
        n_bytes = 0
        try:
            while chunk := response.raw.read1(65536, decode_content=True):
                if not n_bytes and body.get("stream"):
                    wait_between_bytes(response.raw, self.timeout[1])
                n_bytes += len(chunk)
                if n_bytes > self.max_body:  # a compressed body can unpack to gigabytes
                    raise ChatError(f"The response from {self.url} is larger than {self.max_body // 2**20} MB; "
                                    "no chat completion is. Is OPENAI_BASE_URL right?")
                yield chunk
                if time.monotonic() > give_up_at:
                    break
        # Reading `raw` ourselves means urllib3's errors reach us unwrapped; give them requests' names.
        except urllib3.exceptions.ReadTimeoutError:
            raise requests.Timeout(self.silence(body, began=n_bytes > 0)) from None
        except urllib3.exceptions.DecodeError:
            encoding = one_line(response.headers.get("Content-Encoding", ""))
            raise ChatError(f"{response.status_code} from {self.url} with a body that is not valid {encoding} "
                            "data (its Content-Encoding); the server or a proxy in between sent it broken.") from None
        except urllib3.exceptions.HTTPError as error:  # cut short: reset, closed early, or our deadline timer
            if time.monotonic() <= give_up_at:
                raise requests.exceptions.ChunkedEncodingError(error) from None
        finally:
            timer.cancel()
        if time.monotonic() > give_up_at:
            raise requests.Timeout(f"no complete response within {self.deadline:g} s")

    def waiting_for(self, body: dict) -> str:
        """What a request waits for, as the spinner says it: 'the first byte from localhost:8080 (up to 120 s)'."""
        # The endpoint's host and port, never its user and password (self.url shows them as "[REDACTED]", which
        # urlsplit takes for an IPv6 address and refuses).
        parts = urlsplit(self.endpoint)
        host = f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname
        if body.get("stream"):
            return f"waiting for the first byte from {host} (up to {self.first_byte_timeout:g} s)"
        return f"waiting for the reply from {host} (up to {self.timeout[1]:g} s)"

    def silence(self, body: dict, began: bool) -> str:
        """What a wait that ran out was, and the setting that makes it longer."""
        if body.get("stream") and not began:
            return (f"no first byte of the reply within {self.first_byte_timeout:g} s (a longer wait: "
                    "--first-byte-timeout or PLAINAGENT_FIRST_BYTE_TIMEOUT)")
        what = "no data for {:g} s while reading the response" if began else "no answer within {:g} s"
        return f"{what.format(self.timeout[1])} (a longer wait: --read-timeout or PLAINAGENT_READ_TIMEOUT)"

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: about 0.5, 1, 2, 4 s (capped at 8), each up to 25% shorter."""
        return min(0.5 * 2**attempt, 8.0) * (1 - 0.25 * random.random())

    def _describe_failure(self, response: requests.Response) -> str:
        """One line for a final non-200 response: what failed and what to do."""
        status, message = response.status_code, server_message(response)
        where = f"{status} from {self.url}"
        if status in (401, 403) and urlsplit(self.endpoint).username is not None:  # requests sends them as Basic auth
            return (f"{where}: the user and password in OPENAI_BASE_URL were refused (they are sent in place of "
                    f"OPENAI_API_KEY); check them. {message}").rstrip()
        if status in (401, 403) and "Authorization" not in self.session.headers:
            return f"{where}: the server wants an API key and none is set; set OPENAI_API_KEY. {message}".rstrip()
        if status in (401, 403):
            return f"{where}: the API key was refused; check OPENAI_API_KEY. {message}".rstrip()
        if 300 <= status < 400:
            target = response.headers.get("Location", "elsewhere")
            return (f"{where}: the server redirects to {one_line(target)}; set OPENAI_BASE_URL to the address it "
                    "names (https:// rather than http://, say).")
        if status == 404:
            hint = f"check the model name '{self.model}' (OPENAI_MODEL) and the base URL (OPENAI_BASE_URL)."
            base = urlsplit(self.base_url.strip())
            if not re.search(r"/v\d", base.path):
                with_v1 = shown_url(urlunsplit(base._replace(path=base.path.rstrip("/") + "/v1", fragment="")))
                hint = f"{hint[:-1]}; the base URL has no version path: did you mean {with_v1}?"
            return f"{where}: {hint} {message}".rstrip()
        if status == 429 and is_quota_exhausted(response):
            return f"{where}: quota or credit exhausted; check your plan and billing. {message}".rstrip()
        if status == 429:  # still limited after every retry
            return (f"{where}: the server still limits the rate after {self.max_retries + 1} attempts; wait a minute "
                    f"and try again, or check your plan's rate limits. {message}").rstrip()
        if status == 400 and MODEL_NOT_FOUND.search(message):  # some providers say it with a 400, not a 404
            return f"{where}: check the model name '{self.model}' (OPENAI_MODEL). {message}".rstrip()
        return f"{where}: {message or one_line(response.reason or '')}"


class CutStream(requests.exceptions.ChunkedEncodingError):
    """A stream that ended without [DONE] or a finish_reason: retried like a connection that broke."""


class EmptyStream(CutStream):
    """A stream that ended, or broke, before its first event: asked again once, without streaming."""


def without_streaming(body: dict) -> dict:
    """The same request, asking for the whole reply at once."""
    return {key: value for key, value in body.items() if key not in ("stream", "stream_options")}


def wait_between_bytes(raw: urllib3.response.HTTPResponse, seconds: float) -> None:
    """From the first byte on, the socket waits `seconds` for each next one (requests sets one wait for all)."""
    sock = getattr(raw.connection, "sock", None)
    if sock is None:  # a reply that ends when the server closes (no length, not chunked): http.client has let
        # the connection's socket go, and reads through the file it made of it, which holds the socket still
        sock = getattr(getattr(getattr(getattr(raw, "_fp", None), "fp", None), "raw", None), "_sock", None)
    try:
        sock.settimeout(seconds)
    except (AttributeError, OSError):  # no socket (a test double), or one closed meanwhile: nothing to wait on
        pass


def shut_down(raw: urllib3.response.HTTPResponse) -> None:
    """Unblock a read in progress: the deadline timer's action, run from its own thread."""
    try:
        raw.shutdown()
    # Nothing left to unblock: the body was read and the connection released meanwhile, or the
    # response has no socket (a test double).
    except (ValueError, RuntimeError, OSError):
        pass
