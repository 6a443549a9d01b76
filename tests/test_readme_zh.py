"""The Chinese documentation cannot drift from the English one and the code in silence. It is README.zh-CN.md,
which mirrors the short README.md section for section, and the pages it links to in docs/zh-CN/; the English
documentation is README.md and the manual in docs/. Its commands are the English documentation's (the quick
start exactly the README's), its flags are in `--help`, its environment variables and file names are named in
the English documentation (or `--help`, or are the repository's own files), its `.env` lines are
.env.example's, its provider table has the English README's base URLs with TaoToken first and its TaoToken
table the addresses really posted to, both READMEs name the same tools (taken from tools.TOOLS, so a new tool's
line must be added to both), both tool tables list the tools' real parameters, its loop, tour and "three
steps" quote the same code as the English ones, and every output it quotes (a ```text block) is what plainagent
prints today: each is reproduced here, at the client with `responses`, through a real proxy socket, or on real
files.

The English documentation is the reference: a check fails when the Chinese one says something the English one
(or the code) no longer does, and the fix is to update the Chinese text.
"""

import contextlib
import importlib.util
import io
import json
import re
import socket
from pathlib import Path

import pytest
import requests
import responses

import tools
from harness.cli.args import parse_args
from harness.cli.config import ConfigError, load_config
from harness.cli.display import ActivityLog
from harness.common.seam_types import ChatError
from harness.files.workspace import Workspace
from harness.model.bare import chat_url
from harness.model.client import Client
from harness.parser.toolcalls import parse_reply

ROOT = Path(__file__).resolve().parent.parent
EN = (ROOT / "README.md").read_text(encoding="utf-8")
ZH = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
EN_HOW = (ROOT / "docs" / "how-it-works.md").read_text(encoding="utf-8")
ZH_HOW = (ROOT / "docs" / "zh-CN" / "how-it-works.md").read_text(encoding="utf-8")
# The documentation as a whole: each README and the pages in docs/ it leads to (the manual is in English).
EN_ALL = "\n".join([EN, *(page.read_text(encoding="utf-8") for page in sorted((ROOT / "docs").glob("*.md")))])
ZH_ALL = "\n".join([ZH, *(page.read_text(encoding="utf-8") for page in sorted((ROOT / "docs" / "zh-CN").glob("*.md")))])
ENV_EXAMPLE = (ROOT / ".env.example").read_text(encoding="utf-8")
# The proxy variables requests reads: the English README says "whatever proxy the environment names", the
# Chinese one names them, because the tutorial's readers meet them (issue 20).
PROXY_VARIABLES = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}

FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.MULTILINE | re.DOTALL)
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
VARIABLE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
FILE = re.compile(r"[\w.~/-]*\.(?:py|md|txt|toml|jsonl|example|env)\b")


def blocks(markdown: str) -> list[tuple[str, str]]:
    """Each fenced block as (language, body), the body without the fence's indentation (blocks in a list)."""
    return [(language, "".join(line[len(indent):] for line in body.splitlines(keepends=True)))
            for indent, language, body in FENCE.findall(markdown)]


def prose(markdown: str) -> str:
    """The text without the quoted outputs and code (```text, ```python), which other checks verify."""
    return FENCE.sub(lambda match: "" if match[2] in ("text", "python") else match[0], markdown)


def spans(markdown: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", FENCE.sub("", markdown))


def section(markdown: str, title: str) -> str:
    """The text from the heading `## title` to the next `## ` heading."""
    start = markdown.index(f"## {title}\n")
    end = markdown.find("\n## ", start + 1)
    return markdown[start:end if end != -1 else None]


def normal(command: str) -> str:
    """A command without its comment, its task (any quoted text) written TASK: the task is the reader's words."""
    return re.sub(r'"[^"]*"', '"TASK"', re.sub(r"\s+# .*$", "", command)).strip()


def commands(markdown: str) -> set[str]:
    """The command lines of the shell blocks, the `$ ` lines of console blocks, and the lines of bare blocks."""
    found = set()
    for language, body in blocks(markdown):
        for line in body.splitlines():
            if language == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            elif language not in ("sh", "bash", ""):
                continue
            if normal(line):
                found.add(normal(line))
    return found


def help_text() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parse_args(["--help"])
    return out.getvalue()


HELP = help_text()


# --- the two READMEs point at each other ---


def test_each_readme_opens_with_a_link_to_the_other():
    assert "](README.zh-CN.md)" in "\n".join(EN.splitlines()[:4])
    assert "](README.md)" in "\n".join(ZH.splitlines()[:4])


# --- commands, flags, variables, file names ---


def test_every_command_line_is_one_the_english_documentation_gives():
    assert commands(ZH_ALL) - commands(EN_ALL) == set()
    shown = {normal(text) for text in spans(ZH_ALL) if re.match(r"(python3?|uv|pip|git|cp|cd|echo) ", text)}
    assert shown - commands(EN_ALL) - {normal(text) for text in spans(EN_ALL)} == set()


def test_the_quick_start_gives_exactly_the_english_commands():
    assert commands(section(EN, "Quick start")) - commands(section(ZH, "快速开始")) == set()


def test_every_flag_of_agent_py_is_in_help_and_every_other_flag_in_the_english_documentation():
    flags = set(FLAG.findall(HELP))
    for command in commands(ZH_ALL) | {text for text in spans(ZH_ALL) if "agent.py" in text}:
        if "agent.py" in command:
            assert set(FLAG.findall(command)) - flags == set(), command
    english = set(FLAG.findall(EN_ALL)) | flags
    assert set(FLAG.findall(prose(ZH_ALL))) - english == set()


def test_every_environment_variable_is_in_the_english_documentation_or_help():
    named = set(VARIABLE.findall(prose(ZH_ALL)))
    assert named - set(VARIABLE.findall(EN_ALL)) - set(VARIABLE.findall(HELP)) - PROXY_VARIABLES == set()
    assert {"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"} <= set(VARIABLE.findall(prose(ZH)))


def test_every_file_name_is_in_the_english_documentation_or_the_repository():
    # A link's target is relative to its page; tests/test_readme.py checks that each one lands on a file.
    names = set(FILE.findall(re.sub(r"\]\([^)\s]*\)", "]", prose(ZH_ALL))))
    assert {name for name in names if name not in EN_ALL and not (ROOT / name).exists()} == set()


def test_every_dotenv_line_is_in_env_example():
    lines = {line.removeprefix("# ") for line in ENV_EXAMPLE.splitlines()}
    shown = [line for language, body in blocks(ZH_ALL) if language == "dotenv" for line in body.splitlines() if line]
    assert shown and set(shown) - lines == set()


def test_the_slash_commands_are_the_repls():
    named = {text.split()[0] for text in spans(ZH_ALL) if re.fullmatch(r"/[a-z]+( [A-Z]+)?", text)}
    assert {name for name in named if f"`{name}" not in EN_ALL} == set()


# --- the same tools, the same providers, the same code ---


def test_both_readmes_name_the_same_tools():
    def named(markdown: str) -> set[str]:
        return {name for name in tools.TOOLS if re.search(rf"\b{name}\b", markdown)}

    assert named(ZH) == named(EN)


def test_the_tool_tables_list_the_same_tools_with_their_real_parameters():
    def rows(markdown: str) -> set[str]:
        return set(re.findall(r"^\| `(\w+\([^`]*\))` \|", markdown, re.MULTILINE))

    assert rows(ZH_ALL) == rows(EN_ALL) != set()
    for row in rows(ZH_ALL):
        name, arguments = re.fullmatch(r"(\w+)\((.*)\)", row).groups()
        assert name in tools.TOOLS, row
        assert [word for word in arguments.split(", ") if word] == [p.name for p in tools.parameters(tools.TOOLS[name])]


def test_the_provider_tables_give_the_same_base_urls_with_taotoken_first():
    def base_urls(markdown: str) -> list[str]:
        return re.findall(r"^\| [^|`]+ \| `(https?://[^`]+)`", markdown, re.MULTILINE)

    assert set(base_urls(ZH)) == set(base_urls(EN))
    assert base_urls(ZH)[0] == base_urls(EN)[0] == "https://taotoken.net/api/v1"


def test_the_taotoken_table_gives_the_address_plainagent_really_posts_to():
    rows = re.findall(r"^\| `(https?://[^`]+)`[^|]*\| `(https?://[^`]+)`", ZH_ALL, re.MULTILINE)
    assert len(rows) == 3
    for base_url, posted in rows:
        assert chat_url(base_url) == posted


@pytest.mark.parametrize("english, english_title, chinese, chinese_title", [
    pytest.param(EN, "The loop", ZH, "循环本身", id="the loop"),
    pytest.param(EN, "Read the code in 20 minutes", ZH, "20 分钟读懂代码", id="the tour"),
    pytest.param(EN, "Add a tool in three steps", ZH, "三步加一个工具", id="the three steps"),
    pytest.param(EN_HOW, "Read the code in 20 minutes", ZH_HOW, "20 分钟读懂代码", id="the full walk"),
])
def test_the_loop_the_tour_and_the_three_steps_quote_the_english_code(english, english_title, chinese,
                                                                      chinese_title):
    assert set(spans(section(chinese, chinese_title))) - set(spans(section(english, english_title))) == set()
    code = [body for language, body in blocks(section(chinese, chinese_title)) if language == "python"]
    assert code == [body for language, body in blocks(section(english, english_title)) if language == "python"]


def test_the_chinese_readme_has_the_english_readmes_sections_in_order():
    def titles(markdown: str) -> list[str]:
        return re.findall(r"^## (.+)$", FENCE.sub("", markdown), re.MULTILINE)

    assert titles(EN) == ["Quick start", "A session", "Providers", "The loop", "Read the code in 20 minutes",
                          "Add a tool in three steps", "Documentation"]
    assert titles(ZH) == ["快速开始", "一次会话", "接入服务商", "循环本身", "20 分钟读懂代码", "三步加一个工具", "文档"]


# --- every output quoted is what plainagent prints ---

TAOTOKEN = "https://taotoken.net/api/v1"
KEY = "sk-0123456789abcdefghijklmnop"


def chat_error(base_url: str = TAOTOKEN, status: int = 200, body=None, model: str = "gpt-4o-mini",
               key: str | None = KEY, **reply) -> str:
    """The line plainagent prints when the server at `base_url` answers `status` and `body` (the default
    settings, a streamed request, but no retries: the line after them is the same). No `body`: no server is
    mocked, the request really goes out, to whatever proxy the environment names on 127.0.0.1."""
    client = Client(base_url, key, model, stream=True, max_retries=0)
    with responses.RequestsMock() if body is not None else contextlib.nullcontext() as mock:
        if body is not None:
            if isinstance(body, dict):  # as providers send it: UTF-8, Chinese left as it is
                body, reply = json.dumps(body, ensure_ascii=False).encode(), {"content_type": "application/json"}
            mock.post(chat_url(base_url), status=status, body=body, **reply)
        with pytest.raises(ChatError) as error:
            client.chat([{"role": "user", "content": "hi"}])
    return f"plainagent: {error.value}"


def rate_limited(body: dict) -> str:
    """The line after the last try of a 429, with the client's default retries (their waits not slept)."""
    client = Client(TAOTOKEN, KEY, "gpt-4o-mini", stream=True, sleep=lambda seconds: None)
    with responses.RequestsMock() as mock:
        mock.post(chat_url(TAOTOKEN), status=429, json=body)
        with pytest.raises(ChatError) as error:
            client.chat([{"role": "user", "content": "hi"}])
    return f"plainagent: {error.value}"


def through_a_socks_proxy(monkeypatch) -> str | None:
    """The line for a SOCKS proxy, which requests cannot speak without PySocks; None where PySocks is installed
    (then requests speaks SOCKS, and the line is another one)."""
    if importlib.util.find_spec("socks"):
        return None
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:9")  # refused before any connection
    return chat_error()


def config_error(tmp_path: Path, dotenv: str) -> str:
    """The line for settings in the .env next to agent.py (where the quick start puts it), paths as /home/you."""
    home, project = tmp_path / "home/you/plainagent", tmp_path / "home/you/code/myproject"
    home.mkdir(parents=True)
    project.mkdir(parents=True)
    (home / ".env").write_text(dotenv)
    with pytest.raises(ConfigError) as error:
        load_config(parse_args([]), {}, project, home)
    return f"plainagent: {error.value}".replace(str(tmp_path), "")


def edit_not_found(tmp_path: Path) -> list[str]:
    """What the activity log shows, and the result the model reads, for an old_str not in the file."""
    (tmp_path / "greet.py").write_bytes(b'def greet(name):\n    return "Helo, " + name\n')
    lines: list[str] = []
    toolbox = tools.Toolbox(Workspace(tmp_path), activity=ActivityLog(lines.append))
    reply = 'tool: edit_file({"path": "greet.py", "old_str": "return \\"Helo \\" + name", ' \
            '"new_str": "return \\"Hello, \\" + name"})'
    result = toolbox.run(parse_reply(reply, toolbox.names).calls[0])
    assert (tmp_path / "greet.py").read_bytes() == b'def greet(name):\n    return "Helo, " + name\n'
    return ["\n".join(lines), result.output]


def reproduced(tmp_path: Path, monkeypatch) -> list[str]:
    """Each output README.zh-CN.md quotes, as plainagent prints it today."""
    outputs = [
        # the tutorial's base URL, without /v1
        chat_error("https://taotoken.net/api", 404, {"error": {"message": "Not Found"}}),
        # 401 and the Bearer header
        chat_error(status=401, body={"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}),
        config_error(tmp_path, f"OPENAI_BASE_URL={TAOTOKEN}\nOPENAI_API_KEY=Bearer {KEY}\nOPENAI_MODEL=gpt-4o-mini\n"),
        chat_error("http://gpu-box:8000/v1", 401, {"error": "Unauthorized"}, key=None),
        # a reply with no choices
        chat_error(body={"code": 40001, "msg": "余额不足"}),
        chat_error(body={"error": {"message": "Rate limit reached for requests", "code": "rate_limit_exceeded"}}),
        chat_error(body=b'data: {"error": {"message": "upstream error"}}\n\ndata: [DONE]\n\n',
                   content_type="text/event-stream"),
        chat_error("https://taotoken.net", body="<!DOCTYPE html><html><head><title>TaoToken</title></head>",
                   content_type="text/html"),
        # a model name the account cannot use
        chat_error(status=404, model="gpt-5", body={"error": {
            "message": "The model `gpt-5` does not exist or you do not have access to it.",
            "type": "invalid_request_error", "code": "model_not_found"}}),
        chat_error(status=400, model="gpt-5", body={"error": {"message": "模型 gpt-5 不存在或当前账号无权使用"}}),
        chat_error(status=403, model="gpt-5", body={"error": {"message": "no access to model gpt-5",
                                                              "type": "permission_error"}}),
        # 429: still limited after every try, and out of credit
        rate_limited({"error": {"message": "Rate limit reached for requests", "code": "rate_limit_exceeded"}}),
        chat_error(status=429, body={"error": {"message": "You exceeded your current quota, please check your plan "
                                                         "and billing details.", "code": "insufficient_quota"}}),
        # a server that took the request and says nothing
        chat_error(body=requests.ReadTimeout("Read timed out.")),
        # old_str not found
        *edit_not_found(tmp_path),
    ]
    # A proxy in the environment that is not running: its port is held by a socket that never listens, so the
    # connection is refused at once (and nothing else can take the port meanwhile). The request goes to the
    # proxy, never to taotoken.net.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{held.getsockname()[1]}")
        outputs.append(chat_error())
    monkeypatch.delenv("HTTPS_PROXY")
    return outputs


def test_every_output_quoted_is_what_plainagent_prints(tmp_path, monkeypatch):
    quoted = [body.removesuffix("\n") for language, body in blocks(ZH_ALL) if language == "text"]
    real = reproduced(tmp_path, monkeypatch)
    if (socks := through_a_socks_proxy(monkeypatch)) is None:  # not reproducible here: the rest still is
        quoted = [output for output in quoted if "SOCKS" not in output]
    else:
        real.append(socks)
    assert [output for output in real if output not in quoted] == []
    assert [output for output in quoted if output not in real] == []
