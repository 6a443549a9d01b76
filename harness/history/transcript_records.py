"""What a transcript line must hold for --resume to take it back: the messages (a role and text content, and
nothing else a file may add), the calls behind a results message (the shape compaction reads), a compaction's
history whole. A transcript is a file the user can edit, or one another program wrote: what does not have that
shape is one warning and that line skipped (transcript.py `load`), never a traceback, and never a value that makes
every later task fail.
"""

from __future__ import annotations

import json
import re

from harness.common.text_files import repaired

ROLES = ("system", "user", "assistant")


def is_message(message) -> bool:
    return (isinstance(message, dict) and message.get("role") in ROLES
            and isinstance(message.get("content"), str))


def unreadable(raw: bytes) -> str:
    """Why a line is no record: most often the last one, torn by a crash."""
    try:
        json.loads(raw.decode("utf-8"))
    except RecursionError:
        return "is nested too deeply to be read"
    except (UnicodeDecodeError, json.JSONDecodeError):
        return "is incomplete (the session ended while writing it)"
    except ValueError:  # json's own errors are JSONDecodeError: this is int()'s limit on digits
        return "holds a number too long to be read"
    return "is not a record"


def read_compaction(entry: dict) -> tuple[list[dict], dict[int, dict]] | None:
    """The history a compaction line records, and the calls behind its results; None if any of it cannot be
    read (the indices of the one depend on the other, so a part is not taken without the rest)."""
    given, records = entry.get("messages"), entry.get("results", {})
    if not isinstance(given, list) or not all(map(is_message, given)) or not isinstance(records, dict):
        return None
    messages, results = [sent_part(message) for message in given], {}
    for index, record in records.items():
        # ASCII digits only: "²".isdigit() is True, and int() refuses it.
        if not re.fullmatch(r"[0-9]{1,9}", index) or (record := read_record(record)) is None:
            return None
        if int(index) >= len(messages) or messages[int(index)]["role"] != "user":
            return None  # results stand in a user message of this history, or the record is not this history's
        results[int(index)] = record
    return messages, results


def read_record(record) -> dict | None:
    """The calls behind a results message, as compaction reads them, if they have that shape: {"calls": [{"name",
    "args", "ok", "bytes", "lines"}], "notes": [...], "stubbed": bool}; None otherwise."""
    if not isinstance(record, dict):
        return None
    calls, notes = record.get("calls"), record.get("notes", [])
    if not (isinstance(calls, list) and isinstance(notes, list) and all(isinstance(note, str) for note in notes)):
        return None
    for call in calls:
        if not (isinstance(call, dict) and isinstance(call.get("name"), str) and isinstance(call.get("args"), dict)
                and isinstance(call.get("ok"), bool) and all(is_count(call.get(key, 0)) for key in ("bytes", "lines"))):
            return None
    # Lone surrogates (JSON can spell one) made U+FFFD: compaction writes these names and notes out as UTF-8.
    calls = json.loads(repaired(json.dumps(calls, ensure_ascii=False)))
    return {"calls": calls, "notes": [repaired(note) for note in notes],
            **({"stubbed": True} if record.get("stubbed") is True else {})}


def is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def sent_part(message: dict) -> dict:
    """What a message read back is sent as: its role and its content, and nothing else a file may add (a
    `tool_calls`, a `name`); the content with any lone surrogate (JSON can spell one) made U+FFFD."""
    return {"role": message["role"], "content": repaired(message["content"])}
