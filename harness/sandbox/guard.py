"""Command guard rails: the deny rules every command the model asks for is checked against, in every mode.

A guard rail against accidents, not a sandbox: it stops a model that types `sudo`, wipes a home directory or
force-pushes, before the user is asked (and in --mode yes). The rules say what a command does, not how it is
spelled: the line is read as the shell reads it (quoting, variables, `~`, `cd`, braces, globs), with what runs
inside `$(...)`, `<(...)` and `bash -c "..."`; and since any program can run another (`nohup`, `taskset 1`,
`xargs -I {}`), every word is taken as a program that may run, unless the command starts with one that prints
or searches its words (echo, grep). The price is a few false refusals, each with a clear message.
"""

from __future__ import annotations

import fnmatch
import functools
import glob
import itertools
import os
import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

# A shell token: blanks, a comment, an operator (1), a word with its quotes (2), or a quote left open (3).
TOKEN = re.compile(r"""[ \t]+|(?<![^\s;&|<>()\0])#[^\n]*|(&&|\|\||;;|\|&|<<<|<<-?|>>|&>>?|[<>]&|>\||<>|[;&|<>()\n])"""
                   r"""|((?:\$'(?:\\.|[^'\\])*'|'[^']*'|"(?:\\.|[^"\\])*"|\\.|[^\s;&|<>()'"\\])+)|(['"])""", re.DOTALL)
# Quoting: $'\x73udo' (escapes decoded), 'single', "double" or $"double", and a backslash before one character.
QUOTED = re.compile(r"""\$'((?:\\.|[^'\\])*)'|'([^']*)'|\$?"((?:\\.|[^"\\])*)"|\\(.)""", re.DOTALL)
ESCAPE = re.compile(r"\\(?:(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8})|([0-7]{1,3})|(.))", re.DOTALL)
# $(...), <(...), >(...) (three levels of parentheses at most) and `...`: text the shell runs first
SUBSTITUTION = re.compile(r"[$<>]\(((?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\)|`([^`]*)`")
VARIABLE = re.compile(r"\$(?:(\w+)|\{(\w+)(:?[-=?])?([^}]*)\})")  # $X, ${X}, ${X:-default}, ${X:?}
BRACES = re.compile(r"(?<!\$)\{([^{}]*,[^{}]*)\}")  # {a,b}: a word for each (not ${X})
GLOB = re.compile(r"[*?[]")
ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)=(.*)", re.DOTALL)
# A shell function that runs itself (`:(){ :|:& };:`, `f(){ f & f; }; f`, `function f { f|f& }`).
RECURSIVE_FUNCTION = re.compile(r"(?:\bfunction\s+([^\s;&|(){}]+)\s*(?:\(\s*\))?|([^\s;&|(){}]+)\s*\(\s*\))\s*"
                                r"[{(][^})]{0,500}?(?<![^\s;&|{(])(?:\1|\2)(?![^\s;&|)}])")
KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"}
PRINTS_ITS_WORDS = {"echo", "printf", "grep", "egrep", "fgrep", "rg", "ag", "ack"}
DOWNLOADERS = {"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "nc"}
MAX_DEPTH = 4  # command lines inside command lines; deeper than this is not a mistake


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


@dataclass
class Rule:
    """A deny rule: its name (shown to the model and the user), and whether a simple command matches it."""

    name: str
    matches: Callable[[Command], bool]


# --- the default rules ---


def removes_everything(command: Command) -> bool:
    """rm -r (-fR, --recursive, or any start of it: GNU rm takes `--recur`), find -delete or -exec rm, of
    /, a home, a folder above one, or everything directly under / or a home (`/*`, `~/.*`, `*` in ~)."""
    for program, args in command.runs("rm|find"):
        end = args.index("--") if "--" in args else len(args)
        targets = [arg for arg in args[:end] if not arg.startswith(("-", "(", "!"))] + args[end + 1:]
        recursive = any(re.fullmatch(r"-\w*[rR]\w*", arg) or len(arg) > 2 and "--recursive".startswith(arg)
                        for arg in args[:end])
        if program == "find":  # where it starts: its first word
            recursive, targets = "-delete" in args or "rm" in args, targets[:1]
        for target in targets if recursive else []:
            path = path_of(target, command) or "."
            while GLOB.search(posixpath.basename(path)):  # "/*/*" and "~/.*" stand for everything under / and ~
                path = posixpath.dirname(path)
            homes = {os.path.expanduser("~"), os.path.expanduser(target.split("/")[0])}  # and ~root
            if any(home == path or home.startswith(path.rstrip("/") + "/") for home in homes):
                return True
    return False


def writes_a_disk(command: Command) -> bool:
    """A program that formats or partitions disks, or a disk device named anywhere in the command (`dd
    of=/dev/sda`, `> /dev/sda`, `cp x.img /dev/sdb`), `..` and a link followed: /dev/null and such are fine."""
    formats = r"mkfs.*|mk\w*fs|newfs\w*|mke2fs|mkswap|mformat|wipefs|\w*fdisk|parted|sgdisk|blkdiscard"
    harmless = r"/dev/(null|zero|full|u?random|std(in|out|err)|tty|ptmx|(fd|pts|shm)/.*)"
    paths = {os.path.realpath(path) if os.path.islink(path) else path for word in set(command.words)
             if (path := path_of(re.sub(r"^-*[\w-]+=", "", word), command))}  # of=/dev/sda, --device=/dev/sda
    return bool(command.runs(formats)) or any(
        path.startswith("/dev/") and not re.fullmatch(harmless, path) for path in paths)


@functools.lru_cache(maxsize=64)  # one answer for a line, not one for each of its commands
def fork_bomb(text: str) -> bool:
    """A shell function that runs itself, or fork in a loop (`perl -e "fork while 1"`, `while True: os.fork()`)."""
    return bool(RECURSIVE_FUNCTION.search(text) or "fork" in text and re.search(r"\b(while|until|for|loop)\b", text))


def runs_a_download(command: Command) -> bool:
    """A download in the line, fed to a shell or interpreter: piped into one reading its code from stdin
    (`curl … | sh`), in a substitution it runs (`bash -c "$(curl …)"`, `eval`, `bash <(curl …)`, `<<< "$(curl
    …)"`), or saved and then run (`curl -o x.sh …; sh x.sh`, `./x.sh`)."""
    interpreter = r"\w*sh\d*|python[\d.]*|pypy[\d.]*|perl|ruby|node|deno|bun|php|lua\w*|eval|source|\."
    if command.downloaded is None:
        return False
    if any("/" in command.words[at] and name in command.downloaded - DOWNLOADERS for name, at in command.calls[:1]):
        return True  # curl -o tool …; ./tool (a name without a folder is looked up in PATH instead)
    for _, args in command.runs(interpreter):
        script = next((arg for arg in args if not arg.startswith("-") or arg == "-"), "")
        reads_stdin = command.piped and (script in ("", "-", "/dev/stdin") or "-s" in args)
        if reads_stdin or any(arg.subs for arg in args) or posixpath.basename(script) in command.downloaded:
            return True
    return False


def force_pushes(command: Command) -> bool:
    """git push with --force (or any start of it), -f among short flags, --force-with-lease, --mirror or a
    +refspec, wherever these stand among git's words: an alias or a config value set with -c included."""
    for _, args in command.runs("git"):
        parts = [part for arg in args for part in re.split(r"[\s=]+", arg)]
        if any(part == "push" or part.endswith(".push") for part in parts) and any(
                part.startswith(("+", "--force")) or re.fullmatch(r"-[a-zA-Z]*f[a-zA-Z]*", part) or len(part) > 2
                and any(option.startswith(part) for option in ("--force-with-lease", "--mirror")) for part in parts):
            return True
    return False


DEFAULT_RULES = [
    Rule("sudo (running as root: sudo, sudoedit, doas, su, pkexec, run0)",
         lambda command: bool(command.runs("sudo|sudoedit|doas|su|pkexec|run0"))),
    Rule("recursive removal of /, ~ or everything directly under them", removes_everything),
    Rule("fork bomb (a function or loop that starts copies of itself without end)",
         lambda command: fork_bomb(command.text)),
    Rule("running a download (curl … | sh, bash <(curl …), curl -o x.sh … && sh x.sh)", runs_a_download),
    Rule("formatting or writing a disk (mkfs, wipefs, fdisk, dd of=/dev/sda, > /dev/sda)", writes_a_disk),
    Rule("git push --force (or -f, --force-with-lease, --mirror, +refspec)", force_pushes),
]


def parse_rules(text: str) -> list[Rule]:
    """PLAINAGENT_DENY's rules, separated by `;`: "terraform destroy; npm publish" -> two rules. A command
    matches when a program in it matches the first word (a shell-style pattern) and each other word matches
    one of that program's arguments. Raises ValueError if one cannot be read (an unbalanced quote)."""
    return [Rule(f"the PLAINAGENT_DENY rule \"{' '.join(words)}\"", lambda command, words=words: any(
        all(any(fnmatch.fnmatchcase(arg, word) for arg in args) for word in words[1:])
        for _, args in command.runs(fnmatch.translate(words[0].rsplit("/", 1)[-1]))))  # by name, not folder
        for words in map(shlex.split, text.split(";")) if words]


def refusal(rule: Rule) -> str:
    """The result the model gets for a denied command."""
    return (f"Refused by plainagent's guard rail: {rule.name}. This command is never run, in any mode. (Every "
            "word is taken as a program that may run: if what matched is only text here, such as a search "
            "pattern or a commit message, use search_files or write the text differently.) Otherwise do not "
            "try to get around the rule; find another way, or tell the user the command is needed so they can "
            "run it themselves.")


# --- reading a command line ---


def denied_by(command: str, rules: list[Rule], cwd: str | None = None) -> Rule | None:
    """The first rule the command line matches, or None. `cwd`: where it runs (the workspace root)."""
    line = read(command, cwd or os.getcwd(), {"PWD": cwd or os.getcwd()}, [])
    downloads = [c for c in line if any(program in DOWNLOADERS for program, _ in c.calls)]
    saved = {posixpath.basename(word) for download in downloads for word in download.words}  # curl -o x.sh, > x.sh
    for c in line if downloads else []:
        c.downloaded = saved
    return next((rule for rule in rules for c in line if rule.matches(c)), None)


def read(text: str, cwd: str | None, variables: dict, line: list[Command], depth: int = 0) -> list[Command]:
    """`line` with every simple command of a command line added, in order, with those in its substitutions and
    in its words that hold a command line of their own; each knows the directory it runs in and the variables."""
    text, subs, words, piped = text.replace("\\\n", ""), [], [], False  # a continued line is one line
    # Each substitution stands aside as \0N\0 while the words are read, so its quotes and spaces stay its own.
    hidden = SUBSTITUTION.sub(lambda match: subs.append((match[0], (": | " if match[0][0] == ">" else "") + (
        match[2] if match[1] is None else match[1]))) or f"\0{len(subs) - 1}\0", text)  # >(sh) reads a pipe
    for match in TOKEN.finditer(hidden + ";"):
        if match[3]:  # a quote left open: the shell refuses the line; read it without quotes, so it is checked
            return read(re.sub("['\"]", "", text), cwd, variables, line, depth)
        raw = match[2] or ""
        for word in braces(re.sub("\0(\\d+)\0", lambda n: subs[int(n[1])][0], QUOTED.sub(unquote, raw))) if raw else []:
            words.append(Word(word))
            words[-1].subs = [subs[int(n)][1] for n in re.findall("\0(\\d+)\0", raw)]
        if not match[1] or re.match("[<>]|&>", match[1]):  # a word, a blank, a comment; a redirection goes on
            continue
        if words:
            command = Command(words, cwd, variables, text, piped)
            command.calls = calls(command)
            line.append(command)
            if assignments := [match for match in map(ASSIGNMENT.fullmatch, words) if match]:
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
            for text_inside in nested if depth < MAX_DEPTH else []:
                read(text_inside, command.cwd, variables, line, depth + 1)
            words = []
        piped = match[1] in ("|", "|&") or match[1] == "(" and piped
    return line


def unquote(quoted: re.Match) -> str:
    ansi_c, single, double, escaped = quoted.groups()
    if ansi_c is not None:  # $'\x73udo' is sudo
        return ESCAPE.sub(lambda e: chr(min(int(e[1][1:], 16), 0x10FFFF)) if e[1] else chr(int(e[2], 8)) if e[2]
                          else e[3], ansi_c)
    return re.sub(r'\\([$`"\\])', r"\1", double) if double is not None else single or escaped or ""


def braces(word: str) -> list[str]:
    """"{a,b}c" -> ["ac", "bc"], the words brace expansion makes (at most 64)."""
    match = BRACES.search(word)
    return list(itertools.islice((expanded for part in match[1].split(",") for expanded in braces(
        word[:match.start()] + part + word[match.end():])), 64)) if match else [word]


def calls(command: Command) -> list[tuple[str, int]]:
    """(program, position) for each word that may name a program the shell runs, the first place each name
    is met: every word after leading assignments and keywords (`nohup sudo`), named without its folder once
    expanded (`/usr/bin/sud?` is `sudo` where that file exists; `alias s=sudo` names `sudo`); only the first
    when it prints or searches its words (`grep sudo`). A `.` runs a script only as the first word (`jq .`)."""
    words, found = command.words, {}
    start = next((i for i, word in enumerate(words) if word not in KEYWORDS and not re.match(r"\w+=", word)), 0)
    end = start + 1 if start < len(words) and words[start].rsplit("/", 1)[-1] in PRINTS_ITS_WORDS else len(words)
    for at in [at for at in range(start, end) if words[at] != "." or at == start]:
        for value in {expand(part, command) for part in (words[at], words[at].split("=", 1)[-1])} - {None}:
            paths = list(itertools.islice(glob.iglob(value, root_dir=command.cwd), 50)) if GLOB.search(value) else []
            for path in paths or [value]:
                found.setdefault(path.rsplit("/", 1)[-1], at)
    return list(found.items())


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

    expanded = VARIABLE.sub(value, word)
    return None if "\0" in expanded or re.search(r"[$<>]\(|`", word) else os.path.expanduser(expanded)
