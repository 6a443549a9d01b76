""".env.example names every variable plainagent reads, so a user copying it sees every setting."""

import contextlib
import io
import re
from pathlib import Path

import pytest

from harness.cli import config
from harness.cli.args import parse_args

ROOT = Path(__file__).resolve().parent.parent


def test_every_variable_read_is_in_env_example():
    example = (ROOT / ".env.example").read_text()
    named = set(re.findall(r"^#? ?([A-Z_]+)=", example, re.MULTILINE))
    assert set(config.ENV_VARS.values()) - named == set()


def test_help_names_every_variable_plainagent_reads():
    """From issue 26: --help left out PLAINAGENT_FETCH and PLAINAGENT_FETCH_ALLOW."""
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), pytest.raises(SystemExit):
        parse_args(["--help"])
    text = " ".join(shown.getvalue().split())
    assert [variable for variable in config.ENV_VARS.values() if variable not in text] == []
