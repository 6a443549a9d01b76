"""Posts and comments."""

from __future__ import annotations

from blog import db


def create_post(author_id: int, title: str, body: str) -> int:
    if not title.strip():
        raise ValueError("a post needs a title")
    return db.insert("posts", {"author_id": author_id, "title": title.strip(), "body": body})


def add_comment(post_id: int, author_id: int, text: str) -> int:
    if db.get("posts", post_id) is None:
        raise LookupError(post_id)
    return db.insert("comments", {"post_id": post_id, "author_id": author_id, "text": text})


def comments_on(post_id: int) -> list[dict]:
    return db.select("comments", post_id=post_id)


def posts_by(author_id: int) -> list[dict]:
    return db.select("posts", author_id=author_id)
