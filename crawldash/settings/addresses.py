"""Parsers of the live check's options that name addresses: ranges (``--live-check-allow``,
``--trusted-proxy``), a proxy's ``host:port`` (``--tor-proxy``) and a network's magic
(``--live-check-magic``)."""

from __future__ import annotations

import ipaddress
import re

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
