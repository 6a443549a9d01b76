"""Words for numbers, the one way every line says how many: "1 line", "2,000 lines"."""


def count(n: int, noun: str) -> str:
    """'1 file', '3 files', '1,200 lines'."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
