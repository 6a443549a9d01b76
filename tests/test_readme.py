"""The README teaches only what is true: every file and function its tour (and the full walk in
docs/how-it-works.md) names exists, the loop it shows is `run_task` as agent.py has it, and the tool it adds in
"Add a tool in three steps" appears in the system prompt and runs. It stays a front door: short, with a link to
every page of the manual in docs/, every page linking back, every relative link landing on a file and heading
that exist, and every setting and flag plainagent reads documented somewhere in README.md or docs/."""

import ast
import contextlib
import io
import re
import textwrap
from pathlib import Path

import pytest

import tools
from harness.cli.args import parse_args
from harness.cli.config import ENV_VARS
from harness.files.workspace import Workspace
from harness.parser.toolcalls import parse_reply
from prompt import render_system_prompt

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
README_ZH = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").glob("*.md"))  # the manual, in English
DOCS_ZH = sorted((ROOT / "docs" / "zh-CN").glob("*.md"))  # the Chinese pages README.zh-CN.md links to
HOW_IT_WORKS = (ROOT / "docs" / "how-it-works.md").read_text(encoding="utf-8")
MARKDOWN = [ROOT / "README.md", ROOT / "README.zh-CN.md", ROOT / "CHANGELOG.md", *DOCS, *DOCS_ZH]
MAX_README_LINES = 220  # the front door: what it is, a demo, the two commands, providers, the loop, a tour
# How the tour names an object by the variable the loop holds it in: `tools.run` is Toolbox.run.
INSTANCES = {"ws": "Workspace", "tools": "Toolbox", "history": "History", "model": "Model"}  # agent.py's seams


def section(title: str, markdown: str = README) -> str:
    """The text from the heading `## title` to the next `## ` heading (the README's, unless told)."""
    start = markdown.index(f"## {title}\n")
    end = markdown.find("\n## ", start + 1)
    return markdown[start:end if end != -1 else None]


def defined_names(path: Path) -> set[str]:
    """Top-level names, and Class.member for each method, field and attribute set on self."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            names.update(name.id for target in getattr(node, "targets", [getattr(node, "target", None)])
                         for name in ast.walk(target) if isinstance(name, ast.Name))
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


# The README's short tour and the full walk it points to in docs/how-it-works.md: both must be true.
TOUR = section("Read the code in 20 minutes") + section("Read the code in 20 minutes", HOW_IT_WORKS)
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
    readme_tour = set(re.findall(r"`([^`\n]+)`", section("Read the code in 20 minutes")))
    seams = {"Model", "History", "Toolbox", "BareHistory", "BareModel", "parse_reply", "read_call", "check_args",
             "run_tool", "attempt", "main"}
    assert seams <= readme_tour
    assert {"agent.py", "prompt.py", "tools.py", "harness/model/bare.py", "harness/parser/toolcalls.py"} <= readme_tour
    assert seams <= set(NAMES) | {"Model", "History", "Toolbox", "attempt", "main"}


def test_the_loop_shown_is_run_task_as_agent_py_has_it():
    source = (ROOT / "agent.py").read_text(encoding="utf-8")
    function = next(node for node in ast.parse(source).body
                    if isinstance(node, ast.FunctionDef) and node.name == "run_task")
    quoted = re.findall(r"```python\n(.*?)```", section("The loop"), re.S)
    assert quoted == ["\n".join(source.splitlines()[function.lineno - 1:function.end_lineno]) + "\n"]


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


# --- the front door and the manual behind it ---


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped (letters of any script kept), spaces
    as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)  # no headings in code
    found, seen = set(), {}
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        anchor = slug(heading)
        found.add(f"{anchor}-{seen[anchor]}" if anchor in seen else anchor)
        seen[anchor] = seen.get(anchor, 0) + 1
    return found


def links(path: Path) -> list[str]:
    """The targets of a page's markdown links, outside code."""
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    return re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`\n]*`", "", text))


def test_the_readme_is_a_front_door():
    assert len(README.splitlines()) <= MAX_README_LINES, "move the detail to a page in docs/ and link to it"


def test_every_page_of_the_manual_is_linked_from_the_readme():
    assert DOCS, "docs/ holds the manual"
    assert [page.name for page in DOCS if f"](docs/{page.name}" not in README] == []


def test_every_chinese_page_is_linked_from_the_chinese_readme():
    assert [page.name for page in DOCS_ZH if f"](docs/zh-CN/{page.name}" not in README_ZH] == []


@pytest.mark.parametrize("page", [*DOCS, *DOCS_ZH, ROOT / "CHANGELOG.md"], ids=lambda page: page.name)
def test_every_page_opens_with_its_title_and_a_link_back(page):
    title, blank, back = page.read_text(encoding="utf-8").splitlines()[:3]
    readme = "README.zh-CN.md" if page in DOCS_ZH else "README.md"
    assert title.startswith("# ") and blank == ""
    assert re.fullmatch(rf"\[[^]]+\]\((\.\./)*{re.escape(readme)}\)", back)
    assert (page.parent / back[back.index("(") + 1:-1]).resolve() == ROOT / readme


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_lands_on_a_file_and_heading_that_exist(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not ours to check
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    assert broken == []


def help_text() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parse_args(["--help"])
    return out.getvalue()


def test_every_setting_and_flag_is_documented():
    documented = README + "".join(page.read_text(encoding="utf-8") for page in DOCS)
    flags = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", help_text().split("\n\n")[2]))  # the options' lines
    assert {"--mode", "--resume", "-C"} <= flags
    assert sorted(flag for flag in flags if f"`{flag}" not in documented) == []
    assert sorted(variable for variable in ENV_VARS.values() if f"`{variable}" not in documented) == []


def spans_of(path: Path) -> dict[str, int]:
    """Lines of each top-level definition (decorators included), and of each method as `Class.method`."""
    spans = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        first = node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno
        targets = getattr(node, "targets", [getattr(node, "target", None)])
        names = [node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else \
            [name.id for target in targets if target for name in ast.walk(target) if isinstance(name, ast.Name)]
        spans.update({name: node.end_lineno - first + 1 for name in names})
        for member in node.body if isinstance(node, ast.ClassDef) else []:
            if isinstance(member, ast.FunctionDef):
                spans[f"{node.name}.{member.name}"] = member.end_lineno - member.lineno + 1
    return spans


def tour_steps(markdown: str, title: str) -> list[tuple[str, list[str]]]:
    """The tour's numbered steps: (file, the names to read in it), as `1. `agent.py`: `main`, `attempt`, ...`."""
    steps = re.findall(r"^\d+\. `([\w/.]+\.py)`[:：] *((?:`[\w.]+`[,、]?\s*)+)", section(title, markdown), re.M)
    return [(file, re.findall(r"`([\w.]+)`", names)) for file, names in steps]


def test_the_tour_names_what_to_read_and_says_how_much_that_is():
    """The tour names definitions, not line numbers (adding a tool shifts no step), and the total it states is
    counted here from the code: a step that names what a file does not define fails with the file and the name."""
    steps = tour_steps(README, "Read the code in 20 minutes")
    assert [file for file, _ in steps] == ["agent.py", "harness/model/bare.py", "harness/parser/toolcalls.py",
                                           "tools.py"]
    total = 0
    for file, names in steps:
        spans = spans_of(ROOT / file)
        missing = [name for name in names if name not in spans]
        assert not missing, f"README.md's tour names {missing} in {file}, which defines no such thing: fix the tour"
        total += sum(spans[name] for name in names)
    stated_lines, stated_files = map(int, re.search(r"about (\d+) lines in (\d+) files", README).groups())
    assert stated_files == len(steps)
    assert abs(total - stated_lines) <= 10, f"the tour's definitions come to {total} lines; README.md says about " \
        f"{stated_lines}: write {round(total, -1)} in both READMEs"
    # The Chinese README walks the same definitions, and says the same number.
    assert tour_steps(README_ZH, "20 分钟读懂代码") == steps
    assert re.search(r"大约 (\d+) 行，分布在 (\d+) 个文件", README_ZH).groups() == (str(stated_lines), str(stated_files))
