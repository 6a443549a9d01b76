"""The model seam as a session uses it (model.py): what a request costs is counted, an interrupted one too."""

import pytest
from fake_endpoint import FakeEndpoint, stream_events

from harness.common.counting import BYTES_PER_TOKEN, size_in_bytes
from harness.common.seam_types import Reply
from harness.model.client import Client
from harness.model.session_model import SessionModel

MESSAGES = [{"role": "system", "content": "You are a coding agent. " * 40}, {"role": "user", "content": "explain"}]


class InterruptedDisplay:
    """Shows a reply's pieces until `after` of them have come, then the user presses Ctrl-C."""

    def __init__(self, after: int):
        self.after, self.pieces = after, []

    def start(self):
        pass

    def show(self, kind, text):
        if kind == "waiting":  # what the client waits for: the spinner's, no piece of the reply
            return
        self.pieces.append((kind, text))
        if len(self.pieces) == self.after:
            raise KeyboardInterrupt

    def finish(self):
        pass


def estimate(text_or_messages) -> int:
    size = size_in_bytes(text_or_messages) if isinstance(text_or_messages, list) else len(text_or_messages.encode())
    return round(size / BYTES_PER_TOKEN)


def test_a_request_interrupted_mid_stream_is_counted_with_what_came():
    """The server read the whole prompt and wrote part of the reply before Ctrl-C: the user pays for both."""
    reply = {"events": stream_events("Part one. Part two. Part three.", pieces=3, reasoning="Think first.", usage=None),
             "pause": 0.001}
    with FakeEndpoint([reply]) as endpoint:
        display = InterruptedDisplay(after=4)  # the reasoning in 3 pieces, then the first piece of text
        model = SessionModel(Client(endpoint.url, "", "m", stream=True), display)
        with pytest.raises(KeyboardInterrupt):
            model.chat(MESSAGES)
    received = "".join(text for _, text in display.pieces)
    assert received == "Think first.Part one. P"
    assert (model.n_requests, model.n_estimated) == (1, 1)
    assert model.tokens == {"prompt_tokens": estimate(MESSAGES), "completion_tokens": estimate(received)}


def test_a_request_interrupted_before_any_reply_counts_its_prompt():
    class Waiting:  # the bare seam, interrupted while the server is still reading the prompt
        def chat(self, messages):
            raise KeyboardInterrupt

    model = SessionModel(Waiting())
    with pytest.raises(KeyboardInterrupt):
        model.chat(MESSAGES)
    with pytest.raises(KeyboardInterrupt):
        model.chat_unshown(MESSAGES)  # a summary interrupted is a request too
    assert (model.n_requests, model.n_estimated) == (2, 2)
    assert model.tokens == {"prompt_tokens": 2 * estimate(MESSAGES), "completion_tokens": 0}


def test_an_answered_request_counts_what_the_server_reported():
    class Answering:
        def chat(self, messages):
            return Reply("Hi.", "stop", {"prompt_tokens": 120, "completion_tokens": 2})

    model = SessionModel(Answering())
    model.chat(MESSAGES)
    assert (model.n_requests, model.n_estimated, model.tokens) == (1, 0, {"prompt_tokens": 120,
                                                                          "completion_tokens": 2})
