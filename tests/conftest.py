"""Every test runs isolated: no OPENAI_* or PLAINAGENT_* variables from the developer's shell, the current
directory is a fresh temporary one, and the network is out of reach (only 127.0.0.1 servers we start)."""

import os
import socket
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "PLAINAGENT_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    real_connect = socket.socket.connect

    def local_only(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"tests must not use the network (tried {address[0]})")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", local_only)
    return tmp_path
