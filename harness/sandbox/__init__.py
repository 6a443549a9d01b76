"""Inside the tools seam: the sandbox every tool works in, edits, search, deny rules, modes and approval."""
