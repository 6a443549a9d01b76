"""The tools' room for commands: how run_command runs one (shell.py), its walls while it runs (landlock.py,
seccomp.py) and after (namespaces.py), the process that starts it inside them and ends it with the agent
(lifetime.py), the search for the secret files they may not read (secret_search.py), what a refusal by the walls means, for the model (refusal_notes.py), the deny rules (guard.py)
and the shell reading they need (command_line.py), and what a command leaves behind: what acts later, looked at
before and after it (look.py), and the repository's history, kept (git_history.py)."""
