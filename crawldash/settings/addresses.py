"""Parsers of the options that name addresses: the URL clients reach crawldash at
(``--public-url``), ranges (``--live-check-allow``, ``--trusted-proxy``), a proxy's
``host:port`` (``--tor-proxy``) and a network's magic (``--live-check-magic``)."""

from __future__ import annotations

import ipaddress
import re
import urllib.parse

from .options import named_values

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_MAGIC = re.compile(r"[0-9a-f]{8}")


def cidrs(text: str) -> tuple[IPNetwork, ...]:
    """Comma-separated ranges in CIDR form (``127.0.0.0/8``, ``2001:db8::/32``); a bare
    address is a range of one.

    Args:
        text: the option's value.

    Returns:
        The ranges, host bits allowed (``10.1.2.3/8`` is ``10.0.0.0/8``).
    """
    ranges = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        try:
            ranges.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"{item!r} is not an address range such as 127.0.0.0/8") from None
    return tuple(ranges)


def proxy_address(text: str) -> tuple[str, int]:
    """A SOCKS5 proxy's literal ``IP:port`` (IPv6 in brackets), as ``127.0.0.1:9050``.

    Args:
        text: the option's value.

    Returns:
        (host, port), the host unbracketed.
    """
    host, sep, port_text = text.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    try:
        ipaddress.ip_address(host)
        port = int(port_text)
    except ValueError:
        raise ValueError(f"{text!r} is not IP:port, such as 127.0.0.1:9050") from None
    if not sep or not 1 <= port <= 65535:
        raise ValueError(f"{text!r} is not IP:port with a port from 1 to 65535")
    return host, port


def magics(text: str) -> tuple[tuple[str, str], ...]:
    """Comma-separated ``NAME=MAGIC`` pairs: a network and its 4 message-start bytes as 8
    hexadecimal digits (``f9beb4d9``)."""
    pairs = named_values(text)
    for name, magic in pairs:
        if not _MAGIC.fullmatch(magic.lower()):
            raise ValueError(f"{name}={magic}: a magic is 8 hexadecimal digits, as f9beb4d9")
    return tuple((name, magic.lower()) for name, magic in pairs)


# What --public-url may hold: every link the API gives starts with it, as it is.
_HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}")
_URL_PATH = re.compile(r"(?:[A-Za-z0-9._~!$&'()*+,;=:@/-]|%[0-9A-Fa-f]{2})*")


def public_url(text: str) -> str:
    """An absolute http(s) URL of a host, an optional port and a path, with no user,
    password, query or fragment, written as a URL is sent (ASCII, percent-encoded).

    Args:
        text: the value given, as ``https://example.org/crawldash``.

    Returns:
        The URL, without a trailing slash.
    """
    text = text.strip()
    if not (text.isascii() and text.isprintable()) or " " in text:
        raise ValueError(
            f"{text!r} holds a space, a control or a non-ASCII character: percent-encode "
            "the path, and give a host in its xn-- form"
        )
    try:
        parsed = urllib.parse.urlsplit(text)
        port = parsed.port
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a URL: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"{text!r} is not an http:// or https:// URL")
    _check_public_url(text, parsed, port)
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, parsed.path, "", "")).rstrip("/")


def _check_public_url(text: str, parsed: urllib.parse.SplitResult, port: int | None) -> None:
    """A ValueError naming what, in a URL already split, no link should carry."""
    if "@" in parsed.netloc:
        raise ValueError(f"{text!r} has a user or password; links must not carry them")
    if port == 0:
        raise ValueError(f"{text!r}: port 0 is outside 1-65535")
    host = parsed.hostname or ""
    if not (_HOST_NAME.fullmatch(host) or is_ipv6(host)):
        raise ValueError(f"{text!r}: {host!r} is not a host name or an IP address")
    if not _URL_PATH.fullmatch(parsed.path):
        raise ValueError(
            f'{text!r} has characters a URL path cannot hold (such as " < > {{ }} or a % '
            "not followed by two hexadecimal digits); percent-encode them"
        )
    if parsed.query or parsed.fragment:
        raise ValueError(f"{text!r} has a query or fragment; give the base URL only")


def is_ipv6(text: str) -> bool:
    """Whether ``text`` is an IPv6 address (unbracketed)."""
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True
