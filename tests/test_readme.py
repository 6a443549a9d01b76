"""The README teaches only what is true: every file and function its tour names exists, and the tool it adds
in "Add a tool in three steps" appears in the system prompt and runs."""

import ast
import re
import textwrap
from pathlib import Path

import pytest

import tools
from harness.parser.toolcalls import parse_reply
from harness.sandbox.workspace import Workspace
from prompt import render_system_prompt

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# How the tour names an object by the variable the loop holds it in: `tools.run` is Toolbox.run.
INSTANCES = {"ws": "Workspace", "tools": "Toolbox", "history": "History", "model": "Model"}


def section(title: str) -> str:
    """The README's text from the heading `## title` to the next `## ` heading."""
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end != -1 else None]


def defined_names(path: Path) -> set[str]:
    """Top-level names, and Class.member for each method, field and attribute set on self."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            names.update(target.id for target in getattr(node, "targets", [getattr(node, "target", None)])
                         if isinstance(target, ast.Name))
        if isinstance(node, ast.ClassDef):
            for member in ast.walk(node):
                if isinstance(member, ast.FunctionDef):
                    names.add(f"{node.name}.{member.name}")
                elif isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name):
                    names.add(f"{node.name}.{member.target.id}")
                elif isinstance(member, ast.Attribute) and isinstance(member.value, ast.Name) \
                        and member.value.id == "self":
                    names.add(f"{node.name}.{member.attr}")
    return names


TOUR = section("Read the code in 20 minutes")
CODE = re.findall(r"`([^`\n]+)`", TOUR)
FILES = sorted({name for name in CODE if name.endswith(".py")} | {word for text in CODE for word in
                                                                   re.findall(r"\S+\.py", text)})
# Names of code: with an underscore, a dot or capitals (not `sudo`), without digits (not END2), and not the
# protocol a result is framed in (`tool_result(read_file) <<END`, `END`).
NAMES = sorted({re.match(r"[\w.]+", text)[0] for text in CODE
                if re.match(r"[A-Za-z_][\w.]*(\(|$)", text) and not text.endswith(".py")
                and re.search(r"[_.A-Z]", re.match(r"[\w.]+", text)[0]) and not re.search(r"\d", text)
                and "<<" not in text and text != "END" and not text.startswith("tool_result(")})
DEFINED = set().union(*(defined_names(ROOT / file) for file in FILES if (ROOT / file).is_file()))


@pytest.mark.parametrize("name", FILES)
def test_every_file_the_tour_names_exists(name):
    assert (ROOT / name).is_file(), f"the README's tour names {name}, which does not exist"


@pytest.mark.parametrize("name", NAMES)
def test_every_function_and_class_the_tour_names_is_defined(name):
    head, _, rest = name.partition(".")
    wanted = f"{INSTANCES.get(head, head)}.{rest}" if rest else name
    assert wanted in DEFINED, f"the README's tour names {name}, which none of {', '.join(FILES)} defines"


def test_the_tour_names_the_loop_and_its_four_seams():
    assert {"run_task", "run_calls", "History", "Toolbox.run", "Client.chat", "parse_reply"} <= set(NAMES)
    assert {"agent.py", "prompt.py", "tools.py"} <= set(FILES)


def test_the_tool_the_readme_adds_is_in_the_system_prompt_and_runs(tmp_path, monkeypatch):
    steps = section("Add a tool in three steps")
    function_code, test_code = (textwrap.dedent(block) for block in re.findall(r"```python\n(.*?)```", steps, re.S))
    namespace = dict(vars(tools))  # written in tools.py, so it sees what tools.py imports
    exec(compile("from __future__ import annotations\n" + function_code, "README.md", "exec"), namespace)
    monkeypatch.setitem(tools.TOOLS, "count_lines", namespace["count_lines"])  # step 2: the registry

    assert "\ncount_lines(path: str)\nCount the lines of the text file at path.\n" in render_system_prompt(tools.TOOLS)
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    toolbox = tools.Toolbox(Workspace(tmp_path))
    call = parse_reply('tool: count_lines({"path": "notes.txt"})', toolbox.names).calls[0]
    assert toolbox.run(call).output == "notes.txt: 3 lines"
    assert "must be a string" in toolbox.run(parse_reply('tool: count_lines({"path": 1})', toolbox.names).calls[0]).output

    (tmp_path / "step3").mkdir()  # step 3, the README's test, run as written
    exec(test_code + "\ntest_count_lines(tmp_path)\n", namespace | {"tmp_path": tmp_path / "step3"})
