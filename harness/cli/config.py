"""Configuration: where each setting comes from, and whether the settings can be used at all.

Precedence: command-line flag > environment variable > the workspace's `.env` > the `.env` next to agent.py,
the user's own. The workspace's `.env` is a project's, a file the user may not have written: it is read only
once they allowed it, and even then it can only ask more (project_env.py). `.env` files are read with
`dotenv_values`, so the key never enters `os.environ` (and so never the environment of the commands the agent
runs). A setting that cannot be used is a `ConfigError` whose message names the flag or variable the user set
(and never holds a key); `agent.main` shows it as one line and exits 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import urllib3

from harness.cli import project_env
from harness.cli.prefixes import SHELL_OPERATORS, Remembered, chains, words
from harness.cli.project_env import BASE_URL, ProjectEnv, read_env_text, read_project_env
from harness.commands.guard import parse_rules
from harness.commands.landlock import Boundary, wipe_from_environ_block
from harness.commands.secret_search import SecretSearch, hidden_paths, places, real_paths
from harness.common.directories import config_dir, state_dir
from harness.common.hosts import is_local, parse_hosts, shown_url
from harness.common.own_code import own_code
from harness.common.redaction import Secret, redact
from harness.common.text_files import is_text
from harness.history.budget import MIN_BUDGET
from harness.modes.permissions import MODES


@dataclass
class Config:
    api_key: Secret = field(default_factory=Secret)  # OPENAI_API_KEY, held in this one object; may be empty
    base_url: str = "https://api.openai.com/v1"  # OPENAI_BASE_URL, including the provider's version path
    model: str = ""  # OPENAI_MODEL
    max_steps: int = 30  # PLAINAGENT_MAX_STEPS: model calls per task
    stop: list[str] = field(default_factory=lambda: ["\ntool_result("])  # PLAINAGENT_STOP: JSON list, or "off"
    stream: bool = True  # PLAINAGENT_STREAM (on/off), --no-stream: show replies as they are written
    context_tokens: int = 32_000  # PLAINAGENT_CONTEXT_TOKENS: the most one request may hold, estimated in tokens
    max_reply_tokens: int = 8192  # PLAINAGENT_MAX_REPLY_TOKENS: the most one reply may hold (a model may never stop)
    # The waits, in seconds (client.py): connecting; a streamed reply's first byte (the server loads the model and
    # reads the prompt meanwhile); the longest silence of a whole reply, and of a stream once it began.
    connect_timeout: float = 10.0  # PLAINAGENT_CONNECT_TIMEOUT, --connect-timeout
    first_byte_timeout: float = 120.0  # PLAINAGENT_FIRST_BYTE_TIMEOUT, --first-byte-timeout
    read_timeout: float = 300.0  # PLAINAGENT_READ_TIMEOUT, --read-timeout
    log: Path | None = None  # --log: the transcript file (default: a new one in the state directory)
    resume: str | None = None  # --resume: "" for this workspace's latest session, or a transcript file
    workspace: Path = Path(".")  # -C: the directory the tools may touch
    mode: str = "ask"  # PLAINAGENT_MODE, --mode (-y is --mode yes): what is asked before writes and commands
    deny: str = ""  # PLAINAGENT_DENY: more commands never to run, "terraform destroy; npm publish" (guard.py)
    fetch: bool = True  # PLAINAGENT_FETCH (on/off): offer web_fetch
    fetch_allow: frozenset[str] = frozenset()  # PLAINAGENT_FETCH_ALLOW: hosts reachable, private ones too
    sandbox: bool = True  # PLAINAGENT_SANDBOX (on/off): commands inside the kernel boundary, where there is one
    sandbox_network: bool = False  # PLAINAGENT_SANDBOX_NETWORK (on/off): commands may use the network
    sandbox_write: tuple[Path, ...] = ()  # PLAINAGENT_SANDBOX_WRITE: more folders commands may write in (":")
    sandbox_env: frozenset[str] = frozenset()  # PLAINAGENT_SANDBOX_ENV: credentials' variables commands get
    sandbox_read: tuple[Path, ...] = ()  # PLAINAGENT_SANDBOX_READ: secret files commands may read (a project's .env)
    allow: tuple[str, ...] = ()  # PLAINAGENT_ALLOW: first words of the commands run without a question (prefixes.py)
    env_file: Path | None = None  # the user's own .env, to name in error messages
    unused_key: Path | None = None  # a project's .env whose OPENAI_API_KEY was not used: named if none is set
    sources: dict[str, str] = field(default_factory=dict)  # variable -> where its value came from, for the banner
    notes: list[str] = field(default_factory=list)  # lines for the banner: what became of a project's .env

    def waits(self) -> dict[str, float]:
        """The waits, as the client takes them: {"connect_timeout": 10.0, ...}, and the deadline of one whole
        request (the client's 600 s), never shorter than a wait the user set."""
        return {name: getattr(self, name) for name in WAITS} | {
            "deadline": max(600.0, self.first_byte_timeout + self.read_timeout)}


class ConfigError(Exception):
    """The settings are unusable; the message names the variable and where to set it."""


ENV_VARS = {"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL", "model": "OPENAI_MODEL",
            "max_steps": "PLAINAGENT_MAX_STEPS", "stop": "PLAINAGENT_STOP",
            "context_tokens": "PLAINAGENT_CONTEXT_TOKENS", "max_reply_tokens": "PLAINAGENT_MAX_REPLY_TOKENS",
            "mode": "PLAINAGENT_MODE",
            "deny": "PLAINAGENT_DENY", "stream": "PLAINAGENT_STREAM", "fetch": "PLAINAGENT_FETCH",
            "fetch_allow": "PLAINAGENT_FETCH_ALLOW", "sandbox": "PLAINAGENT_SANDBOX",
            "sandbox_network": "PLAINAGENT_SANDBOX_NETWORK", "sandbox_write": "PLAINAGENT_SANDBOX_WRITE",
            "sandbox_env": "PLAINAGENT_SANDBOX_ENV", "sandbox_read": "PLAINAGENT_SANDBOX_READ",
            "allow": "PLAINAGENT_ALLOW",
            "connect_timeout": "PLAINAGENT_CONNECT_TIMEOUT", "first_byte_timeout": "PLAINAGENT_FIRST_BYTE_TIMEOUT",
            "read_timeout": "PLAINAGENT_READ_TIMEOUT"}
WAITS = ("connect_timeout", "first_byte_timeout", "read_timeout")  # each with a flag of its name: --read-timeout
MIN_REPLY_TOKENS = 256  # a reply shorter than this holds hardly one edit

ALLOW_QUESTION = "Use these settings? (remembered until the file changes) [y]es / [n]o: "
Ask = Callable[[str, str], "str | None"]  # (what to show, the question) -> the answer, or None: nobody to ask


def load_config(args: argparse.Namespace, environ: dict, cwd: Path, script_dir: Path, ask: Ask | None = None) -> Config:
    """Settings by precedence: flag > environment > the workspace's .env (once allowed, and only asking more)
    > the .env next to agent.py. `ask` puts the question whether to allow a project's .env (None: not asked)."""
    try:
        workspace = (cwd / args.cwd).resolve()
    except (OSError, RuntimeError) as error:  # a name too long, a loop of symlinks
        raise ConfigError(f"-C {args.cwd}: {getattr(error, 'strerror', None) or error}.") from None
    own_file = script_dir / ".env"
    own = read_own_env(own_file)
    environment = {name: value for name, value in environ.items() if name in ENV_VARS.values() and value}
    keys = [own.get("OPENAI_API_KEY", ""), environment.get("OPENAI_API_KEY", "")]
    try:
        config = Config(workspace=workspace, env_file=own_file)
        sources = {name: str(own_file) for name in own} | {name: "the environment" for name in environment}
        settings = own | environment
        if project := find_project_env(workspace, own_file, config.notes):
            keys.append(project.values.get("OPENAI_API_KEY", ""))
            flags = {"OPENAI_BASE_URL"} if args.base_url is not None else set()
            used = project_env.limit(project, own, environment, flags, value_problem)
            if used and take_project_env(project, config.notes, ask):
                settings |= used
                sources |= {name: f"{project.path}, which you allowed" for name in used}
            elif not used and any(name.startswith("PLAINAGENT_") or name == BASE_URL for name in project.values):
                # Nothing in it would be used, so nothing to ask; but it meant to steer plainagent: say so. (An
                # app's own OPENAI_API_KEY in its .env, the common case, is left out in silence.)
                config.notes.append(f"plainagent: not using {project.path}: {project_env.not_used(project)}.")
            if "OPENAI_API_KEY" in project.values and "OPENAI_API_KEY" not in settings:
                config.unused_key = project.path
        config.sources = sources
        return apply_settings(config, settings, args)
    except ConfigError as error:  # a key a value was mistaken for, or one pasted into a URL
        raise ConfigError(hide_keys(str(error), keys)) from None


def read_own_env(path: Path) -> dict[str, str]:
    """The user's own .env (next to agent.py), if there is one."""
    if not path.is_file():
        return {}
    try:
        return read_env_text(path)[1]
    except OSError as error:
        raise ConfigError(f"{path} cannot be read: {error.strerror or error}.") from None
    except ValueError as error:  # PowerShell's `>` writes UTF-16, say
        raise ConfigError(f"{path} cannot be read: {error}.") from None


def find_project_env(workspace: Path, own_file: Path, notes: list[str]) -> ProjectEnv | None:
    """The workspace's .env when it sets something plainagent reads and is not the user's own file."""
    path = workspace / ".env"
    try:
        if not path.is_file() or path.resolve() == own_file.resolve():
            return None
        return read_project_env(path, set(ENV_VARS.values()))
    except (OSError, RuntimeError, ValueError) as error:  # a project's file is never a reason to stop
        notes.append(f"plainagent: not reading {path}: {getattr(error, 'strerror', None) or error}.")
        return None


def take_project_env(project: ProjectEnv, notes: list[str], ask: Ask | None) -> bool:
    """Whether the user allows the project's .env: allowed before with this content, or now, when asked."""
    if not project_env.is_allowed(project):
        shown = "\n".join([f"{project.path} is this project's .env, a file you may not have written. It sets:",
                           *project_env.describe_settings(project), ""])
        answer = ask(shown, ALLOW_QUESTION) if ask is not None else None
        if answer is None:
            notes.append(f"plainagent: not reading {project.path}: a project's .env is used only once you allow "
                         "it; start plainagent there at a terminal to be asked.")
            return False
        if answer.strip().lower().rstrip(".!") not in ("y", "yes"):
            notes.append(f"plainagent: not using {project.path}: you did not allow it (you will be asked again).")
            return False
        if problem := project_env.allow(project):
            notes.append(f"plainagent: {project.path} is used, but {problem}.")
    unused = project_env.not_used(project)
    notes.append(f"Settings from {project.path} (allowed){': ' + unused if unused else ''}")
    return True


def apply_settings(config: Config, settings: dict[str, str], args: argparse.Namespace) -> Config:
    """The settings, then the flags over them, into `config`, checked."""
    for name, variable in ENV_VARS.items():
        if variable in settings:
            value = parse_setting(name, variable, settings[variable])
            setattr(config, name, Secret(value) if name == "api_key" else value)
    for name in ("model", "base_url", "max_steps", "context_tokens", "max_reply_tokens", "log", "resume", *WAITS):
        if getattr(args, name, None) is not None:
            setattr(config, name, getattr(args, name))
    if args.base_url is not None:
        config.sources["OPENAI_BASE_URL"] = "--base-url"
    if args.max_steps is not None:
        config.sources["PLAINAGENT_MAX_STEPS"] = "--max-steps"
    if args.model is not None:
        config.sources["OPENAI_MODEL"] = "-m"
    if args.yes and args.mode not in (None, "yes"):
        raise ConfigError(f"-y is --mode yes, and --mode {args.mode} says otherwise: give one of them.")
    if args.mode is not None and args.mode not in MODES:
        raise ConfigError(f"--mode {args.mode}: not a mode; use one of: {', '.join(MODES)}.")
    config.mode = "yes" if args.yes else args.mode or config.mode
    if args.yes or args.mode is not None:
        config.sources["PLAINAGENT_MODE"] = "--yes" if args.yes else "--mode"
    if getattr(args, "no_stream", False):
        config.stream = False
    check_config(config)
    return config


def remembered_commands(config: Config) -> Remembered:
    """PLAINAGENT_ALLOW's prefixes, and the user's own .env, where the question writes one more."""
    return Remembered(list(config.allow), config.env_file, config.sources.get("PLAINAGENT_ALLOW", ""))


def value_problem(variable: str, value: str) -> str | None:
    """Why a value cannot be used at all (for a project's .env, whose bad values are left out), or None."""
    name = next(name for name, known in ENV_VARS.items() if known == variable)
    try:
        parse_setting(name, variable, value)
        if variable == "OPENAI_BASE_URL":
            url_problem(value)
        if variable == "OPENAI_API_KEY":
            key_problem(value, "")
    except ConfigError as error:
        return str(error).rstrip(".")
    return None


def hide_keys(text: str, keys: list[str]) -> str:
    """`text` with each of the keys the settings hold blanked, by redaction.py's rule."""
    for key in keys:
        text = redact(text, key)
    return text


def parse_setting(name: str, variable: str, value: str):
    try:
        if name in WAITS:
            return parse_wait(variable, value)
        if name in ("max_steps", "context_tokens", "max_reply_tokens"):
            least = {"max_steps": 1, "context_tokens": MIN_BUDGET, "max_reply_tokens": MIN_REPLY_TOKENS}[name]
            if int(value) < least:
                raise ConfigError(f"{variable}={value}: it must be at least {least}.")
            return int(value)
        if name in ("stream", "fetch", "sandbox", "sandbox_network"):
            if value.strip().lower() not in ("on", "off", "1", "0", "true", "false", "yes", "no"):
                raise ConfigError(f"{variable}={value!r}: use on or off.")
            return value.strip().lower() in ("on", "1", "true", "yes")
        if name == "stop":
            stop = [] if value.strip().lower() == "off" else json.loads(value)
            if not (isinstance(stop, list) and all(isinstance(item, str) for item in stop)):
                raise ValueError("not a list of strings")
            return stop
        if name == "mode" and value.strip() not in MODES:
            raise ConfigError(f"{variable}={value!r} is not a mode; use one of: {', '.join(MODES)}.")
        if name == "fetch_allow":
            try:
                return parse_hosts(value)  # said now, not at the first fetch
            except ValueError as error:
                raise ConfigError(f"{variable}={value!r}: {error}; list hosts separated by commas, e.g. "
                                  f"{variable}=\"docs.python.org, localhost\".") from None
        if name in ("sandbox_write", "sandbox_read"):
            folders = tuple(Path(folder.strip()).expanduser() for folder in re.split(f"[,{os.pathsep}]", value)
                            if folder.strip())  # "~/.npm:~/go" as PATH is written, or "~/.npm, ~/go" as lists are
            example = "~/.cache/go-build" if name == "sandbox_write" else "~/work/api/.env"
            if relative := [str(folder) for folder in folders if not folder.is_absolute()]:
                raise ConfigError(f"{variable}={value!r}: {', '.join(relative)} is not an absolute path; list "
                                  f"paths separated by '{os.pathsep}' or ',', e.g. {variable}={example}")
            return folders
        if name == "sandbox_env":  # names, as a list is written: "GITHUB_TOKEN, NPM_TOKEN"
            names = frozenset(re.split(r"[\s,:]+", value.strip())) - {""}
            if bad := sorted(name for name in names if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)):
                raise ConfigError(f"{variable}={value!r}: {', '.join(bad)} is not a variable's name; list names "
                                  f"separated by commas, e.g. {variable}=GITHUB_TOKEN")
            return names
        if name == "allow":  # as a list is written: "python -m pytest, git status"
            allowed = tuple(dict.fromkeys(" ".join(words(part.strip())) for part in value.split(",") if part.strip()))
            if chaining := [prefix for prefix in allowed if chains(prefix)]:
                raise ConfigError(f"{variable}={value!r}: {chaining[0]!r} holds one of {' '.join(SHELL_OPERATORS)} or "
                                  "a line break: it approves no command, since a command holding one is always asked; "
                                  f"list commands' first words separated by commas, e.g. {variable}=\"python -m "
                                  "pytest, git status\"")
            return allowed
        if name == "deny":
            try:
                parse_rules(value)  # say so now, not at the first command
            except ValueError as error:  # an unclosed quote
                raise ConfigError(f"{variable}={value!r}: {error}; rules are separated by ';', e.g. "
                                  f"{variable}=\"terraform destroy; npm publish\".") from None
    except ValueError:
        raise ConfigError(f"{variable}={value!r} is not valid; see .env.example.") from None
    return value.strip()


MAX_WAIT = 86_400  # seconds: a day; beyond it a deadline is past what the clock's timers take (an OverflowError)


def parse_wait(variable: str, value: str) -> float:
    """A wait in seconds: more than 0 (0 would be no wait at all), and at most a day (inf would be no limit)."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_WAIT):
        raise ConfigError(f"{variable}={value!r}: give a number of seconds, more than 0 and at most {MAX_WAIT:,} (a "
                          f"day; e.g. {variable}=30).")
    return seconds


# Keys as the examples write them (.env.example, providers' docs): sent as they are, they only earn a 401.
PLACEHOLDER_KEY = re.compile(r"(?i).*(\.\.\.|…)|(sk-)?(your[-_ ]?(api[-_ ]?)?key.*|<.*>|\[.*\]|changeme|xxx+)")


def check_config(config: Config) -> None:
    where = (f"set it in the .env beside agent.py ({config.env_file}; "
             ".env.example there shows how) or in the environment")
    if not config.model:
        raise ConfigError(f"OPENAI_MODEL is not set: {where}, or pass -m MODEL.")
    url_problem(config.base_url)
    if PLACEHOLDER_KEY.fullmatch(config.api_key.value) and is_local(config.base_url):
        config.api_key = Secret()  # a local server needs none; the example's line was simply left in
    # Credentials in the base URL (user:pass@, ?key=) go in place of the key: nothing more is needed.
    if not config.api_key and not is_local(config.base_url) and shown_url(config.base_url) == config.base_url:
        unused = (f" ({config.unused_key} sets one, but a project's .env sets the key only together with its own "
                  "OPENAI_BASE_URL, and only once you allow it)") if config.unused_key else ""
        raise ConfigError(f"OPENAI_API_KEY is not set for {shown_url(config.base_url)}: {where}{unused}.")
    key_problem(config.api_key.value, where)
    if config.max_steps < 1:
        raise ConfigError("--max-steps must be at least 1.")
    for name in WAITS:
        parse_wait(f"--{name.replace('_', '-')}", str(getattr(config, name)))
    if config.context_tokens < MIN_BUDGET:
        raise ConfigError(f"--context-tokens must be at least {MIN_BUDGET} (the system prompt alone takes "
                          "about 1,000).")
    if config.max_reply_tokens < MIN_REPLY_TOKENS:
        raise ConfigError(f"--max-reply-tokens must be at least {MIN_REPLY_TOKENS} (one edit of a few lines).")
    if config.log is not None and config.resume is not None:
        raise ConfigError("--log and --resume do not go together: a resumed session goes on in its own file.")
    try:
        if not config.workspace.is_dir():
            raise ConfigError(f"-C {config.workspace}: " + ("not a directory." if config.workspace.exists()
                                                            else "no such directory."))
        if not os.access(config.workspace, os.R_OK | os.X_OK):  # the tools open it once, at the start
            raise ConfigError(f"-C {config.workspace}: you may not open this folder (its permissions).")
    except OSError as error:  # a name too long, say
        raise ConfigError(f"-C {config.workspace}: {error.strerror or error}.") from None


def url_problem(base_url: str) -> None:
    """Raise ConfigError unless the base URL is an http(s) URL with a host (and a port that can be)."""
    example = "e.g. http://localhost:11434/v1"
    try:
        url = urlsplit(base_url)
        url.port  # noqa: B018  (reading it checks it: a port over 65535 raises here, not at the first request)
    except ValueError as error:
        raise ConfigError(f"OPENAI_BASE_URL {shown_url(base_url)!r} is not a valid URL ({error}), {example}.") from None
    if bad := next((char for char in base_url if char.isspace() or not char.isprintable() or char == "\\"), None):
        raise ConfigError(f"OPENAI_BASE_URL {shown_url(base_url)!r} holds {bad!r}, which no URL has, {example}.")
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ConfigError(f"OPENAI_BASE_URL {shown_url(base_url)!r} is not an http(s) URL with a host, {example}.")
    # What is said about the host (the start line, a project's .env question) is read with urllib's parser; what
    # requests connects to, with urllib3's: a URL they read apart ("http://a\\@b/") would go where nobody was told.
    try:
        host = (urllib3.util.parse_url(base_url).host or "").strip("[]").lower()
    except ValueError:  # urllib3's LocationParseError: a host IDNA refuses (fullwidth letters, say)
        host = None
    if not url.hostname.isascii():  # what it looks like and what it resolves to differ: say the one it is
        raise ConfigError(f"OPENAI_BASE_URL {shown_url(base_url)!r}: write its host in ASCII, as DNS has it"
                          f"{f' ({host})' if host else ''}, {example}.")
    if host != url.hostname:
        raise ConfigError(f"OPENAI_BASE_URL {shown_url(base_url)!r} names its host ambiguously, {example}.")


def key_problem(key: str, where: str) -> None:
    """Raise ConfigError for a key no provider issues: the example's placeholder, or one pasted badly."""
    if PLACEHOLDER_KEY.fullmatch(key):
        fix = f": {where} to your real key" if where else ""
        raise ConfigError(f"OPENAI_API_KEY is still the example's placeholder{fix}.")
    if bad := next((char for char in key if not char.isascii() or not char.isprintable() or char == " "), None):
        # HTTP headers carry ASCII: a pasted "…" or a space would fail on every request
        raise ConfigError(f"OPENAI_API_KEY contains {bad!r}, which no API key has; copy the key again from your "
                          f"provider{' and ' + where if where else ''}.")


def command_boundary(config: Config) -> Boundary | None:
    """The kernel boundary every command will run in (landlock.py), by the settings; None when the user turned it
    off. What commands may not read: the secrets under the home folder, plainagent's own .env, state and settings
    (and a transcript kept elsewhere). And the key, if the environment gave it, is wiped from this process's
    /proc/PID/environ, which every process of the user may read, Landlock or not."""
    wipe_from_environ_block("OPENAI_API_KEY")
    if not config.sandbox:
        return None
    own = [config.env_file, state_dir(), config_dir(), config.log, Path(config.resume) if config.resume else None]
    for folder in config.sandbox_write:
        if not folder.is_dir():
            config.notes.append(f"plainagent: PLAINAGENT_SANDBOX_WRITE names {folder}, which is not a folder: commands "
                                "cannot write there (make it, then start plainagent again).")
    shallow, searched = hidden_paths(Path.home(), config.workspace, [])
    passed = [Path(os.path.realpath(path)) for path in config.sandbox_read]  # what the user lets commands read
    hidden = real_paths([path for path in own if path]) + [path for path in shallow if not any(
        path.is_relative_to(read) for read in passed)]  # plainagent's own, whatever the setting says
    search = SecretSearch(places(Path.home(), config.workspace), passed)
    folders = [folder for folder in config.sandbox_write if folder.is_dir()]  # the rest is said above, not listed
    boundary = Boundary(config.workspace, hidden, folders, config.sandbox_network, searched=searched, search=search)
    if boundary.abi:  # the whole walk, in its own process: the first command collects it
        search.start()
    boundary.own_code = own_code(boundary.writable())  # plainagent's checkout or Python where commands write: kept
    return boundary


def writable_by_commands(config: Config, boundary: Boundary | None) -> list[Path]:
    """The folders commands may write in: the boundary's; with the sandbox off, at least the workspace and
    PLAINAGENT_SANDBOX_WRITE's (and anything else the user may write, which no list can hold)."""
    return boundary.writable() if boundary is not None else [config.workspace, *config.sandbox_write]


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
