"""What kind of host a base URL names: loopback (no proxy from the environment stands between) and local
(no key needed), answered in one place, every loopback host being local too. The config and the client
ask these two functions: test_agent.py and test_client.py test what they do with the answers."""

import pytest

from harness.cli import config
from harness.model import client
from harness.model.hosts import is_local, is_loopback

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
