"""What administrators may do that others may not."""

from __future__ import annotations

from blog import db
from blog.users import fetch_user


class Forbidden(PermissionError):
    pass


def require_admin(user_id: int) -> dict:
    user = fetch_user(user_id)
    if not user["admin"]:
        raise Forbidden(f"user {user_id} is not an administrator")
    return user


def delete_comment(admin_id: int, comment_id: int) -> None:
    require_admin(admin_id)
    db.TABLES["comments"].pop(comment_id, None)
