"""HTML pages, rendered as plain strings to keep the demo free of a template engine."""

from __future__ import annotations

from html import escape

from blog.posts import comments_on, posts_by
from blog.users import fetch_user, public_profile


def profile_page(user_id: int) -> str:
    user = public_profile(fetch_user(user_id))
    posts = "".join(f"<li>{escape(post['title'])}</li>" for post in posts_by(user_id))
    return f"<h1>{escape(user['name'])}</h1><ul>{posts}</ul>"


def comment_list(post_id: int) -> str:
    items = []
    for comment in comments_on(post_id):
        author = fetch_user(comment["author_id"])
        items.append(f"<li><b>{escape(author['name'])}</b>: {escape(comment['text'])}</li>")
    return f"<ul class=\"comments\">{''.join(items)}</ul>"
