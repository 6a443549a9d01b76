"""What kind of host a base URL names: this machine (loopback), the private network (local), or the internet.

Two decisions hang on it, and both are answered here so they cannot disagree on what "localhost" is:
  - `is_loopback`: the client bypasses the proxy settings of the environment for a server on this
    machine (an HTTP_PROXY meant for the internet would otherwise swallow requests to 127.0.0.1);
  - `is_local`: a server on this machine or the private network (Ollama, LM Studio, vLLM on a LAN box)
    may run without an API key; a public host may not, so a missing key is a configuration error there,
    not a 401 after the first request.
Every loopback host is local. A host is read the way the resolver would: case-insensitive, a trailing dot
ignored ("LOCALHOST." is localhost).

A base URL may also carry credentials: a user and password (`https://user:pass@host/v1`, a proxy with basic
auth) or a key in the query (`?key=…`, `?api-key=…`). They go out with each request, and never into a line a
person reads: `shown_url` is the URL as printed, `hide_credentials` blanks them in any other text (a server's
error message that echoes the URL, say).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote, urlsplit, urlunsplit

from harness.common.redaction import REDACTED

# Names that only resolve inside a private network (mDNS, home routers, Docker's name for the host).
PRIVATE_SUFFIXES = (".localhost", ".local", ".lan", ".internal", ".home.arpa")
# Query parameters whose value is a credential: Google's ?key=, Azure's ?api-key= and SAS ?sig=, ?access_token=.
SECRET_PARAMETER = re.compile(r"key|token|secret|passw|sig|auth|credential", re.IGNORECASE)
MIN_PIECE = 4  # a credential shorter than this is blanked in the URL only: elsewhere it would garble words


def host_of(url: str) -> str:
    """The URL's host as the resolver reads it: "http://LocalHost.:8080/v1" -> "localhost"; "::1" for [::1]; ""
    for none. A URL as shown (its user and password "[REDACTED]", which urlsplit takes for an address) too."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    try:
        return (urlsplit(scheme + sep + netloc.rpartition("@")[2] + slash + path).hostname or "").lower().rstrip(".")
    except ValueError:  # a bracketed host that is no address
        return ""


def is_loopback(url: str) -> bool:
    """True for a server on this machine: localhost, 127.0.0.0/8 and ::1."""
    host = host_of(url)
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_local(url: str) -> bool:
    """True for a server on this machine or the private network, which may run without an API key."""
    host = host_of(url)
    if is_loopback(url) or host.endswith(PRIVATE_SUFFIXES) or (host and "." not in host and ":" not in host):
        return True  # a single-label name such as "gpu-box" only resolves on a local network
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_private or address.is_link_local


def shown_url(url: str) -> str:
    """The URL as a line may print it: its user and password, and the values of key-like query parameters,
    blanked. "http://me:pw@h/v1?key=k&v=1" -> "http://[REDACTED]@h/v1?key=[REDACTED]&v=1"."""
    try:
        parts = urlsplit(url)
    except ValueError:  # no URL that can be read (a config error names it): at least its user and password go
        return re.sub(r"//[^/?#]*@", f"//{REDACTED}@", url)
    pairs = [pair.partition("=") for pair in parts.query.split("&")] if parts.query else []
    if "@" not in parts.netloc and not any(value and SECRET_PARAMETER.search(name) for name, _, value in pairs):
        return url  # nothing to blank: as given (urlsplit would drop what it strips, a leading control character)
    netloc = f"{REDACTED}@{parts.netloc.rpartition('@')[2]}" if "@" in parts.netloc else parts.netloc
    query = "&".join(name + equals + (REDACTED if value and SECRET_PARAMETER.search(name) else value)
                     for name, equals, value in pairs)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def hide_credentials(text: str, url: str) -> str:
    """`text` with the credentials `url` carries blanked: the URL's own form first, then each piece alone
    (as written and decoded), longest first, so a server that echoes one back does not print it."""
    text = text.replace(url, shown_url(url))
    try:
        parts = urlsplit(url)
    except ValueError:
        return text
    userinfo = parts.netloc.rpartition("@")[0]
    pieces = [userinfo, userinfo.partition(":")[2]] if userinfo else []
    pieces += [value for name, _, value in (pair.partition("=") for pair in parts.query.split("&"))
               if value and SECRET_PARAMETER.search(name)]
    pieces += [unquote(piece) for piece in pieces]
    for piece in sorted(set(pieces), key=len, reverse=True):
        if len(piece) >= MIN_PIECE:
            text = text.replace(piece, REDACTED)
    return text


def parse_hosts(text: str) -> frozenset[str]:
    """PLAINAGENT_FETCH_ALLOW's hosts, as the checks compare them: "Docs.Python.org, 127.0.0.1:8000, [::1]"
    -> {"docs.python.org", "127.0.0.1", "::1"}. A URL pasted whole counts as its host; ValueError for an item
    that names no host."""
    hosts = set()
    for item in filter(None, re.split(r"[\s,;]+", text)):
        try:
            host = str(ipaddress.ip_address(item.strip("[]")))  # an address, in the form the resolver gives it
        except ValueError:
            try:
                host = host_of(item if "//" in item else f"//{item}")
            except ValueError:  # an unclosed "[" of an IPv6 address
                host = ""
        if not host:
            raise ValueError(f"{item!r} is not a host name or address")
        hosts.add(host)
    return frozenset(hosts)
