"""What kind of host a base URL names: loopback (no proxy from the environment stands between) and local
(no key needed), answered in one place, every loopback host being local too. The config and the client
ask these two functions: test_agent.py and test_client.py test what they do with the answers."""

import pytest
import requests
import urllib3

from harness.cli import config
from harness.cli.args import parse_args
from harness.common import hosts
from harness.common.hosts import host_of, is_local, is_loopback
from harness.model import client
from harness.model.replies import describe_connection_error

LOOPBACK = ["http://localhost:11434/v1", "http://LOCALHOST./v1", "http://127.0.0.1:8000/v1", "http://127.1.2.3/v1",
            "http://[::1]:1234/v1"]
PRIVATE = ["http://192.168.1.20:8080/v1", "http://10.0.0.5/v1", "http://172.16.3.4:8000/v1", "http://[fd12::1]:8000/v1",
           "http://169.254.1.1/v1", "http://gpu-box:8000/v1", "http://llm.lan/v1", "http://host.docker.internal:11434/v1",
           "http://studio.local:1234/v1", "http://dev.localhost:8000/v1", "http://nas.home.arpa/v1"]
PUBLIC = ["http://8.8.8.8/v1", "https://api.deepseek.com", "https://example.com.evil/v1", "https://api.openai.com/v1",
          "https://localhost.example.com/v1", "http://172.32.0.1/v1", "not a url", ""]


@pytest.mark.parametrize("url", LOOPBACK + PRIVATE + PUBLIC)
def test_each_host_is_loopback_local_or_public(url):
    assert is_loopback(url) is (url in LOOPBACK)
    assert is_local(url) is (url in LOOPBACK + PRIVATE)


def test_the_config_and_the_client_ask_the_same_functions():
    assert config.is_local is is_local and client.is_loopback is is_loopback


@pytest.mark.parametrize("url, shown", [
    ("https://api.openai.com/v1", "https://api.openai.com/v1"),
    ("http://me:pw@gpu-box:8000/v1", "http://[REDACTED]@gpu-box:8000/v1"),
    ("https://proxy.example.com/v1?api-version=2024-10-21&api-key=abc123&sig=x%2By",
     "https://proxy.example.com/v1?api-version=2024-10-21&api-key=[REDACTED]&sig=[REDACTED]"),
    ("https://g.example.com/v1beta/openai?key=AIzaSyA-example", "https://g.example.com/v1beta/openai?key=[REDACTED]"),
    ("http://me:pw@[::1/v1", "http://[REDACTED]@[::1/v1"),  # not a URL urlsplit reads: its user and password go all the same
])
def test_a_url_is_shown_without_its_credentials(url, shown):
    assert hosts.shown_url(url) == shown


def test_credentials_echoed_in_any_text_are_hidden():
    url = "http://admin:hunter2pass@h/v1/chat/completions?token=tok-77%2Bz&v=1"
    text = "bad auth for admin:hunter2pass, password hunter2pass, token tok-77%2Bz or tok-77+z; v=1; go"
    assert hosts.hide_credentials(text, url) == (
        "bad auth for [REDACTED], password [REDACTED], token [REDACTED] or [REDACTED]; v=1; go")
    assert hosts.hide_credentials(f"at {url}", url) == "at http://[REDACTED]@h/v1/chat/completions?token=[REDACTED]&v=1"
    assert hosts.hide_credentials("a b c", "http://a:b@h/v1") == "a b c"  # too short to blank outside the URL


def test_a_config_error_does_not_print_the_password_in_the_base_url(tmp_path):
    with pytest.raises(config.ConfigError) as raised:
        config.load_config(parse_args([]), {"OPENAI_BASE_URL": "ftp://me:hunter2pass@proxy.example.com/v1",
                                            "OPENAI_MODEL": "m"}, tmp_path, tmp_path)
    assert "hunter2pass" not in str(raised.value) and "ftp://[REDACTED]@proxy.example.com/v1" in str(raised.value)


@pytest.mark.parametrize("url, host", [
    ("http://[REDACTED]@exa_mple.com/v1/chat/completions", "exa_mple.com"),  # a URL as shown: a user's error line
    ("http://u:p@LocalHost.:8080/v1", "localhost"), ("http://[::1]:8080/v1", "::1"), ("http://[nope]/v1", ""),
])
def test_the_host_of_a_url_as_shown_too(url, host):
    assert host_of(url) == host


def test_a_host_not_found_behind_a_user_and_password_is_one_line():
    """A round-three tester: an internal error, as urlsplit took the shown "[REDACTED]" for an IPv6 address."""
    error = requests.ConnectionError(urllib3.exceptions.NameResolutionError("exa_mple.com", None, OSError("x")))
    assert describe_connection_error(error, "http://[REDACTED]@exa_mple.com/v1/chat/completions") == (
        "Could not connect to http://[REDACTED]@exa_mple.com/v1/chat/completions: the host name exa_mple.com was not "
        "found; check OPENAI_BASE_URL.")
