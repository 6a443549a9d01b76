"""Users: creating them, finding them, and what may be shown of them."""

from __future__ import annotations

from blog import db


class UserNotFound(LookupError):
    pass


def create_user(name: str, email: str, admin: bool = False) -> int:
    if "@" not in email:
        raise ValueError(f"not an email address: {email!r}")
    return db.insert("users", {"name": name, "email": email.lower(), "admin": admin})


def fetch_user(user_id: int) -> dict:
    """The user with this id, or UserNotFound."""
    user = db.get("users", user_id)
    if user is None:
        raise UserNotFound(user_id)
    return user


def public_profile(user: dict) -> dict:
    """What anyone may see: never the email address."""
    return {"id": user["id"], "name": user["name"]}
