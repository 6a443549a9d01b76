"""web_fetch end to end: the agent fetching from a local web site on a real socket, as a user runs it: at a
terminal `python agent.py` itself, without one its main() in this process (in_process.py).

The site is reached as http://localhost:PORT, a name the user did not list, so the question is asked; its
addresses (127.0.0.1, and ::1 where localhost has it) are in PLAINAGENT_FETCH_ALLOW, so the address check lets
it through, as it would a user's own dev server."""

import sys

import pytest
from fake_endpoint import FakeEndpoint
from frames import read_message
from in_process import run_agent
from test_e2e_terminal import Screen
from test_fetch import WebSite

from agent import build_session
from harness.cli.config import Config
from harness.files.workspace import Workspace
from harness.modes.permissions import FETCH_OFF, Permissions

KEY = "sk-e2e-fetch-0123456789abcdef"
ALLOW = "PLAINAGENT_FETCH_ALLOW=127.0.0.1, ::1\n"
CHANGELOG = "<html><head><title>Changelog</title></head><body><nav>Home</nav><main><h1>2.0</h1>" \
            "<p>fetch() is now get().</p></main></body></html>"


def call(url: str) -> str:
    return f'tool: web_fetch({{"url": "{url}"}})'


def results(endpoint, n: int) -> list[dict]:
    return read_message(endpoint.received[n].body["messages"][-1]["content"])[1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminals as Linux has them")
def test_ask_mode_shows_the_whole_url_and_always_means_that_host(install, project):
    (install / ".env").write_text(ALLOW)  # the user's own .env, next to agent.py
    with WebSite({"/changelog": CHANGELOG, "/migrating": "<p>Use get().</p>"}) as site:
        first = f"http://localhost:{site.port}/changelog?from=1.0&to=2.0&" + "&".join(f"k{n}=v{n}" for n in range(30))
        second = f"http://localhost:{site.port}/migrating"
        with FakeEndpoint([call(first + "&ü=1"), call(second), "fetch() became get()."]) as endpoint:
            screen = Screen(install, project, endpoint, "-p", "what changed in 2.0?")
            shown = screen.expect("[a]lways: ")
            assert site.received == []  # nothing was sent, not even a lookup, before the answer
            screen.type("a\n")
            screen.expect("(approving every fetch from localhost for the rest of this session)")
            assert screen.wait() == 0
    # the URL as it is sent, whole: the long query string and the %-encoded ü
    assert shown.endswith(f"\nFetch from localhost:\n{first}&%C3%BC=1\n\nAllow fetch from localhost? [y]es / [n]o "
                          "(or type a reason) / [a]lways: ")
    assert screen.text.count("[a]lways: ") == 1  # the second page, on the same host, was not asked about
    assert [request.target for request in site.received] == [first.split(str(site.port))[1] + "&%C3%BC=1",
                                                             "/migrating"]
    assert results(endpoint, 1)[0]["output"].endswith("characters of text)\nChangelog\n\n# 2.0\n\nfetch() is now get().")
    assert results(endpoint, 2)[0]["output"].endswith("\nUse get().")
    assert "fetch() became get()." in screen.text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminals as Linux has them")
def test_an_allowed_name_lets_its_addresses_through_and_is_still_asked_about(install, project):
    """PLAINAGENT_FETCH_ALLOW=localhost: http://127.0.0.1/ is reached (localhost stands for it here), after the
    question ask mode asks of every fetch; 127.0.0.2, another loopback address, is not localhost: refused."""
    (install / ".env").write_text("PLAINAGENT_FETCH_ALLOW=localhost\n")
    with WebSite({"/notes": "<p>local notes</p>"}) as site:
        allowed, other = f"http://127.0.0.1:{site.port}/notes", f"http://127.0.0.2:{site.port}/notes"
        with FakeEndpoint([call(allowed), call(other), "Read one."]) as endpoint:
            screen = Screen(install, project, endpoint, "-p", "read the notes")
            screen.expect(f"Fetch from 127.0.0.1:\n{allowed}\n\nAllow fetch from 127.0.0.1? ")
            assert site.received == []  # asked first: being reachable is no consent
            screen.type("y\n")
            assert screen.wait() == 0
    assert results(endpoint, 1)[0]["output"].endswith("\nlocal notes")
    assert results(endpoint, 2)[0]["output"] == (
        "127.0.0.2 is a loopback address (this machine): web_fetch does not reach into the user's network or this "
        "machine. The user can allow this host by adding 127.0.0.2 to PLAINAGENT_FETCH_ALLOW.")
    assert screen.text.count("[a]lways: ") == 1 and len(site.received) == 1


def run(home, project, endpoint, *argv, env=()):
    """The agent, its main() run in this process (in_process.py), its stdin empty."""
    environ = {"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "m", "OPENAI_API_KEY": KEY, **dict(env)}
    return run_agent(home, project, list(argv), environ)


def test_yes_mode_fetches_without_a_question_and_sends_nothing_of_the_users(agent_home, project):
    (agent_home / ".env").write_text(ALLOW)
    with WebSite({"/changelog": CHANGELOG}) as site:
        url = f"http://localhost:{site.port}/changelog"
        with FakeEndpoint([call(url), "Done."]) as endpoint:
            done = run(agent_home, project, endpoint, "-p", "read the changelog", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Done.\n" and "Allow" not in done.stderr
    assert f"→ web_fetch(url=\"{url}\")\n  ok: {url} (200 OK" in done.stderr
    output = results(endpoint, 1)[0]["output"]
    assert output == f"{url} (200 OK, text/html, {len(CHANGELOG)} bytes; 39 characters of text)\n" \
                     "Changelog\n\n# 2.0\n\nfetch() is now get()."
    assert set(site.received[0].headers) == {"Host", "User-Agent", "Accept", "Accept-Encoding"}  # no key, no cookie
    assert "\nweb_fetch(url: str, offset: int = 0)\n" in endpoint.received[0].body["messages"][0]["content"]


def test_ask_mode_without_a_terminal_fetches_nothing(agent_home, project):
    (agent_home / ".env").write_text(ALLOW)
    with WebSite({"/changelog": CHANGELOG}) as site:
        with FakeEndpoint([call(f"http://localhost:{site.port}/changelog"), "Could not read it."]) as endpoint:
            done = run(agent_home, project, endpoint, "-p", "read the changelog")
    assert done.returncode == 3 and site.received == []  # 3: not done as asked
    assert results(endpoint, 1)[0]["output"].startswith("Not approved: fetch from localhost. Nobody can be asked")


def test_a_private_address_is_refused_in_yes_mode(agent_home, project):
    with FakeEndpoint([call("http://127.0.0.2:8/admin"), "Refused."]) as endpoint:
        done = run(agent_home, project, endpoint, "-p", "read it", "--yes")
    assert done.returncode == 0
    assert results(endpoint, 1)[0]["output"].startswith("127.0.0.2 is a loopback address (this machine): web_fetch "
                                                        "does not reach into the user's network or this machine.")


def test_fetch_off_leaves_it_out_of_the_prompt(agent_home, project):
    with FakeEndpoint([call("https://example.org/"), "Hi."]) as endpoint:
        done = run(agent_home, project, endpoint, "-p", "hi", "--yes", env={"PLAINAGENT_FETCH": "off"})
    assert done.returncode == 0
    assert "web_fetch" not in endpoint.received[0].body["messages"][0]["content"]
    assert results(endpoint, 1)[0]["output"] == FETCH_OFF


def test_a_sub_agent_has_no_web_fetch(tmp_path):
    session = build_session(Config(model="m"), None, Workspace(tmp_path), Permissions("read-only", subagent=True))
    assert "web_fetch" not in session.history.messages[0]["content"]
