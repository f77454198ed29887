"""Absolute links in answers (v1 ``url``, ``next`` and ``previous``, ``/api/nodes``'
``next``): made from ``--public-url`` when crawldash sits behind a proxy at a sub-path,
else from the scheme and host the request was made to; and in either case under the
request's network prefix (``/n/NAME``), so that a link from a network leads back into it."""

from __future__ import annotations

from collections.abc import Collection

from aiohttp import web
from yarl import URL

NETWORK_PATH = "/n/"  # a network's routes are all under /n/NAME/
MAX_ORIGINS_KEPT = 64  # the Host header is the client's: keep few


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
        """``scheme://host[:port]`` as ``request.url`` spells it, built once per Host:
        building a URL costs more than answering a kept page."""
        key = (request.scheme, request.host)
        origin = self._origins.get(key)
        if origin is None:
            if len(self._origins) >= MAX_ORIGINS_KEPT:
                self._origins.clear()
            origin = self._origins[key] = str(URL.build(scheme=key[0], authority=key[1]).origin())
        return origin


def network_prefix(path: str) -> str:
    """``/n/NAME`` when ``path`` is under ``/n/NAME/``, else ``""``."""
    if not path.startswith(NETWORK_PATH):
        return ""
    end = path.find("/", len(NETWORK_PATH))
    return path[:end] if end > len(NETWORK_PATH) else ""
