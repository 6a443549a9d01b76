"""The session transcript: every message as it happens, one JSON object a line, so that a session survives
a crash and can be continued with --resume.

The first line says what the session is: program version, model, base URL, workspace and start time (never
the API key). Then, in the order things happen:

    {"type": "message", "message": {"role": ..., "content": ...}, ...}   each message, as the model is sent it
    {"type": "request", "usage": {...}, "seconds": 1.2, ...}              each model call
    {"type": "tool", "name": "read_file", "ok": true, "seconds": 0.01}   each tool call
    {"type": "compaction", ..., "messages": [...], "results": {...}}      the history after a compaction
    {"type": "budget", "tokens": 4096, "reason": ...}                     the context budget lowered
    {"type": "mode", "mode": "edits"}                                     the mode switched with /mode
    {"type": "note", "note": "The user ran /undo: ..."}                   for the model, with the next task
    {"type": "resumed", ...}                                              a later run continuing the session
    {"type": "subagent", "event": "message", ...}                          a sub-agent's record (delegate)

A results message carries `results`, the calls behind it (name, arguments, ok, size) that compaction needs
to replace it with stubs; an assistant message carries `calls`, the names of the calls it made, so a resume
can tell which calls were cut off. Each line goes out in one write() with no buffer in front, so `kill -9`
loses at most the line being written. Files live in the user's state directory, never in the workspace,
and are readable by the user only: they hold source code. A running session holds an exclusive lock on its
file (flock), so a second run cannot resume it at the same time and interleave its lines with the first's.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.common.directories import state_dir
from harness.common.hosts import shown_url
from harness.common.redaction import Secret, is_secret_key, redact
from harness.history.budget import MIN_REAL_WINDOW
from harness.history.transcript_records import is_count, is_message, read_compaction, read_record, sent_part, unreadable
from harness.modes.permissions import MODES, describe_mode

try:
    import fcntl
except ImportError:  # Windows: sessions are not locked
    fcntl = None

VERSION = "0.1"  # the program's version, as the first line of every transcript records it


class TranscriptError(Exception):
    """A transcript cannot be written or resumed; the message is the one line to show."""


# --- where transcripts live ---


def sessions_dir() -> Path:
    return state_dir() / "sessions"


def workspace_tag(workspace: Path) -> str:
    """`myproject_1a2b3c4d`: the folder's name for people, a hash of its full path so two `src` never mix."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", workspace.name)[:40].strip("-.") or "root"
    return f"{name}_{hashlib.sha256(str(workspace).encode()).hexdigest()[:8]}"


def new_session_path(workspace: Path, now: float | None = None) -> Path:
    """`sessions/2025-11-30T05-24-01_myproject_1a2b3c4d.jsonl`: sorted by start time, grep-able by project."""
    stamp = time.strftime("%Y-%m-%dT%H-%M-%S", time.localtime(now))
    return sessions_dir() / f"{stamp}_{workspace_tag(workspace)}.jsonl"


def latest_session(workspace: Path) -> Path:
    """The transcript of this workspace written to last and not in use by another run, or a TranscriptError."""
    pattern = re.compile(rf"_{re.escape(workspace_tag(workspace))}(-\d+)?\.jsonl$")  # -2: started in the same second
    found = []
    for path in sessions_dir().glob(f"*_{workspace_tag(workspace)}*.jsonl"):
        try:  # a file deleted since the listing, or a dangling link, is not a session
            if (match := pattern.search(path.name)) and path.is_file():
                found.append((path.stat().st_mtime, path.name[:match.start()], int((match[1] or "-1")[1:]), path))
        except OSError:
            continue
    if not found:
        raise TranscriptError(f"no session to resume for {workspace} in {sessions_dir()}; "
                              "start one without --resume, or name a transcript: --resume FILE.")
    for *_, path in sorted(found, reverse=True):  # by time written, then started, then -2 after the first
        if not in_use(path):
            return path
    raise TranscriptError(f"the latest session of {workspace} ({max(found)[-1]}) is in use by another "
                          "plainagent that is still running; wait for it to end, or start a new session without "
                          "--resume.")


def in_use(path: Path) -> bool:
    """True when another run holds the session's lock."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False  # then resuming it says what is wrong
    try:
        return not lock(fd)
    finally:
        os.close(fd)  # closing lets the lock go


def lock(fd: int) -> bool:
    """Take the exclusive lock on an open transcript, without waiting; False if another run holds it."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # a file system without locks (some network mounts): go on unlocked
        return True
    return True


def open_session(config, log: Callable[[str], None]) -> tuple[Transcript, Loaded | None]:
    """The transcript this run writes, and the history to resume (None for a new session).

    `config` is cli/config.py's Config: --resume ("" for the latest of the workspace, or a file), --log, and
    what the first line records. The API key is only used to keep its value out of the file.
    """
    header = {"model": config.model, "base_url": shown_url(config.base_url), "workspace": str(config.workspace),
              "context_tokens": config.context_tokens, "mode": config.mode}
    if config.resume is not None:
        path = Path(config.resume) if config.resume else latest_session(config.workspace)
        transcript, loaded = Transcript.reopen(path, header, secret=config.api_key, log=log)
        for warning in loaded.warnings:
            log(f"plainagent: {warning}")
        log(f"Resumed {loaded.path} ({len(loaded.messages)} messages).")
        if loaded.mode not in (None, config.mode):  # never taken up: a /mode switch is no standing permission
            how = " had been switched to mode {} with /mode" if loaded.switched else " ran in mode {}"
            back = f". To go on in mode {loaded.mode}: --mode {loaded.mode}, or /mode {loaded.mode} in the REPL."
            log(f"This session{how.format(loaded.mode)}; it goes on in mode {config.mode} "
                f"({describe_mode(config.mode)}){back if loaded.switched else '.'}")
            loaded.notes.append(f"This session goes on in mode {config.mode}: it {describe_mode(config.mode)}.")
        if loaded.model not in (None, config.model):  # the same for the model: this run's settings, and said
            how = "had been switched to model {} with /model" if loaded.model_switched else "ran with model {}"
            log(f"This session {how.format(loaded.model)}; it goes on with model {config.model}. To go on with "
                f"{loaded.model}: --model {loaded.model}, or /model {loaded.model} in the REPL.")
        return transcript, loaded
    path = config.log or new_session_path(config.workspace)
    return Transcript.create(path, header, secret=config.api_key, log=log, explicit=config.log is not None), None


# --- writing ---


class Transcript:
    """An append-only JSONL file. Transcript() with no file writes nothing (tests, or no place to write)."""

    def __init__(self, path: Path | None = None, fd: int | None = None, secret: Secret | str = "",
                 log: Callable[[str], None] = lambda line: None):
        self.path, self.fd, self.log = path, fd, log
        self.secret = secret if isinstance(secret, Secret) else Secret(secret)  # the config's; a bare key in tests

    @classmethod
    def create(cls, path: Path, header: dict, *, secret: Secret | str = "",
               log: Callable[[str], None] = lambda line: None, explicit: bool = False) -> Transcript:
        """Start a new transcript at `path` (never over an existing file). A file the user named (--log) that
        cannot be written is a TranscriptError; the default place failing only costs the recording."""
        for attempt in range(1, 100):
            candidate = path if attempt == 1 else path.with_name(f"{path.stem}-{attempt}{path.suffix}")
            try:
                if not explicit:  # plainagent/ and sessions/ are the user's only, like the files in them
                    state_dir().mkdir(parents=True, exist_ok=True, mode=0o700)
                    sessions_dir().mkdir(exist_ok=True, mode=0o700)
                fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
                lock(fd)  # a new file: nobody else holds it; taken so that no --resume joins in
                break
            except FileExistsError:
                if explicit:
                    raise TranscriptError(f"--log {path}: {existing(path)}") from None
            except OSError as error:
                if explicit:
                    raise TranscriptError(f"--log {path}: cannot create it: {error.strerror or error}.") from None
                log(f"plainagent: cannot write a transcript in {candidate.parent} ({error.strerror or error}); "
                    "this session will not be recorded.")
                return cls()
        transcript = cls(candidate, fd, secret, log)
        transcript.write("session", program="plainagent", version=VERSION, **header,
                         started=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        return transcript

    @classmethod
    def reopen(cls, path: Path, header: dict, *, secret: Secret | str = "",
               log: Callable[[str], None] = lambda line: None) -> tuple[Transcript, Loaded]:
        """Lock a transcript, read it back, and go on writing it after a line saying a new run took over.

        A session another run holds, or one that worked in another workspace, is a TranscriptError: its
        history describes files that are not the ones the tools would touch here.
        """
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)  # a FIFO must not wait for a reader
        except OSError as error:
            load(path)  # says it best when the file is missing, unreadable or not a transcript
            raise TranscriptError(f"--resume {path}: cannot write to it: {error.strerror or error}.") from None
        try:
            if not lock(fd):
                raise TranscriptError(f"--resume {path}: this session is in use by another plainagent that is "
                                      "still running; wait for it to end, or start a new session without --resume.")
            loaded = load(path)  # read under the lock: nobody appends meanwhile
            workspace = loaded.header.get("workspace")
            if header.get("workspace") and not (isinstance(workspace, str) and is_path(workspace)):
                raise TranscriptError(f"--resume {path}: its header does not say in which workspace the session "
                                      "worked (a transcript plainagent wrote does); start a new session instead.")
            if header.get("workspace") and workspace != header["workspace"]:
                raise TranscriptError(f"--resume {path}: that session worked in {workspace}, not in "
                                      f"{header['workspace']}; resume it there (-C {workspace}), or start a new "
                                      "session here.")
            if path.stat().st_size and not path.read_bytes().endswith(b"\n"):
                os.write(fd, b"\n")  # end a torn last line, so the next line is not glued to it
        except OSError as error:
            os.close(fd)
            raise TranscriptError(f"--resume {path}: cannot write to it: {error.strerror or error}.") from None
        except TranscriptError:
            os.close(fd)
            raise
        transcript = cls(path, fd, secret, log)
        transcript.write("resumed", version=VERSION, **header, started=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        return transcript, loaded

    def write(self, kind: str, **fields) -> None:
        """Append one line; a failing disk is said once, and the session goes on unrecorded."""
        if self.fd is None:
            return
        record = {"type": kind, **fields}
        try:
            line = json.dumps(record, ensure_ascii=False)
            line.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: as UTF-8 it would make the line unreadable; escaped, it reads
            line = json.dumps(record)
        # The key is never sent to the model, but a pasted task or an echoed error might hold it. Redacted by the rule
        # tool results follow, so a resumed session reads back what the model saw: a short "ollama" stays as typed.
        if is_secret_key(self.secret.value):
            spelt = json.dumps(self.secret.value, ensure_ascii=False)[1:-1]  # as the line spells it (ASCII: a header's)
            line = redact(line, spelt)
        data = (line + "\n").encode("utf-8")
        try:
            while data:  # one write() nearly always; a partial one is finished, not dropped
                data = data[os.write(self.fd, data):]
        except OSError as error:
            self.log(f"plainagent: cannot write to the transcript {self.path} ({error.strerror or error}); "
                     "the rest of this session will not be recorded.")
            self.close()

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:  # already gone with the disk: nothing more to lose
                pass
            self.fd = None


class SubagentTranscript(Transcript):
    """Writes a sub-agent's records into the parent's transcript as `subagent` lines: there for the reader,
    while --resume, which reads only `message` lines, never takes them into the parent's history."""

    def __init__(self, parent: Transcript):
        super().__init__()
        self.parent = parent

    def write(self, kind: str, **fields) -> None:
        self.parent.write("subagent", event=kind, **fields)


def existing(path: Path) -> str:
    """Why --log cannot take `path`, which exists, and what to do instead."""
    if path.is_dir():
        return "that is a folder; name a new file in it."
    try:
        with open(path, "rb") as file:
            header = parse_line(file.readline())
    except OSError:
        header = None
    if header and header.get("type") == "session" and header.get("program") == "plainagent":
        return f"the file exists; continue it with --resume {path}, or choose a new file."
    return "the file exists (and is not a plainagent transcript); choose a new file."


# --- reading back, for --resume ---


@dataclass
class Loaded:
    """A transcript read back: the history as the model last saw it, without its system prompt."""

    path: Path
    header: dict
    messages: list[dict] = field(default_factory=list)  # user and assistant messages, in order
    results: dict[int, dict] = field(default_factory=dict)  # index (with the system prompt at 0) -> calls behind it
    context_tokens: int | None = None  # the budget, if the session lowered it (a server's window)
    mode: str | None = None  # the mode the session was last in (None: a transcript that does not say)
    switched: bool = False  # ... because the user switched to it with /mode
    model: str | None = None  # the model the session last used (None: a transcript that does not say)
    model_switched: bool = False  # ... because the user switched to it with /model
    notes: list[str] = field(default_factory=list)  # for the model, with the next task: what changed meanwhile
    warnings: list[str] = field(default_factory=list)


def load(path: Path) -> Loaded:
    """Read a transcript back; a file that is not one is a TranscriptError. Lines that cannot be read (the
    last one, torn by a crash) are skipped with a warning."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would wait for a writer for ever
            raise TranscriptError(f"--resume {path}: not a regular file; name a transcript plainagent wrote.")
        lines = path.read_bytes().split(b"\n")
    except OSError as error:
        raise TranscriptError(f"--resume {path}: cannot read it: {error.strerror or error}.") from None
    header = parse_line(lines[0])
    if not (header and header.get("type") == "session" and header.get("program") == "plainagent"):
        raise TranscriptError(f"--resume {path}: not a plainagent transcript (its first line is no session "
                              "header); name a file written by plainagent, or use --resume alone for the latest.")
    loaded = Loaded(path, header, mode=header.get("mode") if header.get("mode") in MODES else None,
                    model=header.get("model") if is_name(header.get("model")) else None)
    # The system prompt is the current one, whatever the file says; it keeps its place at 0 for the indices.
    messages, results = [{"role": "system", "content": ""}], {}
    pending: list[str] = []  # notes no task has carried to the model yet: an /undo just before /exit
    for number, raw in enumerate(lines[1:], start=2):
        entry = parse_line(raw)
        if entry is None:
            following = next((line for line in lines[number:] if line.strip()), None)
            if raw.strip() and not is_resumed(following):  # a line a later run took over after has been said
                where = f"line {number}" if following else "the last line"
                loaded.warnings.append(f"{path}: {where} {unreadable(raw)}; skipped.")
            continue
        # A file the user can edit, or one written by another program, is data: a line that cannot be used is
        # one warning and skipped, never a traceback, and never a value that makes every later task fail.
        kind = entry.get("type")
        if kind == "message" and not is_message(entry.get("message")):
            loaded.warnings.append(f"{path}: line {number} holds a message that cannot be read back; skipped.")
        elif kind == "message" and entry["message"]["role"] != "system":  # the system prompt is this run's
            messages.append(sent_part(entry["message"]))
            pending.clear() if entry["message"]["role"] == "user" else None  # the next task carried them
            if "results" in entry and entry["message"]["role"] != "user":  # results are what the user's side sends
                loaded.warnings.append(f"{path}: line {number}: tool results on a {entry['message']['role']} "
                                       "message; kept as a message without them.")
            elif "results" in entry and (record := read_record(entry["results"])) is None:
                loaded.warnings.append(f"{path}: line {number}: the calls behind its tool results cannot be read; "
                                       "the results are kept without them.")
            elif "results" in entry:
                results[len(messages) - 1] = record
        elif kind == "compaction":
            if (compacted := read_compaction(entry)) is None:
                loaded.warnings.append(f"{path}: line {number} records a compaction that cannot be read; skipped "
                                       "(the history goes on from before it).")
                continue
            messages, results = compacted
        elif kind == "budget":
            tokens = entry.get("tokens")
            if not is_count(tokens) or tokens < MIN_REAL_WINDOW:
                loaded.warnings.append(f"{path}: line {number} sets the context budget to "
                                       f"{json.dumps(tokens)[:40]}, which no model's window is; skipped.")
                continue
            loaded.context_tokens = tokens
        elif kind == "note" and isinstance(entry.get("note"), str) and is_path(entry["note"]):
            pending.append(entry["note"])
        elif kind in ("resumed", "mode") and entry.get("mode") in MODES:  # a later run's mode, or a switch
            loaded.mode, loaded.switched = entry["mode"], kind == "mode"
        if kind in ("resumed", "model") and is_name(entry.get("model")):  # a later run's model, or a switch
            loaded.model, loaded.model_switched = entry["model"], kind == "model"
    loaded.messages, loaded.results = without_system(messages, results)
    loaded.notes = pending
    return loaded


def is_path(value: str) -> bool:
    """A folder's path as a header may give it: no line break or control character (a tab, a no-break space are
    a folder's own business), which would forge lines where it is printed."""
    return not re.search(r"[\x00-\x08\x0a-\x1f\x7f]", value)


def is_name(value) -> bool:
    """A model's name as a transcript may give it: printable text (a line break in it would forge lines on screen)."""
    return isinstance(value, str) and value.isprintable() and 0 < len(value) <= 200


def is_resumed(raw: bytes | None) -> bool:
    """True for the line a resuming run writes first."""
    entry = parse_line(raw) if raw is not None else None
    return entry is not None and entry.get("type") == "resumed"


def parse_line(raw: bytes) -> dict | None:
    try:
        entry = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: "[[[[…" nested past Python's stack
        return None
    return entry if isinstance(entry, dict) else None


def without_system(messages: list[dict], results: dict[int, dict]) -> tuple[list[dict], dict[int, dict]]:
    """The messages after the system prompt, with roles alternating from a user message on (a line lost in
    the middle is marked, not glued over), and `results` re-indexed as if the system prompt stood at 0."""
    kept, new_results = [], {}
    for index, message in enumerate(messages):
        if message["role"] == "system":
            continue
        expected = "user" if len(kept) % 2 == 0 else "assistant"
        if message["role"] != expected:
            kept.append({"role": expected, "content": "(A message here could not be read back from the transcript.)"})
        if index in results:
            new_results[len(kept) + 1] = results[index]
        kept.append(message)
    return kept, new_results
