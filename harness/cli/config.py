"""Configuration: where each setting comes from, and whether the settings can be used at all.

Precedence: command-line flag > environment variable > `.env` in the current directory > `.env` next to
agent.py. `.env` files are read with `dotenv_values`, so the key never enters `os.environ` (and so never the
environment of the commands the agent runs). A setting that cannot be used is a `ConfigError` whose message
names the flag or variable the user set; `agent.main` shows it as one line and exits 2.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from dotenv import dotenv_values

from harness.model.hosts import is_local, shown_url
from harness.sandbox.guard import parse_rules


@dataclass
class Config:
    api_key: str = field(default="", repr=False)  # OPENAI_API_KEY; may be empty for a local server
    base_url: str = "https://api.openai.com/v1"  # OPENAI_BASE_URL, including the provider's version path
    model: str = ""  # OPENAI_MODEL
    max_steps: int = 30  # PLAINAGENT_MAX_STEPS: model calls per task
    stop: list[str] = field(default_factory=lambda: ["\ntool_result("])  # PLAINAGENT_STOP: JSON list, or "off"
    stream: bool = True  # PLAINAGENT_STREAM (on/off), --no-stream: show replies as they are written
    context_tokens: int = 32_000  # PLAINAGENT_CONTEXT_TOKENS: the most one request may hold, estimated in tokens
    log: Path | None = None  # --log: the transcript file (default: a new one in the state directory)
    resume: str | None = None  # --resume: "" for this workspace's latest session, or a transcript file
    workspace: Path = Path(".")  # -C: the directory the tools may touch
    mode: str = "ask"  # PLAINAGENT_MODE, --mode (-y is --mode yes): what is asked before writes and commands
    deny: str = ""  # PLAINAGENT_DENY: more commands never to run, "terraform destroy; npm publish" (guard.py)
    env_file: Path | None = None  # the .env to name in error messages


class ConfigError(Exception):
    """The settings are unusable; the message names the variable and where to set it."""


ENV_VARS = {"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL", "model": "OPENAI_MODEL",
            "max_steps": "PLAINAGENT_MAX_STEPS", "stop": "PLAINAGENT_STOP",
            "context_tokens": "PLAINAGENT_CONTEXT_TOKENS", "mode": "PLAINAGENT_MODE",
            "deny": "PLAINAGENT_DENY", "stream": "PLAINAGENT_STREAM"}  # Config field -> variable
MIN_CONTEXT_TOKENS = 2000  # the system prompt alone takes about 1,000
MODES = ("ask", "read-only", "edits", "yes")  # permissions.py says what each asks


def load_config(args: argparse.Namespace, environ: dict, cwd: Path, script_dir: Path) -> Config:
    """Settings by precedence: flag > environment > .env in the current directory > .env next to agent.py."""
    env_files = [path for path in (script_dir / ".env", cwd / ".env") if path.is_file()]
    settings: dict[str, str] = {}
    sources: dict[str, str] = {}  # variable -> where its value came from, to say so and to check the key's
    for path in dict.fromkeys(env_files):  # later files win; dotenv_values leaves os.environ alone
        try:
            # No ${VAR} expansion: a project's .env must not be able to copy your other secrets into a URL.
            values = dotenv_values(path, encoding="utf-8", interpolate=False)
        except (UnicodeDecodeError, OSError) as error:  # PowerShell's `>` writes UTF-16, say
            raise ConfigError(f"{path} cannot be read as UTF-8 text ({error}); save it as UTF-8.") from None
        settings.update({name: value for name, value in values.items() if value})
        sources.update({name: str(path) for name, value in values.items() if value})
    settings.update({name: value for name, value in environ.items() if name in ENV_VARS.values() and value})
    sources.update({name: "the environment" for name, value in environ.items() if name in ENV_VARS.values() and value})
    if args.base_url is not None:
        sources["OPENAI_BASE_URL"] = "--base-url"
    project_env = str(cwd / ".env") if cwd.resolve() != script_dir.resolve() else ""
    check_key_destination(sources, project_env)
    lowered = sources.get("PLAINAGENT_MODE") == project_env and settings["PLAINAGENT_MODE"].strip() in ("edits", "yes")
    if lowered and args.mode is None and not args.yes:
        raise ConfigError(f"PLAINAGENT_MODE={settings['PLAINAGENT_MODE'].strip()} comes from {project_env}: a "
                          "project's .env may make plainagent ask more, never less. Pass --mode or -y yourself, "
                          "or set it in the environment.")
    config = Config(env_file=env_files[-1] if env_files else cwd / ".env")
    for name, variable in ENV_VARS.items():
        if variable in settings:
            setattr(config, name, parse_setting(name, variable, settings[variable]))
    for name in ("model", "base_url", "max_steps", "context_tokens", "log", "resume"):
        if getattr(args, name) is not None:
            setattr(config, name, getattr(args, name))
    try:
        config.workspace = Path(args.cwd).resolve()
    except (OSError, RuntimeError) as error:  # a name too long, a loop of symlinks
        raise ConfigError(f"-C {args.cwd}: {getattr(error, 'strerror', None) or error}.") from None
    if args.yes and args.mode not in (None, "yes"):
        raise ConfigError(f"-y is --mode yes, and --mode {args.mode} says otherwise: give one of them.")
    if args.mode is not None and args.mode not in MODES:
        raise ConfigError(f"--mode {args.mode}: not a mode; use one of: {', '.join(MODES)}.")
    config.mode = "yes" if args.yes else args.mode or config.mode
    if getattr(args, "no_stream", False):
        config.stream = False
    check_config(config)
    return config


def check_key_destination(sources: dict[str, str], project_env: str) -> None:
    """Refuse to send a key to an endpoint that a project's .env names, unless the key came from there too.

    You run the agent inside projects you did not write: a cloned repository's .env could otherwise point
    OPENAI_BASE_URL at its author's server, and your key (from the environment, or the .env next to
    agent.py) would go with the first request.
    """
    if sources.get("OPENAI_BASE_URL") == project_env and sources.get("OPENAI_API_KEY", project_env) != project_env:
        raise ConfigError(f"OPENAI_BASE_URL comes from {project_env}, but OPENAI_API_KEY from "
                          f"{sources['OPENAI_API_KEY']}: your key is not sent to an endpoint a project's .env names. "
                          "Put the key in that .env too, or pass --base-url.")


def parse_setting(name: str, variable: str, value: str):
    try:
        if name in ("max_steps", "context_tokens"):
            least = 1 if name == "max_steps" else MIN_CONTEXT_TOKENS
            if int(value) < least:
                raise ConfigError(f"{variable}={value}: it must be at least {least}.")
            return int(value)
        if name == "stream":
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
        if name == "deny":
            try:
                parse_rules(value)  # say so now, not at the first command
            except ValueError as error:  # an unclosed quote
                raise ConfigError(f"{variable}={value!r}: {error}; rules are separated by ';', e.g. "
                                  f"{variable}=\"terraform destroy; npm publish\".") from None
    except ValueError:
        raise ConfigError(f"{variable}={value!r} is not valid; see .env.example.") from None
    return value.strip()


# Keys as the examples write them (.env.example, providers' docs): sent as they are, they only earn a 401.
PLACEHOLDER_KEY = re.compile(r"(?i).*(\.\.\.|…)|(sk-)?(your[-_ ]?(api[-_ ]?)?key.*|<.*>|\[.*\]|changeme|xxx+)")


def check_config(config: Config) -> None:
    where = f"set it in {config.env_file} (see .env.example) or the environment"
    if not config.model:
        raise ConfigError(f"OPENAI_MODEL is not set: {where}, or pass -m MODEL.")
    example = "e.g. http://localhost:11434/v1"
    try:
        url = urlsplit(config.base_url)
        url.port  # noqa: B018  (reading it checks it: a port over 65535 raises here, not at the first request)
    except ValueError as error:
        raise ConfigError(f"OPENAI_BASE_URL {shown_url(config.base_url)!r} is not a valid URL ({error}), "
                          f"{example}.") from None
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ConfigError(f"OPENAI_BASE_URL {shown_url(config.base_url)!r} is not an http(s) URL with a host, "
                          f"{example}.")
    if PLACEHOLDER_KEY.fullmatch(config.api_key):
        if not is_local(config.base_url):
            raise ConfigError(f"OPENAI_API_KEY is still the example's placeholder: {where} to your real key.")
        config.api_key = ""  # a local server needs none; the example's line was simply left in
    if not config.api_key and not is_local(config.base_url):
        raise ConfigError(f"OPENAI_API_KEY is not set for {shown_url(config.base_url)}: {where}.")
    if bad := next((char for char in config.api_key if not char.isascii() or not char.isprintable() or char == " "),
                   None):  # HTTP headers carry ASCII: a pasted "…" or a space would fail on every request
        raise ConfigError(f"OPENAI_API_KEY contains {bad!r}, which no API key has; copy the key again from "
                          f"your provider and {where}.")
    if config.max_steps < 1:
        raise ConfigError("--max-steps must be at least 1.")
    if config.context_tokens < MIN_CONTEXT_TOKENS:
        raise ConfigError(f"--context-tokens must be at least {MIN_CONTEXT_TOKENS} (the system prompt alone takes "
                          "about 1,000).")
    if config.log is not None and config.resume is not None:
        raise ConfigError("--log and --resume do not go together: a resumed session goes on in its own file.")
    try:
        if not config.workspace.is_dir():
            raise ConfigError(f"-C {config.workspace}: " + ("not a directory." if config.workspace.exists()
                                                            else "no such directory."))
    except OSError as error:  # a name too long, say
        raise ConfigError(f"-C {config.workspace}: {error.strerror or error}.") from None


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


def is_text(text: str) -> bool:
    """False for a string holding lone surrogates: bytes that were not UTF-8, which no server can take."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
