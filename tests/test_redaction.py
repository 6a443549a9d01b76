"""The one redaction rule: only a key of 16 characters or more is blanked, a piece of it at a cut too, and every
path that shows or writes text (tool results, the transcript that --resume reads back, the error lines the
user reads) follows it, so a short local key such as "ollama" is kept as the user typed it everywhere."""

import random

import pytest

import agent
from agent import build_session
from harness.cli.config import Config
from harness.common.redaction import leaks, redact
from harness.common.seam_types import ChatError, Reply
from harness.files.workspace import Workspace
from harness.history.transcript import Transcript, load

LONG_KEY = "sk-proj-0123456789abcdefABCDEF"
# Placeholders local servers take (Ollama, vLLM, LM Studio): no secret, and words a task may well hold.
SHORT_KEYS = ["ollama", "EMPTY", "lm-studio"]


class Model:
    """Answers each request with the next reply, and keeps the messages each request carried."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests: list[list[dict]] = []

    def chat(self, messages):
        self.requests.append([dict(message) for message in messages])
        return Reply(self.replies.pop(0), "stop", {"prompt_tokens": 10, "completion_tokens": 2})


@pytest.mark.parametrize("key, text, redacted", [
    ("sk-proj-0123456789abcdefABCDEF", "key=sk-proj-0123456789abcdefABCDEF;", "key=[REDACTED];"),
    ("sk-0123456789abcdef", "a sk-0123456789abcdef b", "a [REDACTED] b"),  # 19 characters
    ("ollama", "import ollama", "import ollama"),
    ("EMPTY", "EMPTY", "EMPTY"),
    ("x", "exit code 0", "exit code 0"),
    ("...", "wait...", "wait..."),
    ("", "anything", "anything"),
])
def test_only_a_key_long_enough_to_be_a_secret_is_redacted(key, text, redacted):
    assert redact(text, key) == redacted
    assert leaks(text, key) is (redacted != text)


@pytest.mark.parametrize("text, cut_before, cut_after, redacted", [
    ("log: sk-proj-0123", False, True, "log: [REDACTED]"),  # the head of a cut output ends in the key's start
    ("0123456789abcdefABCDEF done", True, False, "[REDACTED] done"),  # the tail starts with its end
    ("log: sk-p", False, True, "log: [REDACTED]"),
    ("log: sk-", False, True, "log: sk-"),  # shorter than PIECE_MIN_CHARS: left as it is
    ("log: sk-proj-0123", False, False, "log: sk-proj-0123"),  # not at a cut: text like any other
    ("sk-proj-0123456789abcdefABCDEF and sk-proj", True, True, "[REDACTED] and [REDACTED]"),
])
def test_a_piece_of_the_key_at_a_cut_is_redacted(text, cut_before, cut_after, redacted):
    assert redact(text, LONG_KEY, cut_before=cut_before, cut_after=cut_after) == redacted


@pytest.mark.parametrize("key", [LONG_KEY, *SHORT_KEYS, 'sk-"quoted\\0123456789'])
def test_tool_results_and_the_transcript_follow_the_same_rule(tmp_path, key):
    text = f"configure {key} for me; then exit code 0"
    path = tmp_path / "t.jsonl"
    transcript = Transcript.create(path, {"model": "m"}, secret=key)
    transcript.write("message", message={"role": "user", "content": text})
    transcript.close()
    expected = redact(text, key)
    assert (expected == text) is (key in SHORT_KEYS)
    assert Workspace(tmp_path, secret=key).redact(text) == expected
    assert load(path).messages == [{"role": "user", "content": expected}]
    assert (key in path.read_text()) is (key in SHORT_KEYS)


def recorded(tmp_path, key: str, task: str) -> Transcript:
    path = tmp_path / "state" / "t.jsonl"
    path.parent.mkdir(exist_ok=True)
    transcript = Transcript.create(path, {"model": "m"}, secret=key)
    build_session(Config(model="m"), Model("Done."), Workspace(tmp_path, secret=key), transcript=transcript).run(task)
    transcript.close()
    return transcript


def resumed_request(tmp_path, key: str, path) -> list[dict]:
    """The messages the model is sent on the first request after --resume."""
    transcript, loaded = Transcript.reopen(path, {"model": "m"}, secret=key)
    model = Model("Still done.")
    session = build_session(Config(model="m"), model, Workspace(tmp_path, secret=key), transcript=transcript)
    session.resume(loaded)
    session.run("and now?")
    transcript.close()
    return model.requests[0]


@pytest.mark.parametrize("key", SHORT_KEYS)
def test_a_short_local_key_in_a_task_survives_a_resume(tmp_path, key):
    """With OPENAI_API_KEY=ollama the model was shown "configure ollama": after --resume it must read the same,
    not "configure [REDACTED]"."""
    task = f"configure {key} as the backend"
    transcript = recorded(tmp_path, key, task)
    assert task in transcript.path.read_text()
    assert resumed_request(tmp_path, key, transcript.path)[1] == {"role": "user", "content": task}


def test_a_long_key_in_a_task_is_redacted_in_the_transcript_and_after_a_resume(tmp_path):
    transcript = recorded(tmp_path, LONG_KEY, f"is {LONG_KEY} my key?")
    assert LONG_KEY not in transcript.path.read_text()
    assert resumed_request(tmp_path, LONG_KEY, transcript.path)[1] == {"role": "user",
                                                                      "content": "is [REDACTED] my key?"}


@pytest.mark.parametrize("key, shown", [(LONG_KEY, "[REDACTED]"), ("ollama", "ollama")])
def test_an_error_line_follows_the_same_rule(tmp_path, capsys, key, shown):
    """A server may echo the key back in its error: the line the user reads, and the note the model gets with
    the next task, are redacted like a tool result."""

    class Refusing(Model):
        def chat(self, messages):
            raise ChatError(f"401 from http://h/v1: bad key {key}")

    path = tmp_path / "t.jsonl"
    transcript = Transcript.create(path, {"model": "m"}, secret=key)
    session = build_session(Config(model="m"), Refusing(), Workspace(tmp_path, secret=key), transcript=transcript)
    assert agent.attempt(session, "hi") == 1
    assert capsys.readouterr().err == f"plainagent: 401 from http://h/v1: bad key {shown}\n"
    assert f"bad key {shown}" in session.history.messages[-1]["content"]
    assert (key in path.read_text()) is (key == "ollama")


@pytest.mark.parametrize("seed", range(20))
def test_a_text_arriving_in_pieces_never_shows_the_key_however_it_is_split(seed):
    from harness.common.redaction import Redactor
    key = "sk-proj-pieces-0123456789"
    text = f"a {key} b sk-p {key}{key} s c sk-proj-pie"
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(text)), rng.randint(1, 20)))
    pieces = Redactor(key)
    shown = "".join(pieces.feed(text[start:end]) for start, end in zip([0, *cuts], [*cuts, len(text)])) + pieces.flush()
    assert shown == "a [REDACTED] b sk-p [REDACTED][REDACTED] s c [REDACTED]"


def test_the_key_is_held_in_one_object_that_every_part_asks(agent_home, project, monkeypatch):
    """Issue 25: the key was held in four places, one a module global. Now the configuration's Secret is the one
    object the workspace, the history, the transcript and the screen ask; the HTTP header is where it is sent."""
    from fake_endpoint import FakeEndpoint
    from in_process import run_agent

    import agent
    from harness.cli import escapes

    seen = {}
    real_build = agent.build_session

    def build_session(config, *args, **kwargs):
        session = real_build(config, *args, **kwargs)
        seen.update(config=config.api_key, workspace=session.tools.workspace.secret, history=session.history.secret,
                    transcript=session.history.transcript.secret, screen=escapes.secret)
        return session

    monkeypatch.setattr(agent, "build_session", build_session)
    key = "sk-held-in-one-place-0123456789"
    with FakeEndpoint(["Done."]) as endpoint:
        done = run_agent(agent_home, project, ["-p", "hi"], {"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "m",
                                                             "OPENAI_API_KEY": key})
    assert done.returncode == 0, done.stderr
    assert len({id(holder) for holder in seen.values()}) == 1 and seen["config"].value == key
    assert endpoint.received[0].headers["Authorization"] == f"Bearer {key}" and key not in repr(seen["config"])
