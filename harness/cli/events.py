"""-p --json: the run as JSON Lines on stdout, one event a line, for scripts (as `claude -p --output-format
stream-json` and `codex exec --json` print theirs). docs/usage.md shows a run.

    {"type": "start", "model", "base_url", "workspace", "mode", "commands"}   commands: what the walls let them do
    {"type": "call", "tool", "args"}                                           a call, as it starts
    {"type": "result", "tool", "status", "output"}   status "ok", "error", or "failed" (a command that exited
                                                     non-zero); output as the tool gave it to the model
    {"type": "refusal", "tool", "reason"}            a call refused before it ran (the mode, its arguments, the
                                                     same call again), or what the user (or nobody) or the deny
                                                     rules refused (then with "what", and its result follows)
    {"type": "answer", "text"}                       the task's answer
    {"type": "tokens", "prompt", "completion", "requests", "estimated"}   estimated: requests the server gave none
    {"type": "end", "exit_code", "status", "said"}   status: done, failed, usage, not_done, interrupted; said: the
                                                     last line the run said to the user, for an ending not done

Nothing else reaches stdout: from `take_stdout` on, `sys.stdout` is stderr, so the answer printed for a person,
or anything else, lands there with the activity log, and only `emit` writes the real stdout. What a person
sees on stderr is unchanged. The key is in no event: `emit` blanks it in every string of an event, whatever field
holds it (a command the model wrote may hold it as well as its output), by the rule the screen's is blanked by
(redaction.py). Each line is one line for any reader: besides what JSON escapes, the characters some readers
split lines at (U+2028, U+2029, U+0085) are escaped too. A reader that goes away (`| head -1`) stops nothing:
the run goes on, as it does without --json, and ends with exit code 1, as a closed stdout does.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from harness.cli import display, escapes
from harness.cli.display import describe_boundary, outcome
from harness.commands.guard import DENIED
from harness.common.hosts import shown_url
from harness.common.redaction import redact

STATUS = {0: "done", 1: "failed", 2: "usage", 3: "not_done", 130: "interrupted"}  # agent.py's exit codes
LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}  # str.splitlines and JavaScript's


class JsonEvents:
    """The events of one -p run, written to `out` (the real stdout) as they happen."""

    def __init__(self, out: TextIO):
        self.out = out
        self.inner = None  # the activity log the calls are also shown in (display.py's ActivityLog)
        self.said: list[str] = []  # the lines shown to the user so far (display.log tells us each)
        self.gone = False  # the reader went away (a closed pipe, a full disk): the run ends as a closed stdout does

    @classmethod
    def take_stdout(cls) -> JsonEvents:
        events = cls(sys.stdout)
        sys.stdout = sys.stderr
        display.listeners.append(events.said.append)
        return events

    def emit(self, kind: str, **fields) -> None:
        line = json.dumps(blanked({"type": kind, **fields}, escapes.secret.value), ensure_ascii=False)
        for char, escaped in LINE_BREAKS.items():
            line = line.replace(char, escaped)
        try:
            self.out.write(line + "\n")
            self.out.flush()
        except (OSError, ValueError, AttributeError):  # a closed pipe or stdout, a full disk: nobody reads on
            self.gone = True

    def start(self, config, boundary) -> None:
        self.emit("start", model=config.model, base_url=shown_url(config.base_url), workspace=str(config.workspace),
                  mode=config.mode, commands=describe_boundary(boundary, config).removeprefix("commands: "))

    def refused(self, kind: str, title: str, reason: str) -> None:
        """Permissions' hook: the user (or nobody, with no terminal) refused an edit, command or fetch."""
        self.emit("refusal", tool={"edit": "edit_file", "command": "run_command", "fetch": "web_fetch"}.get(kind, kind),
                  what=title, reason=reason)

    def watching(self, activity) -> JsonEvents:
        """Stand in for the toolbox's activity log: each call becomes an event, and is still shown there."""
        self.inner = activity
        return self

    @property
    def log(self):
        """The activity log's own lines: a sub-agent's calls are shown there, indented (agent.py's run_subagent),
        and are no events (their delegate call's result is)."""
        return self.inner.log

    def started(self, call) -> None:
        self.emit("call", tool=call.name, args=call.args)
        if self.inner:
            self.inner.started(call)

    def ended(self, result, ran: bool) -> None:
        if ran and not result.ok and DENIED in result.output[:200]:  # the deny rules refused it, in every mode
            self.emit("refusal", tool=result.name, what=result.args.get("command", ""), reason=result.output)
        if ran:
            self.emit("result", tool=result.name, status=outcome(result.name, result.ok, result.output),
                      output=result.output)
        else:
            self.emit("refusal", tool=result.name, reason=result.output)
        if self.inner:
            self.inner.ended(result, ran)

    def end(self, code: int, session=None) -> int:
        """The task's answer (the history's last reply, when it ended with one), the tokens, and the end; `code`."""
        if session is not None:
            last = session.history.messages[-1]
            if code in (0, 3) and last["role"] == "assistant":
                self.emit("answer", text=last["content"])
            model = session.model
            self.emit("tokens", prompt=model.tokens["prompt_tokens"], completion=model.tokens["completion_tokens"],
                      requests=model.n_requests, estimated=model.n_estimated)
        said = next((line for line in reversed(self.said) if line.startswith(("plainagent: ", "Interrupted"))), "")
        self.emit("end", exit_code=code, status=STATUS.get(code, "failed"), said=said if code else "")
        return 1 if self.gone and code == 0 else code


def blanked(value, key: str):
    """`value` (an event, or one of its fields) with the key blanked in every string it holds, names too."""
    if isinstance(value, str):
        return redact(value, key)
    if isinstance(value, dict):
        return {blanked(name, key): blanked(field, key) for name, field in value.items()}
    if isinstance(value, list):
        return [blanked(item, key) for item in value]
    return value


class NoEvents:
    """Without --json: nothing is reported, and every ending is its exit code alone."""

    def start(self, config, boundary) -> None:
        pass

    def watching(self, activity):
        return activity

    refused = None  # Permissions calls no hook

    def end(self, code: int, session=None) -> int:
        return code
