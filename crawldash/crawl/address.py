"""Peer addresses: parsing, validation and the one canonical spelling used as a key.

Accepted hosts are dotted IPv4, IPv6, Tor v3 (``.onion``) and I2P (``.b32.i2p``).
In ``host:port`` text an IPv6 host is bracketed; in the crawler's export rows it is not.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from functools import lru_cache

MAX_ADDRESS_LENGTH = 100
NETWORKS = ("ipv4", "ipv6", "onion", "i2p", "cjdns")
_ONION = re.compile(r"[a-z2-7]{56}\.onion")
_I2P = re.compile(r"[a-z2-7]{52}\.b32\.i2p")
_PORT = re.compile(r"[0-9]{1,5}")
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"  # no leading zero, as ipaddress
_DOTTED = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")


class AddressError(ValueError):
    """The text is not an address crawldash accepts; the message says why, for a person."""


@lru_cache(maxsize=1 << 16)
def canonical_host(host: str) -> str:
    """The canonical spelling of an unbracketed host, or AddressError. A host already
    spelled so (as a crawl's are) is known by a test in C (a pattern, or ``inet_ntop``'s
    spelling, which is ``ipaddress``'s but for an embedded IPv4 address): a new crawl's
    addresses are on the way to its being served, and most are new to a load's cache."""
    if _DOTTED.fullmatch(host) or (":" in host and _spelled_as_ntop(host)):
        return host
    lowered = host.lower()
    if lowered.endswith(".onion"):
        if _ONION.fullmatch(lowered):
            return lowered
        raise AddressError("a Tor v3 .onion host has 56 base32 characters (a-z, 2-7)")
    if lowered.endswith(".i2p"):
        if _I2P.fullmatch(lowered):
            return lowered
        raise AddressError("an I2P host has 52 base32 characters (a-z, 2-7) then .b32.i2p")
    if ":" in host:
        return _canonical_ipv6(host)
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        raise AddressError(
            f"{host!r} is not a dotted IPv4 address, a bracketed IPv6 address, "
            "a .onion or a .b32.i2p host (DNS names are not accepted)"
        ) from None


def _spelled_as_ntop(host: str) -> bool:
    """Whether ``host`` is an IPv6 address as ``inet_ntop`` spells it, with no dotted part
    (only there does its spelling differ from ``ipaddress``'s compressed one)."""
    if "." in host:
        return False
    try:
        return socket.inet_ntop(socket.AF_INET6, socket.inet_pton(socket.AF_INET6, host)) == host
    except (OSError, ValueError):
        return False


def _canonical_ipv6(host: str) -> str:
    if "%" in host:
        raise AddressError("IPv6 zone identifiers (%...) are not accepted")
    try:
        return ipaddress.IPv6Address(host).compressed
    except ValueError:
        raise AddressError(f"{host!r} is not a valid IPv6 address") from None


def format_address(host: str, port: int) -> str:
    """``host:port`` for a canonical host, with IPv6 in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def canonical_address(host: str, port: int) -> str:
    """The canonical ``host:port`` key of an unbracketed host and a port, or AddressError."""
    if not 1 <= port <= 65535:
        raise AddressError(f"port {port} is outside 1-65535")
    return format_address(canonical_host(host), port)


def parse_address(text: str) -> str:
    """Parse ``host:port`` (IPv6 bracketed) into its canonical spelling, or AddressError."""
    if len(text) > MAX_ADDRESS_LENGTH:
        raise AddressError(f"the address is longer than {MAX_ADDRESS_LENGTH} characters")
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise AddressError("expected host:port, for example 203.0.113.5:8333 or [2001:db8::1]:8333")
    if host.startswith("["):
        if not host.endswith("]"):
            raise AddressError("an IPv6 host opened with [ must close with ]")
        host = host[1:-1]
        if ":" not in host:
            raise AddressError("only IPv6 hosts go in brackets")
        host = _canonical_ipv6(host)
    elif ":" in host:
        raise AddressError("an IPv6 host must be in brackets, for example [2001:db8::1]:8333")
    if not _PORT.fullmatch(port_text):
        raise AddressError(f"the port {port_text!r} is not a whole number from 1 to 65535")
    return canonical_address(host, int(port_text))


def network_of(host: str) -> str:
    """The network of a canonical host: ipv4, ipv6, onion, i2p or cjdns."""
    if host.endswith(".onion"):
        return "onion"
    if host.endswith(".i2p"):
        return "i2p"
    if ":" in host:  # compressed IPv6: an address in fc00::/8 starts with a group "fcXX"
        group = host.partition(":")[0]
        return "cjdns" if len(group) == 4 and group.startswith("fc") else "ipv6"
    return "ipv4"
