"""The command line: the flags, and `--help`, which states where settings come from and the exit codes.

Only argparse is loaded here, so that `python agent.py --help` and a usage error answer before the rest of the
program loads (agent.py parses the command line first). What the flags mean is config.py's: load_config.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="agent.py", description="A coding agent for any OpenAI-compatible endpoint.",
        epilog="Settings come from, in order of precedence: these flags, the environment (OPENAI_API_KEY, "
               "OPENAI_BASE_URL, OPENAI_MODEL, PLAINAGENT_MAX_STEPS, PLAINAGENT_STOP, PLAINAGENT_CONTEXT_TOKENS, "
               "PLAINAGENT_MODE, PLAINAGENT_DENY, PLAINAGENT_STREAM, PLAINAGENT_FETCH, PLAINAGENT_FETCH_ALLOW, "
               "PLAINAGENT_SANDBOX, PLAINAGENT_SANDBOX_NETWORK, PLAINAGENT_SANDBOX_WRITE, PLAINAGENT_SANDBOX_ENV, "
               "PLAINAGENT_SANDBOX_READ, PLAINAGENT_ALLOW, "
               "PLAINAGENT_CONNECT_TIMEOUT, PLAINAGENT_FIRST_BYTE_TIMEOUT, PLAINAGENT_READ_TIMEOUT), "
               "the workspace's .env (a project's: only once you allow it, and only to ask more), .env next to "
               "agent.py. "
               "Exit codes: 0 done, 1 failed, 2 usage or config error, 3 not done as asked (a write, command or "
               "fetch that needed approval was refused: no terminal to ask on; see --yes), 130 interrupted.")
    parser.add_argument("-p", "--prompt", dest="task", metavar="TASK",
                        help='run one task, print the answer, exit ("-" reads stdin)')
    parser.add_argument("-y", "--yes", action="store_true", help="approve every write and command: --mode yes")
    parser.add_argument("--mode", metavar="MODE",
                        help="ask (default) before writes and commands; read-only; edits: ask only before commands; "
                             "yes: ask nothing (PLAINAGENT_MODE)")
    parser.add_argument("-m", "--model", help="model name (OPENAI_MODEL)")
    parser.add_argument("--base-url", help="endpoint base URL with its version path (OPENAI_BASE_URL)")
    parser.add_argument("-C", "--cwd", default=".", metavar="DIR", help="workspace directory (default: current)")
    parser.add_argument("--max-steps", type=int, metavar="N", help="model calls per task (default 30)")
    parser.add_argument("--no-stream", action="store_true",
                        help="ask for whole replies instead of streamed ones (PLAINAGENT_STREAM=off)")
    parser.add_argument("--context-tokens", type=int, metavar="N",
                        help="most tokens one request may hold (default 32000)")
    parser.add_argument("--max-reply-tokens", type=int, metavar="N",
                        help="most tokens one reply may hold (default 8192; PLAINAGENT_MAX_REPLY_TOKENS)")
    parser.add_argument("--connect-timeout", type=float, metavar="S",
                        help="seconds to wait for the connection to the endpoint (default 10; "
                             "PLAINAGENT_CONNECT_TIMEOUT)")
    parser.add_argument("--first-byte-timeout", type=float, metavar="S",
                        help="seconds to wait for a streamed reply's first byte, while the server loads the model and "
                             "reads the prompt (default 120; PLAINAGENT_FIRST_BYTE_TIMEOUT)")
    parser.add_argument("--read-timeout", type=float, metavar="S",
                        help="the longest silence of a whole reply, or of a stream once it began (default 300; "
                             "PLAINAGENT_READ_TIMEOUT)")
    parser.add_argument("--log", type=Path, metavar="FILE", help="the transcript file (default: a new one in "
                        "$XDG_STATE_HOME/plainagent/sessions)")
    parser.add_argument("--resume", nargs="?", const="", metavar="FILE",
                        help="continue this workspace's latest session, or FILE's; with -p, run one more task in it")
    parser.add_argument("--json", action="store_true",
                        help="with -p: stdout is JSON Lines, one event a line: the start, each call, result and "
                             "refusal, the answer, the tokens, the end and its exit code (docs/usage.md)")
    args = parser.parse_args(argv)
    if args.json and args.task is None:
        parser.error("--json goes with -p TASK: a REPL session has no end to report")
    return args
