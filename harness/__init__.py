"""The harness around the loop: everything that makes agent.py's loop trustworthy, grouped by the seam it wraps.

agent.py's loop talks to four seams: the model, the parser, the tools and the history. Read agent.py,
tools.py and prompt.py first; open this folder to see how one promise is kept.

    model/    around the model: the session's model (model: shown as it streams, counted, kept inside the
              window), the HTTP client and its retries (client), reading a whole reply (replies) and a
              streamed one (stream), what kind of host a base URL names (hosts)
    parser/   the parser: `tool: NAME({json})` lines out of a reply (toolcalls), their arguments (arguments), calls
              written as JSON in other agents' formats (json_calls)
    sandbox/  inside the tools: which paths may be touched (workspace) and using only what was checked
              (beneath), which files hold secrets
              (secret_files), what the walk leaves out (ignore_rules), the one redaction rule for the API key
              (redaction), a file's bytes and the one line model (documents), matching old_str (edits), the
              tools' work on files (files), finding and searching them (search), running commands (shell;
              tether, which ends them with the agent),
              deny rules for commands (guard, command_line), modes and approval (permissions)
    history/  inside the history: keeping it inside the token budget (context, compaction, budget), the
              transcript that --resume reads back (transcript)
    cli/      the user's side: the command line (args), settings (config), a project's .env, read only once
              allowed (project_env), where our own files live (directories), AGENTS.md (instructions), what
              is shown (display), the one way outside text reaches the terminal and the questions
              (terminal), the REPL's prompt and its history (task_reader), what was typed or pasted while
              a task ran (typed_ahead), the REPL and its slash commands (commands)

Nothing here imports agent.py or tools.py.
"""
