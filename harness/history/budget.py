"""The token budget: how large a request is, estimated before it goes out, the room kept for the reply, and
what a server's refusal for length, or a reply cut off where the window ended, says about its window.

The estimate is the UTF-8 size of the messages (characters / 4 would count Chinese or Japanese at a quarter of
their size), calibrated with the `usage.prompt_tokens` the server reports (or the prompt size its refusal
states), unless the count looks like that of a prompt the server cut. The window holds the request and the reply
together: a request never takes the room the longest reply so far took (`most`). `session_history.py` keeps the history
inside this budget.
"""

from __future__ import annotations

import re

from harness.common.counting import BYTES_PER_TOKEN, size_in_bytes
from harness.common.seam_types import ChatError

COMPACT_AT = 0.75  # share of the budget a request may reach; the rest is left for the model's reply
ANSWER_SHARE = 0.1  # share of the budget always kept for the reply, over the model's own words too...
MOST_ANSWER_SHARE = 0.5  # ...and the most the room learnt from long (or cut) replies may take of it
SHORT_ANSWER = 64  # tokens: a reply cut off this short met the window's end; no server's output limit is so low
TRUNCATION_BYTES_PER_TOKEN = 6  # no tokenizer packs a whole prompt tighter: a server reporting fewer tokens cut it
MAX_LEARNT_JUMP = 1.6  # a count making bytes per token jump more than this is not learnt (it may be a cut prompt)
MIN_REAL_WINDOW = 1000  # servers that cut prompts still keep about this many tokens; below it, a count is a placeholder
MIN_BUDGET = 2000  # the least budget (--context-tokens): the system prompt alone takes about 1,000

# A server's refusal for length, in the words of OpenAI, vLLM, llama.cpp, Ollama, DeepSeek, OpenRouter,
# LM Studio, Mistral, Gemini and Anthropic.
WINDOW_WORDS = (
    r"(?i)context[_ ]length|context (window|size)|maximum (model|context) length|too many tokens|prompt is too "
    r"long|prompt too long|input (is )?too long|input length exceeds|exceeds? the maximum number of tokens"
    r"|exceed_context_size|reduce the length of the (messages|prompt)")
# Where those messages state the window: "maximum context length is 8192 tokens", "context size (4096
# tokens)", "200000 maximum", "maximum model length of 8192", "context length of only 4096 tokens", ...
STATED_LIMIT = (
    r"(?i)maximum context length is ([\d,]+)|context (?:size|window|length) (?:is |of )?(?:only )?\(?([\d,]+)"
    r"|maximum model length (?:is |of )?([\d,]+)|> ?([\d,]+) maximum|([\d,]+) maximum context length"
    r"|maximum number of tokens allowed \(([\d,]+)\)|limit of ([\d,]+) tokens")
# Where they state the size of the refused prompt: "resulted in 9000 tokens" (OpenAI), "(4484 in the messages"
# (llama-cpp-python); llama.cpp's server gives it as a field, n_prompt_tokens.
STATED_PROMPT = r"(?i)messages resulted in ([\d,]+) tokens|\(([\d,]+) in the messages"


class Budget:
    """The most tokens one request may hold, and the estimate of a request's size in tokens."""

    def __init__(self, tokens: int):
        self.tokens = tokens
        # A server on this machine or the local network (llama.cpp, Ollama, LM Studio): its own output limit is
        # the user's, and seldom set, so a reply it cut met its window's end, however far below the budget.
        self.local = False
        self.bytes_per_token = BYTES_PER_TOKEN
        self.warned_truncation = False
        self.last_count: tuple[int, int] | None = None  # (bytes sent, prompt_tokens reported) of the last request
        self.answer_room = 0  # tokens the longest reply took (or, cut off, needed), learnt: kept free for the next

    def most(self) -> int:
        """The most tokens a request may hold: the budget less the room kept for the reply."""
        share = min(max(ANSWER_SHARE * self.tokens, self.answer_room), MOST_ANSWER_SHARE * self.tokens)
        return int(self.tokens - share)

    def compact_share(self) -> float:
        """The share of the budget past which a request is compacted: COMPACT_AT, or less when replies need more."""
        return min(COMPACT_AT, self.most() / self.tokens)

    def answered(self, tokens: int) -> None:
        """Learn the room a reply takes: `tokens`, the server's count of one (or our estimate)."""
        self.answer_room = max(self.answer_room, tokens)

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
        self.tokens = min(self.tokens, max(tokens, MIN_BUDGET))  # the server's figure: what it keeps of a prompt
        return (f"The server counted {tokens:,} prompt tokens for a request of about {self.estimate(messages):,}: "
                "it seems to cut long prompts silently (Ollama does, at its default context), so the model did not "
                f"see the whole conversation. The context budget is now {self.tokens:,} tokens, and the history is "
                "compacted to fit. To give the model more, raise the server's context (Ollama: OLLAMA_CONTEXT_LENGTH "
                "or the model's num_ctx; llama.cpp: --ctx-size; LM Studio: the model's context length) and set "
                "--context-tokens to match.")

    def refused(self, messages: list[dict], limit: int | None, counted: int | None = None,
                asked: int | None = None) -> None:
        """Learn from a refusal for length: the window is at most `limit`, and these messages did not fit; the
        server counted them as `counted` tokens, if it said (then that is this server's bytes per token). With
        `asked`, the reply's limit the request carried: when the two together pass the window, the estimate was
        right, and only the window is learnt (the next reply's limit is what the budget leaves)."""
        sent = self.estimate(messages)
        self.tokens = min(self.tokens, limit or sent)
        per_token = size_in_bytes(messages) / counted if counted else 0
        if 1.0 <= per_token <= TRUNCATION_BYTES_PER_TOKEN:
            self.bytes_per_token = per_token
        elif sent <= COMPACT_AT * self.tokens and not (asked and limit and sent + asked > limit):
            # we thought it fitted, and the reply's limit does not explain it: this server's tokens are smaller
            self.bytes_per_token *= 0.9 * sent / self.tokens

    def window_full(self, messages: list[dict], reply_tokens: int, usage: dict) -> bool:
        """Whether a reply cut off (finish_reason "length") met the end of the context window: the request and
        the reply filled the window as far as we know it, or the reply was cut after a few words. A reply that ran
        to the limit plainagent asked is that limit's (SessionHistory.cut_off asks that first); any other cut is a
        server's own limit or the window's end: the first is never that short, nor reached by a reply that found
        the prompt far below the window; but a local server's window may be far below the budget (`local`).
        `reply_tokens` is our estimate of the reply; `usage` what the server counted, if anything."""
        prompt, answer = counted(usage) or (self.estimate(messages), reply_tokens)
        return (prompt + answer >= COMPACT_AT * self.tokens or answer < SHORT_ANSWER
                or (self.local and prompt + answer >= MIN_REAL_WINDOW))

    def learn_window(self, messages: list[dict], reply_tokens: int, usage: dict) -> None:
        """Learn from a reply cut off at the window's end: the request and the reply filled the window, so the
        window is their size (the server's count), or our estimate counted too few tokens; and the reply needs
        more room than it got, twice as much (at most MOST_ANSWER_SHARE of the budget)."""
        if reported := counted(usage):
            prompt, answer = reported
            self.tokens = min(self.tokens, max(prompt + answer, MIN_BUDGET))
        else:
            answer, total = reply_tokens, self.estimate(messages) + reply_tokens
            if COMPACT_AT * self.tokens <= total < self.tokens:  # the window is the budget; the estimate fell short
                self.bytes_per_token = max(self.bytes_per_token * total / self.tokens, 1.0)
                answer = round(answer * self.tokens / total)
            else:  # a window smaller than the budget: the request and the reply are all we know of it
                self.tokens = min(self.tokens, max(total, MIN_BUDGET))
        self.answer_room = max(self.answer_room, 2 * answer, SHORT_ANSWER)


def counted(usage) -> tuple[int, int] | None:
    """(prompt, completion) tokens as the server counted them, when it did: a prompt of 0 is a placeholder (some
    proxies send one), no count."""
    usage = usage if isinstance(usage, dict) else {}
    prompt, answer = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if isinstance(prompt, int) and isinstance(answer, int) and prompt > 0 and answer >= 0:
        return prompt, answer
    return None


def window_refusal(error: ChatError) -> tuple[bool, int | None]:
    """(is it a refusal for length, the window it states if any)."""
    text = getattr(error, "detail", "") or str(error)  # the server's own words, without our "400 from URL"
    status = getattr(error, "status", None)
    if status != 413 and (status not in (400, 422, 500) or not re.search(WINDOW_WORDS, text)):
        return False, None  # a 413 is "too large" from a proxy in front too, whatever its words
    stated = stated_window(getattr(error, "body", None))
    match = re.search(STATED_LIMIT, text)
    number = next((group for group in match.groups() if group), None) if match else None
    digits = number.replace(",", "") if number else ""  # "is , tokens" from a broken template: no number at all
    return True, stated or (int(digits) if digits.isdigit() and int(digits) > 0 else None)


def stated_prompt(error: ChatError) -> int | None:
    """The size of the refused prompt in the server's tokens, if the refusal states it."""
    body = getattr(error, "body", None)
    fields = body.get("error") if isinstance(body, dict) else None
    n_prompt = fields.get("n_prompt_tokens") if isinstance(fields, dict) else None
    if isinstance(n_prompt, int) and not isinstance(n_prompt, bool) and n_prompt > 0:
        return n_prompt
    match = re.search(STATED_PROMPT, getattr(error, "detail", "") or str(error))
    digits = next((group for group in match.groups() if group), "").replace(",", "") if match else ""
    return int(digits) if digits.isdigit() and int(digits) > 0 else None


def stated_window(body) -> int | None:
    """The window a server's error object states as a field: llama.cpp's {"error": {..., "n_ctx": 4096}}.
    (Read from ChatError.body, the parsed error response, when the client provides it.)"""
    error = body.get("error") if isinstance(body, dict) else None
    n_ctx = error.get("n_ctx") if isinstance(error, dict) else None
    return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None
