"""The history seam: the session's history, kept inside the token budget and recorded (session_history.py), the
budget (budget.py), compaction (compaction.py), the transcript --resume reads back (transcript.py) and what a
transcript line must hold (transcript_records.py)."""
