"""The work bench/tokens.py measures: scripted sessions of different shapes, each written twice, once in
plainagent's tool calls and once as the shell commands mini-swe-agent runs for the same step.

A session is a workspace (files), a task, and steps. Each step is one model reply: the same thought for both
agents, then the step's action in each agent's own format: plainagent's `tool:` lines (several calls may share a
reply), mini-swe-agent's one shell command (commands joined with && where a step does several things). The
last step has no action: plainagent answers with the thought; mini-swe-agent says the thought and runs its
`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`. Both agents must leave the files as `expected` says.

The shapes: the issue-11 session (a 3,000-line module read a page at a time); a failing test fixed across a
small package (pytest, a search, whole-file reads of 70-120-line modules, one edit); a rename across many
small files (a search, several reads in one reply, an edit of every place in each file); an investigation
through a log and commands (tail, grep, a config file, a numbered range of a module a search pointed to, one
edit, a check).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

WORKSPACES = Path(__file__).resolve().parent / "workspaces"


@dataclass
class Step:
    thought: str  # the model's own words, the same for both agents
    calls: list[tuple[str, dict]]  # plainagent: (tool, arguments) for each call in the reply; [] for the answer
    command: str = ""  # mini-swe-agent: one shell command doing the same; "" for the answer

    def plainagent_reply(self) -> str:
        calls = [f"tool: {name}({json.dumps(args, ensure_ascii=False)})" for name, args in self.calls]
        return "\n".join([self.thought, ""] + calls if calls else [self.thought])

    def peer_reply(self) -> str:
        command = self.command or "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
        return f"THOUGHT: {self.thought}\n\n```mswea_bash_command\n{command}\n```"

    @property
    def kind(self) -> str:
        """What the step's results are, named by plainagent's tools: "read_file", "edit_file+run_command"."""
        return "+".join(dict.fromkeys(name for name, _ in self.calls)) or "answer"


@dataclass
class Session:
    name: str
    about: str
    files: dict[str, str]  # path -> text, the workspace at the start
    task: str
    steps: list[Step]
    expected: Callable[[dict[str, str]], dict[str, str]]  # the files at the start -> the files at the end


def read_workspace(name: str) -> dict[str, str]:
    folder = WORKSPACES / name
    return {path.relative_to(folder).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(folder.rglob("*")) if path.is_file() and "__pycache__" not in path.parts}


def replaced(files: dict[str, str], changes: dict[str, list[tuple[str, str]]]) -> dict[str, str]:
    """`files` with each (old, new) of `changes` applied to its file, each old found exactly once."""
    result = dict(files)
    for path, pairs in changes.items():
        for old, new in pairs:
            assert result[path].count(old) == 1, (path, old)
            result[path] = result[path].replace(old, new)
    return result


def read(path: str, **range_) -> tuple[str, dict]:
    return "read_file", {"path": path, **range_}


def edit(path: str, old: str, new: str) -> tuple[str, dict]:
    return "edit_file", {"path": path, "old_str": old, "new_str": new}


def run(command: str) -> tuple[str, dict]:
    return "run_command", {"command": command}


# --- issue 11: a 3,000-line module ---

BIG = "".join(f"def func_{i}(x):\n    return x + {i}  # helper number {i} does a small thing\n\n" for i in range(1000))
BIG_CHANGES = {"big.py": [("    return x + 500  #", "    return x + 5000  #"),
                          ("    return x + 999  #", "    return x - 999  #")],
               "app.py": [("func_1(1)", "func_500(1)"), ("print(", "result = (")]}

BIG_MODULE = Session(
    name="big-module",
    about="issue 11's work: a 3,000-line module and a small script, read, edited, read again",
    files={"big.py": BIG, "app.py": "import big\n\nprint(big.func_1(1))\n", "README.md": "# demo\n"},
    task=("In big.py make func_500 add 5000 and func_999 subtract 999; make app.py call func_500 "
          "and keep its result in a variable named result."),
    steps=[
        Step("First, the files in the project.", [("list_files", {})], "find . -type f | sort"),
        Step("Now app.py, which is short.", [read("app.py")], "cat app.py"),
        Step("And big.py, to see how the helpers look.", [read("big.py")], "cat big.py"),
        Step("func_500 returns x + 500; make it add 5000.",
             [edit("big.py", "    return x + 500  #", "    return x + 5000  #")],
             "sed -i 's/    return x + 500  #/    return x + 5000  #/' big.py"),
        Step("Point app.py at func_500.", [edit("app.py", "func_1(1)", "func_500(1)")],
             "sed -i 's/func_1(1)/func_500(1)/' app.py"),
        Step("Check app.py.", [read("app.py")], "cat app.py"),
        Step("Check big.py again before the second change.", [read("big.py")], "cat big.py"),
        Step("func_999 must subtract 999.", [edit("big.py", "    return x + 999  #", "    return x - 999  #")],
             "sed -i 's/    return x + 999  #/    return x - 999  #/' big.py"),
        Step("Keep the result in a variable instead of printing it.", [edit("app.py", "print(", "result = (")],
             "sed -i 's/print(/result = (/' app.py"),
        Step("List the files to be sure nothing else changed.", [("list_files", {})], "find . -type f | sort"),
        Step("A last look at app.py.", [read("app.py")], "cat app.py"),
        Step("Done: func_500 adds 5000, func_999 subtracts 999, and app.py keeps big.func_500(1) in result.", []),
    ],
    expected=lambda files: replaced(files, BIG_CHANGES),
)


# --- a failing test fixed across a small package ---

TEST_FIX = Session(
    name="test-fix",
    about="a failing test fixed across a small package: pytest, a search, whole reads of 70-120-line modules, "
          "one edit",
    files=read_workspace("testfix"),
    task="The invoice tests fail since the last release. Find out why and fix the library, not the tests.",
    steps=[
        Step("Let me see how the project is laid out.", [("list_files", {})], "find . -type f | sort"),
        Step("Run the tests to see what fails.", [run("python -m pytest -q")], "python -m pytest -q"),
        Step("Both failures are on the 10-unit line: the bulk discount is not applied. Where is it computed?",
             [("search_files", {"pattern": "BULK", "glob": "*.py"})], "grep -rn BULK --include='*.py' ."),
        Step("pricing.py has the rule; read it whole.", [read("inventory/pricing.py")], "cat inventory/pricing.py"),
        Step("The report builds the invoice rows from it; read report.py.", [read("inventory/report.py")],
             "cat inventory/report.py"),
        Step("And models.py, for OrderLine and how quantities merge.", [read("inventory/models.py")],
             "cat inventory/models.py"),
        Step("The failing test says the discount applies from 10 units.", [read("tests/test_report.py")],
             "cat tests/test_report.py"),
        Step("unit_price uses `quantity > BULK_THRESHOLD`, but the constant is the quantity from which the "
             "discount applies: it must be >=.",
             [edit("inventory/pricing.py", "    if quantity > BULK_THRESHOLD:", "    if quantity >= BULK_THRESHOLD:")],
             "sed -i 's/    if quantity > BULK_THRESHOLD:/    if quantity >= BULK_THRESHOLD:/' inventory/pricing.py"),
        Step("Run the tests again.", [run("python -m pytest -q")], "python -m pytest -q"),
        Step("Fixed: unit_price in inventory/pricing.py applied the bulk discount only above BULK_THRESHOLD "
             "(10 units), while the constant and the tests say it applies from 10. It now checks >=; all 13 "
             "tests pass.", []),
    ],
    expected=lambda files: replaced(files, {"inventory/pricing.py": [("quantity > BULK", "quantity >= BULK")]}),
)


# --- a rename across many small files ---

RENAMED = ["blog/users.py", "blog/api.py", "blog/admin.py", "blog/views.py", "blog/notifications.py",
           "tests/test_blog.py"]  # 12 places: 1, 2, 2, 3, 2 and 2


def rename_edits(paths: list[str]) -> list[tuple[str, dict]]:
    """One edit_file call a file, with replace_all: the calls a model makes with sed's /g at hand."""
    return [("edit_file", {"path": path, "old_str": "fetch_user", "new_str": "load_user", "replace_all": True})
            for path in paths]


def rename_command(paths: list[str]) -> str:
    return " && ".join(f"sed -i 's/fetch_user/load_user/g' {path}" for path in paths)


FIRST_FILES, OTHER_FILES = RENAMED[:3], RENAMED[3:]

RENAME = Session(
    name="rename",
    about="a rename across many small files: a search, three reads in one reply, six replace_all edits, tests",
    files=read_workspace("rename"),
    task=("Rename fetch_user to load_user everywhere: it reads from the in-memory table, and 'fetch' makes "
          "people think it goes over the network. Keep the tests passing."),
    steps=[
        Step("The files first.", [("list_files", {})], "find . -type f | sort"),
        Step("Find every use of fetch_user.", [("search_files", {"pattern": "fetch_user"})],
             "grep -rn fetch_user ."),
        Step("Read the definition and two callers to see how it is imported.",
             [read(path) for path in ["blog/users.py", "blog/views.py", "blog/api.py"]],
             "head -n 100 blog/users.py blog/views.py blog/api.py"),
        Step("Rename it in users.py, api.py and admin.py.", rename_edits(FIRST_FILES), rename_command(FIRST_FILES)),
        Step("Now views.py, notifications.py and the tests.", rename_edits(OTHER_FILES), rename_command(OTHER_FILES)),
        Step("Run the tests.", [run("python -m pytest -q")], "python -m pytest -q"),
        Step("Make sure no fetch_user is left.", [("search_files", {"pattern": "fetch_user"})],
             "grep -rn fetch_user . || echo 'no matches'"),
        Step("Renamed fetch_user to load_user in blog/users.py and its five users (api, admin, views, "
             "notifications, the tests): 12 places. The tests pass and no fetch_user is left.", []),
    ],
    expected=lambda files: {path: text.replace("fetch_user", "load_user") for path, text in files.items()},
)


# --- an investigation through a log and commands ---

LOGS = Session(
    name="logs",
    about="an investigation through a log and commands: tail, grep, a config file, a numbered range of a "
          "module, one edit, a check",
    files=read_workspace("logs"),
    task="The feed worker has been failing since this morning. Find out why from its log and fix it.",
    steps=[
        Step("Start with the end of the log.", [run("tail -n 25 logs/worker.log")], "tail -n 25 logs/worker.log"),
        Step("Count the errors by kind.", [run("grep ERROR logs/worker.log | cut -d' ' -f5 | sort | uniq -c")],
             "grep ERROR logs/worker.log | cut -d' ' -f5 | sort | uniq -c"),
        Step("Mostly timeouts. When did they start?", [run("grep -n -m 2 -B 3 'timed out' logs/worker.log")],
             "grep -n -m 2 -B 3 'timed out' logs/worker.log"),
        Step("A config reload set fetch_timeout from 5.0 to 0.5 just before. Where is it set and checked?",
             [("search_files", {"pattern": "fetch_timeout"})], "grep -rn fetch_timeout ."),
        Step("Read the config.", [read("config.toml")], "cat config.toml"),
        Step("And the check in worker.py around line 55.", [read("worker.py", offset=50, limit=16)],
             "nl -ba worker.py | sed -n '50,65p'"),
        Step("0.5 s is below the upstream's minimum of 1 s; the value before the reload was 5.0. Put it back.",
             [edit("config.toml", "fetch_timeout = 0.5", "fetch_timeout = 5.0")],
             "sed -i 's/^fetch_timeout = 0.5$/fetch_timeout = 5.0/' config.toml"),
        Step("Check the settings.", [run("python worker.py --check")], "python worker.py --check"),
        Step("The worker fails because a config reload at 10:33 set upstream.fetch_timeout from 5.0 to 0.5 s, "
             "below the upstream's p99 of about 0.8 s: since then every fetch times out after 4 attempts. "
             "config.toml has 5.0 again and `python worker.py --check` passes.", []),
    ],
    expected=lambda files: replaced(files, {"config.toml": [("fetch_timeout = 0.5", "fetch_timeout = 5.0")]}),
)

SESSIONS = {session.name: session for session in [BIG_MODULE, TEST_FIX, RENAME, LOGS]}
