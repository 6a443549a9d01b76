"""A project's .env: a file the user may not have written, read only once they allow it, and even then only
able to make plainagent ask more.

You run the agent inside projects you cloned. A .env in one could otherwise replace your deny rules, lower
the mode below yours, pair your endpoint with its author's key (your tasks and files in their account) or
your key with their endpoint, and raise the limits you pay for. So, as with `direnv allow` and `mise trust`,
the workspace's .env is read only once you have allowed that file — remembered by its path and the hash of
its content in the state directory, so a changed file is asked about again — and what it may set is bounded:

  OPENAI_BASE_URL   its own endpoint, with its own key (or none, for a local server) and its model; never
                    with your key, and not over an endpoint you named yourself (--base-url, the environment)
  OPENAI_API_KEY, OPENAI_MODEL   only beside its own OPENAI_BASE_URL: never sent to your endpoint
  PLAINAGENT_MODE   only a mode that asks at least as much as yours
  PLAINAGENT_DENY   added to your rules, never replacing them
  PLAINAGENT_MAX_STEPS, PLAINAGENT_CONTEXT_TOKENS   no higher than yours (as given with its own endpoint)
  PLAINAGENT_STOP, PLAINAGENT_STREAM   as given, below the environment
  PLAINAGENT_*_TIMEOUT   no longer than yours (as given with its own endpoint): it may give up sooner, not hold you
  PLAINAGENT_SANDBOX, PLAINAGENT_SANDBOX_NETWORK   only on and off respectively: the kernel boundary around
                    commands may be asked for, and their network turned off, never the other way
  PLAINAGENT_FETCH_ALLOW, PLAINAGENT_SANDBOX_WRITE,
  PLAINAGENT_SANDBOX_ENV, PLAINAGENT_SANDBOX_READ,
  PLAINAGENT_ALLOW                                   never: what they grant is yours alone to grant

A value it sets that cannot be used (not a mode, say) is left out with the reason, never a reason to stop.
`config.load_config` calls `read_project_env` and `limit`; the verdicts go into the banner.

The question shows each value on one short line (`show_value`: escaped, runs of blanks counted, a long value
cut in the middle with its length said), so no value can scroll the rest out of sight or pass for another line,
and its last line, next to the prompt, says where your tasks and files would go. The answer is remembered for
exactly what was shown: the file's content and what would become of each setting (its own endpoint, allowed
while you named yours, is asked about again once it would be used).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from dotenv import dotenv_values

from harness.cli.escapes import describe_char, escape
from harness.common.directories import allowed_env_record
from harness.common.hosts import is_local, shown_url

KEY, BASE_URL, MODEL = "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"
MODE, DENY = "PLAINAGENT_MODE", "PLAINAGENT_DENY"
ENDPOINT = (BASE_URL, KEY, MODEL)  # set together or not at all
FETCH, FETCH_ALLOW = "PLAINAGENT_FETCH", "PLAINAGENT_FETCH_ALLOW"  # web_fetch offered; hosts it may reach
# setting -> the one value a project's .env may give it: the one that asks more
TIGHTEN_ONLY = {"PLAINAGENT_SANDBOX": "on", "PLAINAGENT_SANDBOX_NETWORK": "off"}
# settings only the user may give: they let more through (hosts, folders, variables, files, commands run unasked)
NEVER = (FETCH_ALLOW, "PLAINAGENT_SANDBOX_WRITE", "PLAINAGENT_SANDBOX_ENV", "PLAINAGENT_SANDBOX_READ",
         "PLAINAGENT_ALLOW")
LIMITS = ("PLAINAGENT_MAX_STEPS", "PLAINAGENT_CONTEXT_TOKENS", "PLAINAGENT_MAX_REPLY_TOKENS")  # what you pay for
DEFAULT_LIMITS = {"PLAINAGENT_MAX_STEPS": 30, "PLAINAGENT_CONTEXT_TOKENS": 32_000,
                  "PLAINAGENT_MAX_REPLY_TOKENS": 8192}  # Config's defaults
# How long plainagent waits on the endpoint, in seconds (config.py's defaults): a project's may only be shorter.
DEFAULT_WAITS = {"PLAINAGENT_CONNECT_TIMEOUT": 10.0, "PLAINAGENT_FIRST_BYTE_TIMEOUT": 120.0,
                 "PLAINAGENT_READ_TIMEOUT": 300.0}
WAITS = tuple(DEFAULT_WAITS)
MAX_BYTES = 1_000_000  # a .env is a few lines; a bigger file is no .env (and would be read into memory)
ASKS = {"yes": 0, "edits": 1, "ask": 2, "read-only": 3}  # how much each mode asks, least first
VALUE_COLUMNS = 60  # the most a value takes in the question: a longer one shows its head and tail and its length
REASON_COLUMNS = 100  # the same for why a value is not used, which may quote the value


@dataclass
class ProjectEnv:
    path: Path  # the workspace's .env
    digest: str  # sha256 of the bytes read, which are the bytes parsed
    values: dict[str, str]  # its settings that plainagent reads, non-empty ones only
    verdicts: dict[str, str] = field(default_factory=dict)  # variable -> why it is not used ("" when it is)


def read_env_text(path: Path) -> tuple[bytes, dict[str, str]]:
    """A .env file's bytes and its non-empty values. No ${VAR} expansion: a project's .env must not be able to
    copy your other secrets into a URL. Raises OSError, or ValueError for what is no .env: not a regular file
    (a FIFO would block for ever), larger than MAX_BYTES, or not UTF-8 (PowerShell's `>` writes UTF-16)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with open(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("it is not a regular file")
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"it is larger than {MAX_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"it is not UTF-8 text (byte {error.start}); save it as UTF-8") from None
    values = dotenv_values(stream=io.StringIO(text), interpolate=False)
    return data, {name: value for name, value in values.items() if value}


def read_project_env(path: Path, variables: set[str]) -> ProjectEnv | None:
    """The workspace's .env, if it sets any of `variables` (a project's .env is mostly the app's own
    settings: one that sets nothing of ours is not asked about). Raises OSError or ValueError."""
    data, values = read_env_text(path)
    values = {name: value for name, value in values.items() if name in variables}
    return ProjectEnv(path, hashlib.sha256(data).hexdigest(), values) if values else None


# --- what it may set ---


def limit(project: ProjectEnv, own: dict[str, str], environment: dict[str, str], flags: set[str],
          check: Callable[[str, str], str | None]) -> dict[str, str]:
    """The settings of `project` that may be used over the user's own (`own`, their .env; `environment`;
    `flags`, the variables they set on the command line), each variable's verdict in `project.verdicts`.
    `check(variable, value)` says why a value cannot be used at all, or None."""
    verdicts = project.verdicts
    for variable, value in project.values.items():
        if problem := check(variable, value):  # it may quote the value: bounded as the value is
            verdicts[variable] = f"not used: {show_value(problem, REASON_COLUMNS)}"
    usable = {variable: value for variable, value in project.values.items() if variable not in verdicts}
    used = take_endpoint(usable, environment, flags, verdicts)
    if MODE in usable and MODE not in environment:  # the environment wins over any .env
        yours = own.get(MODE, "ask").strip()
        if ASKS.get(usable[MODE].strip(), 0) >= ASKS.get(yours, 0):
            used[MODE] = usable[MODE]
        else:
            verdicts[MODE] = f"not used: it asks less than your mode, {yours}"
    if DENY in usable:
        used[DENY] = "; ".join(rules for rules in ((own | environment).get(DENY, ""), usable[DENY]) if rules.strip())
        verdicts[DENY] = "added to your rules"
    for variable in (*LIMITS, "PLAINAGENT_STOP", "PLAINAGENT_STREAM"):
        if variable not in usable or variable in environment:
            continue
        yours = as_number(own.get(variable, "")) or DEFAULT_LIMITS.get(variable)  # yours unreadable: its own error
        if variable in LIMITS and BASE_URL not in used and int(usable[variable]) > yours:
            verdicts[variable] = f"not used: it is more than yours, {yours:,} (you pay for them)"
        else:
            used[variable] = usable[variable]
    # The waits (how long plainagent waits on the endpoint): a project may make one shorter, never longer. A
    # shorter wait gives up sooner, which costs at most a failed request that names the setting and the file; a
    # longer one would hold your session on a dead server past the wait you chose. With its own endpoint (a slow
    # local model, say), its waits go with it, as its limits do.
    for variable in WAITS:
        if variable in usable and variable not in environment:
            yours = as_seconds(own.get(variable, "")) or DEFAULT_WAITS[variable]
            if BASE_URL in used or float(usable[variable]) <= yours:
                used[variable] = usable[variable]
            else:
                verdicts[variable] = f"not used: it waits longer than you do ({yours:g} s)"
    for variable in NEVER:  # hosts fetched unasked, folders commands may write in: never a project's to grant
        if variable in usable:
            verdicts[variable] = "not used: a project's .env may make plainagent ask more, never less"
    for variable, tighter in TIGHTEN_ONLY.items():  # the sandbox on, the network off: yes; the other way, never
        if variable in usable and variable not in environment:
            if as_switch(usable[variable]) == as_switch(tighter):
                used[variable] = usable[variable]
            else:
                verdicts[variable] = "not used: a project's .env may make plainagent ask more, never less"
    if FETCH in usable and FETCH not in environment:  # it may turn web_fetch off, never on over your off
        turns_off = usable[FETCH].strip().lower() in ("off", "0", "false", "no")
        if turns_off or own.get(FETCH, "on").strip().lower() not in ("off", "0", "false", "no"):
            used[FETCH] = usable[FETCH]
        else:
            verdicts[FETCH] = "not used: you turned web_fetch off"
    for variable in project.values:
        verdicts.setdefault(variable, "" if variable in used else "not used: the environment sets it")
    return used


def take_endpoint(usable: dict[str, str], environment: dict[str, str], flags: set[str],
                  verdicts: dict[str, str]) -> dict[str, str]:
    """The project's own endpoint, key and model, taken together or not at all: never your key with its
    endpoint, never its key or model with yours, never over an endpoint you named."""
    named = "--base-url" if BASE_URL in flags else "OPENAI_BASE_URL in the environment" \
        if BASE_URL in environment else ""
    if BASE_URL not in usable:
        reason = "it is taken only with its own OPENAI_BASE_URL, never with your endpoint"
    elif named:
        reason = f"you named the endpoint yourself ({named})"
    elif KEY not in usable and not is_local(usable[BASE_URL]):
        reason = "it names an endpoint without a key of its own, and your key is not sent to it"
    else:
        whose = "its own" if KEY in usable else "no"
        verdicts[BASE_URL] = f"used: your tasks and files would go there, with {whose} key"
        return {BASE_URL: usable[BASE_URL], KEY: usable.get(KEY, ""),  # no key of its own: none is sent
                **({MODEL: usable[MODEL]} if MODEL in usable else {})}
    verdicts.update({variable: f"not used: {reason}" for variable in ENDPOINT if variable in usable})
    return {}


def as_switch(text: str) -> bool | None:
    """An on/off setting's value: True, False, or None for neither."""
    value = text.strip().lower()
    return True if value in ("on", "1", "true", "yes") else False if value in ("off", "0", "false", "no") else None


def as_seconds(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def as_number(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def describe_settings(project: ProjectEnv) -> list[str]:
    """The file's settings, one line each, with what becomes of each, then where your tasks and files would go,
    the line the question follows: what the user is asked to allow."""
    lines = []
    for variable, value in project.values.items():
        shown = f"(a key of {len(value):,} characters)" if variable == KEY else \
            show_value(ascii_only(shown_url(value)) if variable == BASE_URL else value)
        verdict = project.verdicts.get(variable, "")
        verdict = ascii_only(verdict) if variable == BASE_URL else verdict  # it may quote the URL
        lines.append(f"  {variable}={shown}" + (f"  ({verdict})" if verdict else ""))
    return [*lines, describe_destination(project)]


def ascii_only(text: str) -> str:
    """Every letter and digit beyond ASCII escaped: "api.open\\u0430i.com" is not api.openai.com, though it looks it
    (the marks a shortened value carries, "…", stay)."""
    return "".join(describe_char(char) if not char.isascii() and char.isalnum() else char for char in text)


def describe_destination(project: ProjectEnv) -> str:
    """Where the tasks and files would go if the user allowed the file: what matters most, said last."""
    if not project.verdicts.get(BASE_URL, "").startswith("used"):
        return "If you allow it, your tasks and files still go only to your own endpoint."
    url = project.values[BASE_URL]
    # The host as the resolver reads it, every letter beyond ASCII escaped: "api.open\u0430i.com" is not
    # api.openai.com, though it looks it. No user and password: they are the URL's, not where it goes.
    host = ascii_only(urlsplit(url).netloc.rpartition("@")[2].lower())  # a used URL is one url_problem could read
    whose = "its own key" if KEY in project.values and not project.verdicts.get(KEY) else "no key"
    return (f"If you allow it, your tasks and files go to {show_value(host)} (its OPENAI_BASE_URL, with {whose}), "
            "not to your endpoint.")


# --- showing a value: one short line, whatever it holds ---

RUN_NAMES = {" ": "spaces", "\n": "line breaks", "\t": "tabs"}


def show_value(value: str, columns: int = VALUE_COLUMNS) -> str:
    """`value` on one line of at most about `columns` columns: every character that would not show as itself
    escaped (a line break as \\n, a bidi override as \\u202e, a combining mark too), each run of three or more
    blanks or invisible characters counted, and a longer value cut in the middle with its length said.
    e.g. show_value("npm publish" + " " * 5400 + "x") == "npm publish[5,400 spaces]x"
    """
    whole, complete = take(pieces(value), columns)
    if complete:
        return "".join(whole)
    head, _ = take(pieces(value), columns * 2 // 3)
    tail, _ = take(pieces(value[::-1]), columns // 4)  # the same pieces from the end: a run is a run either way
    return "".join(head) + f"[… {len(value):,} characters in all …]" + "".join(reversed(tail))


def pieces(value: str):
    """What `value` shows as, piece by piece: a character as itself or escaped, or a counted run of blanks."""
    done = 0
    for run in re.finditer(r"(?s)(.)\1{2,}", value):  # lazily: the question takes only a value's head and tail
        char = run.group(1)
        if char != " " and shows_as_itself(char):  # "====" draws itself
            yield from (shown_char(char) for char in value[done:run.end()])
        else:
            yield from (shown_char(char) for char in value[done:run.start()])
            yield f"[{len(run.group()):,} {RUN_NAMES.get(char) or '× ' + describe_char(char)}]"
        done = run.end()
    yield from (shown_char(char) for char in value[done:])


def shows_as_itself(char: str) -> bool:
    """True for a character that draws itself and nothing over its neighbours (no mark combining with the one
    before it)."""
    return escape(char) == char and not unicodedata.category(char).startswith("M")


def shown_char(char: str) -> str:
    """A character as the question shows it: as itself, or escaped as a Python string literal would."""
    return char if shows_as_itself(char) else describe_char(char)


def width(piece: str) -> int:
    """Columns the piece takes on a terminal: two for a wide (East Asian) character."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in piece)


def take(shown, columns: int) -> tuple[list[str], bool]:
    """The first pieces of `shown` that fit in `columns`, and True if that is all of them."""
    taken, used = [], 0
    for piece in shown:
        used += width(piece)
        if used > columns:
            return taken, False
        taken.append(piece)
    return taken, True


def not_used(project: ProjectEnv) -> str:
    """'PLAINAGENT_MODE not used: …; …' for the banner, or ""."""
    return "; ".join(f"{variable} {verdict}" for variable, verdict in project.verdicts.items()
                     if verdict.startswith("not used"))


# --- allowing it: remembered by path, content and what was shown ---


def is_allowed(project: ProjectEnv) -> bool:
    """True if the user allowed this file with this content, shown as it would be now (a changed file, or one
    of whose settings more or less would be used, is asked about again)."""
    try:
        lines = allowed_env_record().read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    wanted = remembered(project)
    for line in lines:
        try:
            if json.loads(line) == wanted:
                return True
        except ValueError:
            continue
    return False


def remembered(project: ProjectEnv) -> dict[str, str]:
    """What an answer is remembered for: the file by path and content, and the hash of what the question showed
    of it, which is what becomes of each setting: its endpoint, allowed while you named your own, was not shown
    as where your tasks would go, so the day it would be, that is a new question."""
    shown = "\n".join(describe_settings(project)).encode("utf-8", errors="surrogateescape")
    return {"path": str(project.path), "sha256": project.digest, "shown": hashlib.sha256(shown).hexdigest()}


def allow(project: ProjectEnv) -> str | None:
    """Remember that the user allowed this file with this content; the reason it could not be, or None."""
    record = allowed_env_record()
    line = json.dumps(remembered(project), ensure_ascii=False) + "\n"
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8", errors="surrogateescape"))
        finally:
            os.close(fd)
    except OSError as error:
        return f"it could not be remembered ({error.strerror or error}), so you will be asked again"
    return None
