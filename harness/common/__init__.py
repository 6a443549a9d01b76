"""Small helpers every part of the armour may use, below all of them: where plainagent keeps its files
(directories.py), how a host is named and what kind it is (hosts.py), the one rule that blanks the API key
(redaction.py), plurals (counting.py), the programs plainagent itself runs, found where no command wrote them
(programs.py), and its own code (own_code.py). Nothing here imports anything else of plainagent's (but
own_code.py, which imports every module of the harness by name when asked to, at run time: that is its job)."""
