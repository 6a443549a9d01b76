"""Reading a command line as the shell reads it, for the guard rails (guard.py) to judge what it does.

A rule matched on the text as typed is beaten by its spelling: quotes (`s'u'do`, `$'\\x73udo'`), a variable
(`s=sudo; $s`), a wrapper (`nohup`, `taskset 1`), a folder (`/usr/bin/sud?`), a `cd` before a relative path.
So the line is read as the shell reads it: words with their quoting undone, `~`, variables and braces
expanded, globs matched against the real files, the directory each command runs in after any `cd`, and what
runs inside `$(...)`, `<(...)`, backticks and words that hold a command line of their own (`bash -c "..."`).
Every word may name a program that runs (`calls`), unless the command only prints or searches its words.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import posixpath
import re
from dataclasses import dataclass

# A shell token: blanks, a comment, an operator (1), a word with its quotes (2), or a quote left open (3).
TOKEN = (r"""(?s)[ \t]+|(?<![^\s;&|<>()\0])#[^\n]*|(&&|\|\||;;|\|&|<<<|<<-?|>>|&>>?|[<>]&|>\||<>|[;&|<>()\n])"""
         r"""|((?:\$'(?:\\.|[^'\\])*'|'[^']*'|"(?:\\.|[^"\\])*"|\\.|[^\s;&|<>()'"\\])+)|(['"])""")
# Quoting: $'\x73udo' (escapes decoded), 'single', "double" or $"double", and a backslash before one character.
QUOTED = r"""(?s)\$'((?:\\.|[^'\\])*)'|'([^']*)'|\$?"((?:\\.|[^"\\])*)"|\\(.)"""
ESCAPE = r"(?s)\\(?:(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8})|([0-7]{1,3})|(.))"
# $(...), <(...), >(...) (three levels of parentheses at most) and `...`: text the shell runs first
SUBSTITUTION = r"[$<>]\(((?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\)|`([^`]*)`"
VARIABLE = r"\$(?:(\w+)|\{(\w+)(:?[-=?])?([^}]*)\})"  # $X, ${X}, ${X:-default}, ${X:?}
BRACES = r"(?<!\$)\{([^{}]*,[^{}]*)\}"  # {a,b}: a word for each (not ${X})
GLOB = r"[*?[]"
ASSIGNMENT = r"(?s)([A-Za-z_]\w*)=(.*)"
KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"}
PRINTS_ITS_WORDS = {"echo", "printf", "grep", "egrep", "fgrep", "rg", "ag", "ack"}
MAX_DEPTH = 4  # command lines inside command lines; deeper than this is not a mistake
# What reading one line may cost: simple commands, brace groups expanded in a word, folders a glob looks in. A line
# past them (20,000 `cd a;`, nested brace substitutions, `/*/*/*/*/*/*/*/x` over the whole disk) is no mistake either,
# and held the question back for minutes: it is refused as too complex to check (guard.py), in every mode.
MAX_COMMANDS = 2_000
MAX_BRACE_GROUPS = 6  # 2**6 = 64 words: as many as a word expands to
MAX_GLOB_FOLDERS = 2_000


class TooComplex(Exception):
    """The line is past what reading it may cost (MAX_COMMANDS, MAX_GLOB_FOLDERS)."""


class Word(str):
    subs: list[str] = []  # a shell word, quoting undone; subs: the text of each $(...), `...` or <(...) in it


@dataclass
class Command:
    """One simple command, as the shell will run it."""

    words: list[Word]  # with the targets of its redirections: `cat x > /dev/sda` writes to a disk all the same
    cwd: str | None  # where it runs, after any `cd` before it; None when not known
    variables: dict[str, str | None]  # set earlier in the line; None: by `for` or `read`, value unknown
    text: str  # the command line it is part of
    piped: bool  # its input is a pipe (`... | sh`)
    calls: list[tuple[str, int]] | None = None  # (program, position of its word): see `calls`
    downloaded: set[str] | None = None  # None, or the names a download in the line may be saved as (curl -o x)

    def runs(self, pattern: str) -> list[tuple[str, list[Word]]]:
        """(program, arguments) for each program it may run whose name matches `pattern` (a regular expression)."""
        matches = re.compile(pattern).fullmatch
        return [(program, self.words[at + 1:]) for program, at in self.calls if matches(program)]


def read(text: str, cwd: str | None, variables: dict, line: list[Command], depth: int = 0,
         looked: list[int] | None = None) -> list[Command]:
    """`line` with every simple command of a command line added, in order, with those in its substitutions and
    in its words that hold a command line of their own; each knows the directory it runs in and the variables.
    `looked`: the folders the line's globs have looked in so far, one count for the whole line."""
    looked = [0] if looked is None else looked
    text, subs, words, piped = text.replace("\\\n", ""), [], [], False  # a continued line is one line
    # Each substitution stands aside as \0N\0 while the words are read, so its quotes and spaces stay its own.
    hidden = re.sub(SUBSTITUTION, lambda match: subs.append((match[0], (": | " if match[0][0] == ">" else "") + (
        match[2] if match[1] is None else match[1]))) or f"\0{len(subs) - 1}\0", text)  # >(sh) reads a pipe
    for match in re.finditer(TOKEN, hidden + ";"):
        if match[3]:  # a quote left open: the shell refuses the line; read it without quotes, so it is checked
            return read(re.sub("['\"]", "", text), cwd, variables, line, depth, looked)
        raw = match[2] or ""
        unquoted = re.sub("\0(\\d+)\0", lambda n: subs[int(n[1])][0], re.sub(QUOTED, unquote, raw))
        for word in braces(unquoted) if raw else []:
            words.append(Word(word))
            words[-1].subs = [subs[int(n)][1] for n in re.findall("\0(\\d+)\0", raw)]
        if not match[1] or re.match("[<>]|&>", match[1]):  # a word, a blank, a comment; a redirection goes on
            continue
        if words:
            if len(line) >= MAX_COMMANDS:
                raise TooComplex(f"more than {MAX_COMMANDS:,} simple commands")
            command = Command(words, cwd, variables, text, piped)
            command.calls = calls(command, looked)
            line.append(command)
            if assignments := [match for match in (re.fullmatch(ASSIGNMENT, word) for word in words) if match]:
                variables = {**variables, **{m[1]: expand(m[2], command) for m in assignments}}
            if words[0] in ("for", "read", "select"):  # their variables take values not known here
                variables = {**variables, **dict.fromkeys(itertools.takewhile(lambda word: word != "in", words[1:]))}
            if words[0] in ("cd", "pushd"):  # `cd $UNSET` goes home, as `cd` does
                target = next((word for word in words[1:] if not word.startswith("-")), "~")
                cwd = path_of(target if expand(target, command) != "" else "~", command)
                variables = {**variables, "PWD": cwd}  # the shell's own, not plainagent's
            prints = len(command.calls) == 1 and command.calls[0][0] in PRINTS_ITS_WORDS
            nested = [sub for word in words for sub in word.subs] + [
                word for word in words if not prints and re.search(r"[\s;&|<>()]", word)]
            if prints and command.calls[0][0] in ("echo", "printf") and (depth or match[1] in ("|", "|&")):
                nested.append(" ".join(words[1:]))  # what it prints may be run: echo "sudo id" | sh, "$(printf ...)"
            for text_inside in dict.fromkeys(nested) if depth < MAX_DEPTH else []:  # a brace's copies read once
                read(text_inside, command.cwd, variables, line, depth + 1, looked)
            words = []
        piped = match[1] in ("|", "|&") or match[1] == "(" and piped
    return line


def unquote(quoted: re.Match) -> str:
    ansi_c, single, double, escaped = quoted.groups()
    if ansi_c is not None:  # $'\x73udo' is sudo
        return re.sub(ESCAPE, lambda e: chr(min(int(e[1][1:], 16), 0x10FFFF)) if e[1] else chr(int(e[2], 8)) if e[2]
                          else e[3], ansi_c)
    return re.sub(r'\\([$`"\\])', r"\1", double) if double is not None else single or escaped or ""


def braces(word: str, depth: int = 0) -> list[str]:
    """"{a,b}c" -> ["ac", "bc"], the words brace expansion makes (at most 64, from the first MAX_BRACE_GROUPS)."""
    match = re.search(BRACES, word) if depth < MAX_BRACE_GROUPS else None
    return list(itertools.islice((expanded for part in match[1].split(",") for expanded in braces(
        word[:match.start()] + part + word[match.end():], depth + 1)), 64)) if match else [word]


def calls(command: Command, looked: list[int] | None = None) -> list[tuple[str, int]]:
    """(program, position) for each word that may name a program the shell runs, the first place each name
    is met: every word after leading assignments and keywords (`nohup sudo`), named without its folder once
    expanded (`/usr/bin/sud?` is `sudo` where that file exists; `alias s=sudo` names `sudo`); only the first
    when it prints or searches its words (`grep sudo`). A `.` runs a script only as the first word (`jq .`)."""
    words, found = command.words, {}
    start = next((i for i, word in enumerate(words) if word not in KEYWORDS and not re.match(r"\w+=", word)), 0)
    end = start + 1 if start < len(words) and words[start].rsplit("/", 1)[-1] in PRINTS_ITS_WORDS else len(words)
    for at in [at for at in range(start, end) if words[at] != "." or at == start]:
        for value in {expand(part, command) for part in (words[at], words[at].split("=", 1)[-1])} - {None}:
            paths = bounded_glob(value, command.cwd, looked or [0]) if re.search(GLOB, value) else []
            for path in paths or [value]:
                found.setdefault(path.rsplit("/", 1)[-1], at)
    return list(found.items())


def bounded_glob(pattern: str, cwd: str | None, looked: list[int], limit: int = 50) -> list[str]:
    """The first `limit` paths a glob matches, as the shell would list them. `looked` counts the folders looked in
    for the whole line: past MAX_GLOB_FOLDERS, TooComplex (glob.iglob walked the whole disk for `/*/*/*/*/*/*/*/x`,
    and a line of a hundred smaller such patterns took as long)."""
    parts = pattern.split("/")
    found, folders = [], [("/" if pattern.startswith("/") else "", parts[1:] if not parts[0] else parts)]
    while folders and len(found) < limit:
        prefix, rest = folders.pop(0)
        part, rest = rest[0], rest[1:]
        if not re.search(GLOB, part):
            names = [part]
        else:
            looked[0] += 1
            if looked[0] > MAX_GLOB_FOLDERS:
                raise TooComplex(f"globs that look in more than {MAX_GLOB_FOLDERS:,} folders")
            try:
                names = sorted(name for name in os.listdir(os.path.join(cwd or ".", prefix or "."))
                               if fnmatch.fnmatchcase(name, part) and (part.startswith(".") or name[0] != "."))
            except OSError:  # no such folder, or one we may not read
                continue
        for name in names:
            path = prefix + name
            if not rest:
                if os.path.lexists(os.path.join(cwd or ".", path)):
                    found.append(path)
            elif part == "" or os.path.isdir(os.path.join(cwd or ".", path)):
                folders.append((path + "/", rest))
    return found[:limit]


def path_of(word: str, command: Command) -> str | None:
    """The absolute path a word names where the command runs, `..` undone; None when not known here."""
    value = expand(word, command)
    if not value or not (value.startswith("/") or command.cwd):  # "": an unset $X is no path at all
        return None
    return "/" + posixpath.normpath(posixpath.join(command.cwd or "/", value)).lstrip("/")


def expand(word: str, command: Command) -> str | None:
    """The word as the shell passes it on: ~ and variables ($X, ${X}, ${X:-default}) replaced by their value
    in the line or the environment, an unset one by nothing; None when that cannot be known here (the output
    of a substitution, a variable set by `for`, `${X:?}` of an unset X, which stops the command)."""
    if not re.search(r"[$`~]", word):
        return word

    def value(match: re.Match) -> str:  # "\0" where the value is not known
        name, operator = match[1] or match[2], match[3] or ""
        found = command.variables[name] if name in command.variables else os.environ.get(name, "")
        return "\0" if found is None or "?" in operator and not found else found or match[4] if operator else found

    expanded = re.sub(VARIABLE, value, word)
    return None if "\0" in expanded or re.search(r"[$<>]\(|`", word) else os.path.expanduser(expanded)
