"""Which addresses a live check may connect to: literal public unicast addresses only, so
that the endpoint cannot be turned on the server's own network (SSRF) or used to resolve
names (no DNS: no DNS rebinding). Public means outside every block of IANA's
special-purpose registries (``checknode/special.py``). A range may be allowed back by the
operator (``--live-check-allow``); ``.onion`` goes only through ``--tor-proxy``; i2p and
cjdns are never checked. Each target is named by one canonical spelling (that of
``crawl/address.py``, an IPv4-mapped address as its IPv4 address, no zone), so that the
bounds keyed on it cannot be sidestepped by writing one node another way."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..crawl.address import AddressError, canonical_host
from ..settings.addresses import IPNetwork
from .special import NAT64, IPAddress, not_public

HOST_NAME = re.compile(r"(?=.*[A-Za-z])[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*\.?")
CJDNS = ipaddress.ip_network("fc00::/8")


class Refusal(Exception):
    """A target the live check refuses to connect to: a 400 with ``code``; ``cause`` is
    its label in /metrics."""

    def __init__(self, code: str, cause: str, message: str) -> None:
        super().__init__(message)
        self.code, self.cause, self.message = code, cause, message


class NotCheckable(Exception):
    """A well-formed address of a network the check cannot reach (a 200 ``not_checkable``);
    ``host`` is its canonical spelling."""

    def __init__(self, host: str, message: str) -> None:
        super().__init__(message)
        self.host = host


@dataclass(frozen=True)
class Target:
    """A node to check: its canonical host, its port, and its network (ipv4, ipv6, onion)."""

    host: str
    port: int
    network: str

    @property
    def host_group(self) -> str:
        """The machine the per-host bounds count it under: an IPv4 address (also the one
        a NAT64 address carries), an IPv6 address's /64 (one subscriber's usual share, in
        which every address may be the same machine), an onion's host."""
        if self.network != "ipv6":
            return self.host
        ip = ipaddress.IPv6Address(self.host)
        if ip in NAT64:
            return str(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        return str(ipaddress.IPv6Network((int(ip) >> 64 << 64, 64)))


def target_of(
    address: str,
    port: int,
    allowed: Sequence[IPNetwork],
    onion_proxy: bool,
    only: Sequence[IPNetwork] = (),
) -> Target:
    """The node ``address`` and ``port`` name, if it may be checked.

    Args:
        address: the host as given: dotted IPv4, IPv6 (brackets optional), .onion, .b32.i2p.
        port: the port, already a whole number.
        allowed: ranges checked although not public (``--live-check-allow``).
        onion_proxy: whether a SOCKS5 proxy for .onion is configured.
        only: if any, the only ranges checked (``--live-check-only``): every other
            address, an overlay's included, is refused.

    Returns:
        The target, its host in its canonical spelling. Raises Refusal for an address
        never connected to (a zone, ``%...``, included), NotCheckable for one of a
        network not reachable from here.
    """
    if not 1 <= port <= 65535:
        raise Refusal("invalid_port", "invalid", f"port {port} is outside 1-65535")
    host = address.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.lower().endswith((".onion", ".i2p")):
        if only:
            raise _not_among(host)
        return _overlay(host, port, onion_proxy)
    try:
        ip = ipaddress.ip_address(canonical_host(host))
    except AddressError as exc:
        if HOST_NAME.fullmatch(host):
            raise Refusal(
                "host_name_not_allowed",
                "host_name",
                f"{host!r} is a host name: give the node's IP address (names are not "
                "resolved, so that no answer of a DNS server picks the address checked)",
            ) from None
        raise Refusal("invalid_address", "invalid", str(exc)[:300]) from None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # the same node as its IPv4 address, and reached as it
    if ip in CJDNS:
        raise NotCheckable(str(ip), "cjdns addresses cannot be reached from this server")
    if only and not any(ip in only_range for only_range in only):
        raise _not_among(str(ip))
    if not any(ip in allowed_range for allowed_range in allowed):
        _refuse_unless_public(ip)
    network = "ipv6" if ip.version == 6 else "ipv4"
    return Target(str(ip), port, network)


def _not_among(host: str) -> Refusal:
    return Refusal(
        "address_not_allowed",
        "not_allowed",
        f"{host} is not among the addresses this server checks (--live-check-only)",
    )


def _overlay(host: str, port: int, onion_proxy: bool) -> Target:
    try:
        canonical = canonical_host(host)
    except AddressError as exc:
        raise Refusal("invalid_address", "invalid", str(exc)) from None
    if canonical.endswith(".i2p"):
        raise NotCheckable(canonical, "i2p addresses cannot be reached from this server")
    if not onion_proxy:
        raise NotCheckable(canonical, "this server has no Tor proxy to reach .onion addresses")
    return Target(canonical, port, "onion")


def _refuse_unless_public(ip: IPAddress) -> None:
    """Refusal unless ``ip`` (and the IPv4 address a NAT64 one carries) is public."""
    block = not_public(ip)
    if block is not None:
        raise Refusal(
            "address_not_public",
            block.cause,
            f"{ip} is in {block.network} ({block.name}): only public addresses are checked",
        )
