# /// script
# requires-python = ">=3.11"
# dependencies = ["requests>=2.32", "urllib3>=2.3", "python-dotenv>=1.0"]
# ///
"""plainagent: a coding agent in plain Python, talking plain HTTP to any OpenAI-compatible endpoint.

The loop (`run_task`) talks to four seams and nothing else: the model (`Model`), the parser (`parse_reply`),
the tools (`Toolbox`) and the history (`History`). The task goes into the history; the model answers the whole
history; its reply goes in too, calls included, so it sees what it did; a reply without calls is the answer;
otherwise the calls run in order (a failure becomes a result, never a crash, and stops the calls after it), the
results go back as one message, and round again. With bare parts (harness/model/bare.py's one POST, a toolbox
that asks nothing, `BareHistory` below) that is the whole agent; `build_session` wraps each seam in its armour
from harness/. The model never touches the machine: it writes text, and this script decides what runs.
"""

from __future__ import annotations

import os  # both loaded before this file runs (site needs them): not found again on the path
import sys

# This folder is first on the import path, where a command may have put a json.py: only our own modules come from it.
if __name__ == "__main__" and os.path.realpath(sys.path[0] or os.curdir) == os.path.dirname(os.path.realpath(__file__)):
    here = sys.path.pop(0)
    from importlib.machinery import PathFinder  # noqa: E402  (the standard library's: this folder is off the path)
    class OwnModules:  # a finder, last on sys.meta_path: prompt, tools and harness from this folder
        def find_spec(name, path=None, target=None):
            return PathFinder.find_spec(name, [here]) if name in ("prompt", "tools", "harness") else None
    sys.meta_path.append(OwnModules)
    from harness.common.own_code import keep_bytecode_apart  # noqa: E402  (and their bytecode, where commands write)
    keep_bytecode_apart(sys.argv[1:], os.environ)

import json  # noqa: E402
import signal  # noqa: E402
from dataclasses import dataclass, field, replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Protocol  # noqa: E402

from harness.cli import start_up  # noqa: E402
from harness.cli.args import parse_args  # noqa: E402  (argparse alone)

# Before the modules below load (requests takes 0.1 s): --help and usage errors answer at once, Ctrl-C quietly.
if __name__ == "__main__":
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
    parse_args(sys.argv[1:])
    start_up.begin()  # the kernel asked about namespaces meanwhile, no garbage looked for in what loads and stays

import prompt  # the words the model reads
from harness.cli.config import (Config, ConfigError, command_boundary, load_config, read_task, remembered_commands,
                                writable_by_commands)
from harness.cli.display import ActivityLog, LiveReply, indented, log, show_answer, show_start
from harness.cli.events import JsonEvents, NoEvents
from harness.cli.instructions import Instructions, load_instructions, warn_if_large
from harness.cli.repl import not_done_as_asked, repl
from harness.cli.terminal import TerminalConfirm, ask_user
from harness.commands.git_history import GitHistory, git_folder
from harness.commands.guard import DEFAULT_RULES, parse_rules
from harness.commands.look import Look
from harness.common.own_code import CHECKOUT, load_everything
from harness.common.programs import distrust, is_writable
from harness.common.seam_types import BadCall, Reply, TaskEnded, ToolCall, ToolError
from harness.files.workspace import Workspace
from harness.history.session_history import SessionHistory
from harness.history.transcript import Loaded, SubagentTranscript, Transcript, TranscriptError, open_session
from harness.model.client import Client
from harness.model.session_model import SessionModel
from harness.modes.permissions import Permissions
from harness.parser.toolcalls import opens_call, parse_reply
from tools import TOOLS, CallResult, Toolbox

start_up.loaded()

MAX_FORMAT_ERRORS = 3  # replies in a row whose first call could not be read before the task is given up
MAX_REPEATS = 3  # the same call with the same arguments this many times in a row means the model is looping
SUBAGENT_MAX_STEPS = 10  # model calls a sub-agent may make for one delegate call
DONE, FAILED, USAGE, NOT_DONE, INTERRUPTED = 0, 1, 2, 3, 130  # exit codes; NOT_DONE: refused with nobody to ask


# --- the four seams: what the loop needs of each (the parser is parse_reply; the tools, tools.py's Toolbox) ---


class Model(Protocol):  # model/bare.py's BareModel: one POST; a session's SessionModel wraps it (session_model.py)
    def chat(self, messages: list[dict]) -> Reply: ...


class History(Protocol):  # BareHistory, below; a session's SessionHistory (history/session_history.py)
    messages: list[dict]  # what the model is sent: system prompt, then user and assistant turns
    def add(self, role: str, content: str) -> None: ...
    def add_results(self, results: list[CallResult], notes: list[str]) -> None: ...


# --- the loop ---


def run_task(task: str, model: Model, tools: Toolbox, history: History, max_steps: int = 30) -> str:
    """Run one task to its final answer: chat, parse, run the calls, add their results; repeat."""
    history.add("user", task)
    watchdog = Watchdog()  # this task's: against a model that is stuck
    for _ in range(max_steps):  # each step is one model call
        reply = model.chat(history.messages)
        parsed = parse_reply(reply.text, tools.names, reply.finish_reason)
        history.add("assistant", parsed.text)  # always, calls included: the model sees what it did
        if not parsed.calls:  # the answer, unless it is none (cut off, filtered, native calls, empty): task failed
            if problem := reply.no_answer(parsed.text):
                raise AnswerIncomplete(problem, parsed.text or reply.reasoning.strip())  # shown, not taken as done
            return parsed.text
        watchdog.check(parsed.calls)  # too many replies in a row whose first call cannot be read end the task
        results: list[CallResult] = []
        try:
            run_calls(parsed.calls, tools, watchdog, results)
        finally:  # interrupted too: the calls that ran keep their results, and roles keep alternating
            history.add_results(results, parsed.notes)
    raise TaskStopped(prompt.STEP_LIMIT.format(n=max_steps))


def run_calls(calls: list[ToolCall | BadCall], tools: Toolbox, watchdog: Watchdog, results: list[CallResult]) -> None:
    """Run a reply's calls in order, one result each into `results`. A call that fails stops the reply there:
    the calls after it may depend on it, so they are reported as not run rather than run without it."""
    for index, call in enumerate(calls):
        try:
            result = tools.run(call, refusal=watchdog.repeated(call))
        except KeyboardInterrupt:
            results += [CallResult(later.name, later.args, False, prompt.CALL_INTERRUPTED) for later in calls[index:]]
            raise
        results.append(result)
        if not result.ok:
            results += [CallResult(later.name, later.args, False, prompt.NOT_RUN) for later in calls[index + 1:]]
            return


class BareHistory:
    """The bare history: the conversation as the model is sent it, one list that is only appended to. (A
    session's, history/session_history.py's `SessionHistory`, is the same, kept inside a token budget and recorded.)"""

    def __init__(self, system_prompt: str):
        self.messages = [{"role": "system", "content": system_prompt}]

    def add(self, role: str, content: str) -> None:
        self.messages.append({"role": role, "content": content})

    def add_results(self, results: list[CallResult], notes: list[str]) -> None:
        """One user message answers a reply: its notes, then each call's result framed, in order (prompt.py)."""
        self.add("user", prompt.render_results([prompt.render_result(r.name, r.ok, r.output) for r in results], notes))


class Watchdog:
    """One task's guards against a model that is stuck: replies whose first call cannot be read, MAX_FORMAT_ERRORS
    in a row, end the task; the same call MAX_REPEATS times in a row is refused (its result will not change)."""

    def __init__(self):
        self.n_unreadable = 0  # replies in a row whose first call could not be read (so nothing ran)
        self.recent: list[str] = []  # the last few calls, as JSON

    def check(self, calls: list[ToolCall | BadCall]) -> None:
        self.n_unreadable = self.n_unreadable + 1 if isinstance(calls[0], BadCall) else 0
        if self.n_unreadable >= MAX_FORMAT_ERRORS:
            raise TaskStopped(prompt.FORMAT_LIMIT.format(n=self.n_unreadable))

    def repeated(self, call: ToolCall | BadCall) -> str | None:
        if isinstance(call, BadCall):
            return None
        self.recent = (self.recent + [json.dumps([call.name, call.args], sort_keys=True)])[-MAX_REPEATS:]
        looping = len(self.recent) == MAX_REPEATS and len(set(self.recent)) == 1
        return prompt.REPEATED.format(n=MAX_REPEATS) if looping else None


class TaskStopped(TaskEnded):
    """The loop ended without an answer (step limit, unreadable replies); the message says what to do."""


class AnswerIncomplete(TaskEnded):
    """The model stopped without a usable answer; `partial` is what it wrote, shown but not taken as done."""

    def __init__(self, message: str, partial: str = ""):
        super().__init__(message)
        self.partial = partial


# --- the session: what one run of the program keeps between tasks, and how its parts are wired ---


@dataclass
class Session:
    config: Config
    model: SessionModel  # model/session_model.py: the client, its reply shown as it streams, its tokens counted
    tools: Toolbox  # tools.py: the tools the mode offers, run in the workspace
    history: SessionHistory  # history/session_history.py: the conversation, kept inside the budget and recorded
    instructions: list[Instructions] = field(default_factory=list)  # AGENTS.md files, in the system prompt
    notes: list[str] = field(default_factory=list)  # for the model with the next task: what it has not seen yet

    def run(self, task: str) -> str:
        """One task, after the notes on what happened since the model last heard (an interrupt, /undo)."""
        task = "".join(f"({note})\n\n" for note in self.notes) + task
        self.notes.clear()
        try:
            return run_task(task, self.model, self.tools, self.history, self.config.max_steps)
        except TaskStopped as error:  # the step limit, said as the user set it: a flag, or a setting (and where)
            where = self.config.sources.get("PLAINAGENT_MAX_STEPS", "--max-steps")
            if str(error) != prompt.STEP_LIMIT.format(n=self.config.max_steps) or where == "--max-steps":
                raise
            raise TaskStopped(prompt.STEP_LIMIT_SET.format(n=self.config.max_steps, where=where)) from None

    def resume(self, loaded: Loaded | None) -> None:
        """Take up a transcript's history (if resumed) after the system prompt, and close what a crash left open."""
        if loaded and self.history.resume_from(loaded.messages, loaded.results, loaded.context_tokens):
            self.record_ending("The previous run of this session stopped abruptly (it was killed or crashed).")
        self.notes += loaded.notes if loaded else []  # what changed meanwhile (the mode, say)

    def record_ending(self, note: str) -> None:
        """After a task ended without an answer: roles keep alternating, and the model hears what did not happen."""
        if self.history.messages[-1]["role"] == "user":  # a request left without a reply: in the assistant's place
            self.history.add("assistant", f"({note})")
        else:  # with the next task; a last reply that held calls may not have had them all run
            calls = self.history.has_calls(self.history.messages[-1]["content"])
            self.notes.append(note + " The tool calls in your last reply may not all have run." * calls)


def build_session(config: Config, client: Client, workspace: Workspace, permissions: Permissions | None = None,
                  instructions: list[Instructions] = (), transcript: Transcript | None = None,
                  display: LiveReply | None = None, log=log, tokens: dict | None = None) -> Session:
    """Each seam in its armour: the tools in the mode, the history inside the budget and recorded, the model
    shown as it streams and kept inside the window (it fits the history before each request)."""
    permissions = permissions or Permissions(config.mode, fetch=config.fetch)
    tools = Toolbox(workspace, permissions, activity=ActivityLog(log))
    history = SessionHistory([], config.context_tokens, transcript=transcript, log=log, secret=workspace.secret,
                             opens_call=opens_call)  # the parser's: which of a reply's lines are calls
    model = SessionModel(client, display, history, tokens)
    history.summarize_with = model.chat_unshown  # compaction's summaries are model calls too: counted, not shown
    history.add("system", prompt.render_system_prompt(tools.offered(), instructions))  # the mode's tools
    session = Session(config, model, tools, history, list(instructions))
    if not permissions.subagent:  # a sub-agent cannot start sub-agents
        tools.subagent = lambda task: run_subagent(session, task)
    return session


def run_subagent(parent: Session, task: str) -> str:
    """A delegate call: the same loop in a fresh conversation that only reads, sharing the parent's client,
    workspace and token count; its activity is logged indented, its messages go to the parent's transcript."""
    config = replace(parent.config, max_steps=SUBAGENT_MAX_STEPS, context_tokens=parent.history.budget.tokens)
    permissions = Permissions("read-only", subagent=True)
    helper = build_session(config, parent.model.client, replace(parent.tools.workspace, confirm=permissions),
                           permissions, parent.instructions, SubagentTranscript(parent.history.transcript),
                           log=indented(parent.tools.activity.log), tokens=parent.model.tokens)
    try:
        return helper.run(prompt.SUBAGENT_TASK.format(task=task))
    except KeyboardInterrupt:
        raise ToolError("The user interrupted the sub-agent (Ctrl-C) before it answered. Ask the user how to go "
                        "on before delegating again.") from None
    except TaskEnded as error:  # its step limit, unreadable calls, no answer, a failed request
        reason = str(error).split(" (--max-steps")[0].rstrip(".")
        raise ToolError(f"The sub-agent ended without an answer: {reason}. Give it a narrower task, or read the "
                        "files yourself.") from None


# --- the command line: one-shot (-p) and the REPL ---


def main(argv: list[str] | None = None) -> int:
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # from here on, Ctrl-C is a KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.stdout = sys.stdout or open(os.devnull, "w")  # closed (`>&-`): what it would show goes nowhere
    sys.stdout.reconfigure(errors="backslashreplace")  # whatever the text holds, printing it never fails
    args = parse_args(argv)
    events = JsonEvents.take_stdout() if args.json else NoEvents()  # -p --json: stdout is JSON Lines (cli/events.py)
    try:
        config = load_config(args, dict(os.environ), Path.cwd(), Path(__file__).resolve().parent, ask_user)
        task = read_task(args.task) if args.task is not None else None
        show_start(config, boundary := command_boundary(config))  # from here on nothing shown holds the key
        events.start(config, boundary)
        distrust(writable_by_commands(config, boundary))  # plainagent runs no program found where commands write
        if is_writable(CHECKOUT):  # plainagent's own code among them (-C on itself): none of it is read later
            load_everything()
        transcript, loaded = open_session(config, log)
    except (ConfigError, TranscriptError) as error:
        log(f"plainagent: {error}")  # escaped: a project's .env or a path may hold anything
        return events.end(USAGE)
    except KeyboardInterrupt:  # while asked about a project's .env, or reading the task from stdin
        return events.end(INTERRUPTED)
    client = Client(config.base_url, config.api_key.value, config.model, stop=config.stop, stream=config.stream,
                    reply_tokens=config.max_reply_tokens, log=log, **config.waits())  # the key, only in its header
    asks = TerminalConfirm(config.workspace, remembered_commands(config))  # the user, unless PLAINAGENT_ALLOW says
    permissions = Permissions(config.mode, asks, log, fetch=config.fetch, refused=events.refused)  # when to ask
    workspace = Workspace(config.workspace, permissions, secret=config.api_key, own_files=[transcript.path],
                          fetch_allow=config.fetch_allow, deny_rules=DEFAULT_RULES + parse_rules(config.deny),
                          passed_env=config.sandbox_env,  # credentials' variables the user lets commands have
                          boundary=boundary,  # every command inside the kernel's walls, where it has any (landlock.py)
                          git_history=GitHistory(git_folder(config.workspace)),  # git's history survives them
                          look=Look(config.workspace, permissions))  # and what acts later stays, unless you say yes
    instructions = load_instructions(workspace, dict(os.environ), log)  # once: the prompt stays the same
    session = build_session(config, client, workspace, permissions, instructions, transcript,
                            LiveReply.for_terminal(list(TOOLS)))
    session.tools.activity = events.watching(session.tools.activity)  # each call an event too, with --json
    warn_if_large(instructions, session.history, log)  # every request carries them, and compaction cannot shrink them
    session.resume(loaded)
    return repl(session, attempt) if task is None else events.end(attempt(session, task), session)


def attempt(session: Session, task: str) -> int:
    """Run a task and say how it ended, in one line: every way a task ends is caught here, and becomes its exit
    code (a sub-agent's endings are caught by run_subagent: they are its delegate call's result)."""
    try:
        answer = session.run(task)
    except KeyboardInterrupt:  # Ctrl-C: the calls that ran kept their results (run_calls)
        log("Interrupted.")
        session.record_ending("The user interrupted that task.")
        return INTERRUPTED
    except Exception as error:  # the family, TaskEnded (a failed request, the step limit, ...), or a bug of ours
        workspace, display = session.tools.workspace, session.model.display
        if (partial := getattr(error, "partial", "")) and not (display and display.showed(partial)):
            log(workspace.redact(partial))  # what the model wrote, unless it was seen as it streamed
        line = workspace.redact(str(error))  # a server may echo the key back
        if not isinstance(error, TaskEnded):
            line = f"internal error, please report it: {type(error).__name__}: {line}"
        log(f"plainagent: {line}")
        session.record_ending(f"That task failed: {line}")  # the REPL session goes on
        return FAILED
    show_answer(answer, session.model.display)  # on stdout, unless it was seen as it streamed
    return NOT_DONE if not_done_as_asked(session) else DONE  # (and the token line)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # a second Ctrl-C while the first was being handled
        sys.exit(INTERRUPTED)
    except BrokenPipeError:  # stdout was closed early (`... | head`): nobody is left to tell
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(FAILED)
