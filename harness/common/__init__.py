"""Below all of them: what the seams hand each other (seam_types.py: Reply, ToolCall, the errors), a file's text
and its lines (text_files.py), how many, in words and in bytes (counting.py), where plainagent keeps its files
(directories.py), what kind of host a URL names (hosts.py), the one rule that blanks the API key (redaction.py),
credentials known by their shape (secret_shapes.py) and what looks like one and is none
(secret_lookalikes.py), the programs plainagent runs, found where no command wrote
them (programs.py), and its own code (own_code.py). Nothing here imports anything of plainagent's above it
(own_code.py imports every module of the harness by name when asked to, at run time: that is its job)."""
