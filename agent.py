# /// script
# requires-python = ">=3.11"
# dependencies = ["requests>=2.32", "urllib3>=2.3", "python-dotenv>=1.0"]
# ///
"""plainagent: a coding agent in plain Python, talking plain HTTP to any OpenAI-compatible endpoint.

A session starts with one message, the system prompt rendered from the tools (`Session`). Then, for each
task, the loop in `run_task`:
  1. the user's task is appended to `messages` (one list for the whole session);
  2. `context.chat()` POSTs the messages to {base_url}/chat/completions and returns the reply; first, if
     the request would not fit the context budget, it compacts the history (`context.py`: older tool
     results become stubs, older turns a summary); a server's refusal for length is survived the same way;
  3. `parse_reply` finds the `tool: NAME({json})` lines, and drops what is not the model's own turn
     (a leading reasoning block, results it invented for itself);
  4. what is left of the reply is appended as the assistant's turn, always, including when it calls tools,
     so the model sees its own earlier calls;
  5. a reply without calls is the final answer (one cut off at the output limit, or empty, is a failure);
  6. otherwise each call is checked and run (`run_calls`); every failure becomes a result, never a crash;
  7. the results go back as one user message, one `tool_result(` frame per call, and we repeat,
     at most --max-steps model calls per task.
What may run depends on the mode (`permissions.py`: read-only offers only the reading tools) and, for
commands, on the deny rules (`guard.py`), which hold in every mode. The `delegate` tool runs this same loop
in a fresh conversation that only reads, and hands back only its answer (`run_subagent`).
Every message is also appended to the session's transcript (`transcript.py`) as it happens, so `--resume`
can carry on after an exit or a crash.
The model never touches the machine: it writes text, and this script decides what runs.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

# Ctrl-C while the modules below load (requests takes ~0.1 s): leave without a traceback.
if __name__ == "__main__" and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, lambda *_: sys.exit(130))

from harness.model.client import ChatError, Client, Reply
from harness.cli.commands import LeaveSession, is_command, run_command
from harness.cli.config import Config, ConfigError, load_config
from harness.history.context import CallResult, Context
from harness.cli.display import LiveReply, describe_args, describe_tokens, log, outcome, summarize
from harness.sandbox.guard import DEFAULT_RULES, parse_rules
from harness.cli.instructions import Instructions, load_instructions
from harness.sandbox.permissions import Permissions, describe
from prompt import FORMAT_LIMIT, NOT_RUN, STEP_LIMIT, SUBAGENT_TASK, format_error, render_system_prompt
from harness.cli.terminal import TaskReader, TerminalConfirm, escape
from harness.parser.toolcalls import BadCall, ParsedReply, ToolCall, parse_reply
from tools import TOOLS, check_args, run_tool
from harness.history.transcript import Loaded, SubagentTranscript, Transcript, TranscriptError, open_session
from harness.sandbox.workspace import ToolError, Workspace

MAX_FORMAT_ERRORS = 3  # replies in a row whose calls could not be read before the task is given up
MAX_REPEATS = 3  # the same call with the same arguments this many times in a row means the model is looping
INTERRUPTED = "Not run, or stopped before it finished: the user interrupted the task."


# --- the loop ---


def run_task(session: Session, task: str) -> str:
    """Run one task to its final answer, appending every turn to session.messages."""
    session.start_task(task)
    context = session.context  # the messages, kept inside the token budget, recorded in the transcript
    for _ in range(session.config.max_steps):  # each turn is one model call
        reply = context.chat()  # compacts the history first if this request would not fit the budget
        parsed = parse_reply(reply.text, list(TOOLS), reply.finish_reason)
        context.add("assistant", parsed.text, calls=[call.name for call in parsed.calls])
        if not parsed.calls:
            return final_answer(reply, parsed)
        results = run_calls(session, parsed.calls)
        context.add_results(results, parsed.notes)
    raise TaskStopped(STEP_LIMIT.format(n=session.config.max_steps))


def run_calls(session: Session, calls: list[ToolCall | BadCall]) -> list[CallResult]:
    """Run a reply's calls in order; returns one result per call.

    A call that cannot be read, fails its argument check or fails when run stops the reply there: the
    calls after it may depend on it, so they are reported as not run rather than run without it.
    """
    results, n_ran = [], 0
    for index, call in enumerate(calls):
        started = time.monotonic()
        problem = (format_error(call.problem) if isinstance(call, BadCall)
                   else check_args(call.name, call.args) or session.permissions.refusal(call.name))  # e.g. read-only
        if problem is None and session.repeats(call):
            problem = (f"You have made this exact call {MAX_REPEATS} times in a row; its result will not change. "
                       "Try something different, or answer with what you know.")
        if problem is None:
            session.say(f"→ {call.name}({describe_args(call.args)})")
            try:
                result = run_tool(session.workspace, call.name, call.args)
            except KeyboardInterrupt:  # the history keeps the results of the calls that ran
                session.context.add_results(results + [CallResult(later.name, getattr(later, "args", {}), False,
                                                                  INTERRUPTED) for later in calls[index:]], [])
                raise
            ok, output, n_ran = result.ok, result.output, n_ran + 1
            session.say(f"  {outcome(ok, output)}: {summarize(output)}")
        else:
            ok, output = False, problem
            session.say(f"✗ {call.name}: {problem.splitlines()[0]}")
        results.append(CallResult(call.name, getattr(call, "args", {}), ok, output, time.monotonic() - started))
        if not ok:
            results += [CallResult(later.name, getattr(later, "args", {}), False, NOT_RUN)
                        for later in calls[index + 1:]]
            break
    session.count_format_errors(calls, n_ran)
    return results


def final_answer(reply: Reply, parsed: ParsedReply) -> str:
    """The text of a reply without calls, unless it is no answer at all: then the task failed."""
    if reply.finish_reason == "length":
        raise AnswerIncomplete("The model's answer was cut off at its output token limit, so it is incomplete. "
                               "Ask it to go on, or to answer more briefly.", parsed.text)
    if reply.finish_reason == "content_filter":
        raise AnswerIncomplete("The provider's content filter stopped the answer, so it is incomplete.",
                               parsed.text)
    if reply.native_calls:  # the model meant to act, in a format we do not read: its text is no answer
        raise AnswerIncomplete(f"The model answered with a native function call ({', '.join(reply.native_calls)}) "
                               "instead of a `tool:` line, which is all plainagent reads. Try again, or try a "
                               "model that follows the system prompt.", parsed.text)
    if not parsed.text.strip():
        reasoning = reply.reasoning.strip()  # streamed apart from the text (reasoning_content)
        what = "only reasoning" if reply.text.strip() or reasoning else "empty"
        raise AnswerIncomplete(f"The model's reply was {what}: there is no answer. Try again, or try "
                               "another model.", reasoning)
    return parsed.text


class TaskStopped(Exception):
    """The loop ended without an answer (step limit, unreadable replies); the message says what to do."""


class AnswerIncomplete(TaskStopped):
    """The model stopped without a usable answer; `partial` is what it wrote, shown but not taken as done."""

    def __init__(self, message: str, partial: str = ""):
        super().__init__(message)
        self.partial = partial


# --- the session: what one run of the program keeps between tasks ---


@dataclass
class Session:
    config: Config
    client: Client
    workspace: Workspace
    messages: list[dict] = field(default_factory=list)  # the conversation, appended to (and compacted by context)
    transcript: Transcript = field(default_factory=Transcript)  # Transcript() records nothing
    tokens: dict = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    recent_calls: list[str] = field(default_factory=list)  # this task's last few calls, to notice a loop
    n_format_errors: int = 0  # this task's replies in a row whose calls could not be read
    notes: list[str] = field(default_factory=list)  # for the model with the next task: what it has not seen yet
    permissions: Permissions = field(default_factory=Permissions)  # the mode: which tools, what is asked
    instructions: list[Instructions] = field(default_factory=list)  # AGENTS.md files, in the system prompt
    indent: str = ""  # a sub-agent's activity is shown indented under the parent's delegate call
    display: LiveReply | None = None  # shows each turn's reply as it streams in; None shows nothing
    n_requests: int = 0  # model calls so far
    n_estimated: int = 0  # model calls whose tokens we estimated: the server reported none

    def __post_init__(self):
        self.context = Context(self.messages, self.config.context_tokens, self.call_model, self.transcript, self.say)
        if not self.messages:  # the one message that comes before every task: rendered from the tools
            self.context.add("system", self.system_prompt())
        if not self.permissions.subagent:  # sub-agents cannot start sub-agents
            self.workspace.subagent = lambda task: run_subagent(self, task)

    def system_prompt(self) -> str:
        """The tools this session offers (permissions.py: all, or the reading ones), and AGENTS.md's rules."""
        return render_system_prompt(self.permissions.tools(TOOLS), self.instructions)

    def switch_mode(self, mode: str) -> str:
        """/mode NAME: the model is told, and the system prompt follows (to or from read-only, its tools change)."""
        before, line = self.permissions.mode, self.permissions.switch(mode)
        if self.permissions.mode != before:
            self.messages[0] = {"role": "system", "content": self.system_prompt()}
            self.notes.append(f"The user switched the session to mode {mode}: it {describe(mode)}.")
        return line

    def say(self, line: str) -> None:
        log("\n".join(self.indent + part for part in line.split("\n")))

    def call_model(self, messages: list[dict]) -> Reply:
        """One model call (a turn, or a summary for compaction), its tokens added to the session's count."""
        display = self.display if messages is self.messages else None  # a turn is shown as it comes; a summary not
        if display is None:
            reply = self.client.chat(messages)
        else:
            display.start()
            try:
                reply = self.client.chat(messages, display.show)
            finally:  # also when interrupted: the next line starts on a line of its own
                display.finish()
        self.count_tokens(messages, reply)
        return reply

    def count_tokens(self, messages: list[dict], reply: Reply) -> None:
        """Add a call's tokens to the session's count: the server's, or our estimate when it reports none
        (llama.cpp's server sends no usage in a stream)."""
        self.n_requests += 1
        usage = reply.usage if isinstance(reply.usage, dict) else {}
        if not isinstance(usage.get("prompt_tokens"), int):
            self.n_estimated += 1
            per_token = self.context.budget.bytes_per_token
            usage = {"prompt_tokens": self.context.budget.estimate(messages),
                     "completion_tokens": round(len(reply.text.encode("utf-8", errors="replace")) / per_token)}
        for key in self.tokens:
            value = usage.get(key)
            self.tokens[key] += value if isinstance(value, int) else 0

    def resume(self, loaded: Loaded) -> None:
        """Take up a transcript's history after the system prompt, and close what a crash left open."""
        for warning in loaded.warnings:
            log(f"plainagent: {warning}")
        log(f"Resumed {loaded.path} ({len(loaded.messages)} messages).")
        self.messages[1:] = loaded.messages
        self.context.results = loaded.results
        if loaded.context_tokens:  # a server's window learnt earlier in the session
            self.context.budget.tokens = min(loaded.context_tokens, self.config.context_tokens)
        ended_abruptly = self.messages[-1]["role"] == "user" or loaded.cut_off_calls
        if len(self.messages) > 1 and ended_abruptly:
            self.record_ending("The previous run of this session stopped abruptly (it was killed or crashed).")

    def start_task(self, task: str) -> None:
        """Append the task, after the notes on what happened since the model last heard (an interrupt, /undo)."""
        self.recent_calls, self.n_format_errors = [], 0  # a loop or a format problem is a task's own
        self.context.add("user", "".join(f"({note})\n\n" for note in self.notes) + task)
        self.notes.clear()

    def record_ending(self, note: str) -> None:
        """Keep the history true and well-formed after a task ended without an answer.

        Roles must keep alternating, and the model must not believe work happened that did not: a request
        that never got a reply is closed with a note in the assistant's place; calls whose results never
        came are explained with the next task.
        """
        if self.messages[-1]["role"] == "user":
            self.context.add("assistant", f"({note})")
        else:
            self.notes.append(f"{note} The tool calls in your last reply may not all have run.")

    def repeats(self, call: ToolCall) -> bool:
        """Record a call; True if it is the same call with the same arguments MAX_REPEATS times in a row."""
        self.recent_calls = (self.recent_calls + [json.dumps([call.name, call.args], sort_keys=True)])[-MAX_REPEATS:]
        return len(self.recent_calls) == MAX_REPEATS and len(set(self.recent_calls)) == 1

    def count_format_errors(self, calls: list[ToolCall | BadCall], n_ran: int) -> None:
        """Count replies in a row where nothing ran because a call could not be read; too many ends the task."""
        unreadable = n_ran == 0 and any(isinstance(call, BadCall) for call in calls)
        self.n_format_errors = self.n_format_errors + 1 if unreadable else 0
        if self.n_format_errors >= MAX_FORMAT_ERRORS:
            raise TaskStopped(FORMAT_LIMIT.format(n=self.n_format_errors))


# --- the sub-agent: the delegate tool (tools.py) calls this through the workspace, so tools.py needs no loop ---

SUBAGENT_MAX_STEPS = 10  # model calls a sub-agent may make for one delegate call
SUBAGENT_ANSWER_MAX = 4000  # characters of its answer the parent receives: the one thing it costs the parent


def run_subagent(parent: Session, task: str) -> str:
    """A delegate call: the same loop in a fresh conversation that only reads, sharing the parent's client,
    workspace and token count; its messages go to the parent's transcript, marked as the sub-agent's."""
    config = replace(parent.config, max_steps=SUBAGENT_MAX_STEPS, context_tokens=parent.context.budget.tokens)
    helper = Session(config, parent.client,
                     replace(parent.workspace, confirm=Permissions("read-only"), subagent=None),
                     transcript=SubagentTranscript(parent.transcript), tokens=parent.tokens,
                     permissions=Permissions("read-only", subagent=True), instructions=parent.instructions,
                     indent=parent.indent + "    ")
    try:
        answer = run_task(helper, SUBAGENT_TASK.format(task=task))
    except KeyboardInterrupt:
        raise ToolError("The user interrupted the sub-agent (Ctrl-C) before it answered. Ask the user how to go "
                        "on before delegating again.") from None
    except (TaskStopped, ChatError) as error:  # its step limit, unreadable calls, no answer, a failed request
        reason = str(error).split(" (--max-steps")[0].rstrip(".")
        raise ToolError(f"The sub-agent ended without an answer: {reason}. Give it a narrower task, or read the "
                        "files yourself.") from None
    if len(answer) > SUBAGENT_ANSWER_MAX:
        answer = answer[:SUBAGENT_ANSWER_MAX] + f"\n[answer cut: {len(answer) - SUBAGENT_ANSWER_MAX:,} more characters]"
    return answer


# --- the command line: one-shot (-p) and the REPL ---


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="agent.py", description="A coding agent for any OpenAI-compatible endpoint.",
        epilog="Settings come from, in order of precedence: these flags, the environment (OPENAI_API_KEY, "
               "OPENAI_BASE_URL, OPENAI_MODEL, PLAINAGENT_MAX_STEPS, PLAINAGENT_STOP, PLAINAGENT_CONTEXT_TOKENS, "
               "PLAINAGENT_MODE, PLAINAGENT_DENY, PLAINAGENT_STREAM), "
               ".env in the current directory, .env next to agent.py. "
               "Exit codes: 0 done, 1 failed, 2 usage or config error, 130 interrupted.")
    parser.add_argument("-p", "--prompt", metavar="TASK", help='run one task, print the answer, exit ("-" reads stdin)')
    parser.add_argument("-y", "--yes", action="store_true", help="approve every write and command: --mode yes")
    parser.add_argument("--mode", metavar="MODE",
                        help="ask (default) before writes and commands; read-only; edits: ask only before commands; "
                             "yes: ask nothing (PLAINAGENT_MODE)")
    parser.add_argument("-m", "--model", help="model name (OPENAI_MODEL)")
    parser.add_argument("--base-url", help="endpoint base URL with its version path (OPENAI_BASE_URL)")
    parser.add_argument("-C", "--cwd", default=".", metavar="DIR", help="workspace directory (default: current)")
    parser.add_argument("--max-steps", type=int, metavar="N", help="model calls per task (default 30)")
    parser.add_argument("--no-stream", action="store_true",
                        help="ask for whole replies instead of streamed ones (PLAINAGENT_STREAM=off)")
    parser.add_argument("--context-tokens", type=int, metavar="N",
                        help="most tokens one request may hold (default 32000)")
    parser.add_argument("--log", type=Path, metavar="FILE", help="the transcript file (default: a new one in "
                        "$XDG_STATE_HOME/plainagent/sessions)")
    parser.add_argument("--resume", nargs="?", const="", metavar="FILE",
                        help="continue this workspace's latest session, or FILE's; with -p, run one more task in it")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # from here on, Ctrl-C is a KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.stdout.reconfigure(errors="backslashreplace")  # whatever the text holds, printing it never fails
    args = parse_args(argv)
    try:
        config = load_config(args, dict(os.environ), Path.cwd(), Path(__file__).resolve().parent)
        task = read_task(args.prompt) if args.prompt is not None else None
        transcript, loaded = open_session(config, log)
    except (ConfigError, TranscriptError) as error:
        print(f"plainagent: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # while reading the task from stdin
        return 130
    permissions = Permissions(config.mode, TerminalConfirm(config.workspace), log)
    client = Client(config.base_url, config.api_key, config.model, stop=config.stop, stream=config.stream, log=log)
    workspace = Workspace(config.workspace, permissions, secret=config.api_key,
                          deny_rules=DEFAULT_RULES + parse_rules(config.deny))
    instructions = load_instructions(workspace, dict(os.environ), log)  # once: the prompt stays the same
    session = Session(config, client, workspace, transcript=transcript, permissions=permissions,
                      instructions=instructions, display=LiveReply.for_terminal())
    prompt_tokens, budget = session.context.budget.estimate(session.messages[:1]), session.context.budget.tokens
    if instructions and prompt_tokens > budget // 4:  # every request carries it, and compaction cannot shrink it
        log(f"plainagent: the system prompt with {', '.join(given.file for given in instructions)} takes about "
            f"{prompt_tokens:,} of the {budget:,}-token context budget; shorten it, or raise --context-tokens.")
    if loaded:
        session.resume(loaded)
    return repl(session) if task is None else attempt(session, task)


def read_task(prompt: str) -> str:
    """The task given with -p: the text itself, or stdin for "-"; an empty task is a usage error."""
    if prompt == "-":
        try:
            prompt = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError as error:
            raise ConfigError(f"the task on stdin is not UTF-8 text (byte {error.start}); convert it first, "
                              "e.g. with iconv.") from None
    if not is_text(prompt):  # bytes that were not UTF-8 reach argv as lone surrogates
        raise ConfigError("the task is not UTF-8 text; convert it first, e.g. with iconv.")
    if not prompt.strip():
        raise ConfigError("the task is empty: pass it as -p \"TASK\", or pipe it in with -p -.")
    return prompt


def is_text(text: str) -> bool:
    """False for a string holding lone surrogates: bytes that were not UTF-8, which no server can take."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def attempt(session: Session, task: str) -> int:
    """Run a task and report how it ended, in one line: the one place the loop's endings are caught."""
    try:
        answer = run_task(session, task)
    except KeyboardInterrupt:
        log("Interrupted.")
        session.record_ending("The user interrupted that task.")
        return 130
    except (ChatError, TaskStopped) as error:
        if (partial := getattr(error, "partial", "")) and not (session.display and session.display.showed(partial)):
            log(partial)
        line = session.workspace.redact(str(error))  # a server may echo the key back
        log(f"plainagent: {line}")
        session.record_ending(f"That task failed: {line}")
        return 1
    except Exception as error:  # a bug of ours: say so in one line, and keep the REPL session alive
        line = f"internal error, please report it: {type(error).__name__}: {session.workspace.redact(str(error))}"
        log(f"plainagent: {line}")
        session.record_ending(f"That task failed: {line}")
        return 1
    if not (session.display and session.display.showed(answer, sys.stdout)):  # a terminal saw it streamed already
        print(escape(answer, keep="\n\t") if sys.stdout.isatty() else answer, flush=True)  # a pipe gets it exact
    log(describe_tokens(session))
    return 0


def repl(session: Session) -> int:
    mode = session.permissions.mode
    log(f"plainagent: {session.config.model} at {session.client.url}, workspace {session.workspace.root}, "
        f"mode {mode} ({describe(mode)})\n"
        + "".join(f"Instructions from {given.file}{f' ({given.note})' if given.note else ''}\n"
                  for given in session.instructions)
        + "Type a task (end a line with \\ to go on on the next). /help lists the commands; /exit or Ctrl-D leaves.")
    tasks = TaskReader()
    while True:
        try:
            task = tasks.read()
        except KeyboardInterrupt:  # stdin is a script, not a person: stop, as a pipeline would
            print(file=sys.stderr)
            return 130
        if task is None:  # Ctrl-D, exit, quit, or Ctrl-C twice at an empty prompt
            return 0
        if not is_text(task):
            log("plainagent: that line is not UTF-8 text, so it was not sent.")
            continue
        if not is_command(task):
            attempt(session, task)
            continue
        try:
            log(run_command(session, task))  # /help, /undo, /reset, /tokens, /model, /compact
        except LeaveSession:
            return 0



if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # a second Ctrl-C while the first was being handled
        sys.exit(130)
    except BrokenPipeError:  # stdout was closed early (`... | head`): nobody is left to tell
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
