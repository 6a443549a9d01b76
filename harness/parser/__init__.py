"""The parser seam (`parse_reply`): `tool: NAME({json})` lines out of the model's plain-text reply
(toolcalls.py), their arguments (arguments.py), and calls written in other agents' JSON formats (json_calls.py)."""
