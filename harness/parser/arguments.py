"""Reading a call's arguments: one JSON object between the parentheses, or the few repairs that are safe.

Helpers of the parser (toolcalls.py). Strict JSON first (with raw newlines and tabs inside strings read as
such); then, only when that fails, curly quotes straightened, lone backslashes doubled, or a Python dict read as
one, and the model is told which repair was made. Nothing else is guessed: a repair that changed what the model
meant would change the code it sends, so anything past these is answered as unreadable, never run.
"""

from __future__ import annotations

import ast
import json
import re

LENIENT_JSON = json.JSONDecoder(strict=False)  # strict=False: raw newlines and tabs inside strings are read as such
CURLY_DOUBLE = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"'})
LONE_BACKSLASH = re.compile(r'\\(?![\\"/bfnrt]|u[0-9a-fA-F]{4})')


class Unreadable(Exception):
    """The arguments of a call could not be read; the message says why, `end` where the call is taken to end."""

    def __init__(self, problem: str, end: int):
        super().__init__(problem)
        self.end = end


def read_arguments(text: str, start: int) -> tuple[dict, int, str | None]:
    """Arguments from just after '(' to the closing ')': strict JSON first, then the few safe repairs."""
    position = skip_space(text, start)
    if text.startswith(")", position):
        return {}, position + 1, None
    try:
        value, end = LENIENT_JSON.raw_decode(text, position)
    except json.JSONDecodeError as error:
        return repair_arguments(text, start, position, error)
    except (ValueError, RecursionError):  # a 5000-digit number, `[[[[...` thousands deep: no cause for a traceback
        close = matching_paren(text, start - 1)
        raise Unreadable("the arguments hold a number too long or brackets nested too deep to read.",
                         len(text) if close is None else close + 1) from None
    if isinstance(value, str):  # a JSON string holding the object: decode it once more
        try:
            value = LENIENT_JSON.decode(value)
        except (ValueError, RecursionError):
            pass
    if not isinstance(value, dict):
        raise Unreadable("the arguments must be one JSON object, like {\"path\": \"a.py\"}.", end)
    close = skip_space(text, end)
    if not text.startswith(")", close):
        raise Unreadable("expected ')' right after the JSON object.", end)
    return value, close + 1, None


def repair_arguments(text: str, start: int, position: int,
                     error: json.JSONDecodeError) -> tuple[dict, int, str | None]:
    """The arguments after the first repair that reads them as an object with string keys."""
    complaint = f"the arguments are not valid JSON ({error.msg}, at character {error.pos - position + 1})."
    close = matching_paren(text, start - 1)
    if close is None:  # nothing after this point can be told apart from the broken arguments
        raise Unreadable(complaint + " No closing ')' was found either.", len(text))
    for repair, candidate in candidate_repairs(text[position:close]):
        if isinstance(candidate, dict) and all(isinstance(key, str) for key in candidate):
            return candidate, close + 1, repair
    raise Unreadable(complaint, close + 1)


def candidate_repairs(inner: str):
    """(repair, value) for each repair in order; only these, since guessing further changes the code sent."""
    curly = inner.translate(CURLY_DOUBLE)
    attempts = [("straightening curly quotes", curly),
                ("doubling backslashes that start no JSON escape", LONE_BACKSLASH.sub(r"\\\\", inner)),
                ("straightening quotes and doubling backslashes", LONE_BACKSLASH.sub(r"\\\\", curly))]
    for repair, candidate in attempts:
        if candidate != inner:
            try:
                yield repair, LENIENT_JSON.decode(candidate)
            except (ValueError, RecursionError):
                pass
    for source in dict.fromkeys([inner, curly]):
        try:
            yield "reading it as a Python dict", ast.literal_eval(source.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass


def matching_paren(text: str, open_at: int) -> int | None:
    """Index of the ')' closing the '(' at open_at, skipping brackets and parentheses inside strings."""
    depth, quote, position = 0, None, open_at
    closing_quote = {'"': '"', "'": "'", "\u201c": "\u201d"}
    while position < len(text):
        char = text[position]
        if quote:
            if char == "\\":
                position += 1
            elif char == closing_quote[quote]:
                quote = None
        elif char in closing_quote:
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return position if char == ")" else None
        position += 1
    return None


def skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position
