"""The JSON API: each handler takes the parsed request and returns (status, body)."""

from __future__ import annotations

from blog import users
from blog.posts import create_post, posts_by


def get_user(request: dict) -> tuple[int, dict]:
    try:
        user = users.fetch_user(int(request["id"]))
    except users.UserNotFound:
        return 404, {"error": "no such user"}
    return 200, users.public_profile(user)


def post_article(request: dict) -> tuple[int, dict]:
    author = users.fetch_user(request["user_id"])
    try:
        post_id = create_post(author["id"], request.get("title", ""), request.get("body", ""))
    except ValueError as error:
        return 400, {"error": str(error)}
    return 201, {"id": post_id}


def list_articles(request: dict) -> tuple[int, dict]:
    return 200, {"posts": [post["title"] for post in posts_by(int(request["id"]))]}
