"""mini-swe-agent 2.4.6, the peer bench/tokens.py measures plainagent against: installed by pip into a virtual
environment of its own under the user's cache directory (never a dependency of plainagent, never in the
system Python), and run in its own text format (`mini_textbased.yaml`: one shell command in a
```mswea_bash_command block per reply) on a session's work, against the same local fake endpoint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

NAME, VERSION = "mini-swe-agent", "2.4.6"


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "plainagent-bench"


def install(log=print) -> Path:
    """The `mini` command of mini-swe-agent VERSION, installed first if it is not there yet."""
    venv = cache_dir() / f"{NAME}-{VERSION}"
    mini, python = venv / "bin" / "mini", venv / "bin" / "python"
    if mini.exists() and installed_version(python) == VERSION:
        return mini
    log(f"installing {NAME} {VERSION} into {venv} with pip (once; it takes a few minutes)")
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"{NAME}=={VERSION}"], check=True)
    except subprocess.CalledProcessError as error:
        sys.exit(f"could not install {NAME} {VERSION} ({error}); run with --no-peer to measure plainagent alone")
    return mini


def installed_version(python: Path) -> str | None:
    found = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({NAME!r}))"],
                           capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else None


def environment(base: dict[str, str], url: str, home: Path) -> dict[str, str]:
    """What mini runs with: the fake endpoint, no cost lookups, and its config in `home`, not the user's."""
    env = {name: value for name, value in base.items() if not name.startswith("MSWEA_")}
    env.update({
        "MSWEA_GLOBAL_CONFIG_DIR": str(home),  # its .env and last trajectory go here
        "MSWEA_CONFIGURED": "true",  # no first-run questions
        "MSWEA_COST_TRACKING": "ignore_errors",  # a fake model has no price
        "MSWEA_SILENT_STARTUP": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm would fetch its price list from the network
        "OPENAI_API_KEY": "sk-bench",
    })
    return env


def run(mini: Path, project: Path, task: str, url: str, env: dict[str, str], home: Path) -> tuple[int, str, list[str]]:
    """Run mini on `task` in `project` against the endpoint at `url`: its exit code, its output, and the raw
    output of each command it ran, in order (from its trajectory), so a benchmark can tell them from the
    template around them."""
    trajectory = home / "trajectory.json"
    done = subprocess.run(
        [str(mini), "-c", "mini_textbased.yaml", "-c", f"model.model_kwargs.api_base={url}",
         "--model-class", "litellm_textbased", "-m", "openai/bench", "-t", task, "--yolo", "--exit-immediately",
         "--cost-limit", "0", "-o", str(trajectory)],
        cwd=project, env=environment(env, url, home), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=600)
    outputs = []
    if trajectory.exists():
        messages = json.loads(trajectory.read_text())["messages"]
        outputs = [message["extra"]["raw_output"] for message in messages
                   if message.get("role") == "user" and "raw_output" in message.get("extra", {})]
    return done.returncode, done.stdout + done.stderr, outputs
