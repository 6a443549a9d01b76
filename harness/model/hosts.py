"""What kind of host a base URL names: this machine (loopback), the private network (local), or the internet.

Two decisions hang on it, and both are answered here so they cannot disagree on what "localhost" is:
  - `is_loopback`: the client bypasses the proxy settings of the environment for a server on this
    machine (an HTTP_PROXY meant for the internet would otherwise swallow requests to 127.0.0.1);
  - `is_local`: a server on this machine or the private network (Ollama, LM Studio, vLLM on a LAN box)
    may run without an API key; a public host may not, so a missing key is a configuration error there,
    not a 401 after the first request.
Every loopback host is local. A host is read the way the resolver would: case-insensitive, a trailing dot
ignored ("LOCALHOST." is localhost).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

# Names that only resolve inside a private network (mDNS, home routers, Docker's name for the host).
PRIVATE_SUFFIXES = (".localhost", ".local", ".lan", ".internal", ".home.arpa")


def host_of(url: str) -> str:
    """The URL's host as the resolver reads it: "http://LocalHost.:8080/v1" -> "localhost"; "::1" for [::1]."""
    return (urlsplit(url).hostname or "").lower().rstrip(".")


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
