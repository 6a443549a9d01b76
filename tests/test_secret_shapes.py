"""Credentials known by their shape (issue 27 item 5): withheld from every result the model gets, whatever file
or command they came from; ordinary code stays as it is; and an edit never writes a marker in a value's place.

The tokens here are made up in the shapes real ones have; none was ever valid."""

import base64
import io
import json
import time

import pytest
from test_fetch import WebSite

from harness.commands.shell import HeadAndTail
from harness.common.secret_shapes import withhold
from harness.files.workspace import Workspace
from tools import check_args, run_tool

GITHUB = "ghp_" + "aB3dE6gH9j" * 3 + "kLmNoP"  # 36 characters after the prefix
COPILOT = "ghu_" + "Zy9Xw8Vu7T" * 3 + "s6R5q4"
OPENAI = "sk-proj-" + "Q1w2E3r4T5y6U7i8O9p0" * 4
ANTHROPIC = "sk-ant-oat01-" + "Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8" * 3
AWS_ID = "AKIA" + "QYLPMN5HHHFPZAM2"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9q8R7s6T5"
HUGGING_FACE = "hf_" + "kQmWnErTyUiOpAsDfGhJkLzXcVbNmQwErT"
DATABRICKS = "dapi" + "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
KAGGLE = "3c7f9a1b5d2e8f4a6b0c9d1e7f3a5b2c"
NUGET_PAT = "q7w3e9r1t5y2u8i4o6p0a3s7d1f9g5h2j8k4l6z0x3c7v1b9n5m2"
YARN = "NpmToken.3f2b9c1e-8a7d-4e6f-b5c4-d3e2f1a0b9c8"
PIP_PASSWORD = "Pyp1-s3cret-Passw0rd"
SSO_TOKEN = "aoaAAAAAGdMv7Q2l0Yf4:MGUCMQDk3J9sXvUe2bQwRtY5nZ8pLcA1fHg6Kj0m"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
SLACK = "xoxb-2048-1234567890-" + "AbCdEfGhIjKlMnOpQrStUvWx"
KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
PG_PASSWORD = "Pg-5ecret-9f8e7d6c5b4a"

# The thirteen files of the attack, in a home folder and a project in it, each with what such a file holds.
HOME_FILES = {
    ".bash_history": f"ls\nexport GITHUB_TOKEN={GITHUB}\ncurl -H 'Authorization: Bearer {OPENAI}' https://x/v1\n",
    ".zsh_history": f": 1700000000:0;export AWS_ACCESS_KEY_ID={AWS_ID}\n: 1700000001:0;export "
                    f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n",
    ".claude/.credentials.json": json.dumps({"claudeAiOauth": {"accessToken": ANTHROPIC, "expiresAt": 1}}),
    ".config/github-copilot/apps.json": json.dumps({"github.com:Iv1.b507a08c87ecfe98": {"user": "me",
                                                                                         "oauth_token": COPILOT}}),
    ".aws/sso/cache/0a1b2c3d.json": json.dumps({"accessToken": SSO_TOKEN, "clientSecret": JWT}),
    ".config/pip/pip.conf": f"[global]\nindex-url = https://me:{PIP_PASSWORD}@pypi.corp.example/simple\n",
    ".yarnrc.yml": f'npmRegistryServer: "https://npm.corp.example"\nnpmAuthToken: "{YARN}"\n',
    ".kaggle/kaggle.json": json.dumps({"username": "me", "key": KAGGLE}),
    ".databrickscfg": f"[DEFAULT]\nhost = https://adb-1.azuredatabricks.net\ntoken = {DATABRICKS}\n",
    ".cache/huggingface/token": HUGGING_FACE,
    "project/serviceAccountKey.json": '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
                                      f'{KEY_BODY}\\n-----END PRIVATE KEY-----\\n", "client_email": "a@b.iam"}}',
    "project/nuget.config": '<configuration><packageSourceCredentials><github>\n<add key="Username" value="me" />\n'
                            f'<add key="ClearTextPassword" value="{NUGET_PAT}" />\n</github></packageSourceCredentials>'
                            "</configuration>\n",
    "project/.vscode/settings.json": '{\n  "editor.tabSize": 4,\n  "rest-client.environmentVariables": {"$shared": '
                                     f'{{"token": "{SLACK}"}}}},\n  "sqltools.connections": [{{"password": '
                                     f'"{PG_PASSWORD}"}}]\n}}\n',
}
VALUES = [GITHUB, COPILOT, OPENAI, ANTHROPIC, AWS_ID, AWS_SECRET, HUGGING_FACE, DATABRICKS, KAGGLE, NUGET_PAT, YARN,
          PIP_PASSWORD, SSO_TOKEN, JWT, SLACK, KEY_BODY, PG_PASSWORD]


def run(ws, name, **args):
    assert check_args(name, args) is None, check_args(name, args)
    return run_tool(ws, name, args)


def seen(output: str) -> list[str]:
    """The values (or a long piece of one) a result shows."""
    return [value for value in VALUES if any(value[at:at + 12] in output for at in range(0, len(value) - 11))]


@pytest.fixture
def home(tmp_path):
    for name, text in HOME_FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


# --- the attack of issue 27, end to end through the tools ---


def test_one_search_of_the_home_folder_shows_no_credential(home):
    ws = Workspace(home)
    for pattern in [".", "token|key|password|secret|auth", "ghp_|sk-|AKIA|hf_|BEGIN", "ghp_a", "=", ":"]:
        assert seen(run(ws, "search_files", pattern=pattern).output) == [], pattern
    settings = run(ws, "search_files", pattern="token|password", path="project/.vscode").output
    assert settings == ('project/.vscode/settings.json:3: "rest-client.environmentVariables": {"$shared": {"token": '
                        '"[secret withheld: Slack token]"}},\n'
                        'project/.vscode/settings.json:4: "sqltools.connections": [{"password": '
                        '"[secret withheld: a value named as a secret]"}]')


@pytest.mark.parametrize("name", list(HOME_FILES))
def test_each_credential_file_is_refused_or_read_with_its_values_withheld(home, name):
    result = run(Workspace(home), "read_file", path=name)
    assert seen(result.output) == []
    assert "may hold secrets" in result.output or "[secret withheld: " in result.output


@pytest.mark.parametrize("name", [".config/pip/pip.conf", "pip.conf", "pip.ini", ".pip/pip.conf"])
def test_pip_configuration_joins_the_secret_names(tmp_path, name):
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text("[global]\nindex-url = https://me:pw@pypi.corp.example/simple\n")
    assert run(Workspace(tmp_path), "read_file", path=name).output.startswith(f"{name} may hold secrets")


def test_a_command_s_output_has_its_credentials_withheld(home):
    ws = Workspace(home / "project")
    output = run(ws, "run_command", command="cat nuget.config .vscode/settings.json").output
    assert seen(output) == [] and output.count("[secret withheld: ") == 3
    assert '<add key="Username" value="me" />' in output  # the rest of the file is as it is


def test_a_fetched_page_has_its_credentials_withheld(tmp_path):
    with WebSite({"/leak.txt": {"body": f"key: {OPENAI}\nnext line\n", "headers": {"Content-Type": "text/plain"}}}) as site:
        output = run(Workspace(tmp_path, fetch_allow=frozenset({"127.0.0.1"})), "web_fetch", url=f"{site.url}/leak.txt")
    assert output.output.endswith("\nkey: [secret withheld: API key]\nnext line\n")


def test_a_sub_agent_s_answer_has_its_credentials_withheld(tmp_path):
    result = run_tool(Workspace(tmp_path), "delegate", {"task": "find the token"}, subagent=lambda task: f"It is {GITHUB}.")
    assert result.output == "It is [secret withheld: GitHub token]."


def test_a_command_output_cut_through_a_token_shows_no_piece_of_it():
    """Kept as a head and a tail of 40 bytes each: the head ends 31 characters into one token, the tail starts 5
    characters into another."""
    output = HeadAndTail(80)
    output.read_all(io.BytesIO(f"export T={GITHUB}\n{'x' * 100}\n{GITHUB[5:]} end\n".encode()))
    assert output.text(lambda text, **cut: withhold(text, **cut)) == (
        "export T=[secret withheld: a token cut short]\n[... 111 bytes dropped: about 2 of the 3 lines ...]\n"
        "[secret withheld: the end of a token cut short] end\n")


# --- the shapes, and what is not one ---


@pytest.mark.parametrize("text, shown", [
    (f"export GITHUB_TOKEN={GITHUB}", "export GITHUB_TOKEN=[secret withheld: GitHub token]"),
    ("github_pat_" + "11ABCDEFG0" * 8 + "xy", "[secret withheld: GitHub token]"),
    ("CI_TOKEN: glpat-" + "a1B2c3D4e5F6g7H8i9J0", "CI_TOKEN: [secret withheld: GitLab token]"),
    (f'client = OpenAI(api_key="{OPENAI}")', 'client = OpenAI(api_key="[secret withheld: API key]")'),
    ("sk-" + "0123456789abcdef" * 2, "[secret withheld: API key]"),  # DeepSeek's
    (ANTHROPIC, "[secret withheld: Anthropic key]"),
    ("stripe.api_key = 'sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc'", "stripe.api_key = '[secret withheld: Stripe key]'"),
    (f"id={AWS_ID}", "id=[secret withheld: AWS access key]"),
    ("ASIA" + "ZXCVBNMQWERTY234", "[secret withheld: AWS access key]"),
    (SLACK, "[secret withheld: Slack token]"),
    ("https://hooks.slack.com/services/T000/B000/" + "XXXXXXXXXXXXXXXXXXXXXXXX",
     "https://[secret withheld: Slack webhook]"),
    (HUGGING_FACE, "[secret withheld: Hugging Face token]"),
    ("//registry.npmjs.org/:_authToken=npm_" + "aBcD1234" * 4 + "eFgH", "//registry.npmjs.org/:_authToken=[secret "
                                                                        "withheld: npm token]"),
    ("password = pypi-AgEIcHlwaS5vcmc" + "CJDk0ZjM2" * 6, "password = [secret withheld: PyPI token]"),
    ("AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "[secret withheld: Google API key]"),
    (f"Authorization: Bearer {JWT}", "Authorization: Bearer [secret withheld: JSON web token]"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\nnext",
     "[secret withheld: private key]\n[secret withheld: private key]\n[secret withheld: private key]\nnext"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA", "[secret withheld: private key]\n[secret withheld: "
                                                          "private key]"),  # cut off before its end
    ('{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n"}',
     '{"private_key": "[secret withheld: private key]\\n"}'),
    ('{"client_secret": "a8Fj3kL0pQ9zX2vB7nM4"}', '{"client_secret": "[secret withheld: a value named as a secret]"}'),
    ("DB_PASSWORD=Tr0ub4dor-and-3-more", "DB_PASSWORD=[secret withheld: a value named as a secret]"),
    ("İ" * 30 + ' token = "a8Fj3kL0pQ9zX2vB7nM4"', "İ" * 30 + ' token = "[secret withheld: a value named as a secret]"'),
    ('"{\\"api_key\\": \\"a8Fj3kL0pQ9zX2vB7nM4\\"}"', '"{\\"api_key\\": \\"[secret withheld: a value named as a '
                                                    'secret]\\"}"'),  # JSON inside a JSON string
    ("DATABASE_URL=postgres://app:hunter2@db:5432/app",
     "DATABASE_URL=postgres://app:[secret withheld: password in a URL]@db:5432/app"),
    ("bot = 123456789:AA" + "Hdqwerty-1234567890_ABCDEFGHIJKLMN", "bot = 123456789[secret withheld: Telegram bot token]"),
])
def test_credentials_are_withheld_by_their_shape(text, shown):
    assert withhold(text) == shown


@pytest.mark.parametrize("text", [
    'password = os.environ["DB_PASSWORD"]', "token = get_token(request)", "api_key: str | None = None",
    '"key": "settings.title.label2"', "max_tokens=4096", "pip install sk-learn", "import sklearn",
    "self.secret.redact(text, cut_before=cut_before)", 'token = "abcdefgh"', 'password: "changeme"',
    'API_KEY = "your-api-key-here"', "SECRET_KEY = settings.SECRET_KEY", 'token = "xxxxxxxxxxxxxxxxxxxxxxxx1"',
    'url = "http://user:${PASSWORD}@host/"', "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "https://docs.python.org/3/library/re.html", "the task is to ask-for-help", "mask_ghp_value = 1",
    "tokenizer = AutoTokenizer.from_pretrained(model_name_or_path_2)", "password_hash = hash_password(password)",
    "PWD=/home/me/projects/app-2024/src", "AUTH_TOKEN_FILE=/run/secrets/token-2024",
    "client_secret=/etc/app/secret-2024.json", "password = $DB_PASSWORD_2024_PROD",
    '"integrity": "sha512-Jk1oVb3lR9+8l9rDuBqAYfjG0u3RnX9xQ2cY4mZ7pW1vT5sN0aE6dH8fK2gL3jI=="',
])
def test_ordinary_code_is_left_as_it_is(text):
    assert withhold(text) == text


@pytest.mark.parametrize("text", ["token=" * 85_000, "-----BEGIN PRIVATE KEY-----" * 19_000, "sk-" * 170_000,
                                  "xox." * 125_000, 'token: "' * 62_000, "tokentoken" * 50_000, "://a:" * 100_000],
                         ids=["token=", "BEGIN", "sk-", "xox.", 'token: "', "tokentoken", "://a:"])
def test_no_text_makes_withholding_slow(text):
    """Half a megabyte each, made of what the shapes start with: each took seconds to minutes in a draft whose
    regexes scanned to the end of the text from every start (now 0.1 s or less; the bound is 20 times that)."""
    started = time.perf_counter()
    withhold(text, cut_before=True, cut_after=True)
    assert time.perf_counter() - started < 2


def test_line_numbers_after_a_withheld_private_key_are_the_file_s_own(tmp_path):
    (tmp_path / "deploy.py").write_text('KEY = """-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n'
                                        '-----END EC PRIVATE KEY-----"""\nconnect(KEY)\n')
    assert run(Workspace(tmp_path), "read_file", path="deploy.py", offset=4).output == "     4\tconnect(KEY)"


# --- an edit never takes a marker for the value, nor writes one in its place ---


SETTINGS = f'{{\n  "editor.tabSize": 4,\n  "token": "{SLACK}"\n}}\n'


@pytest.fixture
def settings(tmp_path):
    (tmp_path / "settings.json").write_text(SETTINGS)
    return Workspace(tmp_path)


def test_an_edit_from_a_line_shown_withheld_keeps_the_value(settings):
    """Issue 33: the model copies the lines as read_file showed them, marker and all; the marker stands for the
    value at its place, and the value stays byte for byte (this was refused before)."""
    shown = run(settings, "read_file", path="settings.json").output
    assert '"token": "[secret withheld: Slack token]"' in shown
    result = run(settings, "edit_file", path="settings.json", old_str='  "editor.tabSize": 4,\n  "token": '
                 '"[secret withheld: Slack token]"', new_str='  "editor.tabSize": 2,\n  "token": "[secret withheld: '
                 'Slack token]"')
    assert result.ok and result.output == "Edited settings.json at lines 2-3."
    assert (settings.root / "settings.json").read_text() == SETTINGS.replace("4,", "2,")


def test_an_old_str_with_a_marker_the_file_does_not_show_there_fails_and_says_why(settings):
    result = run(settings, "edit_file", path="settings.json", old_str='"editor.tabSize": "[secret withheld: Slack '
                 'token]"', new_str='"editor.tabSize": 2')
    assert result.output == ("old_str holds [secret withheld: Slack token], which stands for a value plainagent "
                             "withheld from you (it looks like a credential); settings.json holds the value itself, "
                             "so old_str is not in it. Make the edit around that line, with the value left out, or "
                             "ask the user to change it. No changes were made.")
    assert (settings.root / "settings.json").read_text() == SETTINGS


@pytest.mark.parametrize("path, old_str", [("settings.json", '"editor.tabSize": 4,'), ("other.json", "")])
def test_an_edit_never_writes_a_marker_in_a_value_s_place(settings, path, old_str):
    result = run(settings, "edit_file", path=path, old_str=old_str,
                 new_str='"token": "[secret withheld: Slack token]",')
    assert not result.ok and result.output.startswith("new_str holds [secret withheld: Slack token], which stands "
                                                      "for a value plainagent withheld from you")
    assert (settings.root / "settings.json").read_text() == SETTINGS and not (settings.root / "other.json").exists()


def test_an_edit_beside_a_withheld_value_keeps_it_byte_for_byte(settings):
    assert run(settings, "edit_file", path="settings.json", old_str='"editor.tabSize": 4',
               new_str='"editor.tabSize": 2').ok
    assert (settings.root / "settings.json").read_text() == SETTINGS.replace("4,", "2,")


def test_an_edit_cannot_find_a_withheld_value_a_piece_at_a_time(settings):
    """In `edits` mode nobody is asked: were old_str matched against the file alone, a right guess of a value's
    first characters would be applied and a wrong one refused, and the model could read it guess by guess."""
    right, wrong = [run(settings, "edit_file", path="settings.json", old_str=f'"token": "{start}',
                        new_str='"token": "') for start in (SLACK[:6], SLACK[:5] + "X")]
    assert not right.ok and right.output == wrong.output.replace('"token": "xoxbX', '"token": "xoxb-')
    assert right.output.startswith('old_str was not found in settings.json')
    assert (settings.root / "settings.json").read_text() == SETTINGS


def test_a_file_that_really_holds_the_marker_s_words_is_edited_like_any(tmp_path):
    """This project's own tests and docs quote the marker: there it is text, and edits of it work."""
    (tmp_path / "notes.md").write_text("A token is shown as [secret withheld: GitHub token].\n")
    result = run(Workspace(tmp_path), "edit_file", path="notes.md", old_str="shown as [secret withheld: GitHub token].",
                 new_str="shown as [secret withheld: GitHub token], never as itself.")
    assert result.ok
    assert (tmp_path / "notes.md").read_text() == ("A token is shown as [secret withheld: GitHub token], never as "
                                                   "itself.\n")


# --- an edit never joins a withheld value to the text beside it (a second attack) ---


REVEALS = {  # a file, an edit beside the value it holds, and what read_file showed before that edit
    "API key": ("deploy.sh", f"echo {OPENAI}\n", "echo ", "echo x", "echo [secret withheld: API key]\n"),
    "AWS key": ("aws.sh", f"ID={AWS_ID}\nnext\n", "\nnext", "x\nnext", "ID=[secret withheld: AWS access key]\nnext\n"),
    "renamed key": ("app.json", '{"token": "a8Fj3kL0pQ9zX2vB7nM4"}\n', '"token"', '"tokne"',
                    '{"token": "[secret withheld: a value named as a secret]"}\n'),
    "URL scheme": ("db.txt", "URL=postgres://app:hunter2@db/x\n", "://", ":// ",
                   "URL=postgres://app:[secret withheld: password in a URL]@db/x\n"),
}


@pytest.mark.parametrize("name", list(REVEALS))
def test_an_edit_that_would_show_a_withheld_value_is_refused(tmp_path, name):
    """Each edit is beside the value, never over it, so old_str matches what was shown; but after it the value
    would no longer have its shape (`xsk-…`, `AKIA…x`, a name that no longer says "token", a URL that is no
    longer one), and the next read_file would show it whole."""
    path, content, old_str, new_str, shown = REVEALS[name]
    (tmp_path / path).write_text(content)
    ws = Workspace(tmp_path)
    assert run(ws, "read_file", path=path).output == shown.rstrip("\n")
    result = run(ws, "edit_file", path=path, old_str=old_str, new_str=new_str)
    assert not result.ok
    assert result.output.startswith(f"After this edit, {path} would show a value plainagent withheld from you (")
    assert result.output.endswith("): the text you changed beside it is what marks it as one. Leave that text as it "
                                  "is, or ask the user to make this edit. No changes were made.")
    assert (tmp_path / path).read_text() == content
    assert seen(run(ws, "read_file", path=path).output) == []


def test_a_value_still_withheld_after_an_edit_beside_it_does_not_stop_the_edit(tmp_path):
    (tmp_path / "deploy.sh").write_text(f"echo {GITHUB}\n")
    ws = Workspace(tmp_path)
    assert run(ws, "edit_file", path="deploy.sh", old_str="echo ", new_str="echo x").ok
    assert run(ws, "read_file", path="deploy.sh").output == "echo x[secret withheld: GitHub token]"


@pytest.mark.parametrize("guess", ["hunter", "hunted"])
def test_an_edit_that_spells_a_guess_beside_the_file_s_text_says_nothing_of_the_value(tmp_path, guess):
    """new_str's "hunter" before the file's "2" spells the password anew; were that refused, and "hunted" not,
    the model would learn the password one guess an edit. Both are edits like any, and the value stays withheld."""
    (tmp_path / "db.txt").write_text("URL=postgres://app:hunter2@db/x\nA=2\n")
    ws = Workspace(tmp_path)
    assert run(ws, "edit_file", path="db.txt", old_str="A=", new_str=f"A={guess}").output == "Edited db.txt at line 2."
    assert run(ws, "read_file", path="db.txt").output == ("URL=postgres://app:[secret withheld: password in a URL]@db/x\n"
                                                          f"A={guess}2")


# --- shapes after escapes, separators and in more places ---


@pytest.mark.parametrize("text, shown", [
    ("{\\u0022token\\u0022:\\u0022" + GITHUB + "\\u0022}",
     "{\\u0022token\\u0022:\\u0022[secret withheld: GitHub token]\\u0022}"),
    ("https://x/cb?next=%2Fauth%3Ftoken%3D" + GITHUB, "https://x/cb?next=%2Fauth%3Ftoken%3D[secret withheld: GitHub "
                                                      "token]"),
    ('"line1\\n' + GITHUB + '"', '"line1\\n[secret withheld: GitHub token]"'),
    ("GH_TOKEN_" + GITHUB, "GH_TOKEN_[secret withheld: GitHub token]"),
    ("--token-" + GITHUB, "--token-[secret withheld: GitHub token]"),
    ("key" + AWS_ID, "key[secret withheld: AWS access key]"),
    ("x" + ANTHROPIC, "x[secret withheld: Anthropic key]"),
    ('"a\\n' + OPENAI + '"', '"a\\n[secret withheld: API key]"'),
    ("k=%3D" + OPENAI, "k=%3D[secret withheld: API key]"),
    ("\\u0022" + OPENAI, "\\u0022[secret withheld: API key]"),
    ("--key-" + OPENAI, "--key-[secret withheld: API key]"),
    ("\\n" + HUGGING_FACE, "\\n[secret withheld: Hugging Face token]"),
    ("HF_TOKEN_" + HUGGING_FACE, "HF_TOKEN_[secret withheld: Hugging Face token]"),
    ("DATABASE_URL=postgres://app:Xy7/Qp2Lm9Rt4@db:5432/app",
     "DATABASE_URL=postgres://app:[secret withheld: password in a URL]@db:5432/app"),
    ("postgres://app:s3cr@t-P4ssw0rd-99@db/x", "postgres://app:[secret withheld: password in a URL]@db/x"),
    ("DB_PASS=Tr0ub4dor-and-3-more", "DB_PASS=[secret withheld: a value named as a secret]"),
    ('db_pass = "q8Zr3KmW7xT2bN5vL9pY"', 'db_pass = "[secret withheld: a value named as a secret]"'),
    ("MYSQL_ROOT_PASS: q7w3e9r1t5y2u8i4", "MYSQL_ROOT_PASS: [secret withheld: a value named as a secret]"),
])
def test_credentials_are_withheld_after_escapes_and_separators(text, shown):
    assert withhold(text) == shown


@pytest.mark.parametrize("text", [
    "https://host:8080/path@x", "see http://localhost:3000/users/@me", "http://a:8080/b@c/d@e", "git+https://github.com/org/repo.git@v1.2.3",
    'api_key = os.environ["OPENAI_API_KEY"]', "bypass = a8Fj3kL0pQ9zX2vB7nM4", "compass: a8Fj3kL0pQ9zX2vB7nM4",
    'next_page_token = "CAEQABoCCAE2x9fk3m"', 'id = "123e4567-e89b-12d3-a456-426614174000"',
    'commit_sha = "3f786850e387550fdab836ed7e6dc881de23001b"', 'DATA = "SGVsbG8sIFdvcmxkIQ0KVGhpcyBpcyBiYXNlNjQ="',
    '"integrity": "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+5hcMIpLUC6arTdY0K6+HrbkfeZAxqXQ==",',
    "requests==2.31.0 --hash=sha256:58cd2187c01e70e6e26505bca751777aa9f2ee0b7f4300988b709f44e013003f",
    'className="sk-button-primary-2xl"', "the task-sk-1234567890abcdefghij runs", "mask_hf_value = 1",
    "thf_" + "kQmWnErTyUiOpAsDfGhJkLzXcVbNmQwErT",
])
def test_more_ordinary_text_is_left_as_it_is(text):
    assert withhold(text) == text


def test_a_megabyte_of_random_base64_holds_no_token():
    """Images in notebooks, source maps, lockfiles: a shape that matches inside a word finds a prefix and its
    full length by chance about once in tens of megabytes of base64."""
    import base64
    import random
    blob = base64.b64encode(random.Random(27).randbytes(750_000)).decode()
    assert withhold(blob) == blob
    assert withhold(blob.replace("+", "-").replace("/", "_")) == blob.replace("+", "-").replace("/", "_")


@pytest.mark.parametrize("probe", [GITHUB[4:9], GITHUB[4:8] + "X"])
def test_an_edit_never_matches_old_str_inside_a_withheld_value(tmp_path, probe):
    """Were old_str matched in the file itself, text the model wrote (`probe aB3dE`) would match "2 places" when
    the token holds it too and one when it does not: the token, a piece at a time. Only the shown place matches."""
    (tmp_path / "a.sh").write_text(f"echo {GITHUB}\nprobe {probe}\n")
    ws = Workspace(tmp_path)
    assert run(ws, "edit_file", path="a.sh", old_str=probe, new_str=probe + "1").output == "Edited a.sh at line 2."
    assert (tmp_path / "a.sh").read_text() == f"echo {GITHUB}\nprobe {probe}1\n"
    assert run(ws, "edit_file", path="a.sh", old_str=probe, new_str="-", replace_all=True).ok
    assert (tmp_path / "a.sh").read_text() == f"echo {GITHUB}\nprobe -1\n"


def test_an_edit_between_withheld_values_keeps_each_byte_for_byte(tmp_path):
    """A private key over three lines, two tokens side by side: the edit's line numbers are the file's, and what
    the values were is put back in order, whatever the edit put between them."""
    key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----"
    (tmp_path / "k.py").write_text(f'KEY = """{key}"""\nA = "{GITHUB}" "{OPENAI}"\nB = 1\n')
    ws = Workspace(tmp_path)
    assert run(ws, "edit_file", path="k.py", old_str="B = 1", new_str="B = 2").output == "Edited k.py at line 5."
    assert run(ws, "edit_file", path="k.py", old_str='" "', new_str=",\n").ok
    assert (tmp_path / "k.py").read_text() == f'KEY = """{key}"""\nA = "{GITHUB},\n{OPENAI}"\nB = 2\n'
    refused = run(ws, "edit_file", path="k.py", old_str=",\n", new_str="")  # ghp_…sk-… would show the sk- key
    assert refused.output.startswith("After this edit, k.py would show a value plainagent withheld from you (")
    assert seen(run(ws, "read_file", path="k.py").output) == []


def test_a_command_output_cut_through_a_token_glued_to_a_name_shows_no_piece_of_it():
    output = HeadAndTail(80)
    output.read_all(io.BytesIO(f"export T=GH_TOKEN_{GITHUB}\n{'x' * 100}\nend\n".encode()))
    assert output.text(lambda text, **cut: withhold(text, **cut)).startswith(
        "export T=GH_TOKEN_[secret withheld: a token cut short]\n[... ")


@pytest.mark.parametrize("line", ['password = "Xy7Qp2Lm9Rt4Zk8WqB3n"', "DATABASE_URL=postgres://app:Xy7Qp2Lm9Rt4Zk8WqB3n@db",
                                  f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", f"T={GITHUB}"])
@pytest.mark.parametrize("shown", [8, 14])
def test_a_command_output_cut_through_any_value_shows_no_more_than_seven_characters_of_it(line, shown):
    """Kept as a head and a tail of 100 bytes each: the head ends `shown` characters into the value, or the tail
    starts that many before its end. A value named as a secret or in a URL is withheld to the cut as a token
    is; and the tail's first word is when it looks random (the cut went through it). Seven characters, the end
    of a token without a digit among them (`jkLmNoP`), may still show."""
    value = line.split("=", 1)[1].split(":")[-1].split("@")[0].strip('"')
    at = line.index(value)
    ends_at_cut = "p" * (100 - at - shown - 1) + "\n" + line + "\n" + "x" * 300
    starts_at_cut = "y" * 300 + "\n" + line + "\n" + "z" * (at + len(value) - shown + 99 - len(line))
    for data in (ends_at_cut, starts_at_cut):
        output = HeadAndTail(200)
        output.read_all(io.BytesIO(data.encode()))
        shown_text = output.text(lambda text, **cut: withhold(text, **cut))
        assert "bytes dropped" in shown_text
        assert not any(value[i:i + 8] in shown_text for i in range(len(value) - 7)), shown_text


def test_an_old_str_through_part_of_a_marker_fails_and_says_why(tmp_path):
    (tmp_path / "a.sh").write_text(f"x=1\necho {OPENAI} done\n# end of file here\n")
    result = run(Workspace(tmp_path), "edit_file", path="a.sh", old_str="key] done\n# end", new_str="x")
    assert result.output == ("old_str matches a.sh as read_file showed it only through part of a marker of a value "
                             "plainagent withheld from you; the file holds the value, not the marker. Make the edit "
                             "around it, with no part of the marker in old_str, or ask the user to change it. No "
                             "changes were made.")


def test_an_old_str_that_matches_nowhere_is_shown_the_closest_lines_as_read_file_showed_them(tmp_path):
    """Never as they were matched, with a character standing for each of a value's: that would tell its length."""
    (tmp_path / "a.sh").write_text(f"x=1\necho {OPENAI} done\n# end of file here\nfoo\n")
    result = run(Workspace(tmp_path), "edit_file", path="a.sh", old_str="x=1\necho $KEY done\n# end of file here\n",
                 new_str="z")
    assert "The closest lines in the file are:\n     1\tx=1\n     2\techo [secret withheld: API key] done\n" in result.output
    assert "\0" not in result.output


def test_a_file_holding_every_masking_character_is_edited_unless_it_holds_withheld_values(tmp_path):
    every = "\0" + "".join(map(chr, range(0xFDD0, 0xFDF0)))
    (tmp_path / "odd.txt").write_text(f"a\n{'x' * 9000}{every}\n")  # its NUL past what marks a file binary
    (tmp_path / "odd_key.txt").write_text(f"a\n{'x' * 9000}{every}\nT={GITHUB}\n")
    ws = Workspace(tmp_path)
    assert run(ws, "edit_file", path="odd.txt", old_str="a\n", new_str="b\n").ok
    assert run(ws, "edit_file", path="odd_key.txt", old_str="a\n", new_str="b\n").output.startswith(
        "odd_key.txt holds NUL and all of Unicode's noncharacters, one of which edit_file needs")


def test_the_lines_an_edit_result_shows_are_cut_from_the_withheld_view(tmp_path):
    """Round three: an edit matched by ignoring trailing whitespace shows the lines around it, and they were cut
    from the real file: a key's last lines and its END line, out of reach of the BEGIN line that gives the shape."""
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "".join("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\n"
                                                            for _ in range(6)) + "-----END OPENSSH PRIVATE KEY-----\n"
    (tmp_path / "deploy.yaml").write_text("key: |\n" + key + "host: example.org   \nuser: deploy\n")
    ws = Workspace(tmp_path)
    result = run_tool(ws, "edit_file", {"path": "deploy.yaml", "old_str": "host: example.org\nuser: deploy",
                                        "new_str": "host: example.net\nuser: deploy"})
    assert result.ok and "(ignoring trailing whitespace)" in result.output
    assert "b3BlbnNz" not in result.output and "END OPENSSH" not in result.output
    assert "[secret withheld: private key]" in result.output


# --- round four: a tester's findings ---


def cut(data: str, limit: int) -> str:
    """`data` as run_command shows it when kept as a head and a tail of `limit // 2` bytes each."""
    output = HeadAndTail(limit)
    output.read_all(io.BytesIO(data.encode()))
    return output.text(lambda text, **cut: withhold(text, **cut))


def test_a_command_output_cut_through_a_long_token_shows_none_of_its_rest():
    """A JWT of 1,500 characters (a token with roles in it), the tail starting 1,200 before its end: the check
    of a tail's first word went 1,000 characters, and the rest, signature and all, showed."""
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJ" + "yb2xlcyI6WyJhZG1pbiJd" * 60 + ".Sx9" + "aB3dE6gH9jKq" * 20
    tail = cut("x" * 5000 + "\nAuthorization: Bearer " + jwt + "\n" + "y" * 700 + "\n", 4000).split("...]\n")[1]
    assert tail == "[secret withheld: the end of a token cut short]\n" + "y" * 700 + "\n"


def test_a_command_output_cut_through_a_one_line_private_key_shows_none_of_its_rest():
    """A service account's JSON: the key on one line, its line breaks `\\n`; the tail starts in its body."""
    body = "\\n".join(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"]  # only a key's first line starts so
                      + ["AoIBAQC7q3xw0BAQEFAASCBKcwggSjAgEAxFZ8m2Lk4Vq9sTnR5pW7yB3dK6hJ0"] * 19)
    line = json.dumps({"private_key": "-----BEGIN PRIVATE KEY-----\n" + body.replace("\\n", "\n")
                       + "\n-----END PRIVATE KEY-----\n", "client_email": "a@b.iam"})
    tail = cut("x" * 5000 + "\n" + line + "\n", 1000).split("...]\n")[1]
    assert tail == '[secret withheld: the end of a token cut short]\\n", "client_email": "a@b.iam"}\n'


@pytest.mark.parametrize("text, shown", [
    ("-----begin private key-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\n-----end private key-----\nnext",
     "[secret withheld: private key]\n" * 3 + "next"),
    ('K = ("-----BEGIN PRIVATE KEY-----\\n" +\n     "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\\n" +\n     "9w0BAQEFAAS=\\n" +\n'
     '     "-----END PRIVATE KEY-----")\nx = 1',
     'K = ("' + "[secret withheld: private key]\n" * 3 + '[secret withheld: private key]")\nx = 1'),
    ("# -----BEGIN PRIVATE KEY-----\n# MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\n# 9w0BAQEFAAS=\n# -----END PRIVATE KEY-----\n"
     "# done", "# " + "[secret withheld: private key]\n" * 4 + "# done"),
    ("// -----BEGIN EC PRIVATE KEY-----\n// MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5\n// 9w0BAQEFAAS\nint x;",
     "// " + "[secret withheld: private key]\n" * 3 + "int x;"),
])
def test_private_keys_in_any_case_concatenated_or_commented_out_are_withheld(text, shown):
    assert withhold(text) == shown


@pytest.mark.parametrize("text", [
    "Your key file starts with -----BEGIN OPENSSH PRIVATE KEY-----\nand ends with the matching END line.\nThen run it",
    'if pem.startswith("-----BEGIN RSA PRIVATE KEY-----"):\n    return load(pem)\n',
    "BEGIN = '-----BEGIN PRIVATE KEY-----'\nEND = '-----END PRIVATE KEY-----'\nclass KeyLoader:\n    pass\n",
])
def test_a_begin_line_with_no_body_is_no_private_key(text):
    assert withhold(text) == text


@pytest.mark.parametrize("text", [
    "secret_key = settings.DJANGO_SECRET_KEY_2024", 'DEFAULT_AUTH = "django.contrib.auth.backends.ModelBackend2"',
    "model_path = 'models/sk-proj-classifier-2024-final-v3'", "sk-learn-classifier-v2-2024-final-model = 1",
])
def test_dotted_names_and_hyphenated_words_are_no_secrets(text):
    assert withhold(text) == text


KUBE_KEY = base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0t\n"
                            b"-----END RSA PRIVATE KEY-----\n").decode()
KUBE_CERT = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n"
                             b"-----END CERTIFICATE-----\n").decode()
PW = "Xy7Qp2Lm9Rt4Zk8WqB3n"
NAMED_MARK = "[secret withheld: a value named as a secret]"
URL_MARK = "[secret withheld: password in a URL]"
FLAG_MARK = "[secret withheld: a password on a command line]"


@pytest.mark.parametrize("text, shown", [
    ("AGE-SECRET-KEY-1QQPQTJ9A0NRWNPJ7Q5LCGAHQ6XKZ6ZZ8F0E3E3U2GN0L7A6H9S7QS5R6XY", "[secret withheld: age secret key]"),
    ("Public-Lines: 1\nAAAAB3NzaC1yc2EAAAADAQABAAABAQC7\nPrivate-Lines: 2\nAAABAQCXgJ7VeNOTBQQ5h3hJyJ3LvhZ8Kq1ZL2Wc9V\n"
     "AAAAgQDx7Q2\nPrivate-MAC: 3a1b2c3d4e5f60718293a4b5c6d7e8f9", "Public-Lines: 1\nAAAAB3NzaC1yc2EAAAADAQABAAABAQC7\n"
     + "[secret withheld: PuTTY private key]\n" * 3 + "Private-MAC: 3a1b2c3d4e5f60718293a4b5c6d7e8f9"),
    (f"    client-key-data: {KUBE_KEY}\n", "    client-key-data: [secret withheld: private key]\n"),
    (f"https://maps.example.com/api?key={PW}&q=1", f"https://maps.example.com/api?key={NAMED_MARK}&q=1"),
    (f"https://x.example/v1?q=1&api_key={PW}&page=2", f"https://x.example/v1?q=1&api_key={NAMED_MARK}&page=2"),
    (f"https://x.example/v1?access_token={PW}", f"https://x.example/v1?access_token={NAMED_MARK}"),
    ('{"password": "Xy7\\/Qp2Lm9Rt4Zk8WqB3n"}', f'{{"password": "{NAMED_MARK}"}}'),
    ('"url": "postgres:\\/\\/app:Xy7Qp2Lm9@db\\/x"', f'"url": "postgres:\\/\\/app:{URL_MARK}@db\\/x"'),
    ("postgres://app:Xy7{Qp2Lm9@db/x", f"postgres://app:{URL_MARK}@db/x"),
    ("postgres://app:Xy7$Qp2Lm9@db/x", f"postgres://app:{URL_MARK}@db/x"),
    ("postgres://app:Xy7*Qp2Lm9@db/x", f"postgres://app:{URL_MARK}@db/x"),
    ("postgres://app:2024/abc@db/x", f"postgres://app:{URL_MARK}@db/x"),
    ('REDIS_PASSWORD="Kp3(Zr8=Lm9;Qw2, x<>[]\\\\7:"', f'REDIS_PASSWORD="{NAMED_MARK}"'),
    (f'password = "{PW[:10]} {PW[10:]}"', f'password = "{NAMED_MARK}"'),
    ("DB_PASS=Xy7;Qp2Lm9(Rt4Zk8=WqB3n\nNEXT=1", f"DB_PASS={NAMED_MARK}\nNEXT=1"),
    ("export DB_PASS=Xy7;Qp2Lm9,Rt4Zk8  \n", f"export DB_PASS={NAMED_MARK}  \n"),
    ("  - password: Xy7:Qp2Lm9)Rt4[Zk8\n", f"  - password: {NAMED_MARK}\n"),
    (f"<password>{PW}</password>", f"<password>{NAMED_MARK}</password>"),
    (f"mysql -uroot -p{PW} app", f"mysql -uroot -p{FLAG_MARK} app"),
    ("mysqldump -h db -phunter2 app", f"mysqldump -h db -p{FLAG_MARK} app"),
    ("mysql --password hunter22 app", f"mysql --password {FLAG_MARK} app"),
    ("pg --password=hunter22 app", f"pg --password={FLAG_MARK} app"),
])
def test_round_four_shapes_are_withheld(text, shown):
    assert withhold(text) == shown
    assert withhold(shown) == shown  # a text read again (a result redacted twice) keeps its markers whole


@pytest.mark.parametrize("text", [
    f"    client-certificate-data: {KUBE_CERT}\n", "https://host:8080/path@x", "see http://localhost:3000/users/@me",
    'url = "http://user:${PASSWORD}@host/"', "postgres://user:$PGPASS@db", "postgres://user:****@db",
    "token=get_token(user2)", 'PASSWORD_HELP = "Enter the password for user 2 here"', "mysql -u root -p app",
    "docker login --password-stdin", "mysql --password $DB_PASSWORD", "--password PASSWORD", "--password <password>",
    "https://x.example/search?key=value&q=1", "<password>${DB_PASSWORD}</password>", "`mysql -p…`",
])
def test_round_four_ordinary_text_is_left_as_it_is(text):
    assert withhold(text) == text


@pytest.mark.parametrize("text", [":\\/\\/a:" * 70_000, "mysql -" * 70_000, "<password>" * 50_000,
                                  "# -----BEGIN PRIVATE KEY-----\n# " * 17_000, ("\ntoken=" + "token=" * 300) * 280,
                                  'password="' + "a b " * 120_000, "Private-Lines: 1\n" * 30_000],
                         ids=[":\\/\\/a:", "mysql -", "<password>", "# BEGIN", "token= lines", 'password="', "ppk"])
def test_no_text_of_the_round_four_shapes_makes_withholding_slow(text):
    """Half a megabyte each: the escaped URL took 0.44 s and a line of `token=` 1.5 s in a draft (now 0.2 s or
    less)."""
    started = time.perf_counter()
    withhold(text, cut_before=True, cut_after=True)
    assert time.perf_counter() - started < 2


@pytest.mark.parametrize("line, value", [("DB_PASS=Xy7;Qp2Lm9(Rt4Zk8=WqB3n", "Xy7;Qp2Lm9(Rt4Zk8=WqB3n"),
                                         ('REDIS_PASSWORD="Kp3(Zr8=Lm9;Qw2,Tn3Lw9"', "Kp3(Zr8=Lm9;Qw2,Tn3Lw9")])
@pytest.mark.parametrize("shown", [8, 14])
def test_a_command_output_cut_through_a_value_of_any_character_shows_no_more_than_seven_of_it(line, value, shown):
    at = line.index(value)
    output = HeadAndTail(200)
    output.read_all(io.BytesIO(("p" * (100 - at - shown - 1) + "\n" + line + "\n" + "x" * 300).encode()))
    shown_text = output.text(lambda text, **cut: withhold(text, **cut))
    assert "bytes dropped" in shown_text
    assert not any(value[i:i + 8] in shown_text for i in range(len(value) - 7)), shown_text


def test_a_url_password_with_an_empty_user_is_withheld():
    """A final tester: redis://:PASSWORD@cache, Redis's own form, showed whole."""
    assert withhold("REDIS_URL: redis://:Kp3Zr8Lm9Qx2Vb7NwT4@cache:6379/0") == (
        "REDIS_URL: redis://:[secret withheld: password in a URL]@cache:6379/0")
    assert withhold("see http://:8080/@x and ftp://:@host") == "see http://:8080/@x and ftp://:@host"
