"""An in-memory table per kind of record, enough for the tests and the demo server."""

from __future__ import annotations

from itertools import count

TABLES: dict[str, dict[int, dict]] = {"users": {}, "posts": {}, "comments": {}}
_ids = count(1)


def insert(table: str, record: dict) -> int:
    record_id = next(_ids)
    TABLES[table][record_id] = {"id": record_id, **record}
    return record_id


def get(table: str, record_id: int) -> dict | None:
    return TABLES[table].get(record_id)


def select(table: str, **where) -> list[dict]:
    return [row for row in TABLES[table].values() if all(row.get(k) == v for k, v in where.items())]


def clear() -> None:
    for rows in TABLES.values():
        rows.clear()
