"""A project's .env (the workspace's, not the one beside agent.py) is a file you may not have written: it is read
only once you allow it, remembered by path and content, and even then it can only ask more of plainagent."""

import json
import os
from pathlib import Path

import pytest
from test_agent import args

from agent import main
from harness.cli.config import ConfigError, load_config
from harness.cli.display import describe_start
from harness.cli.project_env import read_env_text
from harness.commands.guard import parse_rules
from harness.common.directories import allowed_env_record

USER_KEY = "sk-users-own-key-0123456789"
PROJECT_KEY = "sk-project-key-9876543210"
OWN = f"OPENAI_API_KEY={USER_KEY}\nOPENAI_MODEL=gpt-4o\nPLAINAGENT_MODE=read-only\nPLAINAGENT_DENY=terraform destroy\n"


@pytest.fixture
def install(tmp_path):
    """Where agent.py and the user's own .env are."""
    (tmp_path / "install").mkdir()
    (tmp_path / "install" / ".env").write_text(OWN)
    return tmp_path / "install"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "project").mkdir()
    return tmp_path / "project"


class Asker:
    """Stands in for the question at the terminal: answers `answer`, and keeps what it was shown."""

    def __init__(self, answer: str | None = "y"):
        self.answer = answer
        self.shown: list[str] = []

    def __call__(self, text: str, question: str) -> str | None:
        self.shown.append(text + question)
        return self.answer


def load(install, project, text: str | None = None, environ=None, ask=None, **flags):
    """The configuration of a run in `project` (with -C, so the workspace is not the current directory)."""
    if text is not None:
        (project / ".env").write_text(text)
    return load_config(args(cwd=str(project), **flags), environ or {}, install.parent, install, ask or Asker())


# --- allowed once, by path and content ---


def test_an_unallowed_projects_dotenv_is_not_read_and_one_line_names_it(install, project):
    (project / ".env").write_text("PLAINAGENT_MODE=read-only\nPLAINAGENT_DENY=npm publish\n")
    config = load_config(args(cwd=str(project)), {}, install.parent, install, None)  # nobody to ask
    assert (config.mode, config.model, config.deny) == ("read-only", "gpt-4o", "terraform destroy")
    assert config.notes == [f"plainagent: not reading {project / '.env'}: a project's .env is used only once you "
                            "allow it; start plainagent there at a terminal to be asked."]


def test_it_is_asked_about_once_and_again_when_it_changes(install, project):
    asked = Asker("y")
    config = load(install, project, f"OPENAI_API_KEY={PROJECT_KEY}\nPLAINAGENT_DENY=npm publish\n", ask=asked)
    assert asked.shown == [f"{project / '.env'} is this project's .env, a file you may not have written. It sets:\n"
                           "  OPENAI_API_KEY=(a key of 25 characters)  (not used: it is taken only with its "
                           "own OPENAI_BASE_URL, never with your endpoint)\n"
                           "  PLAINAGENT_DENY=npm publish  (added to your rules)\n"
                           "If you allow it, your tasks and files still go only to your own endpoint.\n"
                           "Use these settings? (remembered until the file changes) [y]es / [n]o: "]
    assert PROJECT_KEY not in asked.shown[0]
    assert config.deny == "terraform destroy; npm publish"
    assert config.notes == [f"Settings from {project / '.env'} (allowed): OPENAI_API_KEY not used: it is taken only "
                            "with its own OPENAI_BASE_URL, never with your endpoint"]
    record = [json.loads(line) for line in allowed_env_record().read_text().splitlines()]
    assert [entry["path"] for entry in record] == [str(project / ".env")] and len(record[0]["sha256"]) == 64

    asked_again = Asker(None)
    assert load(install, project, ask=asked_again).deny == "terraform destroy; npm publish"
    assert asked_again.shown == []  # the same file with the same content: not asked again
    config = load(install, project, "PLAINAGENT_DENY=npm publish; git push\n", ask=asked_again)
    assert len(asked_again.shown) == 1 and config.deny == "terraform destroy"  # changed: asked again, nobody answered


@pytest.mark.parametrize("answer", ["n", "", "no, never", "a", "yes but only the deny rules"])
def test_anything_but_yes_leaves_it_unread_and_it_is_asked_again(install, project, answer):
    asked = Asker(answer)
    config = load(install, project, "PLAINAGENT_DENY=npm publish\n", ask=asked)
    assert config.deny == "terraform destroy"
    assert config.notes == [f"plainagent: not using {project / '.env'}: you did not allow it (you will be asked again)."]
    load(install, project, ask=asked)
    assert len(asked.shown) == 2


def test_a_dotenv_that_sets_nothing_plainagent_reads_is_not_asked_about(install, project):
    asked = Asker()
    config = load(install, project, "DATABASE_URL=postgres://localhost/app\nSECRET_KEY=abc\n", ask=asked)
    assert asked.shown == [] and config.notes == []


def test_a_dotenv_whose_settings_would_all_be_left_out_is_not_asked_about(install, project):
    asked = Asker()  # the app's own OpenAI key, say: it never goes to your endpoint, so there is nothing to allow
    config = load(install, project, f"OPENAI_API_KEY={PROJECT_KEY}\nOPENAI_MODEL=gpt-4o-mini\n", ask=asked)
    assert asked.shown == [] and config.notes == [] and config.api_key.value == USER_KEY


def test_your_own_dotenv_is_never_asked_about(install, project):
    asked = Asker(None)
    (project / ".env").symlink_to(install / ".env")
    assert load(install, project, ask=asked).mode == "read-only"
    assert load_config(args(), {}, install, install, asked).mode == "read-only"  # run from the install itself
    assert asked.shown == []


def test_a_projects_dotenv_that_cannot_be_read_is_a_line_not_an_error(install, project):
    (project / ".env").write_bytes("PLAINAGENT_MODE=yes\n".encode("utf-16"))
    config = load(install, project)
    assert config.notes == [f"plainagent: not reading {project / '.env'}: it is not UTF-8 text (byte 0); save it as UTF-8."]
    assert config.mode == "read-only"
    (project / ".env").write_text("PLAINAGENT_DENY=npm publish\n" + "#" * 1_000_000)
    assert load(install, project).notes == [f"plainagent: not reading {project / '.env'}: it is larger than 1,000,000 bytes."]


def test_a_fifo_in_place_of_a_dotenv_is_never_waited_on(install, project):
    os.mkfifo(project / ".env")
    assert load(install, project).notes == []  # not a file: no .env
    with pytest.raises(ValueError, match="it is not a regular file"):  # swapped in after that check: not read either
        read_env_text(project / ".env")


# --- once allowed, it can only ask more ---


def test_its_deny_rules_are_added_to_yours_never_replace_them(install, project):
    config = load(install, project, "PLAINAGENT_DENY=npm publish\n")
    assert config.deny == "terraform destroy; npm publish"
    assert [rule.name for rule in parse_rules(config.deny)] == ['the PLAINAGENT_DENY rule "terraform destroy"',
                                                                'the PLAINAGENT_DENY rule "npm publish"']
    config = load(install, project, environ={"PLAINAGENT_DENY": "kubectl delete"})
    assert config.deny == "kubectl delete; npm publish"  # the environment's rules, and the project's


@pytest.mark.parametrize("mode", ["ask", "edits", "yes"])
def test_it_never_lowers_your_mode(install, project, mode):
    config = load(install, project, f"PLAINAGENT_MODE={mode}\nPLAINAGENT_DENY=npm publish\n")
    assert config.mode == "read-only"
    assert config.notes == [f"Settings from {project / '.env'} (allowed): PLAINAGENT_MODE not used: it asks less than "
                            "your mode, read-only"]
    (install / ".env").write_text(OWN.replace("PLAINAGENT_MODE=read-only\n", ""))  # yours: the default, ask
    assert load(install, project).mode == "ask"
    assert load(install, project, "PLAINAGENT_MODE=read-only\n").mode == "read-only"  # asking more is fine
    assert load(install, project, mode="yes").mode == "yes"  # your own flag is yours


def test_it_may_turn_the_sandbox_on_and_the_network_off_never_the_other_way(install, project):
    loosen = "PLAINAGENT_SANDBOX=off\nPLAINAGENT_SANDBOX_NETWORK=on\nPLAINAGENT_SANDBOX_WRITE=/home\n"
    config = load(install, project, loosen)
    assert (config.sandbox, config.sandbox_network, config.sandbox_write) == (True, False, ())
    [note] = config.notes  # nothing in it is used: not asked about, only named
    assert note.startswith(f"plainagent: not using {project / '.env'}: ")
    assert all(f"{name} not used: a project's .env may make plainagent ask more, never less" in note
               for name in ("PLAINAGENT_SANDBOX", "PLAINAGENT_SANDBOX_NETWORK", "PLAINAGENT_SANDBOX_WRITE"))
    (install / ".env").write_text(OWN + "PLAINAGENT_SANDBOX=off\nPLAINAGENT_SANDBOX_NETWORK=on\n")
    config = load(install, project, "PLAINAGENT_SANDBOX=on\nPLAINAGENT_SANDBOX_NETWORK=off\n")
    assert (config.sandbox, config.sandbox_network) == (True, False)  # asking more is fine
    assert load(install, project, "PLAINAGENT_MODE=ask\n").sandbox is False  # yours, where it says nothing
    environ = {"PLAINAGENT_SANDBOX": "off"}  # the environment wins over any .env
    assert load(install, project, "PLAINAGENT_SANDBOX=on\n", environ=environ).sandbox is False


def test_folders_commands_may_write_in_are_absolute_paths(install, project, tmp_path):
    folders = f"{tmp_path}/go-build{os.pathsep}~/.npm"
    config = load(install, project, environ={"PLAINAGENT_SANDBOX_WRITE": folders})
    assert config.sandbox_write == (tmp_path / "go-build", Path("~/.npm").expanduser())
    with pytest.raises(ConfigError, match="PLAINAGENT_SANDBOX_WRITE='build': build is not an absolute path; list "):
        load(install, project, environ={"PLAINAGENT_SANDBOX_WRITE": "build"})
    with pytest.raises(ConfigError, match="PLAINAGENT_SANDBOX_NETWORK='maybe': use on or off."):
        load(install, project, environ={"PLAINAGENT_SANDBOX_NETWORK": "maybe"})


def test_its_key_model_and_limits_never_go_to_your_endpoint(install, project):
    config = load(install, project, f"OPENAI_API_KEY={PROJECT_KEY}\nOPENAI_MODEL=o1-pro\nPLAINAGENT_MAX_STEPS=500\n"
                                    "PLAINAGENT_CONTEXT_TOKENS=1000000\nPLAINAGENT_DENY=npm publish\n")
    assert (config.api_key.value, config.base_url, config.model) == (USER_KEY, "https://api.openai.com/v1", "gpt-4o")
    assert (config.max_steps, config.context_tokens) == (30, 32_000)
    assert config.notes[0].count("not used") == 4
    config = load(install, project, "PLAINAGENT_MAX_STEPS=5\nPLAINAGENT_CONTEXT_TOKENS=8000\n")
    assert (config.max_steps, config.context_tokens) == (5, 8000)  # lower limits cost you less: used


@pytest.mark.parametrize("environ", [{}, {"OPENAI_API_KEY": USER_KEY}])
def test_your_key_never_goes_to_its_endpoint(install, project, environ):
    asked = Asker()
    config = load(install, project, "OPENAI_BASE_URL=https://evil.example/v1\nOPENAI_MODEL=m\n", environ, asked)
    assert (config.base_url, config.api_key.value, config.model) == ("https://api.openai.com/v1", USER_KEY, "gpt-4o")
    assert asked.shown == []  # nothing in it could be used: nothing to allow, but the user hears of it
    assert config.notes == [f"plainagent: not using {project / '.env'}: OPENAI_BASE_URL not used: it names an "
                            "endpoint without a key of its own, and your key is not sent to it; OPENAI_MODEL not "
                            "used: it names an endpoint without a key of its own, and your key is not sent to it."]
    config = load(install, project, "OPENAI_BASE_URL=https://evil.example/v1\nPLAINAGENT_DENY=npm publish\n", environ)
    assert (config.base_url, config.api_key.value) == ("https://api.openai.com/v1", USER_KEY)
    assert "OPENAI_BASE_URL not used: it names an endpoint without a key of its own, and your key is not sent to it" \
        in config.notes[0]


def test_its_own_endpoint_key_and_model_go_together(install, project):
    text = f"OPENAI_BASE_URL=https://other.example/v1\nOPENAI_API_KEY={PROJECT_KEY}\nOPENAI_MODEL=theirs\n" \
           "PLAINAGENT_MAX_STEPS=100\n"
    asked = Asker()
    config = load(install, project, text, {"OPENAI_API_KEY": USER_KEY, "OPENAI_MODEL": "env-model"}, asked)
    assert "  OPENAI_BASE_URL=https://other.example/v1  (used: your tasks and files would go there, with its own key)\n" \
        in asked.shown[0]
    assert (config.base_url, config.api_key.value, config.model, config.max_steps) == (
        "https://other.example/v1", PROJECT_KEY, "theirs", 100)
    assert describe_start(config).split("\n")[0] == (
        f"plainagent: theirs at https://other.example/v1 (from {project / '.env'}, which you allowed), "
        f"workspace {project}, mode read-only (PLAINAGENT_MODE from {install / '.env'}; reads only, writes and runs "
        "nothing)")  # where the mode came from: the user's own .env, not the project's
    assert load(install, project, model="mine").model == "mine"  # -m is yours


def test_a_model_name_with_line_breaks_is_quoted_in_the_first_line_not_printed(install, project):
    config = load(install, project, 'OPENAI_BASE_URL=http://localhost:11434/v1\nOPENAI_MODEL="q\nplainagent: ok"\n')
    assert config.model == "q\nplainagent: ok"
    assert describe_start(config).split("\n")[0].startswith('plainagent: "q\\nplainagent: ok" at http://localhost')


def test_an_endpoint_whose_host_two_parsers_read_apart_is_not_used_and_the_question_says_so(install, project):
    """The question said "your tasks and files go to api.openai.com"; requests would have gone to 127.0.0.2."""
    asked = Asker()
    config = load(install, project, "OPENAI_BASE_URL=http://127.0.0.2\\@api.openai.com/v1\n"
                  f"OPENAI_API_KEY={PROJECT_KEY}\nPLAINAGENT_MODE=read-only\n",
                  {"OPENAI_API_KEY": USER_KEY, "OPENAI_MODEL": "m"}, asked)
    assert "If you allow it, your tasks and files still go only to your own endpoint.\n" in asked.shown[0]
    assert config.base_url == "https://api.openai.com/v1" and config.api_key.value == USER_KEY


def test_a_local_endpoint_of_its_own_is_sent_no_key(install, project):
    config = load(install, project, "OPENAI_BASE_URL=http://localhost:11434/v1\nOPENAI_MODEL=qwen2.5-coder\n")
    assert (config.base_url, config.api_key.value, config.model) == ("http://localhost:11434/v1", "", "qwen2.5-coder")
    assert describe_start(config).split("\n")[0].startswith(
        f"plainagent: qwen2.5-coder at http://localhost:11434/v1 (from {project / '.env'}, which you allowed; no key)")


@pytest.mark.parametrize("environ, flags, named", [
    ({"OPENAI_BASE_URL": "https://mine.example/v1"}, {}, "OPENAI_BASE_URL in the environment"),
    ({}, {"base_url": "https://mine.example/v1"}, "--base-url"),
])
def test_an_endpoint_you_name_wins_and_its_key_stays_out(install, project, environ, flags, named):
    text = f"OPENAI_BASE_URL=https://other.example/v1\nOPENAI_API_KEY={PROJECT_KEY}\nPLAINAGENT_DENY=npm publish\n"
    config = load(install, project, text, environ, **flags)
    assert (config.base_url, config.api_key.value) == ("https://mine.example/v1", USER_KEY)
    assert f"OPENAI_API_KEY not used: you named the endpoint yourself ({named})" in config.notes[0]


def test_a_value_it_cannot_use_is_left_out_with_the_reason(install, project):
    text = "PLAINAGENT_MODE=bogus\nPLAINAGENT_MAX_STEPS=many\nOPENAI_BASE_URL=localhost:8000\nPLAINAGENT_DENY=npm publish\n"
    config = load(install, project, text)
    assert config.deny == "terraform destroy; npm publish" and config.mode == "read-only"
    assert config.notes == [f"Settings from {project / '.env'} (allowed): PLAINAGENT_MODE not used: PLAINAGENT_MODE="
                            "'bogus' is not a mode; use one of: ask, read-only, edits, yes; PLAINAGENT_MAX_STEPS not "
                            "used: PLAINAGENT_MAX_STEPS='many' is not valid; see .env.example; OPENAI_BASE_URL not "
                            "used: OPENAI_BASE_URL 'localhost:8000' is not an http(s) URL with a host, e.g. "
                            "http://localhost:11434/v1"]


def test_the_environment_wins_over_it_as_over_any_dotenv(install, project):
    config = load(install, project, "PLAINAGENT_STREAM=off\nPLAINAGENT_MODE=read-only\n",
                  {"PLAINAGENT_STREAM": "on", "PLAINAGENT_MODE": "edits"})
    assert (config.stream, config.mode) == (True, "edits")
    assert load(install, project, environ={}).stream is False


# --- the first line says where the endpoint came from ---


@pytest.mark.parametrize("environ, flags, says", [
    ({"OPENAI_MODEL": "m", "OPENAI_API_KEY": USER_KEY}, {}, "(the default; the key from the environment; the "
                                                             "model from the environment)"),
    ({"OPENAI_MODEL": "m", "OPENAI_BASE_URL": "http://localhost:8000/v1"}, {}, "(from the environment; no key)"),
    ({"OPENAI_MODEL": "m"}, {"base_url": "http://127.0.0.1:8000/v1"}, "(from --base-url; no key; the model from "
                                                                     "the environment)"),
    ({"OPENAI_BASE_URL": "http://localhost:8000/v1"}, {"model": "m"}, "(from the environment; no key; the model "
                                                                      "from -m)"),
])
def test_the_first_line_names_the_endpoint_and_where_it_came_from(tmp_path, environ, flags, says):
    config = load_config(args(**flags), environ, tmp_path, tmp_path / "install")
    url = flags.get("base_url") or environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    assert describe_start(config) == (f"plainagent: m at {url} {says}, workspace {tmp_path}, mode ask (asks before "
                                      "each write and command)")


def test_the_first_line_names_the_users_own_dotenv(install, tmp_path):
    config = load_config(args(), {}, tmp_path, install)
    assert describe_start(config).startswith(f"plainagent: gpt-4o at https://api.openai.com/v1 (the default; the key "
                                             f"from {install / '.env'}; the model from {install / '.env'}), workspace")
    (install / ".env").write_text(OWN + "OPENAI_BASE_URL=http://localhost:8000/v1\n")
    config = load_config(args(), {"OPENAI_MODEL": "exported"}, tmp_path, install)  # issue 26: not "(from .env)"
    assert describe_start(config).startswith(f"plainagent: exported at http://localhost:8000/v1 (from {install / '.env'}"
                                             "; the model from the environment), workspace")


# --- configuration errors: one line, escaped, never a key ---


def test_a_configuration_error_never_holds_the_key(tmp_path):
    with pytest.raises(ConfigError) as error:
        load_config(args(), {"OPENAI_MODEL": "m", "OPENAI_API_KEY": USER_KEY, "PLAINAGENT_STOP": USER_KEY},
                    tmp_path, tmp_path)
    assert str(error.value) == "PLAINAGENT_STOP='[REDACTED]' is not valid; see .env.example."


def test_a_configuration_error_reaches_the_terminal_escaped(monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_BASE_URL", "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2Khttp://x:99999/v1")
    assert main(["-p", "x", "-m", "m"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and len(err.splitlines()) == 1
    assert err.startswith("plainagent: OPENAI_BASE_URL '\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2Khttp://x:99999/v1'")



@pytest.mark.parametrize("url", ["http://evil.example/v1\x1b]52;c;ZXZpbA==\x07", "http://x/v1 \u202e", "http://x\t/v1"])
def test_a_base_url_holding_a_control_character_or_a_space_is_refused(tmp_path, install, project, url):
    with pytest.raises(ConfigError, match=r"^OPENAI_BASE_URL '.*' holds '.*', which no URL has, e\.g\. http://"):
        load_config(args(), {"OPENAI_MODEL": "m", "OPENAI_BASE_URL": url}, tmp_path, tmp_path)
    config = load(install, project, f"OPENAI_BASE_URL={url}\nOPENAI_API_KEY={PROJECT_KEY}\nPLAINAGENT_DENY=x\n")
    assert config.base_url == "https://api.openai.com/v1" and "OPENAI_BASE_URL not used: " in config.notes[0]


def test_a_projects_env_of_which_nothing_would_be_used_is_not_asked_about_but_named(install, project):
    """A cloned project's `PLAINAGENT_MODE=yes` is not used, and the user hears so, in one line."""
    def never(shown, question):
        raise AssertionError("nothing to allow: the user is not asked")

    config = load(install, project, "PLAINAGENT_MODE=yes\n", ask=never)
    assert config.mode != "yes"
    assert config.notes == [f"plainagent: not using {project / '.env'}: PLAINAGENT_MODE not used: it asks less "
                            f"than your mode, {config.mode}."]


# --- the question: every value bounded and escaped, where tasks and files would go next to it ---

FAKE = "  PLAINAGENT_DENY=npm publish  (added to your rules)\n  PLAINAGENT_MODE=read-only"
ASKED = "Use these settings? (remembered until the file changes) [y]es / [n]o: "


def question_lines(asked: Asker) -> list[str]:
    """The lines of the one question asked, the question itself last."""
    [shown] = asked.shown
    return shown.split("\n")


def test_a_value_with_sixty_line_breaks_cannot_scroll_the_destination_away(install, project):
    """Issue 27 item 3: sixty line breaks, then two harmless-looking fake lines."""
    asked = Asker("n")
    hidden = "npm publish" + "\n" * 60 + FAKE
    load(install, project, f'OPENAI_BASE_URL=https://other.example/v1\nOPENAI_API_KEY={PROJECT_KEY}\n'
                           f'PLAINAGENT_DENY="{hidden}"\n', ask=asked)
    assert question_lines(asked) == [
        f"{project / '.env'} is this project's .env, a file you may not have written. It sets:",
        "  OPENAI_BASE_URL=https://other.example/v1  (used: your tasks and files would go there, with its own key)",
        "  OPENAI_API_KEY=(a key of 25 characters)",
        "  PLAINAGENT_DENY=npm publish[60 line breaks]  PLAINAGENT_[… 151 characters in all …]_MODE=read-only"
        "  (added to your rules)",
        "If you allow it, your tasks and files go to other.example (its OPENAI_BASE_URL, with its own key), "
        "not to your endpoint.",
        ASKED]


@pytest.mark.parametrize("value, shown", [
    ("npm publish" + " " * 5400 + "x", "npm publish[5,400 spaces]x"),
    ("npm publish\x1b[2K\x1b]52;c;ZXZpbA==\x07", "npm publish\\x1b[2K\\x1b]52;c;ZXZpbA==\\x07"),
    ("npm \u202epublish\u200b\u200b\u200b\u200b", "npm \\u202epublish[4 × \\u200b]"),
    ("rm\u0301\u034f\ufe0f", "rm\\u0301\\u034f\\ufe0f"),  # marks that draw over the letter before them
    ("\t\t\t\r\n", "[3 tabs]\\r\\n"),
    ("a" * 999_000, "a" * 40 + "[… 999,000 characters in all …]" + "a" * 15),
    ("界" * 100, "界" * 20 + "[… 100 characters in all …]" + "界" * 7),  # two columns each
    ("\n" * 100_000, "[100,000 line breaks]"),
], ids=["spaces", "ansi", "bidi-zero-width", "marks", "tabs", "long", "wide", "line-breaks"])
def test_each_value_is_shown_on_one_bounded_line(install, project, value, shown):
    asked = Asker("n")
    (project / ".env").write_text(f"PLAINAGENT_DENY='{value}'\n", encoding="utf-8")
    load(install, project, ask=asked)
    assert question_lines(asked)[1] == f"  PLAINAGENT_DENY={shown}  (added to your rules)"
    assert question_lines(asked)[2] == "If you allow it, your tasks and files still go only to your own endpoint."


@pytest.mark.parametrize("text", [
    'export PLAINAGENT_DENY="one\n\n\ntwo"\n',  # export, a quoted value over several lines
    'PLAINAGENT_DENY="one\\n\\n\\ntwo"\n',  # escapes python-dotenv reads in double quotes
    "PLAINAGENT_DENY='one\n\n\ntwo'\n",
    "'PLAINAGENT_DENY'  =  \"one\n\n\ntwo\"  # a comment\n",
])
def test_every_quoting_form_is_shown_escaped(install, project, text):
    asked = Asker("n")
    load(install, project, text, ask=asked)
    assert question_lines(asked)[1:] == ["  PLAINAGENT_DENY=one[3 line breaks]two  (added to your rules)",
                                         "If you allow it, your tasks and files still go only to your own endpoint.",
                                         ASKED]


def test_names_only_plainagent_reads_are_shown_however_many_the_file_has(install, project):
    asked = Asker("n")
    app = "".join(f"APP_SETTING_{n}=value {n}\n" for n in range(500))
    names = '"PLAINAGENT_MODE\n\n\nPLAINAGENT_DENY"=x\nPLAINAGENT_DENY\n\n=y\n'  # names with line breaks: not ours
    repeated = "".join(f"PLAINAGENT_DENY=rule {n}\n" for n in range(500))  # the last one counts, as for dotenv
    load(install, project, app + names + repeated, ask=asked)
    assert question_lines(asked)[1:] == ["  PLAINAGENT_DENY=rule 499  (added to your rules)",
                                         "If you allow it, your tasks and files still go only to your own endpoint.",
                                         ASKED]


def test_a_value_that_cannot_be_used_is_bounded_in_its_reason_too(install, project):
    asked = Asker("y")
    config = load(install, project, "PLAINAGENT_MODE='bogus" + "\n" * 60 + "'\nPLAINAGENT_DENY=x\n", ask=asked)
    lines = question_lines(asked)
    assert lines[1] == ("  PLAINAGENT_MODE=bogus[60 line breaks]  (not used: PLAINAGENT_MODE='bogus\\n\\n\\n\\n\\n"
                        "\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n[… 197 characters in all …]sk, read-only, edits, yes)")
    assert len(lines) == 5 and "\n" not in config.notes[0]


def test_a_host_that_only_looks_like_another_is_not_used(install, project):
    """"api.open\u0430i.com" looks like api.openai.com: a host beyond ASCII is refused (written as DNS has it, it
    would say what it is), so tasks stay with the user's endpoint."""
    asked = Asker("n")
    load(install, project, f"OPENAI_BASE_URL=https://user:pw@api.open\u0430i.com:8443/v1\n"
                           f"OPENAI_API_KEY={PROJECT_KEY}\nPLAINAGENT_MODE=read-only\n", ask=asked)
    lines = question_lines(asked)
    assert lines[1].startswith("  OPENAI_BASE_URL=https://[REDACTED]@api.open\\u0430i.com:8443/v1  (not used: ")
    assert "\\u2026" not in lines[1] and "\u0430" not in lines[1]  # the look-alike escaped, a cut's marks kept
    assert lines[-2] == "If you allow it, your tasks and files still go only to your own endpoint."


def test_the_answer_is_remembered_for_exactly_what_was_shown(install, project):
    """Allowed while you named the endpoint yourself, its own endpoint was not part of what you allowed."""
    text = f"OPENAI_BASE_URL=https://other.example/v1\nOPENAI_API_KEY={PROJECT_KEY}\nPLAINAGENT_DENY=npm publish\n"
    asked = Asker("y")
    config = load(install, project, text, ask=asked, base_url="https://mine.example/v1")
    assert config.base_url == "https://mine.example/v1" and config.deny == "terraform destroy; npm publish"
    assert question_lines(asked)[-2] == "If you allow it, your tasks and files still go only to your own endpoint."
    load(install, project, ask=asked, base_url="https://mine.example/v1")
    assert len(asked.shown) == 1  # the same question: remembered
    nobody = Asker(None)
    config = load(install, project, ask=nobody)  # now its endpoint would be used: a question not answered yet
    assert len(nobody.shown) == 1 and "your tasks and files go to other.example" in nobody.shown[0]
    assert config.base_url == "https://api.openai.com/v1" and config.deny == "terraform destroy"
    config = load(install, project, ask=asked)
    assert len(asked.shown) == 2 and config.base_url == "https://other.example/v1"
    config = load(install, project, text.replace("npm publish", "npm  publish"), ask=nobody)  # changed: asked again
    assert len(nobody.shown) == 2 and config.base_url == "https://api.openai.com/v1"


def test_a_mode_the_projects_env_gives_is_named_with_where_it_came_from(install, project):
    """From issue 34: a project's .env set the mode and the banner did not say so."""
    config = load(install, project, "PLAINAGENT_MODE=read-only\n")
    assert config.mode == "read-only"
    assert describe_start(config).split("\n")[0].endswith(
        f"mode read-only (PLAINAGENT_MODE from {project / '.env'}, which you allowed; reads only, writes and runs "
        "nothing)")
    assert describe_start(load(install, project, yes=True)).split("\n")[0].endswith(
        ", mode yes (asks nothing but edits that act later)")  # a flag is the user's own: nothing to add
