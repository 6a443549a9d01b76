"""The parser seam (`parse_reply`): tool calls read out of the model's plain-text reply."""
