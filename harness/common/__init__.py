"""Small helpers every part of the armour may use, below all of them: where plainagent keeps its files
(directories.py), how a host is named and what kind it is (hosts.py), the one rule that blanks the API key
(redaction.py), and plurals (words.py). Nothing here imports anything else of plainagent's."""
