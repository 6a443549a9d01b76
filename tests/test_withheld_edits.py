"""Editing near a value withheld from the model (issue 33 item 5): a line holding one is edited around it; an
old_str that holds the real value (the user told the model) matches it, whole; the user's preview shows the real
bytes, and the model is told what changed without the value. A piece of a value still matches nothing.

The tokens are drawn with `secrets` at every run, in the alphabet and length of real ones."""

import json
import secrets
import string

from fake_endpoint import FakeEndpoint
from frames import read_results
from test_e2e_trust import agent

from harness.files.workspace import Workspace
from tools import run_tool

MARK = "[secret withheld: GitHub token]"


def github_token() -> str:
    return "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))


def settings(token: str) -> str:
    return (f'DEBUG = False\nGITHUB_TOKEN = "{token}"  # for the release job\n'
            'DATABASE_URL = "postgres://shop:example@db:5432/shop"\n')


def workspace(tmp_path, text: str, previews: list[str]) -> Workspace:
    (tmp_path / "settings.py").write_text(text)
    return Workspace(tmp_path, confirm=lambda kind, title, preview, why: previews.append(preview))


def edit(ws: Workspace, old_str: str, new_str: str, **more):
    return run_tool(ws, "edit_file", {"path": "settings.py", "old_str": old_str, "new_str": new_str, **more})


def test_a_line_holding_a_withheld_value_is_edited_around_it(tmp_path):
    token, previews = github_token(), []
    ws = workspace(tmp_path, settings(token), previews)
    result = edit(ws, "  # for the release job", "  # for the release and nightly jobs")
    assert result.ok and result.output == "Edited settings.py at line 2."
    assert (tmp_path / "settings.py").read_text() == settings(token).replace("release job", "release and nightly jobs")


def test_an_old_str_holding_the_real_value_matches_and_the_model_is_not_shown_it(tmp_path):
    """The user told the model the token and asked for it to be rotated: old_str names it whole."""
    token, new_token, previews = github_token(), github_token(), []
    ws = workspace(tmp_path, settings(token), previews)
    result = edit(ws, f'GITHUB_TOKEN = "{token}"', f'GITHUB_TOKEN = "{new_token}"')
    assert result.ok, result.output
    assert (tmp_path / "settings.py").read_text() == settings(new_token)
    assert token not in result.output and new_token not in result.output and not result.output.startswith("old_str")
    assert f"-GITHUB_TOKEN = \"{token}\"  # for the release job\n+GITHUB_TOKEN = \"{new_token}\"" in previews[0]


def test_an_old_str_holding_the_real_value_keeps_it_when_new_str_does(tmp_path):
    token, previews = github_token(), []
    ws = workspace(tmp_path, settings(token), previews)
    result = edit(ws, f'GITHUB_TOKEN = "{token}"  # for the release job', f'GITHUB_TOKEN = "{token}"  # release')
    assert result.ok, result.output
    assert (tmp_path / "settings.py").read_text() == settings(token).replace("# for the release job", "# release")
    assert token not in result.output


def test_the_real_value_is_replaced_everywhere_with_replace_all(tmp_path):
    token, new_token, previews = github_token(), github_token(), []
    ws = workspace(tmp_path, settings(token) + f"BACKUP_TOKEN = '{token}'\n", previews)
    result = edit(ws, token, new_token, replace_all=True)
    assert result.ok, result.output
    assert (tmp_path / "settings.py").read_text() == settings(new_token) + f"BACKUP_TOKEN = '{new_token}'\n"
    assert token not in result.output and new_token not in result.output


def test_a_piece_of_the_real_value_still_matches_nothing_and_says_so_as_for_a_wrong_guess(tmp_path):
    """Were a piece matched, a right guess of the first 39 characters and a wrong one would differ."""
    token, previews = github_token(), []
    ws = workspace(tmp_path, settings(token), previews)
    wrong = token[:-2] + ("a" if token[-2] != "a" else "b")
    right, guessed = (edit(ws, f'GITHUB_TOKEN = "{piece}', 'GITHUB_TOKEN = "x') for piece in (token[:-1], wrong[:-1]))
    assert not right.ok and right.output.startswith("old_str was not found in settings.py")
    assert right.output == guessed.output.replace(wrong[:-1], token[:-1])
    assert (tmp_path / "settings.py").read_text() == settings(token)


def test_a_command_that_changes_an_example_value_shows_the_change(tmp_path):
    """After a `sed -i`, the command's output is how the model checks its change: an example password in a URL
    is no credential, so it is shown (`shop:example2@` was withheld before issue 33)."""
    ws = workspace(tmp_path, settings(github_token()), [])
    result = run_tool(ws, "run_command", {"command": "sed -i 's/shop:example@/shop:example2@/' settings.py && "
                                                     "grep -n DATABASE settings.py"})
    assert result.output == '3:DATABASE_URL = "postgres://shop:example2@db:5432/shop"'


def test_end_to_end_the_model_reads_a_withheld_value_and_edits_near_it(install, project):
    """`python agent.py` against a local server: the scripted model reads settings.py, edits the comment on the
    token's line and rotates the token the user gave it (mode edits, whose previews go to the user's activity
    log); then, in a second task (--yes), checks a sed of the example password."""
    token, new_token = github_token(), github_token()
    (project / "settings.py").write_text(settings(token))
    calls = [("read_file", {"path": "settings.py"}),
             ("edit_file", {"path": "settings.py", "old_str": "  # for the release job",
                            "new_str": "  # for the release and nightly jobs"}),
             ("edit_file", {"path": "settings.py", "old_str": f'GITHUB_TOKEN = "{token}"',
                            "new_str": f'GITHUB_TOKEN = "{new_token}"'})]
    script = [f"tool: {name}({json.dumps(args)})" for name, args in calls] + ["Rotated."]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", f"rotate the GitHub token to {new_token}", "--mode", "edits")
    assert done.returncode == 0 and done.stdout == "Rotated.\n", done.stderr
    assert (project / "settings.py").read_bytes() == settings(new_token).replace(
        "release job", "release and nightly jobs").encode()
    results = [read_results(endpoint.received[n].body["messages"][-1]["content"])[0] for n in range(1, 4)]
    assert results[0]["output"] == settings(MARK).rstrip("\n")
    assert [result["output"] for result in results[1:]] == ["Edited settings.py at line 2."] * 2  # no value in it
    for result in results:  # what the tools told the model: never the token, old or new
        assert token not in result["output"] and new_token not in result["output"]
    assert f'-GITHUB_TOKEN = "{token}"  # for the release and nightly jobs' in done.stderr  # the user's preview:
    assert f'+GITHUB_TOKEN = "{new_token}"  # for the release and nightly jobs' in done.stderr  # the real bytes

    check = {"command": "sed -i 's/shop:example@/shop:example2@/' settings.py && grep -n DATA settings.py"}
    with FakeEndpoint([f"tool: run_command({json.dumps(check)})", "Checked."]) as endpoint:
        done = agent(install, project, endpoint, "-p", "use example2 as the database password", "--yes")
    assert done.returncode == 0, done.stderr
    output = read_results(endpoint.received[1].body["messages"][-1]["content"])[0]["output"]
    assert output == '3:DATABASE_URL = "postgres://shop:example2@db:5432/shop"'
    assert (project / "settings.py").read_bytes() == settings(new_token).replace(
        "release job", "release and nightly jobs").replace("shop:example@", "shop:example2@").encode()


# --- a line copied with its marker, as read_file showed it ---


def test_a_line_copied_with_its_marker_is_edited_and_the_value_kept(tmp_path):
    """The model copies the line as it was shown, marker and all, and changes the text around the value."""
    token = github_token()
    ws = workspace(tmp_path, settings(token), [])
    result = edit(ws, f'GITHUB_TOKEN = "{MARK}"  # for the release job', f'GITHUB_TOKEN = "{MARK}"  # for nightly')
    assert result.ok and result.output == "Edited settings.py at line 2."
    assert (tmp_path / "settings.py").read_text() == settings(token).replace("# for the release job", "# for nightly")


def test_lines_copied_with_a_private_key_s_markers_are_moved_with_the_key(tmp_path):
    body = [secrets.token_urlsafe(48).replace("-", "+").replace("_", "/")[:64] for _ in range(3)]
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END OPENSSH PRIVATE KEY-----"
    (tmp_path / "deploy.yaml").write_text(f"user: deploy\nkey: |\n{key}\n")
    ws = Workspace(tmp_path)
    shown = run_tool(ws, "read_file", {"path": "deploy.yaml"}).output
    old = shown.split("\n", 1)[1]  # from "key: |" on, five markers
    assert old == "key: |\n" + "\n".join(["[secret withheld: private key]"] * 5)
    result = run_tool(ws, "edit_file", {"path": "deploy.yaml", "old_str": f"user: deploy\n{old}",
                                        "new_str": f"{old}\nuser: ops"})
    assert result.ok, result.output
    assert (tmp_path / "deploy.yaml").read_text() == f"key: |\n{key}\nuser: ops\n"


def test_new_str_that_drops_or_adds_a_marker_is_refused_and_says_why(tmp_path):
    token = github_token()
    ws = workspace(tmp_path, settings(token), [])
    for new_str in ['GITHUB_TOKEN = ""', f'GITHUB_TOKEN = "{MARK}{MARK}"']:
        result = edit(ws, f'GITHUB_TOKEN = "{MARK}"', new_str)
        assert result.output == ("new_str does not hold the markers old_str holds, in the same order: each marker "
                                 "in old_str stands for the value withheld from you at its place, and new_str keeps "
                                 "it where its marker is. Keep them as they are, or ask the user to change the "
                                 "value. No changes were made.")
    assert (tmp_path / "settings.py").read_text() == settings(token)


def test_a_copied_line_that_is_shown_twice_matches_two_places(tmp_path):
    """Two tokens of different lengths, on lines that read the same: as read_file showed them, two places."""
    (tmp_path / "a.env.sh").write_text(f"T={github_token()}\nT={github_token()}xyz\n")
    result = run_tool(Workspace(tmp_path), "edit_file", {"path": "a.env.sh", "old_str": f"T={MARK}",
                                                          "new_str": f"export T={MARK}"})
    assert result.output.startswith("old_str matches more than one place in a.env.sh as read_file shows it")


def test_a_copied_line_whose_change_would_show_the_value_is_refused(tmp_path):
    (tmp_path / "app.json").write_text('{"token": "a8Fj3kL0pQ9zX2vB7nM4"}\n')
    named = "[secret withheld: a value named as a secret]"
    result = run_tool(Workspace(tmp_path), "edit_file", {"path": "app.json", "old_str": f'{{"token": "{named}"}}',
                                                          "new_str": f'{{"tokne": "{named}"}}'})
    assert result.output.startswith("After this edit, app.json would show a value plainagent withheld from you (")
    assert (tmp_path / "app.json").read_text() == '{"token": "a8Fj3kL0pQ9zX2vB7nM4"}\n'
