"""Inside the tools seam: the sandbox every tool works in (paths, secret files, ignore rules, redaction),
edits and the bytes they keep, search, deny rules, modes and approval."""
