# /// script
# requires-python = ">=3.11"
# dependencies = ["requests>=2.32", "urllib3>=2.3", "python-dotenv>=1.0"]
# ///
"""plainagent: a coding agent in plain Python, talking plain HTTP to any OpenAI-compatible endpoint.

The loop, which `run_task` below follows line by line:
  1. the user's task is appended to `messages` (one list for the whole session, only ever appended to);
  2. `client.chat(messages)` POSTs it to {base_url}/chat/completions and returns the reply text;
  3. the reply is appended as the assistant's turn, always, including when it calls tools, so the model
     sees its own earlier calls;
  4. `parse_reply` finds the `tool: NAME({json})` lines; a reply without any is the final answer;
  5. each call is checked and run (`run_tool`); every failure becomes a result, never a crash;
  6. the results go back as one user message, one `tool_result({...})` per call, and we repeat,
     at most --max-steps model calls per task.
The model never touches the machine: it writes text, and this script decides what runs.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from dotenv import dotenv_values

from client import ChatError, Client
from edits import write_atomically
from prompt import FORMAT_LIMIT, NOT_RUN, STEP_LIMIT, format_error, render_result, render_results, render_system_prompt
from terminal import TaskReader, TerminalConfirm
from toolcalls import BadCall, ToolCall, parse_reply
from tools import TOOLS, Workspace, check_args, run_tool

MAX_FORMAT_ERRORS = 3  # replies in a row whose calls could not be read before the task is given up
MAX_REPEATS = 3  # the same call with the same arguments this many times in a row means the model is looping


# --- the loop ---


def run_task(session: Session, task: str) -> str:
    """Run one task to its final answer, appending every turn to session.messages."""
    messages = session.messages
    messages.append({"role": "user", "content": task})
    n_format_errors = 0
    for _ in range(session.config.max_steps):  # each turn is one model call
        reply = session.client.chat(messages)
        session.count_usage(reply.usage)
        parsed = parse_reply(reply.text, list(TOOLS), reply.finish_reason)
        messages.append({"role": "assistant", "content": parsed.text})
        if not parsed.calls:
            if reply.finish_reason == "length" or not parsed.text.strip():
                log(f"(the model's reply was {'cut off at its output limit' if parsed.text.strip() else 'empty'})")
            return parsed.text
        results, n_ran = run_calls(session, parsed.calls)
        unreadable = n_ran == 0 and any(isinstance(call, BadCall) for call in parsed.calls)
        n_format_errors = n_format_errors + 1 if unreadable else 0
        if n_format_errors >= MAX_FORMAT_ERRORS:
            raise TaskStopped(FORMAT_LIMIT.format(n=n_format_errors))
        messages.append({"role": "user", "content": render_results(results, parsed.notes)})
    raise TaskStopped(STEP_LIMIT.format(n=session.config.max_steps))


def run_calls(session: Session, calls: list[ToolCall | BadCall]) -> tuple[list[str], int]:
    """Run a reply's calls in order; returns one rendered result per call and how many tools ran.

    A call that cannot be read or fails its argument check stops the reply there: the calls after it may
    depend on it, so they are reported as not run rather than run out of order.
    """
    results, n_ran = [], 0
    for index, call in enumerate(calls):
        problem = format_error(call.problem) if isinstance(call, BadCall) else check_args(call.name, call.args)
        if problem is None and session.is_looping(call):
            problem = (f"You have made this exact call {MAX_REPEATS} times in a row; its result will not change. "
                       "Try something different, or answer with what you know.")
        if problem is not None:
            log(f"✗ {call.name}: {problem.splitlines()[0]}")
            results.append(render_result(call.name, False, problem))
            results += [render_result(later.name, False, NOT_RUN) for later in calls[index + 1:]]
            break
        log(f"→ {call.name}({describe_args(call.args)})")
        result = run_tool(session.workspace, call.name, call.args)
        log(f"  {'ok' if result.ok else 'error'}: {summarize(result.output)}")
        results.append(render_result(call.name, result.ok, result.output))
        n_ran += 1
    return results, n_ran


class TaskStopped(Exception):
    """The loop ended without an answer (step limit, unreadable replies); the message says what to do."""


# --- the session: what one run of the program keeps between tasks ---


@dataclass
class Session:
    config: Config
    client: Client
    workspace: Workspace
    messages: list[dict] = field(default_factory=list)  # the whole conversation, only ever appended to
    recent_calls: list[str] = field(default_factory=list)  # the last few calls, to notice a model in a loop
    tokens: dict = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})

    def is_looping(self, call: ToolCall) -> bool:
        """Record a call; True if it is the same call with the same arguments MAX_REPEATS times in a row."""
        self.recent_calls = (self.recent_calls + [json.dumps([call.name, call.args], sort_keys=True)])[-MAX_REPEATS:]
        return len(self.recent_calls) == MAX_REPEATS and len(set(self.recent_calls)) == 1

    def count_usage(self, usage: dict) -> None:
        for key in self.tokens:
            self.tokens[key] += usage.get(key) or 0


def describe_args(args: dict) -> str:
    """A call's arguments on one short line, for the activity log."""
    text = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in args.items())
    return text if len(text) <= 100 else text[:97] + "..."


def summarize(output: str) -> str:
    """A result's first line, and how many more there are, for the activity log."""
    lines = output.splitlines() or [""]
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return lines[0][:150] + more


def log(line: str) -> None:
    """Activity goes to stderr, so stdout carries only the answer (`-p` output can be piped)."""
    print(line, file=sys.stderr, flush=True)


# --- configuration ---


@dataclass
class Config:
    api_key: str = field(default="", repr=False)  # OPENAI_API_KEY; may be empty for a local server
    base_url: str = "https://api.openai.com/v1"  # OPENAI_BASE_URL, including the provider's version path
    model: str = ""  # OPENAI_MODEL
    max_steps: int = 30  # PLAINAGENT_MAX_STEPS: model calls per task
    stop: list[str] = field(default_factory=lambda: ["\ntool_result("])  # PLAINAGENT_STOP: JSON list, or "off"
    workspace: Path = Path(".")  # -C: the directory the tools may touch
    yes: bool = False  # -y: approve every write and command without asking
    env_file: Path | None = None  # the .env to name in error messages


class ConfigError(Exception):
    """The settings are unusable; the message names the variable and where to set it."""


ENV_VARS = {"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL", "model": "OPENAI_MODEL",
            "max_steps": "PLAINAGENT_MAX_STEPS", "stop": "PLAINAGENT_STOP"}  # Config field -> variable


def load_config(args: argparse.Namespace, environ: dict, cwd: Path, script_dir: Path) -> Config:
    """Settings by precedence: flag > environment > .env in the current directory > .env next to agent.py."""
    env_files = [path for path in (script_dir / ".env", cwd / ".env") if path.is_file()]
    settings: dict[str, str] = {}
    for path in dict.fromkeys(env_files):  # later files win; dotenv_values leaves os.environ alone
        settings.update({name: value for name, value in dotenv_values(path).items() if value})
    settings.update({name: value for name, value in environ.items() if name in ENV_VARS.values() and value})
    config = Config(env_file=env_files[-1] if env_files else cwd / ".env")
    for name, variable in ENV_VARS.items():
        if variable in settings:
            setattr(config, name, parse_setting(name, variable, settings[variable]))
    for name in ("model", "base_url", "max_steps"):
        if getattr(args, name) is not None:
            setattr(config, name, getattr(args, name))
    config.workspace = Path(args.cwd).resolve()
    config.yes = args.yes
    check_config(config)
    return config


def parse_setting(name: str, variable: str, value: str):
    try:
        if name == "max_steps":
            return int(value)
        if name == "stop":
            stop = [] if value.strip().lower() == "off" else json.loads(value)
            if not (isinstance(stop, list) and all(isinstance(item, str) for item in stop)):
                raise ValueError("not a list of strings")
            return stop
    except ValueError:
        raise ConfigError(f"{variable}={value!r} is not valid; see .env.example.") from None
    return value.strip()


def check_config(config: Config) -> None:
    where = f"set it in {config.env_file} (see .env.example) or the environment"
    if not config.model:
        raise ConfigError(f"OPENAI_MODEL is not set: {where}, or pass -m MODEL.")
    if urlsplit(config.base_url).scheme not in ("http", "https"):
        raise ConfigError(f"OPENAI_BASE_URL {config.base_url!r} is not an http(s) URL, e.g. http://localhost:11434/v1.")
    if not config.api_key and not is_local(config.base_url):
        raise ConfigError(f"OPENAI_API_KEY is not set for {config.base_url}: {where}.")
    if config.max_steps < 1:
        raise ConfigError("--max-steps must be at least 1.")
    if not config.workspace.is_dir():
        raise ConfigError(f"-C {config.workspace}: no such directory.")


def is_local(base_url: str) -> bool:
    """A server on this machine (Ollama, LM Studio, vLLM on localhost) may run without an API key."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- the command line: one-shot (-p) and the REPL ---


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="agent.py", description="A coding agent for any OpenAI-compatible endpoint.",
        epilog="Settings come from, in order of precedence: these flags, the environment (OPENAI_API_KEY, "
               "OPENAI_BASE_URL, OPENAI_MODEL, PLAINAGENT_MAX_STEPS, PLAINAGENT_STOP), .env in the current directory, "
               ".env next to agent.py. Exit codes: 0 done, 1 failed, 2 usage or config error, 130 interrupted.")
    parser.add_argument("-p", "--prompt", metavar="TASK", help='run one task, print the answer, exit ("-" reads stdin)')
    parser.add_argument("-y", "--yes", action="store_true", help="approve every write and command without asking")
    parser.add_argument("-m", "--model", help="model name (OPENAI_MODEL)")
    parser.add_argument("--base-url", help="endpoint base URL with its version path (OPENAI_BASE_URL)")
    parser.add_argument("-C", "--cwd", default=".", metavar="DIR", help="workspace directory (default: current)")
    parser.add_argument("--max-steps", type=int, metavar="N", help="model calls per task (default 30)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = load_config(args, dict(os.environ), Path.cwd(), Path(__file__).resolve().parent)
    except ConfigError as error:
        print(f"plainagent: {error}", file=sys.stderr)
        return 2
    confirm = None if config.yes else TerminalConfirm(config.workspace)
    client = Client(config.base_url, config.api_key, config.model, stop=config.stop, log=log)
    session = Session(config, client, Workspace(config.workspace, confirm, secret=config.api_key))
    session.messages.append({"role": "system", "content": render_system_prompt(TOOLS)})
    if args.prompt is None:
        return repl(session)
    try:
        task = sys.stdin.read() if args.prompt == "-" else args.prompt
    except KeyboardInterrupt:
        return 130
    return attempt(session, task)


def attempt(session: Session, task: str) -> int:
    """Run a task and report how it ended, in one line: the one place the loop's endings are caught."""
    try:
        answer = run_task(session, task)
    except KeyboardInterrupt:
        log("Interrupted.")
        session.messages.append({"role": "user", "content": "(The user interrupted that task.)"})
        return 130
    except (ChatError, TaskStopped) as error:
        log(f"plainagent: {session.workspace.redact(str(error))}")  # a server may echo the key back
        return 1
    except Exception as error:  # a bug of ours: say so in one line, and keep the REPL session alive
        log(f"plainagent: internal error, please report it: {type(error).__name__}: "
            f"{session.workspace.redact(str(error))}")
        return 1
    print(answer, flush=True)
    tokens = session.tokens
    log(f"({tokens['prompt_tokens']:,} prompt + {tokens['completion_tokens']:,} completion tokens so far)")
    return 0


def repl(session: Session) -> int:
    log(f"plainagent: {session.config.model} at {session.client.url}, workspace {session.workspace.root}\n"
        "Type a task. /undo reverts the last write; exit, quit or Ctrl-D leaves.")
    tasks = TaskReader()
    while True:
        try:
            task = tasks.read()
        except KeyboardInterrupt:  # stdin is a script, not a person: stop, as a pipeline would
            print(file=sys.stderr)
            return 130
        if task is None:  # Ctrl-D, exit, quit, or Ctrl-C twice at an empty prompt
            return 0
        if task == "/undo":
            log(undo(session.workspace))
        else:
            attempt(session, task)


def undo(workspace: Workspace) -> str:
    """Restore the file touched by the last write to its exact previous bytes (or remove it if created)."""
    if not workspace.journal:
        return "Nothing to undo."
    path, before = workspace.journal.pop()
    if before is None:
        path.unlink(missing_ok=True)
        return f"Removed {workspace.relative(path)} (it was created by the agent)."
    write_atomically(path, before, path.stat().st_mode & 0o7777 if path.exists() else 0o644)
    return f"Restored {workspace.relative(path)}."


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # stdout was closed early (`... | head`): nobody is left to tell
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
