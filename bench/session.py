"""Benchmark: one scripted coding session, as a user runs it, against a local fake endpoint.

Prints what a session costs on the wire: TCP connections, HTTP requests, bytes sent, the size of the
system prompt, and the time from starting `python agent.py` to its first request reaching the server.
(Prompt tokens over a longer session, compared with a peer agent: bench/tokens.py.)
Run: python bench/session.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_endpoint import FakeEndpoint, install_program  # noqa: E402
from tokens import load_counter  # noqa: E402

from prompt import render_system_prompt  # noqa: E402
from tools import TOOLS  # noqa: E402

SCRIPT = [
    "Let me see the project.\ntool: list_files()",
    'tool: read_file({"path": "app.py"})',
    'tool: search_files({"pattern": "def ", "glob": "*.py"})',
    'tool: edit_file({"path": "app.py", "old_str": "return a - b", "new_str": "return a + b"})',
    'tool: run_command({"command": "python -c \\"import app; print(app.add(2, 3))\\""})',
    "Fixed add() in app.py: it subtracted. It now returns 5 for add(2, 3).",
]


def one_session() -> dict:
    with tempfile.TemporaryDirectory() as temp:
        install, project = Path(temp, "install"), Path(temp, "project")
        install.mkdir(), project.mkdir()
        install_program(install)
        (project / "app.py").write_text("def add(a, b):\n    return a - b\n" + "".join(
            f"\n\ndef helper_{n}(x):\n    return x * {n}\n" for n in range(40)))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
        env["XDG_STATE_HOME"] = str(Path(temp, "state"))  # the transcript is the bench's, not the user's
        with FakeEndpoint(SCRIPT) as endpoint:
            env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "bench", "OPENAI_API_KEY": "sk-bench"})
            started = time.perf_counter()
            process = subprocess.Popen([sys.executable, str(install / "agent.py"), "-p", "fix add", "--yes"],
                                       cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            while not endpoint.received and process.poll() is None:
                time.sleep(0.001)
            first_request = time.perf_counter() - started
            out, err = process.communicate(timeout=60)
            total = time.perf_counter() - started
        assert process.returncode == 0, err
        bodies = [json.dumps(r.body) for r in endpoint.received]
        return {"first_request_s": first_request, "session_s": total, "connections": endpoint.n_connections,
                "requests": len(endpoint.received), "bytes_sent": sum(len(b.encode()) for b in bodies),
                "last_request_bytes": len(bodies[-1].encode())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = [one_session() for _ in range(parser.parse_args().runs)]
    prompt = render_system_prompt(TOOLS)
    print(f"python {sys.version.split()[0]}, {len(runs)} runs of a {len(SCRIPT)}-reply session "
          "(list, read, search, edit, run, answer)")
    count, tokenizer = load_counter(None)
    print(f"system prompt: {len(prompt):,} characters, {count(prompt):,} tokens; counted with {tokenizer}")
    print(f"TCP connections per session: {statistics.mode(r['connections'] for r in runs)}")
    print(f"HTTP requests per session: {runs[0]['requests']}")
    print(f"bytes sent per session: {runs[0]['bytes_sent']:,} (last request {runs[0]['last_request_bytes']:,})")
    print(f"start to first request: median {statistics.median(r['first_request_s'] for r in runs) * 1000:.0f} ms")
    session_ms = statistics.median(r["session_s"] for r in runs) * 1000
    print(f"whole session (fake model answers at once): median {session_ms:.0f} ms")


if __name__ == "__main__":
    main()
