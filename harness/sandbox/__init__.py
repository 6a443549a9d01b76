"""Inside the tools seam: the sandbox every tool works in (paths, secret files, ignore rules), edits and the
bytes they keep, search, deny rules, modes and approval, the kernel boundary around commands; and the one error a
tool raises, which every module here may raise too, since the sandbox's refusals are tool results."""


class ToolError(Exception):
    """A tool could not do what was asked; the message tells the model why and what to do instead. tools.py's
    run_tool turns it into an error result, never a crash."""
