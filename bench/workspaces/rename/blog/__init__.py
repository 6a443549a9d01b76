"""A tiny blog: users, posts, comments, and the views and API that serve them."""
