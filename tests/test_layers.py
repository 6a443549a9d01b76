"""The layers run one way, as docs/how-it-works.md draws them: the user's side on top; the four seams below it,
none importing another; the tools' rooms below tools.py; the modes below those; shared helpers and the words the
model reads below everything. Every import of plainagent's own modules is checked, those inside functions too;
an import under `if TYPE_CHECKING:` (annotations only, never run) is not."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# room -> the rooms it may import (its own always). The picture in docs/how-it-works.md ("The layers").
MAY_USE = {
    "agent": {"harness.cli", "tools", "harness.model", "harness.parser", "harness.history", "harness.files",
              "harness.commands", "harness.web", "harness.modes", "harness.common", "prompt"},
    "harness.cli": {"tools", "harness.model", "harness.parser", "harness.history", "harness.files",
                    "harness.commands", "harness.web", "harness.modes", "harness.common", "prompt"},
    # the four seams
    "tools": {"harness.files", "harness.commands", "harness.web", "harness.modes", "harness.common", "prompt"},
    "harness.model": {"harness.common", "prompt"},
    "harness.parser": {"harness.common", "prompt"},
    "harness.history": {"harness.modes", "harness.common", "prompt"},
    # the tools' rooms
    "harness.commands": {"harness.files", "harness.modes", "harness.common", "prompt"},
    "harness.web": {"harness.modes", "harness.common", "prompt"},
    "harness.files": {"harness.modes", "harness.common", "prompt"},
    "harness.modes": {"harness.common", "prompt"},
    # below everything
    "harness.common": set(),
    "prompt": set(),
}
ROOMS = sorted(MAY_USE, key=len, reverse=True)


def room_of(module: str) -> str | None:
    return next((room for room in ROOMS if module == room or module.startswith(room + ".")), None)


def sources() -> dict[str, Path]:
    found = {path.stem: path for path in (ROOT / "agent.py", ROOT / "tools.py", ROOT / "prompt.py")}
    for path in sorted((ROOT / "harness").rglob("*.py")):
        if path == ROOT / "harness" / "__init__.py":  # the map, and nothing else
            continue
        found[".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")] = path
    return found


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for each import of plainagent's own code in the file, annotations-only ones left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(child) for node in ast.walk(tree) if isinstance(node, ast.If)  # the body only: an else runs
               and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
               for statement in node.body for child in ast.walk(statement)}
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])  # what a relative import is relative to
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # `from . import x`, `from ..cli import y`
                base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1], *filter(None, [base])])
            found += [(node.lineno, f"{base}.{alias.name}" if base == "harness" else base) for alias in node.names]
            # `from harness.files import workspace` names a module: the room is harness.files either way
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("importlib.import_module", "__import__"):
            found.append((node.lineno, "<dynamic>"))
    return [(line, module) for line, module in found if module == "<dynamic>" or room_of(module)]


SOURCES = sources()


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_each_import_goes_down_the_layers(module):
    own = room_of(module)
    assert own, f"{module} is in no room of the picture: add its folder to MAY_USE and docs/how-it-works.md"
    for line, imported in imports(SOURCES[module]):
        if imported == "<dynamic>":  # own_code.py loads every module by name, when asked: its one job, nowhere else
            assert module == "harness.common.own_code", f"{SOURCES[module].relative_to(ROOT)}:{line} imports by name"
            continue
        other = room_of(imported)
        assert other == own or other in MAY_USE[own], (
            f"{SOURCES[module].relative_to(ROOT)}:{line} imports {imported}: {own} may not use {other} "
            f"(the layers, docs/how-it-works.md; {own} may use {', '.join(sorted(MAY_USE[own])) or 'nothing'})")


def test_every_folder_of_the_harness_is_a_room():
    folders = {".".join(path.relative_to(ROOT).parts) for path in (ROOT / "harness").iterdir()
               if path.is_dir() and (path / "__init__.py").exists()}
    assert folders <= set(MAY_USE), f"folders not in the picture: {sorted(folders - set(MAY_USE))}"


@pytest.mark.parametrize("room", sorted(path.parent.name for path in (ROOT / "harness").glob("*/__init__.py")))
def test_each_rooms_map_names_its_modules_and_only_those(room):
    """A room's docstring (its __init__.py) is its map: every module in it, by file name, and none that is not."""
    folder = ROOT / "harness" / room
    docstring = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    modules = {path.name for path in folder.glob("*.py")} - {"__init__.py"}
    named = set(re.findall(r"\b(\w+\.py)\b", docstring))
    assert modules - named == set(), f"harness/{room}/__init__.py does not name {sorted(modules - named)}"
    assert named - modules == set(), f"harness/{room}/__init__.py names {sorted(named - modules)}, not in {room}/"


def test_the_layout_in_how_it_works_names_every_module_of_the_harness():
    """docs/how-it-works.md's Layout table says what each file holds: every module of the harness has its row."""
    layout = (ROOT / "docs" / "how-it-works.md").read_text(encoding="utf-8").split("## Layout", 1)[1]
    rows = set(re.findall(r"^\| `(harness/[\w/]+\.py)` \|", layout, re.MULTILINE))
    modules = {str(path.relative_to(ROOT)) for path in (ROOT / "harness").rglob("*.py") if path.name != "__init__.py"}
    assert modules - rows == set(), "add a row to the Layout table of docs/how-it-works.md"
    assert rows - modules == set(), "the Layout table of docs/how-it-works.md names files that are not there"
