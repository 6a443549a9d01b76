"""Permission modes: how much the user trusts the agent with, for this session.

    ask        (default) a preview and a question before each write, each command and each fetch
    read-only  only the reading tools exist, web_fetch among them: the others are left out of the system
               prompt, and a call to one anyway is refused; a fetch is still asked
    edits      file edits are applied without asking (their preview still goes to the activity log);
               commands and fetches are asked
    yes        nothing is asked (-y)

in each of them, an edit that acts later (a git hook, a shell's start-up file, AGENTS.md: acts_later.py) is asked,
with the reason, and refused where nobody can be asked.

`Permissions` is the workspace's confirm callback (`Workspace.approve` calls it before every write, command
and fetch), so the mode is decided in one place; the question itself is the terminal's (`terminal.py`). The
deny rules (`guard.py`) come before any of this: a denied command is refused in every mode. So do web_fetch's
own checks (`fetch.py`): an address in the user's network is refused in every mode unless
PLAINAGENT_FETCH_ALLOW lets it through (which makes it reachable; the user is still asked, as the mode says).
A fetch reads nothing of the workspace and writes nothing, so read-only offers it; but a URL can carry what
the model has read out to anyone, so it is asked wherever anything is. PLAINAGENT_FETCH=off leaves it out in
every mode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# Answers the user's question before a write or a command: (kind, title, preview, why) -> None to go ahead,
# or the reason for refusing ("" when the user gave none). kind is "edit", "command" or "fetch"; `why` is "" but
# for an edit that acts later (acts_later.py): it says why that edit is asked in every mode.
Confirm = Callable[[str, str, str, str], "str | None"]

MODES = ("ask", "read-only", "edits", "yes")  # the default first; describe_mode() says what each asks
# The tools that only read, offered in read-only sessions. An allowlist: a new tool is left out of read-only
# sessions until it is added here. (Whether a tool asks before it acts is its own call to ws.approve.)
READING_TOOLS = ("read_file", "list_files", "search_files", "delegate")
# The tools that reach the network: offered in every mode (unless the user turned them off), never to a sub-agent
# (nobody watches its steps, and the parent can fetch), and asked in every mode but yes.
NETWORK_TOOLS = ("web_fetch",)
READ_ONLY = ("This session is read-only: {name} is not available, and nothing can be "
             "written or run. Use the reading tools, or tell the user what you would change and how.")
SUBAGENT_READS = "{name} is not available to a sub-agent: it can only read. Answer with what you found."
ACTS_LATER = ("Nobody can be asked to approve it, and this file is asked about in every mode, --yes too: {why}. "
              "Tell the user what you would change, so they can make the edit themselves.")
FETCH_OFF = ("web_fetch is turned off for this session (PLAINAGENT_FETCH=off). Work from the files, or ask the "
             "user to paste what you need from the page.")


@dataclass
class Permissions:
    mode: str = "ask"  # one of MODES
    ask: Confirm | None = None  # the question at the terminal; None approves (no one to ask, as in tests)
    log: Callable[[str], None] = lambda line: None  # where an edit applied without asking is shown (its `ask`'s
    # preview, the question's without the question: the terminal's, so this module needs nothing of the user's side)
    subagent: bool = False  # a sub-agent's: the reading tools but delegate (sub-agents start none), read-only
    fetch: bool = True  # PLAINAGENT_FETCH: whether web_fetch is offered
    refused: Callable[[str, str, str], None] | None = None  # told (kind, title, reason) of each refusal: -p --json

    def __call__(self, kind: str, title: str, preview: str, why: str = "") -> str | None:
        """A Confirm: None to go ahead, or the reason for refusing. kind: "edit", "command" or "fetch"; `why`:
        why an edit that acts later is asked in every mode (acts_later.py), else ""."""
        reason = self.decide(kind, title, preview, why)
        if reason is not None and self.refused:
            self.refused(kind, title, reason)
        return reason

    def decide(self, kind: str, title: str, preview: str, why: str) -> str | None:
        if self.mode == "read-only" and kind != "fetch":  # a fetch writes nothing: read-only asks it
            return READ_ONLY.format(name="edit_file" if kind == "edit" else "run_command")
        if why and self.ask is None:
            return ACTS_LATER.format(why=why)
        if why:  # asked in every mode: -y is trust in the session's work, not in what runs after it
            return self.ask(kind, title, preview, why)
        if self.mode == "yes" or self.ask is None:
            return None
        if self.mode == "edits" and kind == "edit":  # the same preview the question would show, then no question
            shown = self.ask.preview(kind, title, preview) if hasattr(self.ask, "preview") else f"{title}:\n{preview}"
            self.log(shown + "\n(applied without asking: mode edits)")
            return None
        return self.ask(kind, title, preview, why)

    def offered(self, tools: dict[str, Callable]) -> dict[str, Callable]:
        """The tools offered: listed in the system prompt, and run when called."""
        return {name: tool for name, tool in tools.items() if self.offers(name)}

    def offers(self, name: str) -> bool:
        if self.subagent:
            return name in READING_TOOLS and name != "delegate"
        if name in NETWORK_TOOLS:
            return self.fetch
        return self.mode != "read-only" or name in READING_TOOLS

    def refusal(self, name: str) -> str | None:
        """The result for a call to a tool that is not offered, or None."""
        if self.offers(name):
            return None
        if self.subagent:
            return SUBAGENT_READS.format(name=name)
        return FETCH_OFF if name in NETWORK_TOOLS else READ_ONLY.format(name=name)

    def switch(self, mode: str) -> str:
        """Change the mode (the REPL's /mode); returns the line to show, which also says when it is refused."""
        if not mode:
            return f"Mode: {self.mode} ({describe_mode(self.mode)}). /mode NAME switches: {', '.join(MODES)}."
        if mode not in MODES:
            return f"No mode {mode!r}; the modes are: {', '.join(MODES)}. This session's mode is {self.mode}."
        self.mode = mode
        if hasattr(self.ask, "always"):  # "always" was an answer about the old mode, not the new one
            self.ask.always.clear()
        return f"Mode: {mode} ({describe_mode(mode)})."


def describe_mode(mode: str) -> str:
    """What the mode asks, in a few words, for the banner and /mode."""
    return {"ask": "asks before each write and command", "read-only": "reads only, writes and runs nothing",
            "edits": "applies edits without asking, asks before commands",
            "yes": "asks nothing but edits that act later"}[mode]
