"""Inside the history seam: the token budget, compaction, and the transcript."""
