"""A web page's HTML as the text a model can use, with the standard library's HTML parser.

The failure it prevents: a page sent as markup costs several times the tokens of its text, and most of it is
scripts, styles and the site's menus. What is kept: the title, headings (as `#` lines), paragraphs, lists
(`-` and `1.` items, nested ones indented), tables as rows of `|`-separated cells, `<pre>` blocks verbatim
between ``` lines and inline `code` in backticks, links as `text (url)` with the url made absolute. What is
dropped: scripts, styles, form controls, images, hidden elements and navigation (`<nav>`, `<aside>`, `<footer>`,
role="navigation"); and when the page marks its main content (`<main>`, role="main"), everything outside it.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

# Elements whose content is never text for the reader: code, styling, widgets, and the site's own menus. Not
# <form>: some sites (ASP.NET's) wrap the whole page in one.
DROPPED = {"script", "style", "noscript", "template", "svg", "math", "canvas", "iframe", "object", "head",
           "nav", "aside", "footer", "button", "select", "textarea", "dialog"}
DROPPED_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search"}
# Elements that end the line before them and after them.
BLOCKS = {"p", "div", "section", "article", "main", "header", "blockquote", "figure", "figcaption", "details",
          "summary", "dl", "dt", "dd", "ul", "ol", "table", "address", "center", "fieldset", "hgroup"}
# Elements that have no end tag: never wait for one.
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}


def html_to_text(html: str, url: str = "") -> str:
    """The readable text of a page; `url` is where it came from, to make its links absolute.

    >>> html_to_text('<h2>Use</h2><p>Run <code>make</code>, see <a href="/docs">the docs</a>.</p>', "https://x.org/a")
    '## Use\\n\\nRun `make`, see the docs (https://x.org/docs).'
    """
    parser = PageParser(url)
    parser.feed(html)
    parser.close()
    return parser.text()


class Writer:
    """Text written a piece at a time: runs of spaces made one, and at most one blank line between blocks."""

    def __init__(self):
        self.parts: list[str] = []
        self.newlines = 0  # line breaks owed before the next text (2: a blank line)
        self.at_start = True  # nothing on the current line yet

    def write(self, text: str, verbatim: bool = False) -> None:
        if not verbatim:
            text = re.sub(r"\s+", " ", text)
            if self.at_start or self.newlines or (self.parts and self.parts[-1].endswith(" ")):
                text = text.lstrip(" ")
        if not text:
            return
        if self.newlines and self.parts:
            self.parts[-1] = self.parts[-1].rstrip(" ")
            self.parts.append("\n" * self.newlines)
        self.newlines, self.at_start = 0, text.endswith("\n")
        self.parts.append(text)

    def end_line(self, blank: bool = False) -> None:
        self.newlines = max(self.newlines, 2 if blank else 1)
        self.at_start = True

    def text(self) -> str:
        return "".join(self.parts).strip()


class PageParser(HTMLParser):
    """Turns the events of html.parser into text, writing each piece to the whole page's text and, when it is
    inside the page's main content, to that too."""

    def __init__(self, url: str):
        super().__init__(convert_charrefs=True)
        self.base = url
        self.page, self.main = Writer(), Writer()  # the whole page's text; the main content's alone
        self.title = ""
        self.in_title = False
        self.dropping: tuple[str, int] | None = None  # (tag, how many of them are open) while content is dropped
        self.main_depth: tuple[str, int] | None = None  # the same, while inside the main content
        self.saw_main = False
        self.pre = 0  # <pre> elements open: their text is kept as it is
        self.pre_opened = False  # a <pre> has just opened: nothing written in it yet
        self.lists: list[list] = []  # one [tag, items so far] per open <ul> or <ol>
        self.cell = 0  # table cells in the current row so far
        self.in_cell = False
        self.link: tuple[str, int, int] | None = None  # (url, where its text starts in page and in main)

    # --- the parser's events ---

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and not self.title and (not self.dropping or self.dropping[0] == "head"):
            self.in_title = True  # the page's title, in its <head> (not an icon's, inside an <svg>)
            return
        if tag == "base" and dict(attrs).get("href"):  # <base href> (in the <head>): what links are relative to
            self.base = urljoin(self.base, dict(attrs)["href"])
        if self.dropping and self.dropping[0] == "head" and tag == "body":
            self.dropping = None  # </head> may be left out: the body ends it
        if self.dropping:
            if tag == self.dropping[0]:
                self.dropping = (tag, self.dropping[1] + 1)
            return
        attributes = {name: value or "" for name, value in attrs}
        if tag not in VOID and (tag in DROPPED or self.hidden(attributes)):
            self.dropping = (tag, 1)
            return
        if self.main_depth and tag == self.main_depth[0]:
            self.main_depth = (tag, self.main_depth[1] + 1)
        elif not self.main_depth and (tag == "main" or attributes.get("role") == "main"):
            self.main_depth, self.saw_main = (tag, 1), True
        self.start(tag, attributes)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.in_title:
            self.in_title = False
            return
        if self.dropping:
            if tag == self.dropping[0]:
                self.dropping = (tag, self.dropping[1] - 1) if self.dropping[1] > 1 else None
            return
        self.end(tag)
        if self.main_depth and tag == self.main_depth[0]:
            self.main_depth = (tag, self.main_depth[1] - 1) if self.main_depth[1] > 1 else None

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
        elif not self.dropping:
            if self.pre and self.pre_opened:  # a line break right after <pre> is not part of its text (HTML says)
                data = data.removeprefix("\r\n").removeprefix("\n")
            self.pre_opened = False
            self.write(data, verbatim=self.pre > 0)

    # --- what each element becomes ---

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        if re.fullmatch(r"h[1-6]", tag):
            self.end_line(blank=True)
            self.write("#" * int(tag[1]) + " ")
        elif tag == "pre":
            self.end_line(blank=True)
            self.pre += 1
            self.pre_opened = True
            self.write("```\n", verbatim=True)
        elif tag == "code" and not self.pre:
            self.write("`", verbatim=True)
        elif tag in ("ul", "ol"):
            self.end_line(blank=not self.lists)
            self.lists.append([tag, 0])
        elif tag == "li":
            self.end_line()
            depth = max(len(self.lists), 1)
            if self.lists:
                self.lists[-1][1] += 1
            ordered = self.lists and self.lists[-1][0] == "ol"
            self.write("  " * (depth - 1) + (f"{self.lists[-1][1]}. " if ordered else "- "), verbatim=True)
        elif tag == "tr":
            self.in_cell, self.cell = False, 0  # a cell's end tag may be left out: the next row ends it
            self.end_line()
        elif tag in ("td", "th"):
            if self.cell:
                self.write(" | ")
            self.cell += 1
            self.in_cell = True
        elif tag == "br":
            self.write("\n", verbatim=True)
        elif tag == "hr":
            self.end_line(blank=True)
        elif tag == "a":
            self.link = (attributes.get("href", ""), len(self.page.parts), len(self.main.parts))
        elif tag in BLOCKS:
            self.end_line(blank=tag in ("p", "blockquote", "table", "figure", "details"))

    def end(self, tag: str) -> None:
        if re.fullmatch(r"h[1-6]", tag):
            self.end_line(blank=True)
        elif tag == "pre" and self.pre:
            self.pre -= 1
            ends_line = self.page.parts[-1].endswith("\n") if self.page.parts else True
            self.write("```" if ends_line else "\n```", verbatim=True)
            self.end_line(blank=True)
        elif tag == "code" and not self.pre:
            self.write("`", verbatim=True)
        elif tag in ("ul", "ol"):
            if self.lists:
                self.lists.pop()
            self.end_line(blank=not self.lists)
        elif tag in ("td", "th"):
            self.in_cell = False
        elif tag in ("tr", "table"):
            self.in_cell = False
            self.end_line(blank=tag == "table")
        elif tag == "a" and self.link:
            self.end_link()
        elif tag in BLOCKS or tag == "li":
            self.end_line(blank=tag in ("p", "blockquote", "table", "figure", "details"))

    def end_link(self) -> None:
        """`text (url)`: the url made absolute; none for a link within the page or to a script, and a heading's
        own anchor (Sphinx's ¶, a 🔗) is dropped whole."""
        href, page_start, main_start = self.link
        self.link = None
        text = "".join(self.page.parts[page_start:]).strip()
        href = href.strip()
        if href.startswith("#") and not any(char.isalnum() for char in text):
            del self.page.parts[page_start:], self.main.parts[main_start:]
            return
        if not text or not href or href.startswith("#") or href.lower().startswith(("javascript:", "data:")):
            return
        url = urljoin(self.base, href)
        if url != text:  # a link written out as its own url is not written twice
            self.write(f" ({url})", verbatim=True)

    def hidden(self, attributes: dict[str, str]) -> bool:
        """Not shown on the page (or a menu): its text is not the page's."""
        style = attributes.get("style", "").replace(" ", "").lower()
        return ("hidden" in attributes or attributes.get("aria-hidden") == "true"
                or attributes.get("role") in DROPPED_ROLES or "display:none" in style)

    # --- writing ---

    def write(self, text: str, verbatim: bool = False) -> None:
        self.page.write(text, verbatim)
        if self.main_depth:
            self.main.write(text, verbatim)

    def end_line(self, blank: bool = False) -> None:
        if self.in_cell:  # a paragraph inside a table cell must not break the row
            self.write(" ")
            return
        self.page.end_line(blank)
        if self.main_depth:
            self.main.end_line(blank)

    def text(self) -> str:
        body = self.main.text() if self.saw_main and self.main.text() else self.page.text()
        title = re.sub(r"\s+", " ", self.title).strip()
        return f"{title}\n\n{body}".strip() if title and not body.startswith(f"# {title}") else body
