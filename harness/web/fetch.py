"""How web_fetch fetches a page: the user's consent, the address check, redirects, and the body as text.

The failures it prevents:
  - a fetch carrying the user's credentials: each fetch has a requests session of its own (no Authorization,
    no API key, cookies forgotten when it ends, no passwords from ~/.netrc, which requests would otherwise add)
    with a plain User-Agent; proxies and CA bundle are the environment's, as for any web client;
  - a URL carrying data out unseen: nothing goes out, not even the DNS lookup (a name can carry data too),
    before the user agreed (`approve`, which asks according to the mode: permissions.py), a host in
    PLAINAGENT_FETCH_ALLOW too: that list says which hosts may be reached, the mode whether to ask (being
    reachable is no consent); a redirect to another host is asked about again, since a host's open redirect
    would otherwise send the rest of the URL anywhere;
  - a way into the user's network: a host that resolves to a loopback, private, link-local (the cloud
    metadata address 169.254.169.254 among them) or other non-public address is refused in every mode unless
    PLAINAGENT_FETCH_ALLOW names it, as a name or as an address: a name allowed stands for the addresses it
    resolves to on this machine ("localhost" lets http://127.0.0.1/ through, not 127.0.0.2), and a refusal says
    which spelling to allow; each redirect hop is checked the same way, and each connection again once made,
    before the request is sent, so a name that gives the check a public address and the connection a private
    one (DNS rebinding) gets nothing through;
  - a page that never ends: timeouts, a deadline for the whole download, and a size limit counted while
    downloading, after gzip is undone (a small compressed body cannot fill the memory);
  - markup and binaries as text: HTML becomes text (html_text.py), other text comes as it is, in its charset;
    anything else is refused with its type and size.
"""

from __future__ import annotations

import codecs
import ipaddress
import os
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3 import HTTPConnectionPool, HTTPSConnectionPool

from harness.common.hosts import host_of, is_loopback
from harness.common.seam_types import ToolError
from harness.web.html_text import html_to_text

USER_AGENT = "plainagent/0.1 (web_fetch)"
ACCEPT = "text/html, text/*;q=0.9, application/json;q=0.9, application/xml;q=0.9, */*;q=0.1"
TIMEOUT = (10, 20)  # seconds: to connect, and between two pieces of the answer
MAX_SECONDS = 60  # the whole download: a server sending a byte now and then cannot hold the session
MAX_BYTES = 5_000_000  # of the page, gzip undone; a longer one is cut here, and the result says so
MAX_REDIRECTS = 5
TEXT_TYPES = {"application/json", "application/xml", "application/javascript", "application/x-ndjson",
              "application/yaml", "application/x-yaml", "application/toml", "application/x-sh"}
# IPv6 addresses that carry an IPv4 one in their last 32 bits: NAT64's well-known prefix, SIIT's IPv4-translated
# ::ffff:0:a.b.c.d, and the deprecated IPv4-compatible ::a.b.c.d ([::127.0.0.2]); each is judged by the IPv4 one.
LAST_32_BITS = [ipaddress.ip_network(network) for network in ("64:ff9b::/96", "::ffff:0:0:0/96", "::/96")]
LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: local-use NAT64, off the public web (3.11: global)
METADATA = {"169.254.169.254", "fd00:ec2::254", "100.100.100.200"}  # AWS, GCP, Azure...; AWS over IPv6; Alibaba

# (host, whether a proxy will resolve it instead) -> its addresses, as strings, as the system's resolver gives them.
Resolver = Callable[[str, bool], list[str]]
# Asks the user before a host is fetched from: (host, what to show) -> None, or raises ToolError (Workspace.approve).
Approve = Callable[[str, str], None]


@dataclass
class Page:
    url: str  # where the text came from, after the redirects
    status: str  # "200 OK"
    content_type: str
    size: int  # bytes read, gzip undone
    text: str
    hops: list[str] = field(default_factory=list)  # each URL that redirected, with its status: "http://a/ (301)"
    cut: str = ""  # why the download stopped before the end of the page, or ""


# --- the fetch ---


def fetch(url: str, allowed: frozenset[str], approve: Approve, resolve: Resolver | None = None,
          timeout: tuple[float, float] = TIMEOUT, max_seconds: float = MAX_SECONDS, max_bytes: int = MAX_BYTES,
          max_redirects: int = MAX_REDIRECTS) -> Page:
    """Fetch `url` and return its text, following redirects; ToolError with the reason when it is refused or
    fails. Nothing goes out before `approve` has let a host through (an allowed one too: `allowed` says what may be
    reached, the mode whether the user is asked)."""
    resolve = resolve or addresses_of
    hops: list[str] = []
    agreed: set[str] = set()  # hosts this fetch may send to without asking again
    with requests.Session() as session:
        session.trust_env = False  # no ~/.netrc passwords; proxies and CA bundle are set below, for the web
        session.headers.clear()  # requests' own default headers, set again here, so each one sent is seen
        session.headers.update({"User-Agent": USER_AGENT, "Accept": ACCEPT, "Accept-Encoding": "gzip, deflate"})
        session.mount("http://", CheckedAdapter(allowed, resolve))
        session.mount("https://", CheckedAdapter(allowed, resolve))
        while True:  # each redirect is a new request, checked and asked about like the first
            url, host = checked_url(url, hops)
            if is_address(host):  # known without a lookup: refused before anyone is asked
                check_addresses(host, [host], allowed, hops, resolve)
            if host not in agreed:
                approve(host, preview(url, hops))
                agreed.add(host)
            # HTTP(S)_PROXY and NO_PROXY as for any web client; but no proxy stands before this machine (hosts.py).
            proxies = {} if is_loopback(url) else requests.utils.get_environ_proxies(url)
            if not is_address(host):
                check_addresses(host, resolve(host, bool(proxies)), allowed, hops, resolve)
            response = get(session, url, timeout, proxies)
            if not response.is_redirect:
                with response:
                    return read_page(response, hops, time.monotonic() + max_seconds, max_bytes)
            response.close()
            hops.append(f"{url} ({response.status_code})")
            if len(hops) > max_redirects:
                break
            url = urljoin(url, response.headers["Location"])
    raise ToolError(f"More than {max_redirects} redirects: {' -> '.join(hops)}. Fetch the last one yourself if "
                    "it is the page you want.")


def checked_url(url: str, hops: list[str]) -> tuple[str, str]:
    """(the URL as it will be sent: host in IDNA, spaces and non-ASCII %-encoded, its host); only http(s)."""
    scheme = urlsplit(url.strip()).scheme.lower()
    if scheme not in ("http", "https"):
        where = f" (redirected to by {hops[-1].rsplit(' (', 1)[0]})" if hops else ""
        raise ToolError(f"{url!r}{where} is not an http or https URL; web_fetch fetches web pages only, "
                        "e.g. \"https://docs.python.org/3/\".")
    try:
        prepared = requests.Request("GET", url.strip()).prepare().url
    except (requests.RequestException, ValueError, UnicodeError) as error:
        raise ToolError(f"{url!r} is not a URL web_fetch can use: {error}.") from None
    host = host_of(prepared)
    if not host:
        raise ToolError(f"{url!r} has no host; give a full URL, e.g. \"https://docs.python.org/3/\".")
    if "@" in urlsplit(prepared).netloc:  # requests would send the user and password as basic auth
        where = f" (redirected to by {hops[-1].rsplit(' (', 1)[0]})" if hops else ""
        raise ToolError(f"A URL with a user or password{where} is not fetched: web_fetch never sends credentials. "
                        "Ask the user to fetch it, or give the URL without them.")
    return prepared, host


def preview(url: str, hops: list[str]) -> str:
    """What the user is shown before a host is sent to: the URL whole, and the redirects that led to it."""
    return "".join(f"{hop} redirected to\n" for hop in hops) + url


def get(session: requests.Session, url: str, timeout: tuple[float, float], proxies: dict) -> requests.Response:
    """One GET, its body not read yet; a failure becomes a ToolError naming what failed."""
    verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
    try:
        return session.get(url, allow_redirects=False, stream=True, timeout=timeout, proxies=proxies, verify=verify)
    except requests.ConnectTimeout:
        raise ToolError(f"{url}: no connection within {timeout[0]:g} s. Try again later, or another page.") from None
    except requests.Timeout:
        raise ToolError(f"{url}: no answer within {timeout[1]:g} s. Try again later, or another page.") from None
    except requests.exceptions.SSLError as error:
        raise ToolError(f"{url}: the secure connection failed ({innermost(error)}).") from None
    except requests.RequestException as error:
        raise ToolError(f"{url}: could not connect ({innermost(error)}).") from None


def innermost(error: BaseException) -> str:
    """The reason at the bottom of a chain of wrapped exceptions (requests wraps urllib3 wraps socket's)."""
    while (error.__cause__ or error.__context__) is not None:
        error = error.__cause__ or error.__context__
    return str(error).rsplit("Failed to establish a new connection: ", 1)[-1] or type(error).__name__


# --- not into the user's network ---


def addresses_of(host: str, proxied: bool = False) -> list[str]:
    """The addresses `host` resolves to, asked of the system's resolver (the one requests connects with). A
    name only the proxy can resolve (a network whose DNS answers for the inside alone) is left to the proxy."""
    try:
        return sorted({info[4][0] for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)})
    except (socket.gaierror, UnicodeError) as error:
        if proxied:
            return []
        raise ToolError(f"{host}: no such host ({error.args[-1] if error.args else error}). Check the URL.") from None


def non_public(address: str) -> str | None:
    """What an address the web cannot reach is, e.g. "a private address (the local network)"; None for a
    public one. An IPv6 address that carries an IPv4 one (::ffff:10.0.0.1, ::127.0.0.2, 6to4, NAT64) is judged
    by it."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # fe80::1%eth0: the zone names an interface
    if ip.version == 6:
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo or (None, None))[1]
        if embedded is None and any(ip in network for network in LAST_32_BITS) and int(ip) > 1:  # not :: or ::1
            embedded = ipaddress.ip_address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return non_public(str(embedded))
        if ip in LOCAL_NAT64:  # a network's own NAT64, wherever its prefix ends: never the public web
            return non_public(str(ipaddress.ip_address(int(ip) & 0xFFFFFFFF))) or "not a public address"
    if str(ip) in METADATA:
        return "the cloud metadata address (where a cloud machine's credentials are served)"
    if ip.is_loopback:
        return "a loopback address (this machine)"
    if ip.is_link_local:
        return "a link-local address (the local link)"
    if ip.is_private:
        return "a private address (the local network)"
    if not ip.is_global or ip.is_multicast:
        return "not a public address"
    return None


def check_addresses(host: str, addresses: list[str], allowed: frozenset[str], hops: list[str],
                    resolve: Resolver | None = None) -> None:
    """Refuse a host whose addresses include one the web cannot reach, unless the host or that address is in
    PLAINAGENT_FETCH_ALLOW, or a name there resolves to it on this machine (`resolve`; none: names stand for
    themselves alone). Every address is checked: the connection may use any of them."""
    for address in addresses:
        kind, bare = non_public(address), address.split("%", 1)[0]
        if kind and host not in allowed and bare not in allowed and bare not in named_addresses(allowed, resolve):
            named = host if host == address else f"{host} resolves to {address}, which"
            via = f" (redirected to by {hops[-1].rsplit(' (', 1)[0]})" if hops else ""
            spelling = host if host == address else f"{host} (or the address {bare})"
            raise ToolError(f"{named}{via} is {kind}: web_fetch does not reach into the user's network "
                            f"or this machine. The user can allow this host by adding {spelling} to "
                            "PLAINAGENT_FETCH_ALLOW.")


def named_addresses(allowed: frozenset[str], resolve: Resolver | None) -> set[str]:
    """The addresses the names in PLAINAGENT_FETCH_ALLOW resolve to on this machine ("localhost": 127.0.0.1 and
    ::1), so that a user who allowed a name is not refused its address. Looked up only when an address would
    otherwise be refused; a name that does not resolve stands for nothing more."""
    found = set()
    for name in allowed if resolve is not None else ():
        if is_address(name):
            continue
        try:
            found.update(str(ipaddress.ip_address(address.split("%", 1)[0])) for address in resolve(name, False))
        except (ToolError, ValueError, OSError):
            continue
    return found


def is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


class CheckedAdapter(HTTPAdapter):
    """requests' transport, with each direct connection checked once made and before the request goes out
    (a connection through a proxy reaches the proxy; the target was checked before it was asked for)."""

    def __init__(self, allowed: frozenset[str], resolve: Resolver | None = None):
        self.allowed = allowed  # read by init_poolmanager, which HTTPAdapter.__init__ calls
        self.resolve = resolve  # for the names in `allowed` (check_addresses)
        super().__init__(max_retries=0)

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        allowed, resolve = self.allowed, self.resolve

        def checked(pool: type) -> type:
            class Connection(pool.ConnectionCls):
                def connect(self):
                    super().connect()
                    peer = self.sock.getpeername()[0]
                    try:
                        check_addresses(self.host, [peer], allowed, [], resolve)
                    except ToolError as refusal:
                        self.close()  # nothing was sent on it
                        raise ToolError(f"{refusal} (The name resolved to a public address when checked, and to "
                                        f"{peer} when connecting.)") from None

            return type(f"Checked{pool.__name__}", (pool,), {"ConnectionCls": Connection})

        self.poolmanager.pool_classes_by_scheme = {"http": checked(HTTPConnectionPool),
                                                   "https": checked(HTTPSConnectionPool)}


# --- the body, as text ---


def read_page(response: requests.Response, hops: list[str], deadline: float, max_bytes: int) -> Page:
    """The page's text, or ToolError for an error status or a body that is not text. The deadline starts once
    the answer came, not while the user was deciding."""
    content_type = response.headers.get("Content-Type", "")
    kind = kind_of(content_type)
    status = f"{response.status_code} {response.reason or ''}".strip()
    if kind is None:
        size = response.headers.get("Content-Length")
        size = f"{int(size):,} bytes" if size and size.isdigit() else "size not given"
        raise ToolError(f"{response.url} is {content_type or 'of no stated type'} ({size}), not text: web_fetch "
                        "reads web pages and text (HTML, plain text, JSON, XML) only.")
    body, cut = bytearray(), ""
    try:
        for chunk in response.iter_content(65536):  # gzip undone as it comes, so the limit counts what is kept
            body += chunk
            if len(body) > max_bytes:
                del body[max_bytes:]
                cut = f"the page is over {max_bytes:,} bytes: only its first {max_bytes:,} were read"
                break
            if time.monotonic() > deadline:
                cut = f"the download took too long: only the first {len(body):,} bytes were read"
                break
    except requests.RequestException as error:
        raise ToolError(f"{response.url}: the download failed ({innermost(error)}).") from None
    if kind == "sniff" and b"\0" in body[:4096]:  # no type given, and bytes no text holds
        raise ToolError(f"{response.url} gave no content type and holds binary data ({len(body):,} bytes), "
                        "not text: web_fetch reads web pages and text only.")
    text = decode(bytes(body), content_type, kind)
    if kind == "html":
        text = html_to_text(text, response.url)
    if response.status_code >= 400:
        excerpt = text[:1000] + (" [...]" if len(text) > 1000 else "")
        raise ToolError(f"{response.url} answered {status}." + (f" The page says:\n{excerpt}" if excerpt else ""))
    return Page(response.url, status, content_type, len(body), text, hops, cut)


def kind_of(content_type: str) -> str | None:
    """"html", "text", "sniff" (no type given: read it as text unless it holds binary data), or None: not text."""
    mime = content_type.split(";", 1)[0].strip().lower()
    if not mime:
        return "sniff"
    if mime in ("text/html", "application/xhtml+xml"):
        return "html"
    if mime.startswith("text/") or mime in TEXT_TYPES or mime.endswith(("+json", "+xml", "+yaml")):
        return "text"
    return None


def decode(body: bytes, content_type: str, kind: str) -> str:
    """The body as text in its charset: from the Content-Type header, a byte order mark, the page's own
    <meta charset> or <?xml encoding?>, else UTF-8; what does not decode is replaced, never an error."""
    charset = next(iter(re.findall(r'charset="?([\w.:-]+)', content_type, re.IGNORECASE)), "")
    for bom, name in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if body.startswith(bom):
            charset = name  # a byte order mark outranks the header, as browsers read it
    if not charset and (kind != "text" or "xml" in content_type.lower()):  # the document may say
        found = re.search(rb"""<meta[^>]+charset=["']?([\w.:-]+)|<\?xml[^>]+encoding=["']([\w.:-]+)""",
                          body[:4096], re.IGNORECASE)
        charset = (found[1] or found[2]).decode("ascii") if found else ""
    try:
        codec = codecs.lookup(charset or "utf-8").name
    except LookupError:  # a charset Python does not know: UTF-8, with replacements where it is wrong
        codec = "utf-8"
    if codec in ("latin-1", "iso8859-1", "ascii"):
        codec = "cp1252"  # what browsers read these names as: the same, with letters where latin-1 has controls
    return body.decode(codec, errors="replace")


# --- the result ---


def render_page(page: Page, text: str, offset: int, max_chars: int) -> str:
    """web_fetch's result: a line saying what was fetched, then the text from `offset`; a longer text keeps its
    head and (on the first read) its tail, and says where to go on."""
    if offset < 0 or (offset and offset >= len(text)):
        raise ToolError(f"offset {offset} is outside the page's text, which has {len(text):,} characters; use an "
                        f"offset from 0 to {max(len(text) - 1, 0):,}.")
    kind = page.content_type.split(";", 1)[0].strip() or "no type given"
    lines = [f"{page.url} ({page.status}, {kind}, {page.size:,} bytes; {len(text):,} characters of text)"]
    if page.hops:
        lines.append(f"(redirected from {' -> '.join(page.hops)})")
    if page.cut:
        lines.append(f"(note: {page.cut})")
    if not text.strip():
        return "\n".join(lines + ["(no text on this page)"])
    rest = text[offset:]
    if len(rest) <= max_chars:
        if offset:
            lines.append(f"(characters {offset:,} to the end)")
        return "\n".join(lines + [rest])
    tail = text[-(max_chars // 5):] if offset == 0 else ""
    tail = tail.split("\n", 1)[1] if "\n" in tail[:-1] else tail  # from the start of a line
    head = rest[: max_chars - len(tail)]
    if "\n" in head[len(head) // 2:]:
        head = head[: head.rindex("\n") + 1]  # to the end of a line, where the next read begins
    next_offset = offset + len(head)
    left_out = len(text) - next_offset - len(tail)
    cut = (f"[... {left_out:,} characters not shown: call web_fetch with offset={next_offset} to read on "
           f"(the text has {len(text):,}) ...]")
    return "\n".join(lines + [head.rstrip("\n"), cut] + ([tail] if tail else []))
