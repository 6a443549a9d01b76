"""Benchmark: long sessions under a small context budget, as a user runs them, against a local fake endpoint.

Each scenario runs `python agent.py` in a subprocess against a scripted model that answers what it is sent:
  repl       thirty REPL tasks, each reading a 6 KB file and answering with the word on its last line,
             under --context-tokens 8000;
  one-task   one task that reads twenty such files in turn, noting each word, then lists them all,
             under --context-tokens 8000;
  refusing   the thirty tasks with the default budget (32,000) against a server whose window is 4,096
             tokens and that refuses every longer request with a 400 in OpenAI's words.
The fake server counts a token per 3.6 bytes of message text (plus 3 a message), reports that count as
usage.prompt_tokens, and refuses what passes its window. The model (tests/reader_model.py, which the
end-to-end tests run too) only gets an answer right if the file's last line, or its own notes, are still in the
request it is sent.
Prints, for each: requests, total prompt characters, the largest request against the budget, compactions,
refusals, and whether every answer was right.
Run: python bench/long_session.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_endpoint import FakeEndpoint, install_program  # noqa: E402
from reader_model import N_FILES, ReaderModel, ask, collect, expected_answers, write_files  # noqa: E402


def run_scenario(scenario: str, workdir: Path, n_files: int = N_FILES, budget: int | None = 8000) -> dict:
    """Run one scenario in `workdir` (which gets the program, the project and the state directory)."""
    install, project = workdir / "install", workdir / "project"
    install.mkdir()
    install_program(install)
    write_files(project, n_files)
    model = ReaderModel(window=4096 if scenario == "refusing" else budget)
    argv = [sys.executable, str(install / "agent.py")] + (["--context-tokens", str(budget)] if budget else [])
    if scenario == "one-task":
        argv += ["-p", collect(n_files), "--max-steps", str(n_files + 5)]
        stdin = ""
    else:
        stdin = "".join(ask(n) + "\n" for n in range(1, n_files + 1)) + "exit\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
    env["XDG_STATE_HOME"] = str(workdir / "state")
    with FakeEndpoint([model] * 1000) as endpoint:
        env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "reader", "OPENAI_API_KEY": "sk-bench-key"})
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=project, env=env, input=stdin, capture_output=True, text=True, timeout=300)
        seconds = time.perf_counter() - started
    transcript = next((workdir / "state" / "plainagent" / "sessions").glob("*.jsonl"))
    entries = [json.loads(line) for line in transcript.read_text().splitlines()]
    answers = [line for line in done.stdout.splitlines() if line.strip()]
    return {"scenario": scenario, "returncode": done.returncode, "stderr": done.stderr, "seconds": seconds,
            "requests": len(endpoint.received), "refused": model.n_refused, "summaries": model.n_summaries,
            "largest": max(model.requests), "window": model.window, "budget": budget or 32_000,
            "prompt_chars": model.prompt_chars, "answers": answers,
            "right": answers == expected_answers(scenario, n_files),
            "compactions": sum(entry["type"] == "compaction" for entry in entries), "transcript": transcript}


def main() -> None:
    print(f"python {sys.version.split()[0]}; the fake server counts a token per 3.6 bytes of message text")
    for scenario, budget in (("repl", 8000), ("one-task", 8000), ("refusing", None)):
        with tempfile.TemporaryDirectory() as temp:
            result = run_scenario(scenario, Path(temp), budget=budget)
        limit = f"window {result['window']:,}" if scenario == "refusing" else f"budget {result['budget']:,}"
        print(f"{scenario:9} requests {result['requests']:3} (summaries {result['summaries']}, refused "
              f"{result['refused']}), prompt characters {result['prompt_chars']:,}, largest request "
              f"{result['largest']:,} tokens ({limit}), compactions {result['compactions']}, every answer right: "
              f"{'yes' if result['right'] else 'NO'}, exit {result['returncode']}, {result['seconds']:.1f} s")


if __name__ == "__main__":
    main()
