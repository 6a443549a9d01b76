"""Reading a results message back the way the frame promises the model it can be read: the tests' view of
what `prompt.render_results` wrote. Strict: anything that is neither a note nor a whole framed result fails."""

import re

HEAD = re.compile(r"tool_result\(([^\s,]+), (ok|error)\) <<(END_[0-9a-f]{6,})\n")


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
        name, outcome, marker = head.groups()
        end = content.find("\n" + marker, head.end())  # the first place the marker stands: the frame's end
        assert end != -1, f"the result of {name} has no end line {marker}"
        after = end + 1 + len(marker)
        assert content[after:after + 1] in ("", "\n"), f"the end line of {name} holds more than {marker}"
        results.append({"tool": name, "ok": outcome == "ok", "output": content[head.end():end]})
        position = after + 1
    return notes, results


def read_results(content: str) -> list[dict]:
    return read_message(content)[1]
