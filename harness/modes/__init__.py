"""The modes: how much the user trusts the agent with, and the question a tool asks before it writes, runs or
fetches (permissions.py). Below the tools' rooms and the history, which both name the modes."""
