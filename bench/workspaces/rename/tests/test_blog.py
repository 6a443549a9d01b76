import pytest

from blog import admin, api, db, notifications, posts, users, views


@pytest.fixture(autouse=True)
def empty_tables():
    db.clear()
    notifications.OUTBOX.clear()


def test_users_are_found_by_id():
    ann = users.create_user("Ann", "Ann@example.com")
    assert users.fetch_user(ann)["email"] == "ann@example.com"
    with pytest.raises(users.UserNotFound):
        users.fetch_user(999)


def test_profile_page_lists_posts():
    ann = users.create_user("Ann", "ann@example.com")
    posts.create_post(ann, "Hello", "first post")
    assert views.profile_page(ann) == "<h1>Ann</h1><ul><li>Hello</li></ul>"


def test_api_hides_emails_and_knows_missing_users():
    ann = users.create_user("Ann", "ann@example.com")
    assert api.get_user({"id": str(ann)}) == (200, {"id": ann, "name": "Ann"})
    assert api.get_user({"id": "999"})[0] == 404


def test_only_admins_delete_comments():
    ann = users.create_user("Ann", "ann@example.com")
    boss = users.create_user("Boss", "boss@example.com", admin=True)
    post = posts.create_post(ann, "Hello", "")
    comment = posts.add_comment(post, boss, "nice")
    with pytest.raises(admin.Forbidden):
        admin.delete_comment(ann, comment)
    admin.delete_comment(boss, comment)
    assert posts.comments_on(post) == []


def test_authors_hear_of_comments_by_others():
    ann = users.create_user("Ann", "ann@example.com")
    bob = users.create_user("Bob", "bob@example.com")
    post_id = posts.create_post(ann, "Hello", "")
    post = db.get("posts", post_id)
    notifications.notify_author(post, {"author_id": ann, "text": "me again"})
    notifications.notify_author(post, {"author_id": bob, "text": "hi"})
    assert [mail["to"] for mail in notifications.OUTBOX] == ["ann@example.com"]
