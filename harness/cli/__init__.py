"""The user's side: the command line (args.py), settings (config.py) and a project's .env (project_env.py),
AGENTS.md (instructions.py), what is shown (display.py) and how outside text reaches the terminal (escapes.py),
the terminal and its questions (terminal.py), their previews (previews.py) fitted to the screen (screen_fit.py),
the narrower and the lasting "always" (prefixes.py), the REPL's prompt (task_reader.py), what was typed while a
task ran (typed_ahead.py), the REPL with its slash commands (repl.py), -p --json's events (events.py), and
starting quickly (start_up.py)."""
