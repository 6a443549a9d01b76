"""Command guard rails: the deny rules every command the model asks for is checked against, in every mode.

A guard rail against accidents, not a sandbox: it stops a model that types `sudo`, wipes a home directory or
force-pushes, before the user is asked (and in --mode yes). The rules say what a command does, not how it is
spelled: the line is read as the shell reads it (command_line.py: quoting, variables, `~`, `cd`, braces, globs,
what runs inside `$(...)`, `<(...)` and `bash -c "..."`); and since any program can run another (`nohup`, `taskset 1`,
`xargs -I {}`), every word is taken as a program that may run, unless the command starts with one that prints
or searches its words (echo, grep). The price is a few false refusals, each with a clear message.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from harness.commands.command_line import GLOB, Command, TooComplex, path_of, read

# A shell function that runs itself (`:(){ :|:& };:`, `f(){ f & f; }; f`, `function f { f|f& }`). A name starts
# only where a word does, and is taken whole (possessive): tried from inside a long word, one of 20,000 letters
# took seconds, and a model's base64 blob in a command held the question back for minutes.
RECURSIVE_FUNCTION = re.compile(r"(?:\bfunction\s+([^\s;&|(){}]++)\s*(?:\(\s*\))?|(?<![^\s;&|(){}])"
                                r"([^\s;&|(){}]++)\s*\(\s*\))\s*[{(][^})]{0,500}?(?<![^\s;&|{(])(?:\1|\2)"
                                r"(?![^\s;&|)}])")
DOWNLOADERS = {"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "nc"}


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
            path = path_of(target, command)
            if path is None and re.fullmatch(r"\$\(.*\)|`.*`", target, re.DOTALL):  # `$(echo ~)`: it may be ~
                return True
            path = path or "."
            while re.search(GLOB, posixpath.basename(path)):  # "/*/*" and "~/.*" stand for everything under / and ~
                path = posixpath.dirname(path)
            homes = {os.path.expanduser("~")} | ({os.path.expanduser(target.split("/")[0])}  # and ~root
                                                 if target.startswith("~") else set())
            if any(home == path or home.startswith(path.rstrip("/") + "/") for home in homes):
                return True
    return False


def writes_a_disk(command: Command) -> bool:
    """A program that formats or partitions disks, or a disk device named anywhere in the command (`dd
    of=/dev/sda`, `> /dev/sda`, `cp x.img /dev/sdb`), `..` and a link followed: /dev/null and such are fine."""
    formats = r"mkfs.*|mk\w*fs|newfs\w*|mke2fs|mkswap|mformat|wipefs|\w*fdisk|parted|sgdisk|blkdiscard"
    harmless = r"/dev/(null|zero|full|u?random|std(in|out|err)|tty|ptmx|(fd|pts|shm|tcp|udp)(/.*)?)?"  # /dev/tcp
    paths = {os.path.realpath(path) if os.path.islink(path) else path for word in set(command.words)
             if (path := path_of(re.sub(r"^-*[\w-]+=", "", word), command))}  # of=/dev/sda, --device=/dev/sda
    return bool(command.runs(formats)) or any(
        path.startswith("/dev/") and not re.fullmatch(harmless, path) for path in paths)


@functools.lru_cache(maxsize=64)  # one answer for a line, not one for each of its commands
def fork_bomb(text: str) -> bool:
    """A shell function that runs itself, or fork in a loop (`perl -e "fork while 1"`, `while True: os.fork()`)."""
    # fork as a call or a statement (`os.fork()`, `fork while 1`, `{ fork }`), not a word in a name or a string
    # ("forkserver", set_start_method("fork")), in a loop
    forks = re.search(r"\bfork\b(?!['\"])\s*(\(|while|until|if|;|}|$)", text, re.M)
    return bool(RECURSIVE_FUNCTION.search(text) or "fork" in text and forks and re.search(
        r"\b(while|until|for|loop)\b", text))


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
    """git push (or send-pack, the plumbing under it) with --force (or any start of it), -f among short flags,
    --force-with-lease, --mirror or a +refspec, wherever these stand among git's words: an alias or a config value
    set with -c included (`-c remote.origin.mirror=true push` pushes as --mirror does)."""
    for _, args in command.runs("git"):
        parts = [part for arg in args for part in re.split(r"[\s=]+", arg)]
        computed = any(getattr(arg, "subs", None) for arg in args)  # `git $(echo push) -f`: the verb may be push
        pushes = any(part in ("push", "send-pack") or part.endswith(".push") for part in parts)
        if (computed or pushes) and any(
                part.startswith(("+", "--force")) or re.fullmatch(r"-[a-zA-Z]*f[a-zA-Z]*", part) or len(part) > 2
                and any(option.startswith(part) for option in ("--force-with-lease", "--mirror")) or
                part.endswith(".mirror") for part in parts):
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


DENIED = "Refused by plainagent's guard rail"  # how a denied command's result begins (-p --json's refusal)


def denied_message(rule: Rule) -> str:
    """The result the model gets for a denied command."""
    return (f"{DENIED}: {rule.name}. This command is never run, in any mode. (Every "
            "word is taken as a program that may run: if what matched is only text here, such as a search "
            "pattern or a commit message, use search_files or write the text differently.) Otherwise do not "
            "try to get around the rule; find another way, or tell the user the command is needed so they can "
            "run it themselves.")


# --- judging a command line ---


def denied_by(command: str, rules: list[Rule] | None, cwd: str | None = None) -> Rule | None:
    """The first rule the command line matches, or None. `rules`: None for DEFAULT_RULES; `cwd`: where it runs
    (the workspace root)."""
    rules = DEFAULT_RULES if rules is None else rules
    try:
        line = read(command, cwd or os.getcwd(), {"PWD": cwd or os.getcwd()}, [])
    except TooComplex as why:
        return Rule(f"a command line too complex to check ({why}): split it into smaller commands, or write a long "
                    "text with edit_file", lambda command: True)
    downloads = [c for c in line if any(program in DOWNLOADERS for program, _ in c.calls)]
    saved = {posixpath.basename(word) for download in downloads for word in download.words}  # curl -o x.sh, > x.sh
    for c in line if downloads else []:
        c.downloaded = saved
    return next((rule for rule in rules for c in line if rule.matches(c)), None)
