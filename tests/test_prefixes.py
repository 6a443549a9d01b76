"""What "a WORDS" approves, read off the characters so that a person can predict it: a command whose first words
are WORDS and that holds no shell operator nor line break. The question and its answers are in test_terminal.py."""

import pytest

from harness.cli.prefixes import prefix_allows


@pytest.mark.parametrize("prefix, command, allowed", [
    ("python -m pytest", "python -m pytest", True),
    ("python -m pytest", "python -m pytest -q tests/test_app.py -k 'slow or fast'", True),
    ("python -m pytest", "python  -m\tpytest -q", True),  # words, however spaced
    ("python -m pytest", "python -m pytestevil", False),  # whole words only
    ("python -m pytest", "python3 -m pytest", False),
    ("python -m pytest", "FOO=1 python -m pytest", False),
    ("python -m pytest", "python -m pytest; rm -rf ~", False),  # a second program...
    ("python -m pytest", "python -m pytest && rm -rf ~", False),
    ("python -m pytest", "python -m pytest || rm -rf ~", False),
    ("python -m pytest", "python -m pytest & rm -rf ~", False),
    ("python -m pytest", "python -m pytest | sh", False),
    ("python -m pytest", "python -m pytest $(rm -rf ~)", False),  # ...substituted...
    ("python -m pytest", "python -m pytest `rm -rf ~`", False),
    ("python -m pytest", "python -m pytest '$(rm -rf ~)'", False),  # (quoted too: the rule reads characters)
    ("python -m pytest", "python -m pytest <(rm -rf ~)", False),
    ("python -m pytest", "python -m pytest > ~/.bashrc", False),  # ...or a redirection
    ("python -m pytest", "python -m pytest\nrm -rf ~", False),  # a second line
    ("python -m pytest", "python -m pytest\rrm -rf ~", False),
    ("echo", "echo\u00a0x", False),  # a no-break space is inside the shell's word: that is no program echo
    ("echo", "echo\u2028x", False),
])
def test_a_prefix_approves_one_program_with_more_words_and_nothing_else(prefix, command, allowed):
    assert prefix_allows(prefix, command) is allowed
