"""The JSONL transcript: what each line holds, where files go and who may read them, and reading them back
for --resume (a torn last line, calls cut off by a crash, a file that is not a transcript)."""

import json
import os
import stat
from pathlib import Path

import pytest

from agent import Session, build_session
from harness.cli.config import Config
from harness.common.seam_types import Reply
from harness.history.transcript import (
    Transcript,
    TranscriptError,
    latest_session,
    load,
    new_session_path,
    sessions_dir,
    state_dir,
)
from tools import Workspace, read_file

KEY = "sk-transcript-secret-42"


class Model:
    def __init__(self, *replies):
        self.replies = list(replies)

    def chat(self, messages):
        return Reply(self.replies.pop(0), "stop", {"prompt_tokens": 1200, "completion_tokens": 7})


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def recorded_session(tmp_path, *replies, task="read a.txt", tokens=32_000) -> tuple[Session, Path]:
    (tmp_path / "a.txt").write_text("alpha\n")
    path = tmp_path / "state" / "t.jsonl"
    path.parent.mkdir(exist_ok=True)
    transcript = Transcript.create(path, {"model": "m", "base_url": "http://h/v1"}, secret=KEY)
    session = build_session(Config(model="m", context_tokens=tokens), Model(*replies), Workspace(tmp_path, secret=KEY),
                      transcript=transcript)
    session.run(task)
    return session, path


def test_every_message_and_event_is_a_line(tmp_path):
    session, path = recorded_session(tmp_path, 'Looking.\ntool: read_file({"path": "a.txt"})', "It says alpha.")
    entries = lines_of(path)
    assert [entry["type"] for entry in entries] == [
        "session", "message", "message", "request", "message", "tool", "message", "request", "message"]
    header = entries[0]
    assert header["program"] == "plainagent" and header["model"] == "m" and header["base_url"] == "http://h/v1"
    assert header["version"] and header["started"]
    assert [entry["message"] for entry in entries if entry["type"] == "message"] == session.history.messages
    assert entries[4]["message"]["content"] == 'Looking.\ntool: read_file({"path": "a.txt"})'
    output = read_file(Workspace(tmp_path), "a.txt")
    assert entries[6]["results"] == {"calls": [{"name": "read_file", "args": {"path": "a.txt"}, "ok": True,
                                                "bytes": len(output.encode()), "lines": len(output.splitlines())}],
                                     "notes": []}
    assert entries[3]["usage"] == {"prompt_tokens": 1200, "completion_tokens": 7} and entries[3]["seconds"] >= 0
    assert entries[5]["name"] == "read_file" and entries[5]["ok"] is True and entries[5]["seconds"] >= 0


def test_the_key_never_reaches_the_file(tmp_path):
    _, path = recorded_session(tmp_path, f"The key {KEY} is not mine to show.", task=f"is {KEY} my key?")
    text = path.read_text()
    assert KEY not in text and text.count("[REDACTED]") == 2


def test_files_are_the_users_only(tmp_path):
    path = new_session_path(tmp_path / "project")
    transcript = Transcript.create(path, {"model": "m"})
    transcript.write("message", message={"role": "user", "content": "x"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(sessions_dir().stat().st_mode) == 0o700
    assert stat.S_IMODE(state_dir().stat().st_mode) == 0o700
    assert sessions_dir() == tmp_path / "state" / "plainagent" / "sessions"  # conftest's XDG_STATE_HOME


@pytest.mark.parametrize("value, expected", [
    ("/var/state", Path("/var/state/plainagent")),
    ("relative/state", Path("~/.local/state/plainagent")),  # the spec says to ignore a relative path
    ("", Path("~/.local/state/plainagent")),
])
def test_the_state_directory_follows_xdg(value, expected):
    assert state_dir({"XDG_STATE_HOME": value}) == expected.expanduser()  # conftest's HOME, the test's own


def test_names_sort_by_time_and_the_latest_for_a_workspace_is_found(tmp_path):
    project, other = tmp_path / "my project", tmp_path / "other"
    first = new_session_path(project, now=1_700_000_000)
    assert first.name.startswith("2023-11-") and "_my-project_" in first.name and first.suffix == ".jsonl"
    transcripts = [Transcript.create(new_session_path(workspace, now=now), {})
                   for workspace, now in ((project, 1_700_000_000), (project, 1_700_000_100), (other, 1_700_000_200))]
    for transcript in transcripts:
        transcript.close()  # ended: not in use
    paths = [transcript.path for transcript in transcripts]
    assert latest_session(project) == paths[1]
    os.utime(paths[0])  # the older session was written to last (resumed): it is the one to continue
    assert latest_session(project) == paths[0]
    with pytest.raises(TranscriptError, match="no session to resume for"):
        latest_session(tmp_path / "never used")


def test_two_sessions_started_in_the_same_second_get_two_files_and_the_second_is_resumed(tmp_path):
    path = new_session_path(tmp_path, now=1_700_000_000)
    first, second = Transcript.create(path, {}), Transcript.create(path, {})
    assert first.path != second.path and second.path.name.endswith("-2.jsonl")
    first.close(), second.close()
    for transcript in (first, second):  # written in the same second too
        os.utime(transcript.path, (1_700_000_005, 1_700_000_005))
    assert latest_session(tmp_path) == second.path


def test_a_dangling_link_or_a_vanished_file_is_not_a_session(tmp_path, monkeypatch):
    real = Transcript.create(new_session_path(tmp_path, now=1_700_000_000), {})
    real.close()
    os.symlink(tmp_path / "gone", new_session_path(tmp_path, now=1_700_000_100))
    assert latest_session(tmp_path) == real.path
    vanished = new_session_path(tmp_path, now=1_700_000_200)
    original_glob = Path.glob
    monkeypatch.setattr(Path, "glob", lambda self, pattern: [*original_glob(self, pattern), vanished])
    assert latest_session(tmp_path) == real.path


def test_a_session_in_use_is_not_resumed_and_plain_resume_takes_the_latest_free_one(tmp_path):
    older = Transcript.create(new_session_path(tmp_path, now=1_700_000_000), {"workspace": str(tmp_path)})
    older.close()
    running = Transcript.create(new_session_path(tmp_path, now=1_700_000_100), {"workspace": str(tmp_path)})
    os.utime(older.path, (1_700_000_000, 1_700_000_000))
    with pytest.raises(TranscriptError) as raised:
        Transcript.reopen(running.path, {"workspace": str(tmp_path)})
    assert str(raised.value) == (f"--resume {running.path}: this session is in use by another plainagent that is "
                                 "still running; wait for it to end, or start a new session without --resume.")
    assert latest_session(tmp_path) == older.path
    resumed, _ = Transcript.reopen(older.path, {"workspace": str(tmp_path)})
    with pytest.raises(TranscriptError, match=r"the latest session of .* is in use by another plainagent"):
        latest_session(tmp_path)
    resumed.close()
    assert latest_session(tmp_path) == older.path  # written to last, and free again


def test_a_session_of_another_workspace_is_not_resumed(tmp_path):
    transcript = Transcript.create(tmp_path / "t.jsonl", {"workspace": "/home/me/wskill"})
    transcript.close()
    before = (tmp_path / "t.jsonl").read_bytes()
    with pytest.raises(TranscriptError) as raised:
        Transcript.reopen(tmp_path / "t.jsonl", {"workspace": "/home/me/wsother"})
    assert str(raised.value) == (f"--resume {tmp_path / 't.jsonl'}: that session worked in /home/me/wskill, not in "
                                 "/home/me/wsother; resume it there (-C /home/me/wskill), or start a new session here.")
    assert (tmp_path / "t.jsonl").read_bytes() == before


@pytest.mark.parametrize("make, message", [
    (lambda path: Transcript.create(path, {}).close(), "the file exists; continue it with --resume {path}, or choose "
                                                       "a new file."),
    (lambda path: path.write_text("precious\n"), "the file exists (and is not a plainagent transcript); choose a "
                                                  "new file."),
    (lambda path: path.mkdir(), "that is a folder; name a new file in it."),
])
def test_log_refuses_an_existing_file(tmp_path, make, message):
    path = tmp_path / "mine.jsonl"
    make(path)
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(TranscriptError) as raised:
        Transcript.create(path, {}, explicit=True)
    assert str(raised.value) == f"--log {path}: " + message.format(path=path)
    assert (path.read_bytes() if path.is_file() else None) == before


def test_an_unwritable_default_place_only_costs_the_recording(tmp_path, monkeypatch):
    (tmp_path / "blocked").write_text("a file where the state directory should be")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "blocked"))
    said = []
    transcript = Transcript.create(new_session_path(tmp_path), {}, log=said.append)
    transcript.write("message", message={"role": "user", "content": "x"})
    assert transcript.fd is None and len(said) == 1 and "will not be recorded" in said[0]


def test_a_failing_disk_is_said_once(tmp_path):
    said = []
    transcript = Transcript.create(tmp_path / "t.jsonl", {}, log=said.append)
    os.close(transcript.fd)  # as if the disk went away
    transcript.write("message", message={"role": "user", "content": "x"})
    transcript.write("message", message={"role": "user", "content": "y"})
    assert len(said) == 1 and "the rest of this session will not be recorded" in said[0]


# --- reading back ---


def test_a_finished_session_reads_back_as_it_was(tmp_path):
    session, path = recorded_session(tmp_path, 'tool: read_file({"path": "a.txt"})', "It says alpha.")
    loaded = load(path)
    assert loaded.messages == session.history.messages[1:]
    assert loaded.results == session.history.results and loaded.warnings == []


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path):
    session, path = recorded_session(tmp_path, 'tool: read_file({"path": "a.txt"})', "It says alpha.")
    with open(path, "ab") as file:
        file.write(b'{"type": "message", "message": {"role": "user", "content": "half a li')
    loaded = load(path)
    assert loaded.messages == session.history.messages[1:]
    assert loaded.warnings == [f"{path}: the last line is incomplete (the session ended while writing it); skipped."]
    session.history.transcript.close()
    Transcript.reopen(path, {"model": "m"})[0].close()
    assert path.read_bytes().count(b"half a li\n") == 1  # ended, so the next line starts on its own
    assert lines_of_tolerant(path)[-1]["type"] == "resumed"
    assert load(path).warnings == []  # said once: a later run took over after it


def lines_of_tolerant(path: Path) -> list[dict]:
    entries = []
    for line in path.read_text().splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            pass
    return entries


def test_calls_cut_off_before_their_results_are_reported(tmp_path):
    session, path = recorded_session(tmp_path, 'tool: read_file({"path": "a.txt"})', "It says alpha.")
    lines = path.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"type": "tool"' in line)
    path.write_text("".join(lines[:cut]))  # killed while the tool ran
    loaded = load(path)
    assert loaded.messages[-1] == {"role": "assistant", "content": 'tool: read_file({"path": "a.txt"})'}
    resumed = build_session(Config(model="m"), Model(), Workspace(tmp_path))
    resumed.resume(loaded)  # the model hears, with the next task, that its last calls may not have run
    assert resumed.notes == ["The previous run of this session stopped abruptly (it was killed or crashed). The tool "
                             "calls in your last reply may not all have run."]


def test_a_session_that_ended_with_an_answer_resumes_without_a_note(tmp_path):
    _, path = recorded_session(tmp_path, 'tool: read_file({"path": "a.txt"})', "It says alpha.")
    resumed = build_session(Config(model="m"), Model(), Workspace(tmp_path))
    resumed.resume(load(path))
    assert resumed.notes == [] and resumed.history.messages[1:] == load(path).messages


def test_a_lost_middle_line_leaves_a_marked_gap_not_two_turns_glued(tmp_path):
    _, path = recorded_session(tmp_path, 'tool: read_file({"path": "a.txt"})', "It says alpha.")
    lines = path.read_text().splitlines(keepends=True)
    lost = next(i for i, line in enumerate(lines) if '"role": "assistant"' in line)
    path.write_text("".join(lines[:lost]) + "garbage\n" + "".join(lines[lost + 1:]))
    loaded = load(path)
    roles = [m["role"] for m in loaded.messages]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert loaded.messages[1]["content"] == "(A message here could not be read back from the transcript.)"
    assert loaded.warnings == [f"{path}: line {lost + 1} is incomplete (the session ended while writing it); skipped."]


@pytest.mark.parametrize("content", [b"", b"not json\n", b'{"type": "message"}\n', b"\x89PNG\r\n\x1a\n",
                                     b'{"type": "session", "program": "other"}\n', b"[1, 2]\n"])
def test_a_file_that_is_not_a_transcript_is_refused(tmp_path, content):
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    with pytest.raises(TranscriptError, match="not a plainagent transcript"):
        load(path)


def test_a_missing_file_is_one_clear_error(tmp_path):
    with pytest.raises(TranscriptError, match="cannot read it"):
        load(tmp_path / "gone.jsonl")


def test_a_lowered_budget_is_remembered(tmp_path):
    path = tmp_path / "t.jsonl"
    transcript = Transcript.create(path, {})
    transcript.write("budget", tokens=4096, reason="maximum context length is 4096 tokens")
    assert load(path).context_tokens == 4096


# --- a transcript cannot break --resume (issue 27 item 7, issue 26) ---


def appended(path: Path, *lines: str | bytes) -> None:
    with open(path, "ab") as file:
        for line in lines:
            file.write((line.encode() if isinstance(line, str) else line) + b"\n")


BROKEN_LINES = {
    "nested": "[" * 100_000 + "]" * 100_000,  # RecursionError in json.loads
    "results as a list": json.dumps({"type": "compaction", "messages": [{"role": "user", "content": "s"}],
                                     "results": [{"name": "x"}]}),
    "results keyed by a word": json.dumps({"type": "compaction", "messages": [{"role": "user", "content": "s"}],
                                           "results": {"two": {"calls": [], "notes": []}}}),
    "results keyed by a superscript": json.dumps({"type": "compaction", "messages": [{"role": "user",
                                                  "content": "s"}], "results": {"²": {"calls": [], "notes": []}}}),
    "a record of the wrong shape": json.dumps({"type": "compaction", "messages": [
        {"role": "user", "content": "s"}, {"role": "user", "content": "r"}],
        "results": {"2": {"calls": [{"name": "read_file", "args": {}, "ok": True, "bytes": "many"}], "notes": []}}}),
    "a message that is not one": json.dumps({"type": "compaction", "messages": [{"role": "user", "content": 5}],
                                             "results": {}}),
    "budget -5": json.dumps({"type": "budget", "tokens": -5}),
    "budget true": json.dumps({"type": "budget", "tokens": True}),
    "budget 3": json.dumps({"type": "budget", "tokens": 3}),
    "a list": "[1, 2]",
    "a message of no role": json.dumps({"type": "message", "message": {"role": "tool", "content": "x"}}),
    "a message of no text": json.dumps({"type": "message", "message": {"role": "user", "content": ["x"]}}),
}


@pytest.mark.parametrize("line", BROKEN_LINES.values(), ids=BROKEN_LINES.keys())
def test_a_line_that_cannot_be_used_is_one_warning_and_the_rest_loads(tmp_path, line):
    session, path = recorded_session(tmp_path, 'tool: read_file({"path": "a.txt"})', "It says alpha.")
    before = load(path)
    n_lines = len(path.read_bytes().splitlines())
    appended(path, line, json.dumps({"type": "message", "message": {"role": "user", "content": "next task"}}))
    loaded = load(path)
    assert loaded.messages == before.messages + [{"role": "user", "content": "next task"}]
    assert loaded.results == before.results and loaded.context_tokens is None
    assert len(loaded.warnings) == 1 and f"line {n_lines + 1} " in loaded.warnings[0], loaded.warnings
    assert "skipped" in loaded.warnings[0] and len(loaded.warnings[0]) < 300


def test_a_budget_line_that_cannot_be_used_leaves_the_sessions_tasks_working(tmp_path):
    """Issue 27: a `budget` line of -5 or true made every later task fail."""
    _, path = recorded_session(tmp_path, "Hello.")
    appended(path, json.dumps({"type": "budget", "tokens": True}))
    resumed = build_session(Config(model="m"), Model("Still here."), Workspace(tmp_path))
    resumed.resume(load(path))
    assert resumed.history.budget.tokens == 32_000
    assert resumed.run("go on") == "Still here."


def test_messages_read_back_carry_only_role_and_content(tmp_path):
    _, path = recorded_session(tmp_path, "Hello.")
    extra = {"role": "user", "content": "x", "tool_calls": [{"id": "1"}], "name": "admin", "reasoning_content": "r"}
    appended(path, json.dumps({"type": "message", "message": extra}),
             json.dumps({"type": "message", "message": {"role": "assistant", "content": "y", "audio": {"id": "a"}}}))
    compacted = [{"role": "user", "content": "s", "cache_control": {"type": "ephemeral"}},
                 {"role": "assistant", "content": "ok", "function_call": {"name": "f"}}]
    loaded = load(path)
    assert all(set(message) == {"role", "content"} for message in loaded.messages)
    appended(path, json.dumps({"type": "compaction", "messages": compacted, "results": {}}))
    assert load(path).messages == [{"role": "user", "content": "s"}, {"role": "assistant", "content": "ok"}]


def test_a_lone_surrogate_never_makes_a_line_unreadable(tmp_path):
    path = tmp_path / "t.jsonl"
    transcript = Transcript.create(path, {"model": "m"})
    transcript.write("message", message={"role": "user", "content": "task"})
    transcript.write("message", message={"role": "assistant", "content": "a\ud800b"})
    path.read_bytes().decode("utf-8")  # every byte of the file is UTF-8
    loaded = load(path)
    assert loaded.warnings == [] and loaded.messages[1] == {"role": "assistant", "content": "a\ufffdb"}


# --- what an attacker found after the first round ---


def test_results_on_an_assistant_line_are_not_taken_for_the_users(tmp_path):
    """Compaction stubs what a results message says: on the assistant's line it would have replaced the model's
    own words with a user's stub, and three user messages would have gone to the server in a row."""
    _, path = recorded_session(tmp_path, "Hello.")
    before = load(path)
    appended(path, json.dumps({"type": "message", "message": {"role": "user", "content": "task"}}),
             json.dumps({"type": "message", "message": {"role": "assistant", "content": "my words"},
                         "results": {"calls": [{"name": "read_file", "args": {}, "ok": True}], "notes": []}}))
    loaded = load(path)
    assert loaded.messages[-1] == {"role": "assistant", "content": "my words"}
    assert loaded.results == before.results
    assert len(loaded.warnings) == 1 and "tool results on a assistant message" in loaded.warnings[0]


def test_a_number_too_long_to_read_is_said_as_such(tmp_path):
    _, path = recorded_session(tmp_path, "Hello.")
    appended(path, '{"type": "budget", "tokens": ' + "9" * 5000 + "}", json.dumps({"type": "note"}))
    assert load(path).warnings[0].endswith("holds a number too long to be read; skipped.")


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path):
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(TranscriptError, match="not a regular file"):
        Transcript.reopen(fifo, {"workspace": str(tmp_path)})


def test_a_header_that_names_no_workspace_or_prints_lines_is_not_resumed_and_its_model_is_not_shown(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"type": "session", "program": "plainagent", "model": "m\nplainagent: forged"}) + "\n")
    assert load(path).model is None  # a model's name that would print a forged line is not taken
    with pytest.raises(TranscriptError, match="does not say in which workspace"):
        Transcript.reopen(path, {"workspace": str(tmp_path)})
    path.write_text(json.dumps({"type": "session", "program": "plainagent", "workspace": f"{tmp_path}\nx"}) + "\n")
    with pytest.raises(TranscriptError, match="does not say in which workspace"):
        Transcript.reopen(path, {"workspace": str(tmp_path)})


def test_a_lone_surrogate_in_the_calls_behind_results_is_repaired_not_a_crash_at_compaction(tmp_path):
    """Round two: compaction writes the calls' names, arguments and notes out as UTF-8; '\\ud800' read back from a
    results line made every resumed task end in an internal error."""
    from harness.history.transcript_records import read_record
    record = read_record({"calls": [{"name": "read_\ud800", "args": {"path": "a\ud800.txt"}, "ok": True}],
                          "notes": ["n\ud800"]})
    assert record == {"calls": [{"name": "read_\ufffd", "args": {"path": "a\ufffd.txt"}, "ok": True}],
                      "notes": ["n\ufffd"]}
    json.dumps(record, ensure_ascii=False).encode()  # what compaction does with it


def test_a_workspace_with_a_no_break_space_or_a_tab_in_its_name_resumes(tmp_path):
    work = tmp_path / "My\xa0Project\tx"
    work.mkdir()
    Transcript.create(tmp_path / "t.jsonl", {"workspace": str(work)}).close()
    resumed, _ = Transcript.reopen(tmp_path / "t.jsonl", {"workspace": str(work)})
    resumed.close()
