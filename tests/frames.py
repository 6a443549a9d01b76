"""Reading a results message back the way the frame promises the model it can be read: the tests' view of
what `prompt.render_results` wrote. Strict: anything that is neither a note nor a whole framed result fails.

A result is a here-document: `tool_result(NAME) <<MARKER` (`tool_result(NAME, error) <<MARKER` for a failure),
the output, then the first line that is MARKER alone."""

import re

HEAD = re.compile(r"tool_result\(([^\s,()]+)(, error)?\) <<(END\d*)\n")


def read_message(content: str) -> tuple[list[str], list[dict]]:
    """The notes and the results of one results message: ([note, ...], [{"tool", "ok", "output"}, ...])."""
    notes, results, position = [], [], 0
    while position < len(content):
        head = HEAD.match(content, position)
        if head is None:
            line_end = content.find("\n", position)
            line_end = len(content) if line_end == -1 else line_end
            line = content[position:line_end]
            assert line.startswith("Note: ") and not results, f"not a note before the results: {line!r}"
            notes.append(line.removeprefix("Note: "))
            position = line_end + 1
            continue
        name, error, marker = head.groups()
        end = re.compile(rf"\n{marker}(?:\n|\Z)").search(content, head.end())  # the first line that is the marker
        assert end is not None, f"the result of {name} has no end line {marker}"
        results.append({"tool": name, "ok": error is None, "output": content[head.end():end.start()]})
        position = end.end()
    return notes, results


def read_results(content: str) -> list[dict]:
    return read_message(content)[1]
