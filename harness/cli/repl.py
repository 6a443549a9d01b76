"""The REPL: its loop, and its slash commands (/help, /reset, /undo, /diff, /show, /tokens, /model, /mode, /sandbox,
/compact, /exit).

A command is one function: its name after `slash_` is the command (`slash_undo` is /undo; no builtin shadowed),
its docstring the help line, and what it returns is the line shown to the user (on stderr, like all activity);
a text taller than the terminal (/show, /diff) goes through the user's pager instead, escaped the same way.
Commands act on the session between tasks; the model hears of what changed its world (an undone write) with the
next task.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import prompt
from harness.cli import display
from harness.cli.display import describe_boundary, describe_tokens, log
from harness.cli.escapes import escape
from harness.cli.terminal import ASKED_EVEN_WITH_YES
from harness.commands.landlock import SETTINGS
from harness.commands.shell import OUTPUT_MAX_BYTES, withheld_variables
from harness.common.counting import count
from harness.common.programs import find_program, refused_copy, trusted_path
from harness.common.seam_types import ChatError, ToolError
from harness.common.text_files import decode, is_text, split_lines
from harness.files.edits import unified_diff
from harness.modes.permissions import describe_mode


def not_done_as_asked(session) -> bool:
    """After an answer, the token line; and True when nobody could be asked (no terminal) and a write, command or
    fetch was refused: the task did not do what was asked, whatever the model says, and a script must be able to
    tell (agent.py's attempt exits NOT_DONE)."""
    log(describe_tokens(session.model))
    unasked = getattr(session.tools.permissions.ask, "unasked", None)
    if not unasked:
        return False
    yes_helps = not all(what.endswith(ASKED_EVEN_WITH_YES) for what in unasked)
    or_yes = ", or with --yes to allow what it asks about" if yes_helps else ""
    log(f"plainagent: not done as asked: {'; '.join(unasked)} needed approval, and nobody could be asked (no "
        f"terminal). Run plainagent at a terminal to be asked{or_yes}.")
    unasked.clear()
    return True


def repl(session, attempt: Callable[[object, str], int]) -> int:
    """Read tasks and slash commands until the user leaves; `attempt(session, task)` runs a task (agent.py).
    The banner's first lines, display.py's describe_start, are shown before the session is built."""
    log("".join(f"Instructions from {given.file}{f' ({given.note})' if given.note else ''}\n"
                for given in session.instructions)
        + "Type a task (end a line with \\ to go on on the next). /help lists the commands; /exit or Ctrl-D leaves.")
    from harness.cli.task_reader import TaskReader  # the REPL's alone: a -p run never reads the prompt

    tasks = TaskReader()
    while True:
        try:
            task = tasks.read()
        except KeyboardInterrupt:  # stdin is a script, not a person: stop, as a pipeline would
            print(file=sys.stderr)
            return 130
        if task is None:  # Ctrl-D, exit, quit, or Ctrl-C twice at an empty prompt
            return leave(session)
        if not is_text(task):
            log("plainagent: that line is not UTF-8 text, so it was not sent.")
        elif not is_command(task):
            getattr(session.tools.permissions.ask, "unasked", []).clear()  # this task's own, for not_done_as_asked()
            attempt(session, task)
        else:
            try:
                if shown := run_slash_command(session, task):  # /help, /undo, /show, /diff, /model, /mode...
                    log(shown)
            except LeaveSession:
                tasks.close()
                return leave(session)


def leave(session) -> int:
    """The REPL's last line, when there is a conversation to come back to: the command that resumes it."""
    path, workspace = session.history.transcript.path, session.config.workspace
    if path is not None and len(session.history.messages) > 1:
        program = sys.argv[0] if sys.argv[0].endswith("agent.py") else "agent.py"  # as the user ran it
        where = "" if Path(workspace).resolve() == Path.cwd().resolve() else f" -C {shlex.quote(str(workspace))}"
        log(f"resume with: python {shlex.quote(program)}{where} --resume {shlex.quote(str(path))}")
    return 0


class LeaveSession(Exception):
    """The user asked to leave (/exit)."""


def is_command(line: str) -> bool:
    """A slash and a word, alone or with an argument: "/undo", "/model gpt-4o". A task may start with a path:
    "/usr/bin/python fails" is one, and so is "/tmp is full, what can I delete?" (a word that is no command and
    names a folder or file here), and so is a block of several lines. Any other slash word is a mistyped command:
    "/hlep" is answered, not sent."""
    match = re.fullmatch(r"/([A-Za-z]+)([ \t].*)?", line)  # one line: a pasted block that starts with "/help" is a task
    if match is None:
        return False
    return match[1].lower() in COMMANDS or not os.path.lexists("/" + match[1])


def run_slash_command(session, line: str) -> str:
    """Run one slash command; returns what to show. An unknown command gets the list of known ones; a failure
    inside one (a model call of /compact, say) is one line, as inside a task, and the session goes on."""
    name, _, argument = line.strip().partition(" ")
    command = COMMANDS.get(name[1:].lower())
    if command is None:
        return (f"Unknown command {name}. Commands: {', '.join('/' + known for known in COMMANDS)} (/help says more). "
                "A task that starts with a slash goes to the model with a word before it.")
    try:
        return command(session, argument.strip())
    except (LeaveSession, KeyboardInterrupt):
        raise
    except ChatError as error:
        return f"plainagent: {name}: {session.tools.workspace.redact(str(error))}"
    except Exception as error:  # a bug of ours: one line, not a traceback that ends the session
        return f"plainagent: internal error in {name}, please report it: {type(error).__name__}: {error}"


def slash_help(session, argument: str) -> str:
    """/help: this list."""
    return "\n".join(" ".join(command.__doc__.split()) for command in COMMANDS.values())  # one line each


def slash_reset(session, argument: str) -> str:
    """/reset: start a new conversation (same model and settings; files and /undo stay as they are)."""
    session.history.reset()
    session.notes.clear()
    return "New conversation: the model remembers nothing of the earlier tasks."


def slash_undo(session, argument: str) -> str:
    """/undo: put back the file the agent's last write changed, byte for byte; again for the write before (this run's
    writes only: not those before a --resume)."""
    undone = session.tools.workspace.undo()  # one line, for the user and the model alike
    if not undone.startswith("Nothing to undo"):
        session.notes.append(f"The user ran /undo: {undone}")
        session.history.transcript.write("note", note=session.notes[-1])  # heard after a --resume too
    return undone + before_resume(session) if undone == "Nothing to undo." else undone


def before_resume(session) -> str:
    """For /undo and /diff with nothing in this run's journal: a resumed session's earlier writes are not in it."""
    return (" (This run resumed the session: the writes of the runs before are not in /undo's journal; git diff "
            "shows them.)" if session.config.resume is not None else "")


def slash_diff(session, argument: str) -> str:
    """/diff: the files the agent wrote in this run (those /undo knows), as one unified diff, each from before its
    first write to what it holds now."""
    ws, firsts = session.tools.workspace, {}
    for write in ws.journal:
        firsts.setdefault(write.path, write.before)  # path -> its bytes before the agent's first write to it
    if not firsts:
        return ("No changes: no write of the agent's is left in this run (none was made, or /undo took it back; "
                f"/diff shows the writes /undo knows: this run's).{before_resume(session)}")
    diff = "".join(file_diff(ws, path, before) for path, before in firsts.items())
    lines = diff.splitlines()
    added, removed = (sum(line[:1] == sign and line[:4] != sign * 3 + " " for line in lines) for sign in "+-")
    n_files = sum(line.startswith("+++ ") for line in lines)
    if not n_files:
        return f"No changes: the {count(len(firsts), 'file')} the agent wrote in this run hold what they held before."
    return paged(f"{count(n_files, 'file')} changed by the agent in this run (+{added:,} -{removed:,} lines), each "
                 "from before the agent's first write to it to what it holds now:", diff.removesuffix("\n"))


def file_diff(ws, path: Path, before: bytes | None) -> str:
    """One file's part of /diff: `diff -u` from `before` (None: it did not exist) to what it holds now."""
    name = ws.relative(path)
    try:
        now = ws.read(path) if ws.stat(path) is not None else None
    except (ToolError, OSError) as error:
        return f"(not shown: {name}: {error})\n"
    if now == before:
        return ""
    old, new = (decode(data) if data is not None else None for data in (before, now))
    if (before is not None and old is None) or (now is not None and new is None):
        return f"Binary files {'a/' + name if before is not None else '/dev/null'} and b/{name} differ\n"
    diff = unified_diff(old.text if old else "", new.text if new else "", name)
    diff = diff.replace(f"--- a/{name}\n", "--- /dev/null\n", 1) if before is None else diff
    diff = diff.replace(f"+++ b/{name}\n", "+++ /dev/null\n", 1) if now is None else diff
    return diff or f"(only the line endings of {name} changed)\n"


def slash_show(session, argument: str) -> str:
    """/show: the last tool result whole (a command's whole output, when the model was given its head and tail)."""
    if display.last_result is None:
        return "No tool result yet in this run."
    text, note = display.last_result, ""
    uncut = session.tools.workspace.uncut
    if uncut is not None and uncut[0] == text:  # the command's output was cut for the model: the user sees it all
        text = uncut[1]
        note = f" (cut for the model, which was given its first and last {OUTPUT_MAX_BYTES // 2:,} bytes)"
    size = len(text.encode("utf-8", errors="surrogatepass"))
    return paged(f"The last tool result, whole: {count(len(split_lines(text)), 'line')}, {size:,} bytes{note}:", text)


def paged(header: str, text: str) -> str:
    """What a command returns to show `header` and a text that may be long: both, or, at a terminal where the
    text is taller than the screen, "" once the header is logged and the text shown in the user's pager ($PAGER,
    else less), escaped as log() escapes it. Without a pager that runs, the text is logged after all, after a line
    saying why. A pager found only in a folder commands may write (programs.py) is not run: it would run as the
    user, outside the walls, whatever a command put there."""
    if not at_terminal() or len(split_lines(text)) + 2 <= shutil.get_terminal_size().lines:
        return f"{header}\n{text}"
    setting = os.environ.get("PAGER", "")
    try:
        words = shlex.split(setting) or ["less"]
    except ValueError:  # an unclosed quote
        return f"(the pager {setting!r} was not run: it cannot be read as a command.)\n{header}\n{text}"
    program = find_program(words[0])
    if program is None:
        if not setting:  # no less: nothing was asked for, so nothing to explain
            return f"{header}\n{text}"
        found = refused_copy(words[0])
        why = (f"{found} lies in a folder commands may write, and plainagent runs no program from there" if found
               else "no such program on PATH")
        return f"(the pager {setting!r} was not run: {why}.)\n{header}\n{text}"
    log(header.removesuffix(":") + " (in the pager: q leaves it):")
    # LESS as git sets it: leave at once when it fits a screen (F), and leave the text on the screen (X). Run as
    # words, not through a shell: the program is the one found above, and what it starts is found on PATH's
    # trusted entries only.
    env = {"LESS": "FRX", **os.environ, "PATH": trusted_path()}
    try:
        pager = subprocess.Popen([program, *words[1:]], stdin=subprocess.PIPE, env=env, encoding="utf-8",
                                 errors="backslashreplace")
    except OSError as error:
        return f"(the pager {setting or 'less'!r} could not run: {error.strerror or error}; here it is:)\n{text}"
    try:
        with pager.stdin:
            pager.stdin.write(escape(text, keep="\n\t") + "\n")
    except (OSError, KeyboardInterrupt):  # the user left the pager before the end (q, or Ctrl-C)
        pass
    while True:
        try:
            pager.wait()
            return ""
        except KeyboardInterrupt:  # Ctrl-C is the pager's (less stops a search with it): wait until it ends
            continue


def at_terminal() -> bool:
    """Whether a person reads this at a terminal, where a pager can take the screen."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def slash_tokens(session, argument: str) -> str:
    """/tokens: the requests and tokens of this session so far, and whether the server reported them."""
    counts, n_requests, n_estimated = session.model.tokens, session.model.n_requests, session.model.n_estimated
    if not n_requests:
        return "No requests yet in this run."
    which = ("as the server reported them" if not n_estimated else "estimated: the server reported none"
             if n_estimated == n_requests else f"{n_estimated} of the requests estimated: the server reported none")
    return (f"{n_requests:,} request{'s' * (n_requests != 1)}: {counts['prompt_tokens']:,} prompt + "
            f"{counts['completion_tokens']:,} completion tokens ({which}).")


def slash_model(session, argument: str) -> str:
    """/model NAME: use model NAME for the next requests (without NAME: say which is in use)."""
    if not argument:
        return f"The model is {session.model.client.model}. /model NAME changes it."
    if any(char.isspace() or not char.isprintable() for char in argument):
        return f"Not changed: a model name has no spaces ({argument!r})."
    session.model.client.model = session.config.model = argument
    session.history.transcript.write("model", model=argument)  # so that --resume can say it goes on without it
    return f"The next requests go to {argument}."


def slash_mode(session, argument: str) -> str:
    """/mode NAME: how much to ask before writes and commands: ask, read-only, edits or yes (without NAME: which)."""
    permissions = session.tools.permissions
    before, line = permissions.mode, permissions.switch(argument)
    if permissions.mode != before:  # the model is told, and the system prompt follows (read-only has fewer tools)
        new_prompt = prompt.render_system_prompt(session.tools.offered(), session.instructions)
        session.history.messages[0] = {"role": "system", "content": new_prompt}
        session.notes.append(f"The user switched the session to mode {argument}: it {describe_mode(argument)}.")
        session.history.transcript.write("mode", mode=argument)  # so that --resume can say it does not take it up
    remembered = getattr(permissions.ask, "remembered", None)  # PLAINAGENT_ALLOW: what the user keeps approved
    if remembered and remembered.describe() and not argument:
        line += f"\nIn every session, {remembered.describe()}."
    return line


def slash_sandbox(session, argument: str) -> str:
    """/sandbox: what commands can touch: where they may write, what they may not read, the network."""
    boundary, config = session.tools.workspace.boundary, session.config
    line = describe_boundary(boundary, config)
    if boundary is not None and boundary.abi:
        boundary.look_again()  # what the search found so far, as the next command would have it
        home = str(Path.home())
        short = sorted(str(path).replace(home, "~", 1) if str(path).startswith(home + "/") else str(path)
                       for path in boundary.present())
        more = f", and {len(short) - SHOWN_HIDDEN:,} more" if len(short) > SHOWN_HIDDEN else ""
        temp = boundary.tmpdir or "a folder made at the first command"
        writable = ", ".join(map(str, [boundary.workspace, *boundary.git, *boundary.extra]))
        shm = "/dev/shm (the session's own)" if boundary.namespaces else "/dev/shm"
        line += "\n".join(["", f"  may write in: {writable}, TMPDIR ({temp}), {shm}",
                           f"  may not read: {', '.join(short[:SHOWN_HIDDEN]) or 'nothing found'}{more}; /dev but its "
                           "common devices", *workspace_secrets(boundary),
                           "  network: " + ("allowed" if boundary.network else "none, localhost included"),
                           "  " + boundary.afterwards()])
    if withheld := withheld_variables(os.environ, session.tools.workspace.passed_env):
        line += (f"\n  not passed to commands: {', '.join(withheld)} (their names say credentials; "
                 "PLAINAGENT_SANDBOX_ENV=NAME passes one)")
    return (f"{line}\n  to change: {SETTINGS}, in the .env beside agent.py ({config.env_file}) or the environment; "
            "plainagent takes them up when it starts again (--resume goes on with this session).")


SHOWN_HIDDEN = 20  # paths /sandbox names of what commands may not read; the count of the rest


def workspace_secrets(boundary) -> list[str]:
    """/sandbox's lines on the search for secret files, and on the workspace's own."""
    if boundary.search is None:
        return []
    search = boundary.search
    names = ", ".join(str(path.relative_to(boundary.workspace)) for path in search.inside()) or "none found"
    if boundary.namespaces:
        own = f"  the workspace's own secret files ({names}): unreadable to commands (bound over)"
    elif boundary.home_inside():
        own = f"  the workspace's own secret files ({names}): unreadable to commands (Landlock's)"
    else:
        own = (f"  the workspace's own secret files ({names}): readable to commands here, the tools still refuse them "
               "(no namespaces: Landlock alone would forbid every new file beside them)")
    passed = f"; PLAINAGENT_SANDBOX_READ lets these be read: {', '.join(map(str, search.passed))}" if search.passed \
        else "; PLAINAGENT_SANDBOX_READ=PATH lets one be read"
    return ["  " + line for line in search.described()] + [own + passed]


def slash_compact(session, argument: str) -> str:
    """/compact: shrink the history now: older tool results become stubs, older turns a summary."""
    try:
        return session.history.compact(force=True) or "Nothing to compact yet."
    except KeyboardInterrupt:
        return "Interrupted; the history is unchanged."


def slash_exit(session, argument: str) -> str:
    """/exit: leave (so do exit, quit and Ctrl-D)."""
    raise LeaveSession


# name -> function, in the order /help lists them
COMMANDS = {command.__name__.removeprefix("slash_"): command for command in (slash_help, slash_reset, slash_undo,
            slash_diff, slash_show, slash_tokens, slash_model, slash_mode, slash_sandbox, slash_compact, slash_exit)}
