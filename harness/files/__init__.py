"""The tools' room for the workspace's files: which paths may be touched and the walk that lists them
(workspace.py), using only what was checked (open_beneath.py), which files hold secrets (secret_files.py), what
the walk leaves out (ignore_rules.py), read_file's and edit_file's work (read_and_edit.py), finding old_str
(edits.py), edits that act later (acts_later.py), and finding and searching files (search.py)."""
