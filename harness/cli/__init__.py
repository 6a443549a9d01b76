"""The user's side: settings, AGENTS.md, what is shown on the terminal, the questions asked, slash commands."""
