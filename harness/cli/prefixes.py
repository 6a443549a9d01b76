"""The narrower "always" for commands: an answer "a WORDS" to a command's question approves that command and, for
the rest of the session, every command whose first words are WORDS, so that a user who runs the tests thirty
times is asked once, without approving every command there is.

What a prefix approves must be predictable at a glance, so the rule reads characters, not the shell's grammar: a
command holding any of SHELL_OPERATORS, or a line break, is asked again whatever its first words, since those are
what let one line run, substitute or redirect more than one program ("python -m pytest; rm -rf ~",
"python -m pytest $(curl …)", "python -m pytest > ~/.bashrc"). The deny rules (guard.py) and the kernel boundary
(landlock.py) still stand in front of every command approved this way.
"""

from __future__ import annotations

import re

ALWAYS_WORDS = re.compile(r"\s*(?:a|always)\s+(\S.*?)\s*", re.IGNORECASE)  # "a python -m pytest": a prefix
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
v: see a long new file whole (when offered).

"""


def prefix_allows(prefix: str, command: str) -> bool:
    """Whether the user's "a PREFIX" approves `command`: its first words (split at white space) are the prefix's,
    and it holds no SHELL_OPERATORS and no line break. "python -m pytest" approves "python -m pytest -q tests/",
    not "python -m pytestx", nor "python -m pytest; rm -rf ~"."""
    if any(char in command for char in (*SHELL_OPERATORS, "\n", "\r")):
        return False
    return command.split()[:len(prefix.split())] == prefix.split()


def example_prefix(command: str) -> str:
    """The words an example of "a WORDS" names: the program, and its subcommand or module ("python -m pytest")."""
    words = command.split()
    return " ".join(words[:3] if words[1:2] == ["-m"] else words[:2])
