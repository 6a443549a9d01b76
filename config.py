"""Configuration: where each setting comes from, and whether the settings can be used at all.

Precedence: command-line flag > environment variable > `.env` in the current directory > `.env` next to
agent.py. `.env` files are read with `dotenv_values`, so the key never enters `os.environ` (and so never the
environment of the commands the agent runs). A setting that cannot be used is a `ConfigError` whose message
names the flag or variable the user set; `agent.main` shows it as one line and exits 2.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from dotenv import dotenv_values


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
    yes: bool = False  # -y: approve every write and command without asking
    env_file: Path | None = None  # the .env to name in error messages


class ConfigError(Exception):
    """The settings are unusable; the message names the variable and where to set it."""


ENV_VARS = {"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL", "model": "OPENAI_MODEL",
            "max_steps": "PLAINAGENT_MAX_STEPS", "stop": "PLAINAGENT_STOP",
            "context_tokens": "PLAINAGENT_CONTEXT_TOKENS", "stream": "PLAINAGENT_STREAM"}  # Config field -> variable
MIN_CONTEXT_TOKENS = 2000  # the system prompt alone takes about 1,000


def load_config(args: argparse.Namespace, environ: dict, cwd: Path, script_dir: Path) -> Config:
    """Settings by precedence: flag > environment > .env in the current directory > .env next to agent.py."""
    env_files = [path for path in (script_dir / ".env", cwd / ".env") if path.is_file()]
    settings: dict[str, str] = {}
    for path in dict.fromkeys(env_files):  # later files win; dotenv_values leaves os.environ alone
        settings.update({name: value for name, value in dotenv_values(path).items() if value})
    settings.update({name: value for name, value in environ.items() if name in ENV_VARS.values() and value})
    config = Config(env_file=env_files[-1] if env_files else cwd / ".env")
    for name, variable in ENV_VARS.items():
        if variable in settings:
            setattr(config, name, parse_setting(name, variable, settings[variable]))
    for name in ("model", "base_url", "max_steps", "context_tokens", "log", "resume"):
        if getattr(args, name) is not None:
            setattr(config, name, getattr(args, name))
    config.workspace = Path(args.cwd).resolve()
    config.yes = args.yes
    if getattr(args, "no_stream", False):
        config.stream = False
    check_config(config)
    return config


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
    except ValueError:
        raise ConfigError(f"{variable}={value!r} is not valid; see .env.example.") from None
    return value.strip()


# Keys as the examples write them (.env.example, providers' docs): sent as they are, they only earn a 401.
PLACEHOLDER_KEY = re.compile(r"(?i).*(\.\.\.|…)|(sk-)?(your[-_ ]?(api[-_ ]?)?key.*|<.*>|\[.*\]|changeme|xxx+)")


def check_config(config: Config) -> None:
    where = f"set it in {config.env_file} (see .env.example) or the environment"
    if not config.model:
        raise ConfigError(f"OPENAI_MODEL is not set: {where}, or pass -m MODEL.")
    if urlsplit(config.base_url).scheme not in ("http", "https"):
        raise ConfigError(f"OPENAI_BASE_URL {config.base_url!r} is not an http(s) URL, e.g. http://localhost:11434/v1.")
    if PLACEHOLDER_KEY.fullmatch(config.api_key):
        if not is_local(config.base_url):
            raise ConfigError(f"OPENAI_API_KEY is still the example's placeholder: {where} to your real key.")
        config.api_key = ""  # a local server needs none; the example's line was simply left in
    if not config.api_key and not is_local(config.base_url):
        raise ConfigError(f"OPENAI_API_KEY is not set for {config.base_url}: {where}.")
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
    if not config.workspace.exists():
        raise ConfigError(f"-C {config.workspace}: no such directory.")
    if not config.workspace.is_dir():
        raise ConfigError(f"-C {config.workspace}: not a directory.")


# Names that only resolve inside a private network (mDNS, home routers, Docker's name for the host).
PRIVATE_SUFFIXES = (".localhost", ".local", ".lan", ".internal", ".home.arpa")


def is_local(base_url: str) -> bool:
    """A server on this machine or the private network (Ollama, LM Studio, vLLM on a LAN box) may run
    without an API key; a public host may not."""
    host = (urlsplit(base_url).hostname or "").lower().rstrip(".")
    if host == "localhost" or host.endswith(PRIVATE_SUFFIXES) or (host and "." not in host and ":" not in host):
        return True  # a single-label name such as "gpu-box" only resolves on a local network
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local
