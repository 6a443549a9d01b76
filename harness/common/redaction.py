"""Redaction of the API key: the one rule for every text plainagent shows the model, writes down or prints.

The key only ever goes out in the Authorization header, yet it can turn up in text: a file or a command's
output that holds it, a server that echoes it back in an error, a task the user pasted it into. Each path
that shows or writes such text blanks it here — tool results (through `Workspace.redact`), the transcript,
and the error lines the user reads — so no path shows what another hides, or hides what another keeps.

The rule: only a key of REDACT_MIN_CHARS characters or more is a secret. Real keys are long (OpenAI's 51+
characters, DeepSeek's 35, Mistral's 32); a short value such as "ollama", "EMPTY" or "x" is a local
server's placeholder, and blanking it would corrupt every file, output and task that holds those letters
(`exit code 0` shown as `e[REDACTED]it code 0`, a resumed task "configure ollama" read back as "configure
[REDACTED]"). Where a text was cut (a command's output kept as a head and a tail), a piece of the key left
at the cut is blanked too, from PIECE_MIN_CHARS characters on.
"""

from __future__ import annotations

REDACTED = "[REDACTED]"  # what the key is replaced with, wherever it is found
REDACT_MIN_CHARS = 16  # shorter keys ("ollama", "EMPTY", "x") are placeholders, and text too common to blank
PIECE_MIN_CHARS = 4  # a piece of the key left at a cut is blanked from this long ("sk-p" on is worth hiding)


def is_secret_key(key: str) -> bool:
    """Whether `key` is long enough to be a real API key, and so is redacted wherever it appears."""
    return len(key) >= REDACT_MIN_CHARS


def redact(text: str, key: str, *, cut_before: bool = False, cut_after: bool = False) -> str:
    """The text with the API key blanked out. Redact before cutting anything out: a cut through the key would
    leave its first half to show. Where a text was already cut (a command's output, kept in a head and a
    tail), `cut_before` and `cut_after` say it starts or ends at a cut, and a piece of the key there is
    blanked too.

    >>> redact("key=sk-proj-0123456789abcdef;", "sk-proj-0123456789abcdef")
    'key=[REDACTED];'
    """
    if not is_secret_key(key):
        return text
    text = text.replace(key, REDACTED)
    for size in range(len(key) - 1, PIECE_MIN_CHARS - 1, -1):  # the longest piece first
        if cut_after and text.endswith(key[:size]):
            text, cut_after = text[:-size] + REDACTED, False
        if cut_before and text.startswith(key[-size:]):
            text, cut_before = REDACTED + text[size:], False
    return text


def leaks(text: str, key: str) -> bool:
    """Whether `text` holds the API key, by the same rule (a command's environment variable, for instance)."""
    return is_secret_key(key) and key in text


class Secret:
    """The session's API key, held in this one object, which every part that needs the key is handed and asks:
    the HTTP client for the header (`value`), everything kept or shown to blank it (`redact`, the rule above),
    a command's environment to keep it out (`leaks`). Printed, it shows nothing of the key."""

    __slots__ = ("value",)

    def __init__(self, value: str = ""):
        self.value = value

    def __repr__(self) -> str:
        return f"Secret({REDACTED if self.value else ''!r})"

    def __bool__(self) -> bool:
        return bool(self.value)

    def redact(self, text: str, *, cut_before: bool = False, cut_after: bool = False) -> str:
        return redact(text, self.value, cut_before=cut_before, cut_after=cut_after)

    def leaks(self, text: str) -> bool:
        return leaks(text, self.value)


class Redactor:
    """The key blanked from a text that arrives in pieces (a streamed reply), where it may be split between two:
    the end of a piece that could be the start of the key is held back until the next piece shows whether it is.

    >>> pieces = Redactor("sk-proj-0123456789abcdef")
    >>> pieces.feed("key: sk-pr") + pieces.feed("oj-0123456789abcdef.") + pieces.flush()
    'key: [REDACTED].'
    """

    def __init__(self, key: str):
        self.key = key if is_secret_key(key) else ""
        self.held = ""  # the end of what came so far that could be the start of the key
        self.cut = False  # the last flush blanked a start of the key: the next text may begin with its rest

    def feed(self, piece: str) -> str:
        """What of the text so far can be shown: all of it but a possible start of the key, redacted."""
        if not self.key:
            return piece
        text = (self.held + piece).replace(self.key, REDACTED)
        if self.cut and text:
            text, self.cut = redact(text, self.key, cut_before=True), False
        keep = next((size for size in range(min(len(self.key) - 1, len(text)), 0, -1)
                     if text.endswith(self.key[:size])), 0)
        self.held = text[len(text) - keep:]
        return text[:len(text) - keep]

    def flush(self) -> str:
        """The text held back, now that no more of this kind is coming: a piece of the key at the end is blanked
        too, and then a piece of it at the start of what comes next (a reply's reasoning, then its text)."""
        held, self.held = self.held, ""
        if not self.key:
            return held
        shown = redact(held, self.key, cut_after=True)
        self.cut = shown != held
        return shown
