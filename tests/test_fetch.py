"""web_fetch: a page fetched from a local web server on a real socket (127.0.0.1, allowed as the user would allow
it through PLAINAGENT_FETCH_ALLOW), turned into text, with the consent, the address checks and the limits.

The refusals of private and metadata addresses are tested on the decision itself (the resolver's answer is
given), and end to end only with 127.0.0.2: no test sends a packet anywhere but this machine's loopback (the
conftest's socket guard would fail it)."""

from __future__ import annotations

import gzip
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler

import pytest
import requests
import responses
from fake_endpoint import QuietServer

from harness.cli.args import parse_args
from harness.cli.config import ConfigError, load_config
from harness.common.hosts import parse_hosts
from harness.common.seam_types import ToolCall, ToolError
from harness.files.workspace import Workspace
from harness.modes.permissions import FETCH_OFF, Permissions
from harness.web import fetch as fetching
from harness.web.fetch import check_addresses, fetch, get, non_public, render_page
from harness.web.html_text import html_to_text
from tools import FETCH_MAX_CHARS, Toolbox, web_fetch

KEY = "sk-fetch-secret-0123456789abcdef"
LOCAL = frozenset({"127.0.0.1"})  # PLAINAGENT_FETCH_ALLOW=127.0.0.1
METADATA = "the cloud metadata address (where a cloud machine's credentials are served)"


# --- a web site on 127.0.0.1 ---


@dataclass
class Request:
    target: str  # as sent on the request line: a path, or a whole URL when sent to a proxy
    headers: dict


class WebSite:
    """Serves `pages` (path -> item) over HTTP/1.1 on 127.0.0.1 and records every request. An item is a str
    (an HTML page) or a dict: {"status": 200, "headers": {...}, "body": str | bytes, "gzip": True,
    "chunks": [bytes, ...] (sent chunked, one by one), "wait": threading.Event (answer once it is set)}."""

    def __init__(self, pages: dict):
        self.pages = pages
        self.received: list[Request] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                site.received.append(Request(self.path, dict(self.headers)))
                path = self.path.split("://", 1)[-1].split("/", 1)[-1].split("?")[0]  # a proxy gets the whole URL
                item = site.pages.get("/" + path, {"status": 404, "body": "<p>No such page.</p>"})
                item = {"body": item} if isinstance(item, str) else item
                if "wait" in item:
                    item["wait"].wait(10)
                body = item.get("body", "")
                data = body.encode() if isinstance(body, str) else body
                if item.get("gzip"):
                    data = gzip.compress(data)
                self.send_response(item.get("status", 200))
                headers = {"Content-Type": "text/html; charset=utf-8"} | item.get("headers", {})
                if item.get("gzip"):
                    headers["Content-Encoding"] = "gzip"
                for name, value in headers.items():
                    if value is not None:
                        self.send_header(name, value)
                if "chunks" in item:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for chunk in item["chunks"]:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.write(b"0\r\n\r\n")
                    return
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> WebSite:
        threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True).start()  # quick to shut down
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site():
    with WebSite({}) as served:
        yield served


@pytest.fixture
def ws(tmp_path):
    return Workspace(tmp_path, secret=KEY, fetch_allow=LOCAL)


DOCS_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Migrating to 2.0 &#8212; Foo 2.0 documentation</title>
  <link rel="stylesheet" href="/_static/pygments.css">
  <style>body { font-family: sans-serif; }</style>
  <script>window.analytics = {track: function () {}};</script>
</head>
<body>
  <div class="related" role="navigation" aria-label="Related">
    <ul><li><a href="/genindex.html">index</a></li><li><a href="/py-modindex.html">modules</a> |</li></ul>
  </div>
  <nav class="sidebar"><h3>Table of Contents</h3>
    <ul><li><a href="#">Migrating</a></li><li><a href="#renamed">Renamed</a></li></ul>
  </nav>
  <div class="document">
    <main id="content">
      <section id="migrating">
        <h1>Migrating to 2.0<a class="headerlink" href="#migrating" title="Link to this heading">¶</a></h1>
        <p>Version 2.0 renames <code class="docutils literal">fetch()</code> to
           <code>get()</code> and drops Python&nbsp;3.8. See the
           <a class="reference external" href="../changelog.html#v2-0">full changelog</a>.</p>
        <section id="renamed">
          <h2>Renamed functions<a class="headerlink" href="#renamed">¶</a></h2>
          <table class="docutils">
            <thead><tr><th>Old</th><th>New</th><th>Since</th></tr></thead>
            <tbody>
              <tr><td><code>fetch()</code></td><td><code>get()</code></td><td>2.0</td></tr>
              <tr><td><code>fetch_all()</code></td><td><code>get_many()</code></td><td>2.0</td></tr>
            </tbody>
          </table>
          <div class="highlight"><pre><span class="kn">from</span> <span class="nn">foo</span> <span class="kn">import</span> get

<span class="k">def</span> <span class="nf">main</span>():
    page = get(&quot;https://example.org&quot;,  timeout=10)
    print(page.text)
</pre></div>
          <p>Steps:</p>
          <ol>
            <li>Update the pin.</li>
            <li>Run the tests:<ul><li>unit</li><li>integration</li></ul></li>
          </ol>
          <div class="admonition note" hidden><p>Hidden note.</p></div>
        </section>
      </section>
    </main>
  </div>
  <footer>&copy; Copyright 2024, Foo authors. <a href="/privacy.html">Privacy</a></footer>
  <script src="/_static/searchtools.js"></script>
</body>
</html>
"""

DOCS_TEXT = """\
Migrating to 2.0 — Foo 2.0 documentation

# Migrating to 2.0

Version 2.0 renames `fetch()` to `get()` and drops Python 3.8. See the full changelog \
(http://127.0.0.1:{port}/changelog.html#v2-0).

## Renamed functions

Old | New | Since
`fetch()` | `get()` | 2.0
`fetch_all()` | `get_many()` | 2.0

```
from foo import get

def main():
    page = get("https://example.org",  timeout=10)
    print(page.text)
```

Steps:

1. Update the pin.
2. Run the tests:
  - unit
  - integration"""


# --- text, not markup ---


def test_a_docs_page_becomes_its_text_without_navigation_scripts_or_styles(site, ws):
    site.pages["/docs/migrating.html"] = DOCS_PAGE
    result = web_fetch(ws, f"{site.url}/docs/migrating.html")
    text = DOCS_TEXT.format(port=site.port)
    size = len(DOCS_PAGE.encode())
    assert result == (f"{site.url}/docs/migrating.html (200 OK, text/html, {size:,} bytes; {len(text):,} characters "
                      f"of text)\n{text}")


def test_a_page_without_main_keeps_all_but_the_navigation():
    html = ("<html><head><title>Blog</title></head><body><header><a href='/'>Home</a></header><nav>Menu</nav>"
            "<h1>Post</h1><p>Some <b>bold</b>\ntext,<br>and a line.</p><aside>Ads</aside>"
            "<p>A <a href='https://x.org/a'>https://x.org/a</a> and <a href='javascript:go()'>a button</a>.</p>"
            "<div style='display: none'>hidden</div><img src='a.png' alt='a chart'></body></html>")
    assert html_to_text(html, "https://blog.example/post") == (
        "Blog\n\nHome (https://blog.example/)\n\n# Post\n\nSome bold text,\nand a line.\n\n"
        "A https://x.org/a and a button.")


def test_links_are_relative_to_the_pages_base():
    html = '<head><base href="https://cdn.example/v2/"></head><p><a href="api.html">API</a></p>'
    assert html_to_text(html, "https://example.org/docs/") == "API (https://cdn.example/v2/api.html)"


def test_json_and_plain_text_come_as_they_are(site, ws):
    site.pages["/api.json"] = {"headers": {"Content-Type": "application/json"}, "body": '{"a": [1, 2],\n "b": "<p>"}'}
    site.pages["/notes.md"] = {"headers": {"Content-Type": "text/markdown"}, "body": "# Notes\n\n  indented  <b>\n"}
    assert web_fetch(ws, f"{site.url}/api.json").split("\n", 1)[1] == '{"a": [1, 2],\n "b": "<p>"}'
    assert web_fetch(ws, f"{site.url}/notes.md").split("\n", 1)[1] == "# Notes\n\n  indented  <b>\n"


@pytest.mark.parametrize("headers, body, text", [
    ({"Content-Type": "text/html; charset=windows-1252"}, b"<p>caf\xe9 \x93quoted\x94</p>",
     "café “quoted”"),
    ({"Content-Type": "text/html"}, '<meta charset="shift_jis"><p>日本語</p>'.encode("shift_jis"), "日本語"),
    ({"Content-Type": "text/html"}, '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">'
     '<p>Привет</p>'.encode("koi8-r"), "Привет"),
    ({"Content-Type": "text/plain; charset=iso-8859-1"}, b"na\xefve \x80", "naïve €"),  # read as browsers read it
    ({"Content-Type": "text/xml"}, b'<?xml version="1.0" encoding="ISO-8859-15"?><a>\xa4</a>',
     '<?xml version="1.0" encoding="ISO-8859-15"?><a>€</a>'),
    ({"Content-Type": "text/plain"}, b"utf-8 \xe2\x9c\x93 then a stray \xff byte", "utf-8 ✓ then a stray \ufffd byte"),
    ({"Content-Type": "text/plain; charset=no-such-charset"}, b"plain \xe2\x9c\x93", "plain ✓"),
])
def test_the_charset_comes_from_the_header_or_the_page_else_utf8_with_replacements(site, ws, headers, body, text):
    site.pages["/page"] = {"headers": headers, "body": body}
    assert web_fetch(ws, f"{site.url}/page").split("\n", 1)[1] == text


def test_a_gzipped_page_is_read(site, ws):
    site.pages["/big.txt"] = {"headers": {"Content-Type": "text/plain"}, "body": "word " * 1000, "gzip": True}
    result = web_fetch(ws, f"{site.url}/big.txt")
    assert result == f"{site.url}/big.txt (200 OK, text/plain, 5,000 bytes; 5,000 characters of text)\n" + "word " * 1000
    assert site.received[0].headers["Accept-Encoding"] == "gzip, deflate"


@pytest.mark.parametrize("headers, said", [
    ({"Content-Type": "image/png", "Content-Length": None}, "image/png (5,000 bytes)"),
    ({"Content-Type": "application/pdf"}, "application/pdf (5,000 bytes)"),
])
def test_a_binary_is_refused_with_its_type_and_size(site, ws, headers, said):
    site.pages["/file"] = {"headers": headers, "body": b"\x89PNG\r\n\x1a\n" + b"\0" * 4992}
    with pytest.raises(ToolError) as refused:
        web_fetch(ws, f"{site.url}/file")
    assert str(refused.value) == (f"{site.url}/file is {said}, not text: web_fetch reads web pages and text (HTML, "
                                  "plain text, JSON, XML) only.")


def test_a_body_without_a_type_is_read_as_text_unless_it_holds_binary_data(site, ws):
    site.pages["/plain"] = {"headers": {"Content-Type": None}, "body": "just text"}
    site.pages["/blob"] = {"headers": {"Content-Type": None}, "body": b"\x7fELF\0\0\0"}
    assert web_fetch(ws, f"{site.url}/plain").endswith("(200 OK, no type given, 9 bytes; 9 characters of text)\njust text")
    with pytest.raises(ToolError, match=r"/blob gave no content type and holds binary data \(7 bytes\), not text"):
        web_fetch(ws, f"{site.url}/blob")


def test_an_error_status_is_an_error_result_with_what_the_page_says(site, ws):
    with pytest.raises(ToolError) as failed:
        web_fetch(ws, f"{site.url}/missing")
    assert str(failed.value) == f"{site.url}/missing answered 404 Not Found. The page says:\nNo such page."


# --- long pages: cut, with the way to read on ---


def test_a_long_page_keeps_its_head_and_tail_and_says_where_to_read_on(site, ws):
    lines = [f"line {n:05} " + "x" * 88 for n in range(1, 501)]  # 100 characters a line with its \n
    site.pages["/long.txt"] = {"headers": {"Content-Type": "text/plain"}, "body": "\n".join(lines)}
    first = web_fetch(ws, f"{site.url}/long.txt")
    header, rest = first.split("\n", 1)
    assert header == f"{site.url}/long.txt (200 OK, text/plain, 49,999 bytes; 49,999 characters of text)"
    head, cut, tail = rest.split("\n[...", 1)[0], rest.split("\n[", 1)[1].split("\n", 1)[0], rest.split("...]\n", 1)[1]
    assert head == "\n".join(lines[:160])  # 16,000 characters, to the end of a line
    assert cut == "... 30,000 characters not shown: call web_fetch with offset=16000 to read on (the text has 49,999) ...]"
    assert tail == "\n".join(lines[-40:])  # about 4,000 characters, from the start of a line
    second = web_fetch(ws, f"{site.url}/long.txt", offset=16000)
    assert second.split("\n")[1:] == lines[160:360] + [  # a later read: 20,000 characters from the offset, no tail
        "[... 13,999 characters not shown: call web_fetch with offset=36000 to read on (the text has 49,999) ...]"]
    last = web_fetch(ws, f"{site.url}/long.txt", offset=48000)
    assert last.split("\n", 2)[1:] == ["(characters 48,000 to the end)", "\n".join(lines[480:])]
    with pytest.raises(ToolError, match="offset 50000 is outside the page's text, which has 49,999 characters"):
        web_fetch(ws, f"{site.url}/long.txt", offset=50000)


def test_the_cut_never_leaves_a_piece_of_the_key():
    text = "a" * 15_990 + KEY + "b" * 10_000
    page = fetching.Page("https://x.org/", "200 OK", "text/plain", len(text), text)
    shown = render_page(page, Workspace(".", secret=KEY).redact(text), 0, FETCH_MAX_CHARS)
    assert KEY[:4] not in shown and "[REDACTED]" in shown


def test_a_page_holding_the_api_key_is_redacted(site, ws):
    site.pages["/leak"] = {"headers": {"Content-Type": "text/plain"}, "body": f"token: {KEY}\n"}
    assert web_fetch(ws, f"{site.url}/leak").endswith("\ntoken: [REDACTED]\n")


# --- limits while downloading ---


def test_a_page_over_the_size_limit_is_cut_while_downloading(site):
    chunks = [b"<p>" + b"a" * 997 for _ in range(50)]  # 50,000 bytes, sent in pieces
    site.pages["/huge"] = {"chunks": chunks}
    page = fetch(f"{site.url}/huge", LOCAL, approve=agree, max_bytes=3500)
    assert page.size == 3500 and page.cut == "the page is over 3,500 bytes: only its first 3,500 were read"
    assert page.text == "\n\n".join(["a" * 997] * 3 + ["a" * 497])  # the fourth paragraph cut at the limit
    assert render_page(page, page.text, 0, 100).split("\n")[1] == ("(note: the page is over 3,500 bytes: only its "
                                                                   "first 3,500 were read)")
    assert len(site.received) == 1


def test_the_size_limit_counts_the_page_gzip_undone(site):
    site.pages["/bomb"] = {"headers": {"Content-Type": "text/plain"}, "body": "0" * 1_000_000, "gzip": True}
    page = fetch(f"{site.url}/bomb", LOCAL, approve=agree, max_bytes=10_000)
    assert page.size == 10_000 and page.text == "0" * 10_000 and page.cut.startswith("the page is over 10,000 bytes")


def test_a_page_that_does_not_end_in_time_is_cut_with_what_came(site):
    site.pages["/slow"] = {"headers": {"Content-Type": "text/plain"}, "chunks": [b"first ", b"second"]}
    page = fetch(f"{site.url}/slow", LOCAL, approve=agree, max_seconds=0)
    assert page.cut.startswith("the download took too long: only the first") and page.text.startswith("first")


def test_a_server_that_does_not_answer_times_out(site):
    never = threading.Event()
    site.pages["/hang"] = {"wait": never}
    try:
        with pytest.raises(ToolError) as failed:
            fetch(f"{site.url}/hang", LOCAL, approve=agree, timeout=(5, 0.05))
    finally:
        never.set()
    assert str(failed.value) == f"{site.url}/hang: no answer within 0.05 s. Try again later, or another page."


def test_a_connection_that_is_never_made_says_the_connect_wait():
    """A host whose listen queue is full: a user gave up after 10 s and was told 20."""
    with responses.RequestsMock() as mock:
        mock.get("https://docs.example.org/", body=requests.ConnectTimeout("timed out"))
        with pytest.raises(ToolError) as failed:
            get(requests.Session(), "https://docs.example.org/", (10, 20), {})
    assert str(failed.value) == "https://docs.example.org/: no connection within 10 s. Try again later, or another page."


def test_nothing_listening_is_one_clear_error():
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}/"
    with pytest.raises(ToolError, match=rf"^{url}: could not connect \(\[Errno 111\] Connection refused\)\.$"):
        fetch(url, LOCAL, approve=agree)


# --- redirects ---


def test_a_redirect_chain_is_followed_and_each_hop_named(site, ws):
    site.pages["/old"] = {"status": 301, "headers": {"Location": "/older"}}
    site.pages["/older"] = {"status": 302, "headers": {"Location": f"{site.url}/docs/new?v=2"}}
    site.pages["/docs/new"] = "<p>Here <a href='page'>now</a>.</p>"
    result = web_fetch(ws, f"{site.url}/old")
    text = f"Here now ({site.url}/docs/page)."
    assert result == (f"{site.url}/docs/new?v=2 (200 OK, text/html, 35 bytes; {len(text)} characters of text)\n"
                      f"(redirected from {site.url}/old (301) -> {site.url}/older (302))\n{text}")
    assert [request.target for request in site.received] == ["/old", "/older", "/docs/new?v=2"]


def test_too_many_redirects_end_with_the_chain(site):
    site.pages["/loop"] = {"status": 302, "headers": {"Location": "/loop"}}
    with pytest.raises(ToolError) as failed:
        fetch(f"{site.url}/loop", LOCAL, approve=agree, max_redirects=2)
    hop = f"{site.url}/loop (302)"
    assert str(failed.value) == (f"More than 2 redirects: {hop} -> {hop} -> {hop}. Fetch the last one yourself if "
                                 "it is the page you want.")
    assert len(site.received) == 3


def test_a_redirect_to_a_private_address_is_refused_and_named(site, ws):
    site.pages["/out"] = {"status": 302, "headers": {"Location": f"http://127.0.0.2:{site.port}/admin"}}
    with pytest.raises(ToolError) as refused:
        web_fetch(ws, f"{site.url}/out")
    assert str(refused.value) == (f"127.0.0.2 (redirected to by {site.url}/out) is a loopback address (this machine): "
                                  "web_fetch does not reach into the user's network or this machine. The user can "
                                  "allow this host by adding 127.0.0.2 to PLAINAGENT_FETCH_ALLOW.")
    assert [request.target for request in site.received] == ["/out"]  # 127.0.0.2 was never sent a thing


def test_a_redirect_to_a_name_resolving_to_the_metadata_address_is_refused(site):
    site.pages["/out"] = {"status": 302, "headers": {"Location": "http://metadata.test/latest/meta-data/"}}
    asked = []
    with pytest.raises(ToolError) as refused:
        fetch(f"{site.url}/out", LOCAL, approve=lambda host, shown: asked.append((host, shown)),
              resolve=answers({"metadata.test": ["169.254.169.254"]}))
    assert str(refused.value).startswith(f"metadata.test resolves to 169.254.169.254, which (redirected to by "
                                         f"{site.url}/out) is {METADATA}: web_fetch does not reach")
    # another host: asked about first, with the redirect that led to it
    assert asked == [("127.0.0.1", f"{site.url}/out"), ("metadata.test", f"{site.url}/out (302) redirected to\nhttp://metadata.test/latest/meta-data/")]


@pytest.mark.parametrize("location", ["ftp://example.org/file", "file:///etc/passwd"])
def test_a_redirect_out_of_the_web_is_refused(site, location):
    site.pages["/out"] = {"status": 302, "headers": {"Location": location}}
    with pytest.raises(ToolError, match=rf"^'{location}' \(redirected to by {site.url}/out\) is not an http or https"):
        fetch(f"{site.url}/out", LOCAL, approve=agree)


# --- not into the user's network: the decision ---


@pytest.mark.parametrize("address, kind", [
    ("127.0.0.1", "a loopback address (this machine)"), ("127.0.0.2", "a loopback address (this machine)"), ("::1", "a loopback address (this machine)"),
    ("10.1.2.3", "a private address (the local network)"), ("192.168.1.10", "a private address (the local network)"),
    ("172.16.0.1", "a private address (the local network)"), ("fd12:3456::1", "a private address (the local network)"),
    ("169.254.169.254", METADATA), ("fd00:ec2::254", METADATA), ("::ffff:169.254.169.254", METADATA),
    ("169.254.1.1", "a link-local address (the local link)"), ("fe80::1%eth0", "a link-local address (the local link)"),
    ("::ffff:10.0.0.1", "a private address (the local network)"), ("2002:7f00:1::", "a loopback address (this machine)"),
    ("64:ff9b::a00:1", "a private address (the local network)"), ("0.0.0.0", "a private address (the local network)"),
    ("100.64.0.1", "not a public address"), ("224.0.0.251", "not a public address"), ("ff02::1", "not a public address"),
    ("8.8.8.8", None), ("2606:4700::1111", None), ("::ffff:93.184.216.34", None),
])
def test_which_addresses_are_not_the_public_web(address, kind):
    assert non_public(address) == kind


@pytest.mark.parametrize("address, kind", [  # issue 27: IPv4 inside IPv6, every way a kernel or translator reads it
    ("::127.0.0.2", "a loopback address (this machine)"), ("::7f00:1", "a loopback address (this machine)"),
    ("::10.0.0.1", "a private address (the local network)"), ("::169.254.169.254", METADATA),
    ("::ffff:0:127.0.0.1", "a loopback address (this machine)"), ("::ffff:0:192.168.1.1", "a private address (the local network)"),
    ("2002:a00:1::1", "a private address (the local network)"), ("64:ff9b::127.0.0.1", "a loopback address (this machine)"),
    ("64:ff9b:1::127.0.0.1", "a loopback address (this machine)"), ("64:ff9b:1::8.8.8.8", "not a public address"),
    ("::", "a private address (the local network)"), ("::1", "a loopback address (this machine)"),
    ("::8.8.8.8", None), ("::ffff:0:8.8.8.8", None), ("64:ff9b::8.8.8.8", None), ("2002:808:808::1", None),
])
def test_an_ipv4_address_inside_an_ipv6_one_is_judged_by_it(address, kind):
    assert non_public(address) == kind


@pytest.mark.parametrize("host", ["[::127.0.0.2]", "[::7f00:2]", "[::ffff:0:127.0.0.2]", "[64:ff9b:1::7f00:2]"])
def test_web_fetch_refuses_an_embedded_loopback_before_anything_is_sent(host):
    """Known without a lookup: refused before the user is asked, and before a connection is tried."""
    with pytest.raises(ToolError, match=r"^[\da-f:.]+ is a loopback address \(this machine\): web_fetch does not reach"):
        fetch(f"http://{host}:9/", frozenset(), approve=never_asked, resolve=answers({}))


@pytest.mark.parametrize("host, addresses, allowed, refused", [
    ("intranet.corp", ["10.0.0.5"], frozenset(), True),
    ("intranet.corp", ["10.0.0.5"], frozenset({"intranet.corp"}), False),  # the host allowed by name
    ("intranet.corp", ["10.0.0.5"], frozenset({"10.0.0.5"}), False),  # or its address
    ("split.example", ["93.184.216.34", "192.168.0.1"], frozenset(), True),  # every address counts
    ("example.org", ["93.184.216.34", "2606:2800:220:1::"], frozenset(), False),
    ("169.254.169.254", ["169.254.169.254"], frozenset({"metadata.google.internal"}), True),
])
def test_the_address_check_decides_on_the_resolvers_answer(host, addresses, allowed, refused):
    if refused:
        with pytest.raises(ToolError, match="web_fetch does not reach into the user's network"):
            check_addresses(host, addresses, allowed, [])
    else:
        check_addresses(host, addresses, allowed, [])


@pytest.mark.parametrize("mode", ["ask", "yes"])
def test_a_private_address_is_refused_in_every_mode_yes_included(tmp_path, mode):
    asked = []
    ws = Workspace(tmp_path, confirm=Permissions(mode, ask=lambda *question: asked.append(question)))
    with pytest.raises(ToolError, match=r"^127\.0\.0\.2 is a loopback address \(this machine\)"):
        web_fetch(ws, "http://127.0.0.2:9/")
    assert asked == []  # an address is judged before anyone is asked: the answer could not change it


def test_a_name_is_resolved_only_once_the_user_agreed(site):
    events = []

    def resolve(host, proxied):
        events.append(("resolve", host))
        return ["10.0.0.7"]

    def approve(host, shown):
        events.append(("ask", host))
        raise ToolError("Not approved: fetch from wiki.corp. The user said no.")

    with pytest.raises(ToolError, match="The user said no"):
        fetch("http://wiki.corp/secret?q=1", frozenset(), approve, resolve=resolve)
    assert events == [("ask", "wiki.corp")]  # no DNS lookup either: a name can carry data out
    with pytest.raises(ToolError, match=r"^wiki\.corp resolves to 10\.0\.0\.7, which is a private"):
        fetch("http://wiki.corp/secret?q=1", frozenset(), lambda host, shown: None, resolve=resolve)


def test_a_name_that_changes_its_answer_between_check_and_connection_is_refused(site):
    """DNS rebinding: the check is told a public address, the connection reaches 127.0.0.1 (localhost)."""
    site.pages["/"] = "<p>private</p>"
    with pytest.raises(ToolError) as refused:
        fetch(f"http://localhost:{site.port}/", frozenset(), lambda host, shown: None,
              resolve=answers({"localhost": ["93.184.216.34"]}))
    assert str(refused.value).endswith("(The name resolved to a public address when checked, and to 127.0.0.1 when "
                                       "connecting.)")
    assert site.received == []  # connected, checked, closed: no request was sent


def test_an_allowed_name_reaches_its_private_address(site):
    site.pages["/"] = "<p>dev server</p>"
    page = fetch(f"http://localhost:{site.port}/", frozenset({"localhost"}), lambda host, shown: None)
    assert page.text == "dev server"


@pytest.mark.parametrize("host, addresses, allowed, refused", [
    ("127.0.0.1", ["127.0.0.1"], {"localhost"}, None),  # the name allowed: the addresses it stands for here
    ("::1", ["::1"], {"localhost"}, None),
    ("127.0.0.2", ["127.0.0.2"], {"localhost"}, "adding 127.0.0.2 to"),  # not one of them
    ("10.0.0.5", ["10.0.0.5"], {"gpu-box"}, None),  # /etc/hosts: gpu-box 10.0.0.5
    ("10.0.0.6", ["10.0.0.6"], {"gpu-box", "nowhere.invalid"}, "adding 10.0.0.6 to"),  # a name that resolves not
    ("localhost", ["127.0.0.1", "::1"], {"127.0.0.1"}, "adding localhost (or the address ::1) to"),
    ("localhost", ["127.0.0.1", "::1"], {"127.0.0.1", "::1"}, None),
])
def test_an_allowed_name_stands_for_its_addresses_on_this_machine(host, addresses, allowed, refused):
    """PLAINAGENT_FETCH_ALLOW=localhost refused http://127.0.0.1/: a name and the addresses it stands for match;
    an address allowed does not let a name through whose other addresses are not, and the refusal says how to
    spell what to allow."""
    hosts = {"localhost": ["127.0.0.1", "::1"], "gpu-box": ["10.0.0.5"]}

    def resolve(name, proxied):
        if name not in hosts:
            raise ToolError(f"{name}: no such host")
        return hosts[name]

    if refused is None:
        check_addresses(host, addresses, frozenset(allowed), [], resolve)
        return
    with pytest.raises(ToolError) as refusal:
        check_addresses(host, addresses, frozenset(allowed), [], resolve)
    assert str(refusal.value).endswith(f"The user can allow this host by {refused} PLAINAGENT_FETCH_ALLOW.")


def test_names_are_looked_up_only_when_an_address_would_be_refused():
    looked_up = []
    check_addresses("example.org", ["93.184.216.34"], frozenset({"localhost"}), [],
                    lambda name, proxied: looked_up.append(name) or [])
    assert looked_up == []


# --- consent ---


def test_an_allowed_host_is_asked_about_as_any_other_with_the_whole_url(site):
    """PLAINAGENT_FETCH_ALLOW says which hosts may be reached, not that the user agreed: the mode decides that
    (in mode yes nothing is asked: permissions.py)."""
    site.pages["/"] = "<p>home</p>"
    asked = []
    fetch(f"{site.url}/", LOCAL, lambda host, shown: asked.append((host, shown)))
    assert asked == [("127.0.0.1", f"{site.url}/")]
    asked.clear()
    long_query = "q=" + "abc%20def&" * 30 + "token=%E2%9C%93"
    with pytest.raises(ToolError):
        fetch(f"https://docs.example.org/a b/ü?{long_query}", frozenset(), refuse_and_record(asked))
    assert asked == [("docs.example.org", f"https://docs.example.org/a%20b/%C3%BC?{long_query}")]  # as sent


def test_a_redirect_to_another_host_is_asked_about_again(site):
    site.pages["/go"] = {"status": 302, "headers": {"Location": f"http://localhost:{site.port}/landed"}}
    site.pages["/landed"] = "<p>landed</p>"
    asked = []
    page = fetch(f"{site.url}/go", frozenset({"127.0.0.1", "::1"}), lambda host, shown: asked.append((host, shown)))
    assert page.text == "landed" and page.hops == [f"{site.url}/go (302)"]
    assert asked == [("127.0.0.1", f"{site.url}/go"),
                     ("localhost", f"{site.url}/go (302) redirected to\nhttp://localhost:{site.port}/landed")]


@pytest.mark.parametrize("url, problem", [
    ("file:///etc/passwd", "'file:///etc/passwd' is not an http or https URL"),
    ("ftp://example.org/x", "'ftp://example.org/x' is not an http or https URL"),
    ("docs.python.org/3/", "'docs.python.org/3/' is not an http or https URL"),
    ("http:///path", "'http:///path' is not a URL web_fetch can use"),
])
def test_only_http_and_https_urls(tmp_path, url, problem):
    with pytest.raises(ToolError, match=f"^{problem}"):
        web_fetch(Workspace(tmp_path), url)


@pytest.mark.parametrize("mode, asked", [("ask", True), ("edits", True), ("read-only", True), ("yes", False)])
def test_each_mode_asks_before_a_fetch_but_yes(tmp_path, mode, asked):
    questions = []
    permissions = Permissions(mode, ask=lambda kind, title, preview, why: questions.append((kind, title, preview)))
    Workspace(tmp_path, confirm=permissions).approve("fetch", "fetch from docs.example.org", "https://docs.example.org/")
    assert questions == ([("fetch", "fetch from docs.example.org", "https://docs.example.org/")] if asked else [])


def test_the_model_is_told_when_the_user_says_no(tmp_path):
    permissions = Permissions("ask", ask=lambda kind, title, preview, why: "The user said no: not that site.")
    result = Toolbox(Workspace(tmp_path, confirm=permissions), permissions).run(
        ToolCall("web_fetch", {"url": "https://example.org/?q=secret"}))
    assert (result.ok, result.output) == (False, "Not approved: fetch from example.org. The user said no: not that site.")


def test_fetch_off_leaves_the_tool_out_and_a_sub_agent_has_none(tmp_path):
    off = Permissions("yes", fetch=False)
    assert "web_fetch" not in off.offered({"web_fetch": web_fetch}) and off.refusal("web_fetch") == FETCH_OFF
    assert Permissions("read-only").offers("web_fetch")
    sub = Permissions("read-only", subagent=True)
    assert not sub.offers("web_fetch")
    assert sub.refusal("web_fetch") == "web_fetch is not available to a sub-agent: it can only read. Answer with what you found."


# --- its own session: nothing of the user's goes out ---


def test_the_request_carries_no_key_no_cookie_and_no_netrc_password(site, ws, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".netrc").write_text("machine 127.0.0.1 login me password hunter2\n")
    site.pages["/set"] = {"headers": {"Set-Cookie": "session=abc; Path=/"}, "body": "<p>set</p>"}
    site.pages["/again"] = "<p>again</p>"
    web_fetch(ws, f"{site.url}/set")
    web_fetch(ws, f"{site.url}/again")
    for request in site.received:
        assert set(request.headers) == {"Host", "User-Agent", "Accept", "Accept-Encoding"}
        assert request.headers["User-Agent"] == "plainagent/0.1 (web_fetch)"
        assert KEY not in str(request)


def test_cookies_last_one_fetch_only(site, ws):
    site.pages["/login"] = {"status": 302, "headers": {"Set-Cookie": "s=1; Path=/", "Location": "/in"}}
    site.pages["/in"] = "<p>in</p>"
    web_fetch(ws, f"{site.url}/login")
    web_fetch(ws, f"{site.url}/in")
    assert [request.headers.get("Cookie") for request in site.received] == [None, "s=1", None]


def test_proxies_come_from_the_environment(site, monkeypatch):
    """HTTP_PROXY as any web client reads it: the whole URL goes to the proxy (here the local site)."""
    site.pages["/guide"] = "<p>through the proxy</p>"
    monkeypatch.setenv("HTTP_PROXY", site.url)
    page = fetch("http://docs.example.org/guide", frozenset(), lambda host, shown: None,
                 resolve=answers({"docs.example.org": ["93.184.216.34"]}))
    assert page.text == "through the proxy"
    assert [request.target for request in site.received] == ["http://docs.example.org/guide"]
    monkeypatch.setenv("NO_PROXY", "docs.example.org")
    assert fetching.requests.utils.get_environ_proxies("http://docs.example.org/guide") == {}


# --- settings ---


def config_from(tmp_path, environ, project_env=""):
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    if project_env:
        (project / ".env").write_text(project_env)
    args = parse_args(["-m", "m", "--base-url", "http://localhost:1/v1"])
    return load_config(args, environ, project, tmp_path / "install", ask=lambda shown, question: "y")  # allowed


def test_the_settings(tmp_path):
    config = config_from(tmp_path, {"PLAINAGENT_FETCH": "off", "PLAINAGENT_FETCH_ALLOW": "Docs.Python.org, [::1], "
                                    "127.0.0.1:8000 http://localhost:3000/x"})
    assert config.fetch is False and config.fetch_allow == {"docs.python.org", "::1", "127.0.0.1", "localhost"}
    assert config_from(tmp_path, {}).fetch is True and config_from(tmp_path, {}).fetch_allow == frozenset()
    with pytest.raises(ConfigError, match="PLAINAGENT_FETCH='maybe': use on or off."):
        config_from(tmp_path, {"PLAINAGENT_FETCH": "maybe"})
    with pytest.raises(ConfigError, match=r"PLAINAGENT_FETCH_ALLOW='a.org, https://': 'https://' is not a host name "):
        config_from(tmp_path, {"PLAINAGENT_FETCH_ALLOW": "a.org, https://"})


def test_a_projects_env_cannot_allow_hosts_nor_turn_fetching_back_on(tmp_path):
    """Even once the user allowed a project's .env, it may only ask more: no host fetched unasked, no fetching
    the user turned off."""
    config = config_from(tmp_path, {}, "PLAINAGENT_FETCH_ALLOW=169.254.169.254\n")
    assert config.fetch_allow == frozenset()
    assert config.notes == [f"plainagent: not using {tmp_path / 'project' / '.env'}: PLAINAGENT_FETCH_ALLOW not "
                            "used: a project's .env may make plainagent ask more, never less."]  # not even asked
    assert config_from(tmp_path, {}, "PLAINAGENT_FETCH=off\n").fetch is False  # asking less of the web is fine
    assert config_from(tmp_path, {"PLAINAGENT_FETCH": "off"}, "PLAINAGENT_FETCH=on\n").fetch is False


def test_parse_hosts():
    assert parse_hosts("") == frozenset()
    assert parse_hosts(" a.org;B.org. ") == {"a.org", "b.org"}
    assert parse_hosts("::1 0:0:0:0:0:0:0:1 [fe80::1]:80 https://[::2]/x 10.0.0.1") == {"::1", "fe80::1", "::2", "10.0.0.1"}


# --- helpers ---


def never_asked(host, shown):
    raise AssertionError(f"asked about {host}, which is refused before anyone is asked")


def agree(host, shown):
    """The user's yes (or mode yes): the fetch goes ahead."""
    return None


def refuse_and_record(asked):
    def approve(host, shown):
        asked.append((host, shown))
        raise ToolError("Not approved.")
    return approve


def answers(table: dict[str, list[str]]):
    """A resolver that answers from a table: no DNS query leaves the machine."""
    return lambda host, proxied: table[host]


def test_a_url_with_a_user_or_password_is_not_fetched_nor_followed(site, ws):
    """requests would send them as basic auth: web_fetch sends no credentials of any kind."""
    site.pages["/creds"] = "<p>secret</p>"
    site.pages["/jump"] = {"status": 302, "headers": {"Location": site.url.replace("//", "//u:p@") + "/creds"}}
    with pytest.raises(ToolError, match="A URL with a user or password is not fetched"):
        web_fetch(ws, site.url.replace("//", "//user:pw@") + "/creds")
    with pytest.raises(ToolError, match=r"A URL with a user or password \(redirected to by .*/jump\) is not fetched"):
        web_fetch(ws, f"{site.url}/jump")
    assert all("Authorization" not in request.headers for request in site.received)
