"""The narrower "always" for commands: an answer "a WORDS" to a command's question approves that command and, for
the rest of the session, every command whose first words are WORDS, so that a user who runs the tests thirty
times is asked once, without approving every command there is.

What a prefix approves must be predictable at a glance, so the rule reads characters, not the shell's grammar: a
command holding any of SHELL_OPERATORS, or a line break, is asked again whatever its first words, since those are
what let one line run, substitute or redirect more than one program ("python -m pytest; rm -rf ~",
"python -m pytest $(curl …)", "python -m pytest > ~/.bashrc"). The deny rules (guard.py) and the kernel boundary
(landlock.py) still stand in front of every command approved this way.

The lasting "always" is the same rule with prefixes the user keeps: PLAINAGENT_ALLOW="python -m pytest, git
status" (the environment, or the .env beside agent.py; never a project's .env, which can only ask more), which
`Remembered` holds. After an "a WORDS" answer the question offers to write the words there.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ALWAYS_WORDS = re.compile(r"\s*(?:a|always)\s+(\S.*?)\s*", re.IGNORECASE)  # "a python -m pytest": a prefix
PREFIXED = "command starting with "  # an "a WORDS" answer's scope among TerminalConfirm's "always" answers
# What lets a shell line run, substitute or redirect more than one program: a command holding any of them (quoted
# too: the rule reads characters, not the shell's grammar, so that a person can check it at a glance) or a line
# break is never approved by a prefix.
SHELL_OPERATORS = (";", "&", "|", "<", ">", "(", ")", "$", "`")
ANSWERS_HELP = """
y: yes, this once.
n, or any words: no; your words go to the model as the reason.
a: always, for the rest of this session: every command (for an edit, every edit; for a fetch, that host).
a WORDS: this command, and for the rest of this session every command whose first words are WORDS
  ("a python -m pytest" approves "python -m pytest -q tests/"), unless it holds ; & | < > ( ) $ ` or a line break:
  such a command can run or redirect more than one program, so it is asked again. Deny rules still apply.
  You are then offered to remember WORDS for every session (PLAINAGENT_ALLOW in the .env beside agent.py).
v: see a long new file whole (when offered).

"""


def prefix_allows(prefix: str, command: str) -> bool:
    """Whether the user's "a PREFIX" approves `command`: its first words (split at white space) are the prefix's,
    and it holds no SHELL_OPERATORS and no line break. "python -m pytest" approves "python -m pytest -q tests/",
    not "python -m pytestx", nor "python -m pytest; rm -rf ~"."""
    return not chains(command) and words(command)[:len(words(prefix))] == words(prefix)


def chains(command: str) -> bool:
    """Whether a command holds a character that could run, feed or redirect another program: one of
    SHELL_OPERATORS, or a line break."""
    return any(char in command for char in (*SHELL_OPERATORS, "\n", "\r"))


def words(line: str) -> list[str]:
    """A command line's words as the shell splits them: at spaces and tabs only (str.split would also split at a
    no-break space, which the shell keeps inside a word: "echo\u00a0x" is not the program echo)."""
    return re.findall(r"[^ \t]+", line)


def given(answer: str) -> str | None:
    """The words of an answer "a WORDS" (or "always WORDS"), as one space-separated prefix; None for another."""
    found = ALWAYS_WORDS.fullmatch(answer)
    return " ".join(words(found[1])) if found else None


def approved(always: set[str], command: str) -> bool:
    """Whether one of the "a WORDS" answers among a session's "always" answers approves `command`."""
    return any(prefix_allows(scope.removeprefix(PREFIXED), command) for scope in always if scope.startswith(PREFIXED))


def approving(prefix: str) -> str:
    """What the user is told once "a PREFIX" is taken."""
    return (f"(approving, for the rest of this session, each command whose first words are `{prefix}` and that "
            f"holds none of {' '.join(SHELL_OPERATORS)} nor a line break)\n")


def not_approved(prefix: str, command: str) -> str:
    """Why "a PREFIX" does not approve `command`, before the question is asked again."""
    if chains(command):
        return (f"(a WORDS approves only commands that hold none of {' '.join(SHELL_OPERATORS)} nor a line break, "
                "and this one does: answer y to run it this once, or n)\n")
    return (f"(this command does not start with `{prefix}`: a WORDS approves the commands whose first words are "
            "WORDS; answer again, or ? for help)\n")


def narrower(command: str) -> str:
    """After a plain "a" to a command: how to approve fewer commands next time."""
    return f"to approve only the commands that start with some words, answer a WORDS, e.g. a {example_prefix(command)}"


def example_prefix(command: str) -> str:
    """The words an example of "a WORDS" names: the program, and its subcommand or module ("python -m pytest")."""
    first = words(command)
    return " ".join(first[:3] if first[1:2] == ["-m"] else first[:2])


VARIABLE = "PLAINAGENT_ALLOW"
REMEMBER_QUESTION = "Remember `{prefix}` for every session ({variable} in {file})? [y]es / [n]o: "


@dataclass
class Remembered:
    """PLAINAGENT_ALLOW: the first words of the commands that run without a question in every session (matched
    as an "a WORDS" answer is), and where a new one is written: the user's own .env, beside agent.py."""

    prefixes: list[str] = field(default_factory=list)
    env_file: Path | None = None  # the .env beside agent.py; None: nowhere to remember (tests, a sub-agent)
    source: str = ""  # where PLAINAGENT_ALLOW came from: "the environment", the .env's path, or "" (unset)

    def allows(self, command: str) -> bool:
        return any(prefix_allows(prefix, command) for prefix in self.prefixes)

    def can_remember(self, prefix: str) -> bool:
        """Whether the question may offer to remember `prefix`: there is a .env to write it in that would be read
        (PLAINAGENT_ALLOW in the environment comes first), and the list can hold it (commas separate it)."""
        return (self.env_file is not None and prefix not in self.prefixes and "," not in prefix
                and self.source != "the environment")

    def remember(self, prefix: str) -> str:
        """Write `prefix` into the .env beside agent.py (`write_setting`: its other bytes, the key's line among
        them, are kept as they are); the line that says what became of it."""
        if "," in prefix:  # the list's separator: it would come back as two prefixes
            return f"(not remembered: {VARIABLE} separates its prefixes with commas, and `{prefix}` holds one)\n"
        if self.source == "the environment":  # it comes before the .env: a value written there would not be read
            return (f"(not remembered: {VARIABLE} is set in your environment, which comes before {self.env_file}; "
                    f"add `{prefix}` to it there)\n")
        try:
            write_setting(self.env_file, VARIABLE, ", ".join([*self.prefixes, prefix]))
        except OSError as error:
            return f"(not remembered: {self.env_file}: {error.strerror or error})\n"
        self.prefixes.append(prefix)
        self.source = str(self.env_file)
        return f"(remembered in {self.env_file}, as {VARIABLE}; /mode lists it, and that line is where to forget it)\n"

    def describe(self) -> str:
        """For the banner and /mode: what runs without a question, and which setting says so; "" for nothing."""
        if not self.prefixes:
            return ""
        listed = ", ".join(f"`{prefix}`" for prefix in self.prefixes)
        return f"commands starting {listed} run without a question ({VARIABLE} from {self.source})"


def write_setting(path: Path, variable: str, value: str) -> None:
    """Set `variable` to `value` in the .env at `path` (or the file a link there leads to), every other line as it
    was, byte for byte: their line endings, comments, the key's line. The last line that sets it is replaced
    whole, its `export` kept and a comment on it not (as dotenv reads, the last one counts), else one is added.
    Quoted as dotenv reads a single-quoted value (\\ and \\' escaped). Written whole, then put in place
    (os.replace), with the file's mode: a crash leaves the old file or the new."""
    path = Path(os.path.realpath(path))
    data = path.read_bytes() if path.exists() else b""
    quoted = "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    setting = rb"^([ \t]*(?:export[ \t]+)?)" + variable.encode() + rb"[ \t]*=[^\r\n]*"
    found = list(re.finditer(setting, data, re.MULTILINE))
    if found:
        line = found[-1][1] + f"{variable}={quoted}".encode()
        data = data[:found[-1].start()] + line + data[found[-1].end():]
    else:
        newline = b"\r\n" if b"\r\n" in data else b"\n"
        data += (newline if data and not data.endswith(b"\n") else b"") + f"{variable}={quoted}".encode() + newline
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o600  # a new one holds what only you read
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with open(fd, "wb") as file:
            file.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
