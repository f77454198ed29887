"""Absolute links in answers (v1 ``url``, ``next`` and ``previous``, ``/api/nodes``'
``next``): made from ``--public-url`` when crawldash sits behind a proxy at a sub-path,
else from the scheme and host the request was made to; and in either case under the
request's network prefix (``/n/NAME``), so that a link from a network leads back into it."""

from __future__ import annotations

import re
from collections.abc import Collection

from aiohttp import hdrs, web
from yarl import URL

from ..settings.addresses import is_ipv6

NETWORK_PATH = "/n/"  # a network's routes are all under /n/NAME/
MAX_ORIGINS_KEPT = 64  # the Host header is the client's: keep few
# A Host that links may be made of: a DNS name or IPv4 address, or an IPv6 literal in
# brackets, then an optional port. Anything else (a path, a space, a port out of range)
# would go into every link verbatim, or fail to make one.
_HOST = re.compile(
    r"(?P<name>[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}|\[(?P<ip6>[0-9A-Fa-f:.]{2,45})\])"
    r"(?::(?P<port>[0-9]{1,5}))?"
)


class Links:
    """The absolute URLs a handler puts in its answers. ``public_url`` is the URL clients
    reach crawldash at (``https://example.org/crawldash``, no trailing slash), or None for
    the request's own scheme and host."""

    def __init__(self, public_url: str | None) -> None:
        self.public_url = public_url
        self._origins: dict[tuple[str, str], str] = {}  # (scheme, Host) -> its origin

    def base(self, request: web.Request) -> str:
        """Where the request's service is reached, with no trailing slash: the public URL
        (or the request's ``scheme://host``), then the request's network prefix, if any.
        Cheap: a handler may call it on every request, to key a page it keeps."""
        root = self.public_url if self.public_url is not None else self._origin(request)
        return root + network_prefix(request.path)

    def this(self, request: web.Request, keep: Collection[str] | None = None, **query: str) -> str:
        """The request's own URL with ``query`` set in its query string, made absolute
        as ``base`` is (its path already holds the network prefix). With ``keep``, only
        those of the request's parameters stay: a page kept for its parsed query must not
        hand one client's unknown parameters to the next."""
        url = request.rel_url
        if keep is not None:
            url = url.with_query([(k, v) for k, v in url.query.items() if k in keep])
        own = str(url.update_query(query))
        root = self.public_url if self.public_url is not None else self._origin(request)
        return root + own

    def _origin(self, request: web.Request) -> str:
        """``scheme://host[:port]`` of the request's Host, built once per Host: building
        a URL costs more than answering a kept page. A missing Host, or one that is no
        host and port, gives the address the client connected to instead."""
        key = (request.scheme, request.headers.get(hdrs.HOST, ""))
        origin = self._origins.get(key)
        if origin is None:
            origin = _origin_of(*key)
            if origin is None:  # not kept: each is the client's own invention
                return _connected_to(request)
            if len(self._origins) >= MAX_ORIGINS_KEPT:
                self._origins.clear()
            self._origins[key] = origin
        return origin


def _origin_of(scheme: str, host: str) -> str | None:
    """``scheme://host[:port]`` for a Host that is a host and a port, else None."""
    parsed = _HOST.fullmatch(host)
    if parsed is None or not _is_port(parsed["port"]):
        return None
    if parsed["ip6"] is not None and not is_ipv6(parsed["ip6"]):
        return None
    try:
        return str(URL.build(scheme=scheme, authority=host).origin())
    except ValueError:
        return None


def _connected_to(request: web.Request) -> str:
    """The origin of the local address the request came in on, or ``""`` (relative links)
    if the transport has none (a Unix socket)."""
    transport = request.transport
    address = transport.get_extra_info("sockname") if transport is not None else None
    if not isinstance(address, tuple) or len(address) < 2:
        return ""
    host, port = str(address[0]), int(address[1])
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return _origin_of(request.scheme, authority) or ""


def _is_port(port: str | None) -> bool:
    return port is None or 0 < int(port) <= 65535


def network_prefix(path: str) -> str:
    """``/n/NAME`` when ``path`` is under ``/n/NAME/``, else ``""``."""
    if not path.startswith(NETWORK_PATH):
        return ""
    end = path.find("/", len(NETWORK_PATH))
    return path[:end] if end > len(NETWORK_PATH) else ""
