"""How outside text is shown on the terminal: `escape` is the one way text from outside (the model's, a server's, a
file's, a path, a configuration value) reaches the screen, every control and invisible character written as an
escape, and the API key blanked wherever it appears. Everything shown for approval was written by the model, so it
is shown as data, never as instructions to the terminal: a carriage return, an escape sequence or a bidi override
in a command could otherwise redraw the line and show the user something other than what will run.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable

from harness.common.redaction import Secret, is_secret_key, redact

NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# Letters that draw nothing at all, so a line could hide text behind them; everything else that draws nothing
# (controls, format characters such as bidi overrides and zero-width spaces, odd spaces) fails isprintable(),
# but for the marks that draw nothing, which Python calls printable: the combining grapheme joiner, variation
# selectors (Unicode's default-ignorable marks, and a filler), where text can be smuggled a byte a mark.
BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# The Hangul vowels and final consonants that join a syllable (U+1160-11FF, U+D7B0-D7FF) are drawn zero wide on
# their own; Korean text uses the syllables U+AC00-D7A3, so they are escaped too.
INVISIBLE_MARKS = re.compile("[\u034f\u17b4\u17b5\u180b-\u180d\u180f\ufe00-\ufe0f\U00016fe4\U000e0100-\U000e01ef"
                             "\u1160-\u11ff\ud7b0-\ud7ff]")
EMOJI_STYLES = "\ufe0e\ufe0f"  # text and emoji style: the variation selectors a README's emoji carry (❤️, 1️⃣)


# The session's key (config's Secret), blanked from all that is shown: agent.main hands it over (hide_key) once it
# is known. Held here by reference: everything shown passes through this module's escape, from anywhere.
secret = Secret()


def hide_key(key: Secret) -> None:
    """From now on, `escape` and `for_output` blank `key` wherever it appears (if it is long enough to be one)."""
    global secret
    secret = key


def without_key(text: str) -> str:
    """`text` with the API key blanked, spelt plainly or as JSON spells it (a call's arguments are shown as JSON)."""
    if not is_secret_key(secret.value):
        return text
    return redact(secret.redact(text), json.dumps(secret.value)[1:-1])


def escape(text: str, keep: str = "", mark: Callable[[str], str] = str) -> str:
    """The text with the API key blanked and every character that could move the cursor, recolour or hide
    text written as an escape.

    A character stays as it is if Python calls it printable (the plain space included) or it is in `keep`;
    the rest become \\r, \\t, \\x1b, \\u202e and so on, passed through `mark` (e.g. to show them reversed).
    e.g. escape("ls #\\r\\x1b[2K$ pwd") == "ls #\\\\r\\\\x1b[2K$ pwd"
    """
    text = without_key(text)
    return text if shows_as_is(text) else "".join(escaped_chars(text, keep, mark))


def shows_as_is(text: str) -> bool:
    """True if `escape` would leave every character of `text` as it is: the common case, at C speed."""
    return text.isprintable() and not BLANK_LETTERS.intersection(text) and not INVISIBLE_MARKS.search(text)


def escaped_chars(text: str, keep: str = "", mark: Callable[[str], str] = str) -> list[str]:
    """Each character of `text` as `escape` shows it (without blanking the key): itself, or its escape."""
    return [char if char in keep or not hides(text, at) else mark(describe_char(char)) for at, char in enumerate(text)]


def hides(text: str, at: int) -> bool:
    """True if text[at] would not show as itself: a control, a format character, an odd space, a letter or a mark
    that draws nothing. The one exception is an emoji's style (U+FE0E, U+FE0F) right after a digit, # or * (a
    keycap) or a character beyond ASCII that draws itself: it changes how that one character is drawn, and one
    per character cannot hide a text."""
    char = text[at]
    if not char.isprintable() or char in BLANK_LETTERS:
        return True
    if not INVISIBLE_MARKS.match(char):
        return False
    base = text[at - 1] if at else " "
    return not (char in EMOJI_STYLES and (base in "0123456789#*" or ord(base) > 0x7f) and base.isprintable()
                and base not in BLANK_LETTERS and unicodedata.category(base)[0] != "M")


def for_output(text: str, stream) -> str:
    """An answer as printed on `stream`: escaped on a terminal; on a pipe exactly as written (a script gets
    the model's bytes), but never the key."""
    return escape(text, keep="\n\t") if stream.isatty() else without_key(text)


def describe_char(char: str) -> str:
    """How an escaped character is written: like a Python string literal, so it is recognisable."""
    code = ord(char)
    if char in NAMED_ESCAPES:
        return NAMED_ESCAPES[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
