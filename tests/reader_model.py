"""A scripted model for long sessions, and a server with a context window: the model reads files when asked
and answers only from what its request holds, so it gets an answer right only if the file's last line, or its
own notes, survived every compaction on the way. The end-to-end tests (test_e2e_sessions.py) and the benchmark
(bench/long_session.py) run `python agent.py` against it, through the FakeEndpoint.

The server counts a token per 3.6 bytes of message text (plus 3 a message), reports that count as
usage.prompt_tokens, and refuses what passes its window with a 400 in OpenAI's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from fake_endpoint import completion

N_FILES = 30
FILE_LINES = 90  # about 6 KB a file (read_file adds ~7 bytes a line): one read fits an 8,000-token budget, three do not
SUMMARY_MARK = "You keep the notes"  # how the fake model recognises a request for a summary (context.SUMMARY_PROMPT)
ASK = re.compile(r"What is the word on the last line of notes/file_(\d+)\.txt\?")
COLLECT = re.compile(r"Read notes/file_01\.txt to notes/file_(\d+)\.txt")
FILE_WORD = re.compile(r"The word of file (\d+) is (\w+)\.")
NOTE = re.compile(r"Noted: file (\d+) has (\w+)\.")


def word(n: int) -> str:
    return f"{['amber', 'birch', 'cedar', 'delta', 'ember', 'fjord', 'gale'][n % 7]}{n * 37 % 1000:03d}"


def write_files(project: Path, n_files: int = N_FILES) -> None:
    notes = project / "notes"
    notes.mkdir(parents=True)
    for n in range(1, n_files + 1):
        filler = "".join(f"line {i:03d} of file {n:02d}: nothing to see here, only room taken up.\n"
                         for i in range(1, FILE_LINES))
        (notes / f"file_{n:02d}.txt").write_text(filler + f"The word of file {n:02d} is {word(n)}.\n")


def ask(n: int) -> str:
    return f"What is the word on the last line of notes/file_{n:02d}.txt?"


def collect(n_files: int) -> str:
    return f"Read notes/file_01.txt to notes/file_{n_files:02d}.txt in turn, and list the word of each."


@dataclass
class ReaderModel:
    """A model that reads files when asked and answers only from what its request holds; also a server
    that counts tokens and refuses requests over `window`."""

    window: int | None = None
    requests: list[int] = field(default_factory=list)  # tokens of each request answered (summaries included)
    n_refused: int = 0
    n_summaries: int = 0
    prompt_chars: int = 0

    def __call__(self, body: dict):
        messages = body["messages"]
        tokens = sum(len(m["content"].encode()) / 3.6 + 3 for m in messages)
        self.prompt_chars += sum(len(m["content"]) for m in messages)
        if self.window and tokens > self.window:
            self.n_refused += 1
            return {"status": 400, "body": {"error": {
                "message": f"This model's maximum context length is {self.window} tokens. However, your messages "
                           f"resulted in {tokens:.0f} tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error", "code": "context_length_exceeded"}}}
        self.requests.append(round(tokens))
        usage = {"prompt_tokens": round(tokens), "completion_tokens": 20, "total_tokens": round(tokens) + 20}
        return {"body": completion(self.reply(messages), usage=usage)}

    def reply(self, messages: list[dict]) -> str:
        if messages[0]["content"].startswith(SUMMARY_MARK):
            self.n_summaries += 1
            found = dict(FILE_WORD.findall(messages[1]["content"]) + NOTE.findall(messages[1]["content"]))
            return "The user asks for the words in files. " + " ".join(
                f"Noted: file {n} has {w}." for n, w in sorted(found.items()))
        last = messages[-1]["content"]
        task = next(m["content"] for m in reversed(messages)
                    if ASK.search(m["content"]) or COLLECT.search(m["content"]))
        if match := ASK.search(task):
            n = match.group(1)
            if ASK.search(last):
                return f'tool: read_file({{"path": "notes/file_{n}.txt"}})'
            found = dict(FILE_WORD.findall(last))
            return f"The word of file {n} is {found[n]}." if n in found else f"I cannot see the last line of file {n}."
        n_files = int(COLLECT.search(task).group(1))
        noted = dict(NOTE.findall("\n".join(m["content"] for m in messages)))
        text = "".join(f"Noted: file {n} has {w}.\n" for n, w in FILE_WORD.findall(last) if n not in noted)
        noted.update(FILE_WORD.findall(last))
        missing = [n for n in range(1, n_files + 1) if f"{n:02d}" not in noted]
        if not missing:
            return "Words: " + ", ".join(f"{n}={w}" for n, w in sorted(noted.items())) + "."
        return text + f'tool: read_file({{"path": "notes/file_{missing[0]:02d}.txt"}})'


def expected_answers(scenario: str, n_files: int) -> list[str]:
    if scenario == "one-task":
        return ["Words: " + ", ".join(f"{n:02d}={word(n)}" for n in range(1, n_files + 1)) + "."]
    return [f"The word of file {n:02d} is {word(n)}." for n in range(1, n_files + 1)]
