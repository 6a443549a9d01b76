"""Command guard rails: the deny rules every command the model asks for is checked against, in every mode.

This is a guard rail against accidents, not a sandbox. A model that misreads a task may type `sudo`, wipe a
home directory or force-push over a shared branch; these rules stop the common shapes of that before the
user is asked (and in --mode yes, where nobody is asked). A command built to get past them will get past
them: a variable holding the program's name (`s=sudo; $s ...`), a script written to a file and then run,
`python -c "os.system(...)"`, `find / -delete`, base64, and every destructive command not named here.

How a command is read: it is split into simple commands at `;`, `&&`, `||`, `|`, `&`, `(`, `)`, newlines,
`$(...)` and backticks, with the shell's quoting undone (`"sudo"`, `s\\udo` and `'su'do` are all `sudo`).
In each, leading `NAME=value` assignments and wrappers (`env`, `command`, `exec`, `nohup`, `time`, `nice`,
`timeout`, `xargs`, ...) are passed over, and the program is named without its directory (`/usr/bin/sudo`
is `sudo`). The text given to `sh -c`, `bash -c` and `eval` is read the same way, as a command of its own,
and so is what `find -exec` runs.

A rule of the user's (PLAINAGENT_DENY) is a program followed by words that must all appear among its
arguments, in any order, each word a shell-style pattern; rules are separated by `;`:
    PLAINAGENT_DENY="terraform destroy; kubectl delete; npm publish; git reset --hard"
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SEPARATORS = set("();<>|&")  # the characters shlex gives back as punctuation tokens
WRAPPERS = {"env", "command", "exec", "nohup", "time", "nice", "ionice", "timeout", "stdbuf", "xargs", "builtin",
            "setsid", "busybox", "then", "else", "elif", "do", "if", "while", "until", "!", "{", "}"}
# Wrapper options that take a value: `timeout -s KILL 5 sudo`, `env -C / sudo`, `exec -a name sudo`.
VALUE_OPTIONS = {"-s", "-k", "-n", "-u", "-C", "-a", "-S", "-i", "-o", "-e", "--signal", "--kill-after",
                 "--adjustment", "--chdir", "--unset", "--split-string"}
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash"}
MAX_DEPTH = 4  # nested sh -c "..." read as commands of their own; deeper than this is not a mistake


@dataclass
class Rule:
    """A deny rule: its name (shown to the model and the user) and what it matches.

    `words` looks at one simple command, its program and arguments with quoting undone; `text` at the
    command line as written (for shapes that span several simple commands, such as a pipe)."""

    name: str
    words: Callable[[str, list[str]], bool] | None = None
    text: re.Pattern | None = None

    def matches(self, command: str, simple_commands: list[tuple[str, list[str]]]) -> bool:
        if self.text is not None and self.text.search(command):
            return True
        return self.words is not None and any(self.words(program, args) for program, args in simple_commands)


# --- the default rules ---


def runs_as_root(program: str, args: list[str]) -> bool:
    return program in ("sudo", "doas", "su", "pkexec")


def removes_home_or_root(program: str, args: list[str]) -> bool:
    """rm with -r (-R, --recursive, or inside -rf, -fr, -Rf ...) and a target of /, ~ or $HOME (or /*, ~/ ...)."""
    if program != "rm":
        return False
    end = args.index("--") if "--" in args else len(args)
    options = [arg for arg in args[:end] if arg.startswith("-")]
    recursive = any(arg == "--recursive" or (not arg.startswith("--") and re.search("[rR]", arg)) for arg in options)
    targets = [arg for arg in args[:end] if not arg.startswith("-")] + args[end + 1:]  # `rm -rf / --` too
    return recursive and any(is_root_or_home(target) for target in targets)


def is_root_or_home(target: str) -> bool:
    """'/', '//', '/*', '~', '~/', '~/*', '$HOME', '${HOME}/.', '/home/me' (the user's own home), '~root',
    and any path that climbs to one of them or above ('/tmp/..', '$HOME/..') -> True."""
    home = str(Path.home()).rstrip("/") or "/"
    bare = re.sub(r"\$\{HOME(:?[-?=+][^}]*)?\}", "$HOME", target)  # "${HOME:?}" and "${HOME}" are $HOME
    bare = re.sub(r"^(\$HOME|~)(?=/|$)", home, bare)
    if re.fullmatch(r"~\w+/*\**", bare):  # another user's home
        return True
    bare = re.sub(r"(?<=.)(/\*)+$", "", bare) or "/"  # "~/*" is "~"; "/*" is "/"
    bare = "/" if bare == "/*" else bare
    if not bare.startswith("/"):
        return False
    path = posixpath.normpath(bare)
    return path in ("/", "//") or path == home or home.startswith(path.rstrip("/") + "/")


def makes_filesystem(program: str, args: list[str]) -> bool:
    return program in ("mkfs", "mke2fs", "mkswap") or program.startswith("mkfs.")


def writes_device(program: str, args: list[str]) -> bool:
    """dd of=/dev/sda (or any device but the harmless /dev/null, /dev/stdout, ...)."""
    harmless = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/zero", "/dev/tty")
    targets = [posixpath.normpath("/" + arg[3:].lstrip("/")) for arg in args if arg.startswith("of=/")]
    return program == "dd" and any(target.startswith("/dev/") and target not in harmless for target in targets)


def force_pushes(program: str, args: list[str]) -> bool:
    """git push --force, -f (alone or among short flags: -fu), --force-with-lease, --force-if-includes,
    or a refspec with a leading + (`git push origin +main`): each rewrites the remote's history."""
    subcommand = next((arg for index, arg in enumerate(args) if not arg.startswith("-")
                       and (index == 0 or args[index - 1] not in ("-C", "-c"))), None)  # git -C dir push
    if program != "git" or subcommand != "push":
        return False
    after = args[args.index("push") + 1:]
    return any(arg.startswith(("--force", "--mirror", "+")) or re.fullmatch(r"-[a-zA-Z]*f[a-zA-Z]*", arg)
               for arg in after)


# `:(){ :|:& };:` and the same with any name and spacing: a function that pipes itself into itself, in the background.
FORK_BOMB = re.compile(r"(?:function\s+([\w:.]+)\s*(?:\(\))?|([\w:.]+)\s*\(\))\s*\{[^}]*?(?:\1|\2)\s*\|\s*&?\s*"
                       r"(?:\1|\2)\s*&")
# curl/wget into a shell or interpreter: `curl URL | sh`, `wget -qO- URL | sudo bash`, `bash <(curl URL)`,
# `sh -c "$(curl URL)"`.
INTERPRETER = r"(\S*/)?((ba|z|da|k|c|tc|fi)?sh|python[\d.]*|perl|ruby|node)\b"
DOWNLOAD_INTO_SHELL = re.compile(
    rf"\b(curl|wget|fetch)\b[^;&\n]*\|\s*(sudo\s+|env\s+)?{INTERPRETER}(?!\s+-[mc]\b)"  # -m, -c: not stdin
    rf"|(?:{INTERPRETER}|\bsource|(?:^|[\s;&|(])\.)\s+(-\w+\s+)*[\"']?(<\(|\$\(|`)\s*(curl|wget|fetch)\b")

DEFAULT_RULES = [
    Rule("sudo (running as root: sudo, doas, su, pkexec)", words=runs_as_root),
    Rule("recursive removal of /, ~ or $HOME", words=removes_home_or_root),
    Rule("fork bomb", text=FORK_BOMB),
    Rule("piping a download into a shell (curl ... | sh)", text=DOWNLOAD_INTO_SHELL),
    Rule("mkfs (making a filesystem)", words=makes_filesystem),
    Rule("dd onto a device", words=writes_device),
    Rule("git push --force (or -f, --force-with-lease, +refspec)", words=force_pushes),
]


# --- the user's rules ---


def parse_rules(text: str) -> list[Rule]:
    """PLAINAGENT_DENY's rules: "terraform destroy; npm publish" -> two rules. Raises ValueError if one
    cannot be read (an unbalanced quote)."""
    rules = []
    for part in text.split(";"):
        words = shlex.split(part)
        if words:
            name = f"the PLAINAGENT_DENY rule \"{' '.join(words)}\""
            words[0] = words[0].rsplit("/", 1)[-1]  # commands are matched by program name, without its folder
            rules.append(Rule(name, words=matches_words(words)))
    return rules


def matches_words(words: list[str]) -> Callable[[str, list[str]], bool]:
    """A simple command matches when its program matches the first word and every other word matches one
    of its arguments."""
    def matches(program: str, args: list[str]) -> bool:
        return fnmatch.fnmatchcase(program, words[0]) and all(
            any(fnmatch.fnmatchcase(arg, word) for arg in args) for word in words[1:])
    return matches


# --- reading a command line ---


def denied_by(command: str, rules: list[Rule]) -> Rule | None:
    """The first rule the command matches, or None."""
    simple_commands = split_commands(command)
    return next((rule for rule in rules if rule.matches(command, simple_commands)), None)


def split_commands(command: str, depth: int = 0) -> list[tuple[str, list[str]]]:
    """Each simple command in a command line as (program, arguments), including those inside $(...),
    backticks, and the text given to sh -c or eval.

    e.g. 'cd x && /usr/bin/sudo  rm -r "a b"' -> [("cd", ["x"]), ("sudo", ["rm", "-r", "a b"])]
    """
    if depth > MAX_DEPTH:
        return []
    found, words, skip_target = [], [], False
    for token in tokenize(command.replace("`", ";").replace("\n", ";")):
        if token and set(token) <= SEPARATORS:
            # A redirection's file is not a command; `>(...)` and `<(...)` run one.
            skip_target = ("<" in token or ">" in token) and "(" not in token
            if not skip_target:
                found += program_and_args(words, depth)
                words = []
        elif skip_target:
            skip_target = False
        else:
            words.append(token)
            if "$(" in token or "<(" in token:  # inside double quotes, still run by the shell
                found += split_commands(token.replace("$(", ";").replace("<(", ";"), depth + 1)
    return found + program_and_args(words, depth)


def tokenize(command: str) -> list[str]:
    """The shell's words and operators, with quoting undone; a line shlex cannot read (an unbalanced quote)
    is split at operators and spaces, so it is still checked."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    # No comments: shlex would drop everything after a `#` to the end of the whole text, newlines included,
    # so `# install deps` on a first line would hide a `sudo` on the next. A comment's words are read as a
    # command named "#", which no rule matches.
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return re.findall(r"[();<>|&]+|[^\s();<>|&]+", command.replace("'", "").replace('"', ""))


def program_and_args(words: list[str], depth: int) -> list[tuple[str, list[str]]]:
    """[(program, arguments)] for one simple command's words, past assignments and wrappers; the text of
    `sh -c TEXT` and `eval TEXT` is read as a command line too."""
    index = 0
    while index < len(words) and (words[index] in WRAPPERS or re.fullmatch(r"\w+=.*", words[index])):
        index += 1
        if words[index - 1] in WRAPPERS:  # its options and numbers: nice -n 10, timeout 5s, env -i
            while index < len(words) and re.fullmatch(r"-.*|[\d.]+[smhd]?", words[index]):
                index += 2 if words[index] in VALUE_OPTIONS else 1
    if index >= len(words):
        return []
    program, args = words[index].rsplit("/", 1)[-1], words[index + 1:]
    found = [(program, args)]
    if program == "eval":
        found += split_commands(" ".join(args), depth + 1)
    elif program == "find":  # find -exec PROGRAM ARGS {} ;  runs PROGRAM
        for index, arg in enumerate(args):
            if arg in ("-exec", "-execdir", "-ok", "-okdir"):
                found += program_and_args(args[index + 1:], depth + 1)
    elif program in SHELLS:
        flag = next((n for n, arg in enumerate(args[:-1]) if re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", arg)), None)
        if flag is not None:  # sh -c TEXT, bash -lc TEXT, bash -c -- TEXT
            text = args[flag + 2] if args[flag + 1] == "--" and flag + 2 < len(args) else args[flag + 1]
            found += split_commands(text, depth + 1)
    return found


def refusal(rule: Rule) -> str:
    """The result the model gets for a denied command."""
    return (f"Refused by plainagent's guard rail: {rule.name}. This command is never run, in any mode. Do "
            "not try to get around the rule; find another way, or tell the user the command is needed so "
            "they can run it themselves.")
