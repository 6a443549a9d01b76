"""The harness: everything that makes agent.py's loop trustworthy, in rooms named for what they hold. Read
agent.py, tools.py and prompt.py first; open a room to see how one promise is kept. Each room's __init__.py is
its map, and tests/test_layers.py holds both to the files and to the layers (docs/how-it-works.md):

    cli/        the user's side: settings, the terminal, the questions, the REPL            (may use all below)
    model/      the model seam: the request, the HTTP client, streaming, the session's model  ┐ the seams: none
    parser/     the parser seam: `tool: NAME({json})` lines out of a reply                    │ imports another
    history/    the history seam: the token budget, compaction, the transcript                ┘ (tools.py is the 4th)
    files/      the tools' room for the workspace's files: paths, reading, edits, search      ┐ below tools.py
    commands/   the tools' room for commands: their walls, deny rules, what they leave behind │ (commands may
    web/        the tools' room for web_fetch                                                 ┘ use files/)
    modes/      the modes, and the question a tool asks before it acts
    common/     small helpers below all of them, and what the seams hand each other

Nothing here imports agent.py.
"""
