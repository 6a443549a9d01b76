"""The token budget: how large a request is, estimated before it goes out, and what a server's refusal for
length says about its window.

The estimate is the UTF-8 size of the messages (characters / 4 would count Chinese or Japanese at a quarter of
their size), calibrated with the `usage.prompt_tokens` the server reports, unless the count looks like that of
a prompt the server cut. `context.py` keeps the history inside this budget.
"""

from __future__ import annotations

import re

from harness.model.replies import ChatError

COMPACT_AT = 0.75  # share of the budget a request may reach; the rest is left for the model's reply
BYTES_PER_TOKEN = 3.0  # before the server says: English runs ~4 bytes a token, code ~3, CJK ~2-3 (3 bytes a char)
MESSAGE_OVERHEAD = 12  # bytes counted for each message's role and the chat template's markers (~4 tokens)
TRUNCATION_BYTES_PER_TOKEN = 6  # no tokenizer packs a whole prompt tighter: a server reporting fewer tokens cut it
MAX_LEARNT_JUMP = 1.6  # a count making bytes per token jump more than this is not learnt (it may be a cut prompt)
MIN_REAL_WINDOW = 1000  # servers that cut prompts still keep about this many tokens; below it, a count is a placeholder

# A server's refusal for length, in the words of OpenAI, vLLM, llama.cpp, Ollama, DeepSeek, OpenRouter,
# LM Studio, Mistral, Gemini and Anthropic.
WINDOW_WORDS = re.compile(
    r"context[_ ]length|context (window|size)|maximum (model|context) length|too many tokens|prompt is too "
    r"long|prompt too long|input (is )?too long|input length exceeds|exceeds? the maximum number of tokens"
    r"|exceed_context_size|reduce the length of the (messages|prompt)", re.IGNORECASE)
# Where those messages state the window: "maximum context length is 8192 tokens", "context size (4096
# tokens)", "200000 maximum", "maximum model length of 8192", "context length of only 4096 tokens", ...
STATED_LIMIT = re.compile(
    r"maximum context length is ([\d,]+)|context (?:size|window|length) (?:is |of )?(?:only )?\(?([\d,]+)"
    r"|maximum model length (?:is |of )?([\d,]+)|> ?([\d,]+) maximum|([\d,]+) maximum context length"
    r"|maximum number of tokens allowed \(([\d,]+)\)|limit of ([\d,]+) tokens", re.IGNORECASE)



class Budget:
    """The most tokens one request may hold, and the estimate of a request's size in tokens."""

    def __init__(self, tokens: int):
        self.tokens = tokens
        self.bytes_per_token = BYTES_PER_TOKEN
        self.warned_truncation = False
        self.last_count: tuple[int, int] | None = None  # (bytes sent, prompt_tokens reported) of the last request

    def estimate(self, messages: list[dict]) -> int:
        return round(size_in_bytes(messages) / self.bytes_per_token)

    def fits(self, messages: list[dict], share: float) -> bool:
        return self.estimate(messages) <= share * self.tokens

    def calibrate(self, messages: list[dict], usage: dict) -> str | None:
        """Learn this server's bytes per token from the prompt_tokens it reported for `messages`.

        A count that looks cut is not learnt: too few tokens for the bytes (no tokenizer packs a prompt past
        TRUNCATION_BYTES_PER_TOKEN, and none jumps far from what it did before), or a count that stays flat
        while requests grow. The first clear sign returns a warning, once: the server cuts prompts silently.
        """
        tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        if not isinstance(tokens, int) or tokens <= 0:
            return None  # not reported
        sent = size_in_bytes(messages)
        bytes_per_token, last, self.last_count = sent / tokens, self.last_count, (sent, tokens)
        # Requests 20% larger, but a count grown less than a quarter as much: the server stops counting somewhere.
        flat = last is not None and sent >= 1.2 * last[0] and (tokens / last[1] - 1) < 0.25 * (sent / last[0] - 1)
        cut = bytes_per_token > TRUNCATION_BYTES_PER_TOKEN or flat
        # (From the default at least: a refusal may have lowered the running value far below any real tokenizer.)
        if not cut and bytes_per_token <= MAX_LEARNT_JUMP * max(self.bytes_per_token, BYTES_PER_TOKEN):
            self.bytes_per_token = max(bytes_per_token, 1.0)
            return None
        if not cut or tokens < MIN_REAL_WINDOW or self.warned_truncation:
            return None  # a jump not learnt, a placeholder count (some proxies and test servers send one), or said
        self.warned_truncation = True
        return (f"The server counted {tokens:,} prompt tokens for a request of about {self.estimate(messages):,}: "
                "it seems to cut long prompts silently (Ollama does, at its default window), so the model does not "
                "see the whole conversation. Raise the server's context window (Ollama: OLLAMA_CONTEXT_LENGTH) "
                f"and set --context-tokens to match, or set --context-tokens below {tokens:,}.")

    def refused(self, messages: list[dict], limit: int | None) -> None:
        """Learn from a refusal for length: the window is at most `limit`, and these messages did not fit."""
        sent = self.estimate(messages)
        self.tokens = min(self.tokens, limit or sent)
        if sent <= COMPACT_AT * self.tokens:  # we thought it fitted: this server's tokens are smaller than ours
            self.bytes_per_token *= 0.9 * sent / self.tokens


def size_in_bytes(messages: list[dict]) -> int:
    return sum(len(message["content"].encode("utf-8", errors="surrogatepass")) + MESSAGE_OVERHEAD
               for message in messages)


def window_refusal(error: ChatError) -> tuple[bool, int | None]:
    """(is it a refusal for length, the window it states if any)."""
    text = getattr(error, "detail", "") or str(error)  # the server's own words, without our "400 from URL"
    status = getattr(error, "status", None)
    if status != 413 and (status not in (400, 422, 500) or not WINDOW_WORDS.search(text)):
        return False, None  # a 413 is "too large" from a proxy in front too, whatever its words
    stated = stated_window(getattr(error, "body", None))
    match = STATED_LIMIT.search(text)
    number = next((group for group in match.groups() if group), None) if match else None
    digits = number.replace(",", "") if number else ""  # "is , tokens" from a broken template: no number at all
    return True, stated or (int(digits) if digits.isdigit() and int(digits) > 0 else None)


def stated_window(body) -> int | None:
    """The window a server's error object states as a field: llama.cpp's {"error": {..., "n_ctx": 4096}}.
    (Read from ChatError.body, the parsed error response, when the client provides it.)"""
    error = body.get("error") if isinstance(body, dict) else None
    n_ctx = error.get("n_ctx") if isinstance(error, dict) else None
    return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None
