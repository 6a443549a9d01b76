""".env.example names every variable plainagent reads, so a user copying it sees every setting."""

import re
from pathlib import Path

from harness.cli import config

ROOT = Path(__file__).resolve().parent.parent


def test_every_variable_read_is_in_env_example():
    example = (ROOT / ".env.example").read_text()
    named = set(re.findall(r"^#? ?([A-Z_]+)=", example, re.MULTILINE))
    assert set(config.ENV_VARS.values()) - named == set()
