"""The model seam (`chat(messages) -> Reply`): the request itself, one POST (bare.py), the same request with
retries, deadlines and one clear line per failure (client.py), reading what the server sent (replies.py) and a
streamed reply (stream.py), and the session's model: shown, counted, kept inside the window (session_model.py)."""
