"""Words for numbers, the one way every line says how many: "1 line", "2,000 lines"."""


def count(n: int, noun: str) -> str:
    """'1 file', '3 files', '1,200 lines'."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


BYTES_PER_TOKEN = 3.0  # before the server says: English runs ~4 bytes a token, code ~3, CJK ~2-3 (3 bytes a char)
MESSAGE_OVERHEAD = 12  # bytes counted for each message's role and the chat template's markers (~4 tokens)


def size_in_bytes(messages: list[dict]) -> int:
    return sum(len(message["content"].encode("utf-8", errors="surrogatepass")) + MESSAGE_OVERHEAD
               for message in messages)
