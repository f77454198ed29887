"""Which addresses a live check may connect to: literal public unicast addresses only, so
that the endpoint cannot be turned on the server's own network (SSRF) or used to resolve
names (no DNS: no DNS rebinding). A range may be allowed back by the operator
(``--live-check-allow``); ``.onion`` goes only through ``--tor-proxy``; i2p and cjdns are
never checked."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..crawl.address import AddressError, canonical_host
from ..settings.addresses import IPNetwork

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
HOST_NAME = re.compile(r"(?=.*[A-Za-z])[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*\.?")
NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052's well-known prefix
CJDNS = ipaddress.ip_network("fc00::/8")
DOCUMENTATION = tuple(
    ipaddress.ip_network(text)
    for text in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32", "3fff::/20")
)


class Refusal(Exception):
    """A target the live check refuses to connect to: a 400 with ``code``; ``cause`` is
    its label in /metrics."""

    def __init__(self, code: str, cause: str, message: str) -> None:
        super().__init__(message)
        self.code, self.cause, self.message = code, cause, message


class NotCheckable(Exception):
    """A well-formed address of a network the check cannot reach (a 200 ``not_checkable``)."""


@dataclass(frozen=True)
class Target:
    """A node to check: its canonical host, its port, and its network (ipv4, ipv6, onion)."""

    host: str
    port: int
    network: str


def target_of(address: str, port: int, allowed: Sequence[IPNetwork], onion_proxy: bool) -> Target:
    """The node ``address`` and ``port`` name, if it may be checked.

    Args:
        address: the host as given: dotted IPv4, IPv6 (brackets optional), .onion, .b32.i2p.
        port: the port, already a whole number.
        allowed: ranges checked although not public (``--live-check-allow``).
        onion_proxy: whether a SOCKS5 proxy for .onion is configured.

    Returns:
        The target. Raises Refusal for an address never connected to, NotCheckable for
        one of a network not reachable from here.
    """
    if not 1 <= port <= 65535:
        raise Refusal("invalid_port", "invalid", f"port {port} is outside 1-65535")
    host = address.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    lowered = host.lower()
    if lowered.endswith((".onion", ".i2p")):
        return _overlay(host, port, onion_proxy)
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        if HOST_NAME.fullmatch(host):
            raise Refusal(
                "host_name_not_allowed",
                "host_name",
                f"{host!r} is a host name: give the node's IP address (names are not "
                "resolved, so that no answer of a DNS server picks the address checked)",
            ) from None
        raise Refusal(
            "invalid_address",
            "invalid",
            f"{host[:100]!r} is not an IPv4 or IPv6 address, a .onion or a .b32.i2p host",
        ) from None
    if ip in CJDNS:
        raise NotCheckable("cjdns addresses cannot be reached from this server")
    if not any(ip in allowed_range for allowed_range in allowed):
        _refuse_unless_public(ip)
    network = "ipv6" if ip.version == 6 else "ipv4"
    return Target(str(ip), port, network)


def _overlay(host: str, port: int, onion_proxy: bool) -> Target:
    try:
        canonical = canonical_host(host)
    except AddressError as exc:
        raise Refusal("invalid_address", "invalid", str(exc)) from None
    if canonical.endswith(".i2p"):
        raise NotCheckable("i2p addresses cannot be reached from this server")
    if not onion_proxy:
        raise NotCheckable("this server has no Tor proxy to reach .onion addresses")
    return Target(canonical, port, "onion")


def _refuse_unless_public(ip: IPAddress) -> None:
    """Refusal unless ``ip`` (and the IPv4 address it embeds, if any) is public unicast."""
    for each in (ip, *_embedded(ip)):
        cause = _not_public(each)
        if cause is not None:
            raise Refusal(
                "address_not_public",
                cause,
                f"{ip} is a {cause.replace('_', '-')} address: only public addresses are checked",
            )


def _embedded(ip: IPAddress) -> list[IPAddress]:
    """The IPv4 address an IPv6 one carries: IPv4-mapped, NAT64, 6to4 or Teredo's."""
    if ip.version == 4:
        return []
    assert isinstance(ip, ipaddress.IPv6Address)
    found: list[IPAddress] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip in NAT64:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    return found


def _not_public(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public unicast address, or None if it is."""
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link_local"
    if ip.is_multicast:
        return "multicast"
    if any(ip in documentation for documentation in DOCUMENTATION):
        return "documentation"
    if ip.is_private:
        return "private"
    wrapped = ip.version == 6 and (ip in NAT64 or getattr(ip, "ipv4_mapped", None) is not None)
    if wrapped:  # judged by the address it embeds
        return None
    if ip.is_reserved or not ip.is_global:
        return "reserved"
    if ip.version == 4 and ip == ipaddress.IPv4Address("255.255.255.255"):
        return "reserved"
    return None
