"""Emails to authors when their posts get comments (queued; a worker sends them)."""

from __future__ import annotations

from blog.users import fetch_user

OUTBOX: list[dict] = []


def notify_author(post: dict, comment: dict) -> None:
    author = fetch_user(post["author_id"])
    if comment["author_id"] == author["id"]:
        return  # nobody wants mail about their own comment
    OUTBOX.append({
        "to": author["email"],
        "subject": f"New comment on {post['title']}",
        "body": comment["text"][:200],
    })
