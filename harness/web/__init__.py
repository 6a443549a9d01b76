"""The tools' room for web_fetch: the fetch itself, its consent and address checks (fetch.py), and a page's HTML
as text (html_text.py)."""
